//! A backup slurmctld takes over (SMD-405): `slurm.conf` gets a second `SlurmctldHost`
//! line, `ctld2(127.0.0.2)`, and a second slurmctld of the head's build runs in its own UTS
//! namespace (host name `ctld2`, so it finds itself in that line) with the head's `/run`
//! (its SACK socket is where the head's clients look: they authenticate through whichever
//! controller runs) and the same StateSaveLocation. Both would bind SlurmctldPort on every
//! address; `CommunicationParameters=NoCtldInAddrAny` makes each bind the address its host
//! name resolves to (src/common/slurm_protocol_api.c `slurm_setup_addr`, Slurm 24.11.5:
//! `gethostname()` then `getaddrinfo()`), so both need their names resolved whatever this
//! machine's `/etc/hosts` says (a fresh Debian chroot's names neither the machine nor
//! `ctld2`; Debian's installer maps the machine to 127.0.1.1, where no client looks). The
//! scenario writes one `/etc/hosts` that puts this machine's short name on 127.0.0.1 (its
//! `SlurmctldHost` address) and `ctld2` on 127.0.0.2, before the system's other lines,
//! and bind-mounts it in the head's namespace (the primary, the clients) and the backup's.
//! The backup also gets a pid directory of its own (one host per controller in a real
//! cluster).
//!
//! The primary is stopped while a job runs: the backup must say it takes over, keep the
//! job, run new work (a step on every node, a batch job that is accounted), take a slurmd
//! that registers anew (a restarted node), and see the running job complete; when the
//! primary starts again the backup gives control back and the primary knows every job.

use super::super::daemon::Daemon;
use super::super::procs::{self, Isolation, NodeMount, ProcRecord};
use super::client::{Ctx, JOB_TIMEOUT, LogMark, POLL, hold_until};
use super::reconf::{self, Change};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::{poll, run_bounded};
use std::time::Duration;
use xshell::cmd;

const BACKUP_HOST: &str = "ctld2";
const BACKUP_ADDR: &str = "127.0.0.2";
/// The primary's address: `SlurmctldHost=<this machine's short name>(127.0.0.1)`.
const PRIMARY_ADDR: &str = "127.0.0.1";
/// The record name of the backup slurmctld (its log is `log/slurmctld-backup.log`).
const BACKUP: &str = "slurmctld-backup";
/// How long the backup waits for an unresponsive primary (slurm.conf's default: 120 s).
const SLURMCTLD_TIMEOUT: u64 = 6;

/// `scontrol ping`: (primary up, backup up).
fn ping(ctx: &Ctx<'_>) -> Result<(bool, bool)> {
    let out = ctx.run("scontrol", &["ping"])?;
    let text = String::from_utf8_lossy(&out.stdout);
    let up = |role: &str| {
        text.lines()
            .any(|l| l.contains(&format!("Slurmctld({role})")) && l.contains("is UP"))
    };
    Ok((up("primary"), up("backup")))
}

fn wait_ping(ctx: &Ctx<'_>, want: (bool, bool), what: &str) -> Result<()> {
    let mut last = None;
    poll(what, Duration::from_secs(90), POLL, || {
        let p = ping(ctx)?;
        last = Some(p);
        Ok((p == want).then_some(()))
    })
    .map_err(|e| Error::Scenario(format!("{e}; last (primary up, backup up): {last:?}")))
}

/// Start the backup slurmctld, recorded like the cluster's daemons (so `down` stops it).
fn start_backup(ctx: &mut Ctx<'_>) -> Result<ProcRecord> {
    let l = ctx.cluster.layout();
    let dir = l.root.join(BACKUP_HOST);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let hosts = hosts_path(ctx);
    // Its own pid directory: slurmctld kills the process its SlurmctldPidFile names when
    // it starts ("killing old slurmctld"), which would be the primary.
    let pids = dir.join("pid");
    std::fs::create_dir_all(&pids).map_err(|e| Error::io(&pids, e))?;
    let iso = Isolation::node(&l.run(), BACKUP_HOST)?
        .with_bind(&hosts, std::path::Path::new("/etc/hosts"))?
        .with_bind(&pids, &l.pids())?;
    let sbin = ctx.cluster.state.prefix.join("sbin");
    let conf = l.conf();
    let sh = ctx.sh;
    let log = l.daemon_log(BACKUP);
    let mut c = std::process::Command::from(cmd!(sh, "{sbin}/slurmctld -D -i -f {conf} -L {log}"));
    c.env("SLURM_CONF", &conf).current_dir(l.logs());
    super::super::config::set_emulation_log(&mut c, &l);
    let rec = procs::spawn_detached(BACKUP, c, Some(&iso), &l.daemon_output(BACKUP))?;
    ctx.cluster.state.record(rec.clone())?;
    Ok(rec)
}

fn hosts_path(ctx: &Ctx<'_>) -> std::path::PathBuf {
    ctx.cluster.layout().root.join(BACKUP_HOST).join("hosts")
}

/// An `/etc/hosts` text: each `(address, name)` on a line of its own first, then the lines of
/// `system` without those names (a line left with only its address is dropped), so a
/// lookup of one of the names finds only its address.
fn hosts_text(system: &str, names: &[(&str, &str)]) -> String {
    let ours = |w: &str| names.iter().any(|(_, n)| n.eq_ignore_ascii_case(w));
    let mut text: String = names.iter().map(|(a, n)| format!("{a} {n}\n")).collect();
    for line in system.lines() {
        let (entry, comment) = line.split_once('#').unwrap_or((line, ""));
        let mut words = entry.split_whitespace();
        let Some(addr) = words.next() else {
            text.push_str(line);
            text.push('\n');
            continue;
        };
        let kept: Vec<&str> = words.filter(|w| !ours(w)).collect();
        if !kept.is_empty() {
            let comment = if comment.is_empty() {
                String::new()
            } else {
                format!(" #{comment}")
            };
            text.push_str(&format!("{addr} {}{comment}\n", kept.join(" ")));
        }
    }
    text
}

/// Write the controllers' `/etc/hosts` (see the module doc) and mount it in the head's
/// namespace from the next start of slurmctld and of every client on.
fn name_the_controllers(ctx: &mut Ctx<'_>) -> Result<()> {
    let hosts = hosts_path(ctx);
    if let Some(dir) = hosts.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let system = driver_common::util::fs::read_optional(std::path::Path::new("/etc/hosts"))?;
    let primary = ctx.cluster.state.hostname.clone();
    let text = hosts_text(
        system.as_deref().unwrap_or(""),
        &[(PRIMARY_ADDR, &primary), (BACKUP_ADDR, BACKUP_HOST)],
    );
    driver_common::util::fs::write_atomic(&hosts, text.as_bytes(), 0o644)?;
    ctx.cluster.set_head_mounts(&[NodeMount::Bind {
        source: hosts,
        target: "/etc/hosts".into(),
    }])
}

fn backup_log(ctx: &Ctx<'_>) -> String {
    std::fs::read_to_string(ctx.cluster.layout().daemon_log(BACKUP)).unwrap_or_default()
}

pub fn backup_takes_over(ctx: &mut Ctx<'_>) -> Result<String> {
    with_backup_controller(ctx, takeover)
}

/// `body` with a backup controller configured (the change of the module doc, the names in
/// `/etc/hosts`); whatever it gave, the primary is back (control given back), the backup
/// stopped and forgotten, and the head's later starts see the system's `/etc/hosts`.
fn with_backup_controller(
    ctx: &mut Ctx<'_>,
    body: fn(&mut Ctx<'_>) -> Result<String>,
) -> Result<String> {
    let change = Change {
        lines: vec![
            format!("SlurmctldHost={BACKUP_HOST}({BACKUP_ADDR})"),
            "CommunicationParameters=NoCtldInAddrAny".into(),
            format!("SlurmctldTimeout={SLURMCTLD_TIMEOUT}"),
        ],
        restart: Change::controller_and_nodes(ctx),
        ..Change::default()
    };
    name_the_controllers(ctx)?;
    let result = reconf::with_change(ctx, &change, |ctx| {
        let result = body(ctx);
        if !ctx.cluster.is_running(Daemon::Slurmctld) {
            match ctx.cluster.start(ctx.sh, Daemon::Slurmctld) {
                Ok(()) => {
                    if let Err(e) = wait_ping(ctx, (true, true), "the backup to give control back")
                    {
                        println!("  failover: failing back: {e}");
                    }
                }
                Err(e) => println!("  failover: restarting the primary: {e}"),
            }
        }
        let stop = ctx
            .cluster
            .state
            .daemon(BACKUP)
            .cloned()
            .map(|rec| rec.stop(super::super::handle::STOP_GRACE))
            .transpose()
            .and_then(|_| ctx.cluster.forget(BACKUP));
        let detail = result?;
        stop?;
        Ok(detail)
    });
    // The head's later starts see the system's /etc/hosts again (the daemons restarted by
    // the change's undo keep this one until their next start).
    ctx.cluster.set_head_mounts(&[])?;
    result
}

fn takeover(ctx: &mut Ctx<'_>) -> Result<String> {
    start_backup(ctx)?;
    wait_ping(ctx, (true, true), "the backup slurmctld to stand by")?;
    let go = ctx.path("go");
    let body = hold_until(&go, "echo survived\n");
    let running = ctx.sbatch("across-failover", &["-n1"], &body)?;
    ctx.wait_state(running, &["RUNNING"], JOB_TIMEOUT)?;
    ctx.cluster.stop(Daemon::Slurmctld)?;
    wait_ping(ctx, (false, true), "the primary to be seen down")?;
    poll(
        "the backup to log that it takes over",
        Duration::from_secs(60),
        POLL,
        || Ok(backup_log(ctx).contains("taking over").then_some(())),
    )?;
    ctx.expect_state(running, "RUNNING", "under the backup controller")?;
    let under = work_under_backup(ctx)?;
    std::fs::write(&go, "").map_err(|e| Error::io(&go, e))?;
    ctx.wait_state(running, &["COMPLETED"], JOB_TIMEOUT)?;
    let acct = ctx.acct_final(under.batch, JOB_TIMEOUT)?;
    let by_primary = fail_back(ctx, running, under.batch)?;
    Ok(format!(
        "backup {BACKUP_HOST}({BACKUP_ADDR}) took over from the stopped primary; job {running} kept running and COMPLETED; srun ran on {}; {} re-registered; batch job {} {} (AllocTRES {}); primary back, backup standing by; {by_primary}",
        under.hosts.join(","),
        under.node,
        under.batch,
        acct.state,
        acct.alloc_tres
    ))
}

/// `scontrol takeover` with both controllers up (the PoC's SMD-405 saw the old primary abort
/// on its shutdown, D27, on Ubuntu): the backup takes control, and the old primary, which does
/// not resume backup mode (24.11.5 `src/slurmctld/controller.c`: "primary controller doesn't
/// resume backup mode"), must exit with status 0; a job then runs under the backup. The
/// primary is restarted after, and takes control back.
pub fn requested_takeover(ctx: &mut Ctx<'_>) -> Result<String> {
    with_backup_controller(ctx, takeover_on_request)
}

fn takeover_on_request(ctx: &mut Ctx<'_>) -> Result<String> {
    start_backup(ctx)?;
    wait_ping(ctx, (true, true), "the backup slurmctld to stand by")?;
    let pid = ctx
        .cluster
        .record(Daemon::Slurmctld)
        .map(|r| r.pid)
        .ok_or_else(|| Error::Scenario("the primary slurmctld is not recorded".into()))?;
    let output = LogMark::take(&ctx.cluster.output(Daemon::Slurmctld));
    let log = LogMark::take(&ctx.cluster.log(Daemon::Slurmctld));
    let asked = std::time::Instant::now();
    let out = ctx.run("scontrol", &["takeover"])?;
    if !out.status.success() {
        return Err(Error::Scenario(format!(
            "scontrol takeover: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    poll(
        "the old primary to exit",
        Duration::from_secs(60),
        POLL,
        || Ok((!ctx.cluster.is_running(Daemon::Slurmctld)).then_some(())),
    )?;
    let exited = asked.elapsed();
    let ended = procs::how_it_ended(pid)
        .unwrap_or_else(|| "an unknown status (not a child of this harness)".to_string());
    if ended != "exit status 0" {
        let tail: Vec<String> = log
            .added()
            .lines()
            .rev()
            .take(8)
            .map(str::to_string)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(Error::Scenario(format!(
            "after `scontrol takeover` the old primary ended with {ended} in {:.1} s (PoC D27); its stderr: {:?}; its log's last lines:\n{}",
            exited.as_secs_f64(),
            output.added().trim(),
            tail.join("\n")
        )));
    }
    wait_ping(
        ctx,
        (false, true),
        "the backup in control, the primary down",
    )?;
    let step = ctx.srun_stdout(
        "srun under the backup",
        &["-N1", "/bin/sh", "-c", "echo ok"],
    )?;
    if step.trim() != "ok" {
        return Err(Error::Scenario(format!(
            "srun under the backup printed {step:?}"
        )));
    }
    Ok(format!(
        "scontrol takeover: the old primary exited with {ended} {:.1} s after the request; srun ran under the backup",
        exited.as_secs_f64()
    ))
}

/// What ran under the backup controller.
struct UnderBackup {
    /// The hosts of a step on every node.
    hosts: Vec<String>,
    /// The node whose slurmd registered anew with the backup.
    node: String,
    /// A batch job on that node, completed.
    batch: u32,
}

/// Under the backup: a step on every node, a node's slurmd registering anew (restarted:
/// the primary is down), a batch job on it.
fn work_under_backup(ctx: &mut Ctx<'_>) -> Result<UnderBackup> {
    let n = ctx.cluster.nodes().len().to_string();
    let step = ctx.srun_stdout(
        "srun under the backup",
        &["-N", &n, "--ntasks-per-node=1", "/bin/sh", "-c", "hostname"],
    )?;
    let mut hosts: Vec<String> = step.lines().map(str::to_string).collect();
    hosts.sort();
    if hosts != ctx.hostnames() {
        return Err(Error::Scenario(format!(
            "srun -N{n} under the backup ran on {hosts:?}, expected {:?}",
            ctx.hostnames()
        )));
    }
    let last = ctx.cluster.nodes().len() - 1;
    let node = ctx.cluster.nodes()[last].name.clone();
    ctx.cluster.restart(ctx.sh, Daemon::Slurmd(last))?;
    let batch = ctx.sbatch("under-backup", &["-N1", "-w", &node], "echo batch-ok\n")?;
    ctx.wait_state(batch, &["COMPLETED"], JOB_TIMEOUT)?;
    Ok(UnderBackup { hosts, node, batch })
}

/// The primary comes back: the backup relinquishes, the primary knows the jobs (the job
/// that ran across the failover wrote its line). How the primary knows the backup's job.
fn fail_back(ctx: &mut Ctx<'_>, running: u32, batch: u32) -> Result<&'static str> {
    ctx.cluster.start(ctx.sh, Daemon::Slurmctld)?;
    wait_ping(ctx, (true, true), "the backup to give control back")?;
    let mut check = ctx.tool("scontrol");
    check.args(["show", "job", &batch.to_string()]);
    let known = run_bounded(check, super::client::CLIENT_TIMEOUT)?;
    let known_state = ctx.job_state(running)?;
    let out = ctx.wait_lines(&ctx.path("across-failover.out"), 1, JOB_TIMEOUT)?;
    if out != ["survived"] || known_state != "COMPLETED" {
        return Err(Error::Scenario(format!(
            "after failing back: job {running} is {known_state} and wrote {out:?}"
        )));
    }
    Ok(if known.status.success() {
        "the primary knows the backup's job"
    } else {
        "the backup's job already purged from the primary (MinJobAge), sacct has it"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_text__each_name_only_on_its_address() {
        // Debian's installer puts the machine on 127.0.1.1; this machine lists it on 127.0.0.1.
        let system = "127.0.0.1\tlocalhost VM\n127.0.1.1 vm.example.org vm # installer\n\
                      # a comment\n\n::1 localhost ip6-localhost\n127.0.0.2 ctld2\n";
        let text = hosts_text(system, &[("127.0.0.1", "vm"), ("127.0.0.2", "ctld2")]);
        assert_eq!(
            text,
            "127.0.0.1 vm\n127.0.0.2 ctld2\n127.0.0.1 localhost\n\
             127.0.1.1 vm.example.org # installer\n# a comment\n\n::1 localhost ip6-localhost\n"
        );
        let lookup = |name: &str| -> Vec<&str> {
            text.lines()
                .filter(|l| {
                    l.split('#')
                        .next()
                        .unwrap()
                        .split_whitespace()
                        .skip(1)
                        .any(|w| w == name)
                })
                .map(|l| l.split_whitespace().next().unwrap())
                .collect()
        };
        assert_eq!(lookup("vm"), ["127.0.0.1"]);
        assert_eq!(lookup("ctld2"), ["127.0.0.2"]);
        assert_eq!(lookup("localhost"), ["127.0.0.1", "::1"]);
    }

    #[test]
    fn hosts_text__empty_system_file() {
        assert_eq!(
            hosts_text("", &[("127.0.0.1", "h"), ("127.0.0.2", "ctld2")]),
            "127.0.0.1 h\n127.0.0.2 ctld2\n"
        );
    }
}
