//! HealthCheckProgram (SMD-125). slurmctld asks each slurmd to run it every
//! `HealthCheckInterval` seconds; slurmd runs it as root and does nothing with its exit code
//! but log it: a program that finds a problem drains the node itself (slurm.conf(5),
//! "HealthCheckProgram"). slurmd kills a program still running after 60 s
//! (src/slurmd/slurmd/slurmd.c, `run_script_health_check`).
//!
//! The generated program records each run and, while a flag file exists, drains the node
//! with `scontrol` (a client on the node, through its slurmd's SACK socket) and fails, or
//! (for the timeout case) drains it and then hangs.

use super::client::{Ctx, JOB_TIMEOUT, POLL, file_lines, q};
use super::conf::ConfChange;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use std::path::PathBuf;
use std::time::Duration;

/// `HealthCheckInterval` for these scenarios (seconds).
const INTERVAL_S: u64 = 5;
/// How long slurmd lets a health check run (src/slurmd/slurmd/slurmd.c).
const SLURMD_LIMIT: Duration = Duration::from_secs(60);

struct Program {
    path: PathBuf,
    log: PathBuf,
    drain_flag: PathBuf,
    hang_flag: PathBuf,
}

/// Write the health check program into the scenario directory.
fn program(ctx: &mut Ctx<'_>) -> Result<Program> {
    let log = ctx.path("health.log");
    let (drain_flag, hang_flag) = (ctx.path("health-drain"), ctx.path("health-hang"));
    let scontrol = ctx.cluster.bin("scontrol");
    let conf = ctx.cluster.layout().conf();
    let body = format!(
        "export SLURM_CONF={conf}\n\
         node=${{SLURMD_NODENAME:-$(hostname)}}\n\
         echo \"run $node $(id -u) $$ $(ps -o pgid= -p $$ | tr -d ' ')\" >> {log}\n\
         if [ -e {drain} ] || [ -e {hang} ]; then\n\
         \x20 {scontrol} update NodeName=$node State=DRAIN Reason=xtask_health_check_failed\n\
         \x20 echo \"drained $node rc=$?\" >> {log}\n\
         \x20 if [ -e {hang} ]; then sleep 300; fi\n\
         \x20 exit 1\n\
         fi\n\
         exit 0\n",
        conf = q(&conf),
        log = q(&log),
        drain = q(&drain_flag),
        hang = q(&hang_flag),
        scontrol = q(&scontrol)
    );
    let path = ctx.script("health-check", &body)?;
    Ok(Program {
        path,
        log,
        drain_flag,
        hang_flag,
    })
}

fn conf_lines(p: &Program) -> Vec<String> {
    vec![
        format!("HealthCheckProgram={}", p.path.display()),
        format!("HealthCheckInterval={INTERVAL_S}"),
    ]
}

/// Wait until the program has run `n` more times than `from` lines of its log.
fn wait_runs(p: &Program, from: usize, n: usize, timeout: Duration) -> Result<Vec<String>> {
    poll(
        &format!("the health check to run {n} more time(s)"),
        timeout,
        POLL,
        || {
            let l = file_lines(&p.log);
            let new: Vec<String> = l.iter().skip(from).cloned().collect();
            Ok((new.iter().filter(|x| x.starts_with("run ")).count() >= n).then_some(new))
        },
    )
}

/// SMD-125: the health check runs every few seconds as root on the node and leaves the node
/// IDLE while it succeeds; made to fail, it drains the node itself with its reason (slurmd
/// only logs the exit code); the flag removed and the node resumed, it passes again, the node
/// stays IDLE and a job runs. `slurm.conf` is restored.
pub fn drain_and_recover(ctx: &mut Ctx<'_>) -> Result<String> {
    let p = program(ctx)?;
    let change = ConfChange::apply(ctx.cluster, &conf_lines(&p))?;
    let result = (|| {
        let first = wait_runs(&p, 0, 2, Duration::from_secs(60))?;
        let run: Vec<&str> = first[0].split_whitespace().collect();
        if run.get(1) != Some(&ctx.first_node().as_str()) || run.get(2) != Some(&"0") {
            return Err(Error::Scenario(format!(
                "the health check ran as {first:?}: expected on {} as root",
                ctx.first_node()
            )));
        }
        let (state, _) = ctx.state_reason()?;
        if state != "IDLE" {
            return Err(Error::Scenario(format!(
                "the node is {state} while the health check passes"
            )));
        }
        std::fs::write(&p.drain_flag, "").map_err(|e| Error::io(&p.drain_flag, e))?;
        let drained = poll(
            "the health check to drain the node",
            Duration::from_secs(60),
            POLL,
            || {
                let (s, r) = ctx.state_reason()?;
                Ok(
                    (s.contains("DRAIN") && r.contains("xtask_health_check_failed"))
                        .then_some((s, r)),
                )
            },
        );
        std::fs::remove_file(&p.drain_flag).map_err(|e| Error::io(&p.drain_flag, e))?;
        let (dstate, dreason) = drained?;
        let mark = file_lines(&p.log).len();
        ctx.resume_node(Duration::from_secs(30))?;
        wait_runs(&p, mark, 2, Duration::from_secs(60))?;
        let (after, _) = ctx.state_reason()?;
        if after != "IDLE" {
            return Err(Error::Scenario(format!(
                "after recovery the health check passes but the node is {after}"
            )));
        }
        let id = ctx.sbatch("after-health", &["-n1"], "true\n")?;
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
        Ok(format!(
            "HealthCheckInterval={INTERVAL_S}: ran as root on {}, node IDLE; failing, it drained the node ({dstate}, Reason={dreason}); resumed: passes again, IDLE, job {id} COMPLETED",
            ctx.first_node()
        ))
    })();
    let restored = change.restore();
    let done = result?;
    restored?;
    Ok(format!("{done}; slurm.conf restored"))
}

/// Wait (10 s: the group's last members are reaped by their new parent) until no process
/// of group `pgid` is left; an error names each one left with its state and command.
fn group_gone(pgid: u32) -> Result<()> {
    let left = || super::super::procs::processes_where(|_, _, _, g| g == pgid);
    poll(
        &format!("the health check's group {pgid} to be gone"),
        Duration::from_secs(10),
        POLL,
        || Ok(left().is_empty().then_some(())),
    )
    .map_err(|e| {
        let who: Vec<String> = left()
            .iter()
            .map(|p| {
                let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
                format!(
                    "{p}: {}",
                    stat.split(' ').take(5).collect::<Vec<_>>().join(" ")
                )
            })
            .collect();
        Error::Scenario(format!("{e}: left {who:?}"))
    })
}

/// SMD-125, timeout (local: it waits for slurmd's 60 s limit): a health check that drains the
/// node and then hangs is killed by slurmd after 60 s with its process group; slurmd keeps
/// running, the node stays drained with the program's reason until resumed; then a job
/// runs. `slurm.conf` is restored.
pub fn timeout(ctx: &mut Ctx<'_>) -> Result<String> {
    let p = program(ctx)?;
    std::fs::write(&p.hang_flag, "").map_err(|e| Error::io(&p.hang_flag, e))?;
    let change = ConfChange::apply(ctx.cluster, &conf_lines(&p));
    let result = change.and_then(|change| {
        let hung = wait_runs(&p, 0, 1, Duration::from_secs(60))?;
        std::fs::remove_file(&p.hang_flag).map_err(|e| Error::io(&p.hang_flag, e))?;
        let f: Vec<&str> = hung[0].split_whitespace().collect();
        let (pid, pgid): (u32, u32) = match (f.get(3).and_then(|x| x.parse().ok()), f.get(4).and_then(|x| x.parse().ok())) {
            (Some(a), Some(b)) => (a, b),
            _ => return Err(Error::Scenario(format!("health log line {:?}", hung[0]))),
        };
        let t = std::time::Instant::now();
        ctx.wait_gone(&[pid], SLURMD_LIMIT + Duration::from_secs(30))?;
        let killed_after = t.elapsed();
        if killed_after < Duration::from_secs(40) {
            return Err(Error::Scenario(format!(
                "the hanging health check {pid} ended {killed_after:.0?} after it was seen, well before slurmd's {SLURMD_LIMIT:?} limit"
            )));
        }
        group_gone(pgid)?;
        ctx.cluster.check_daemons()?;
        let (state, reason) = ctx.state_reason()?;
        if !state.contains("DRAIN") {
            return Err(Error::Scenario(format!(
                "after the hanging health check: node {state} ({reason}), expected it drained"
            )));
        }
        ctx.resume_node(Duration::from_secs(30))?;
        let id = ctx.sbatch("after-health-timeout", &["-n1"], "true\n")?;
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
        change.restore()?;
        Ok(format!(
            "hanging health check {pid} (group {pgid}) killed {:.0?} after it was seen, no process of its group left; slurmd running; node {state} ({reason}) until resumed; job {id} COMPLETED; slurm.conf restored",
            killed_after
        ))
    });
    driver_common::util::fs::remove_optional(&p.hang_flag)?;
    result
}
