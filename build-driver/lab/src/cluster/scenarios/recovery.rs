//! Daemon recovery (SMD-009, 010, 013): a slurmd killed with SIGKILL during jobs, a
//! controller that hangs for a minute (idle and during a job), and a slurmd started on a
//! spool and SACK directory left stale.

use super::super::daemon::Daemon;
use super::super::procs::Liveness;
use super::client::{Ctx, JOB_TIMEOUT, LogMark, POLL, q};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use driver_common::util::signal::process_exists;
use nix::sys::signal::Signal;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long the controller stays stopped (SMD-010: "unreachable for 60 s").
const OUTAGE: Duration = Duration::from_secs(60);

/// A batch job that writes its shell's and its child's PIDs to `pids` and waits for `go`.
fn waiting_job(ctx: &mut Ctx<'_>, stem: &str) -> Result<(u32, Vec<u32>, std::path::PathBuf)> {
    let (pids, go) = (
        ctx.path(&format!("{stem}.pids")),
        ctx.path(&format!("{stem}.go")),
    );
    let body = format!(
        "sleep 600 & child=$!\n\
         echo $$ > {p}.tmp; echo $child >> {p}.tmp; mv {p}.tmp {p}\n\
         while [ ! -e {go} ]; do sleep 0.2; done\n\
         kill $child\n\
         echo finished\n",
        p = q(&pids),
        go = q(&go)
    );
    let id = ctx.sbatch(stem, &["-n1"], &body)?;
    ctx.wait_state(id, &["RUNNING"], JOB_TIMEOUT)?;
    let p = ctx.wait_pids(&pids, 2)?;
    Ok((id, p, go))
}

/// Spool entries that belong to job `id` (its batch directory `job000NN`, its step sockets
/// `<node>_<id>.<step>`).
fn spool_entries_of(spool: &Path, id: u32) -> Vec<String> {
    let batch = format!("job{id:05}");
    let step = format!("_{id}.");
    std::fs::read_dir(spool)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| *n == batch || n.contains(&step))
                .collect()
        })
        .unwrap_or_default()
}

/// SMD-009: slurmd is killed with SIGKILL while two batch jobs run. Their processes keep
/// running without it (slurmstepd is their parent); restarted, the node comes back with both
/// jobs RUNNING; one then completes, the other is cancelled: both end in that state in
/// slurmctld and sacct, every job process is gone, their spool entries are removed, and a new
/// step runs.
pub fn slurmd_sigkill(ctx: &mut Ctx<'_>) -> Result<String> {
    let (done_id, done_pids, go) = waiting_job(ctx, "survivor")?;
    let (cancel_id, cancel_pids, _) = waiting_job(ctx, "cancelled")?;
    let old = ctx.slurmd_record()?;
    ctx.cluster.kill(Daemon::Slurmd(0), Signal::SIGKILL)?;
    if !old.wait_gone(Duration::from_secs(20)) {
        return Err(Error::Scenario(format!(
            "slurmd {} still runs 20 s after SIGKILL",
            old.pid
        )));
    }
    let all: Vec<u32> = done_pids.iter().chain(&cancel_pids).copied().collect();
    if let Some(p) = all.iter().find(|&&p| !process_exists(p)) {
        return Err(Error::Scenario(format!(
            "job process {p} died with slurmd (SIGKILL)"
        )));
    }
    ctx.cluster.start(ctx.sh, Daemon::Slurmd(0))?;
    let new_pid = ctx.cluster.record(Daemon::Slurmd(0)).map(|d| d.pid);
    for id in [done_id, cancel_id] {
        let state = ctx.job_state(id)?;
        if state != "RUNNING" {
            return Err(Error::Scenario(format!(
                "job {id} is {state} after slurmd was killed and restarted (expected RUNNING)"
            )));
        }
    }
    std::fs::write(&go, "").map_err(|e| Error::io(&go, e))?;
    ctx.read("scancel", &[&cancel_id.to_string()])?;
    ctx.wait_state(done_id, &["COMPLETED"], JOB_TIMEOUT)?;
    ctx.wait_state(cancel_id, &["CANCELLED"], JOB_TIMEOUT)?;
    let (a, b) = (
        ctx.acct_final(done_id, JOB_TIMEOUT)?,
        ctx.acct_final(cancel_id, JOB_TIMEOUT)?,
    );
    if (a.state.as_str(), a.exit_code.as_str()) != ("COMPLETED", "0:0") || b.state != "CANCELLED" {
        return Err(Error::Scenario(format!(
            "sacct: job {done_id} {} {}, job {cancel_id} {} {} (expected COMPLETED 0:0, CANCELLED)",
            a.state, a.exit_code, b.state, b.exit_code
        )));
    }
    let out = ctx.wait_lines(&ctx.path("survivor.out"), 1, JOB_TIMEOUT)?;
    if out != ["finished"] {
        return Err(Error::Scenario(format!("job {done_id} wrote {out:?}")));
    }
    ctx.wait_gone(&all, Duration::from_secs(30))?;
    ctx.wait_no_job_processes(Duration::from_secs(30))?;
    let spool = ctx.cluster.layout().node_spool(&ctx.first_node());
    let stale: Vec<String> = [done_id, cancel_id]
        .iter()
        .flat_map(|&id| spool_entries_of(&spool, id))
        .collect();
    if !stale.is_empty() {
        return Err(Error::Scenario(format!(
            "{} still holds {stale:?} after both jobs ended",
            spool.display()
        )));
    }
    ctx.wait_node_idle(Duration::from_secs(30))?;
    ctx.srun_expect(&["-N1", "/bin/echo", "after-sigkill"], "after-sigkill")?;
    Ok(format!(
        "slurmd {} SIGKILLed with jobs {done_id} and {cancel_id} running; their processes {all:?} kept running; slurmd {new_pid:?} restarted: both RUNNING, then COMPLETED 0:0 and CANCELLED (sacct too); no job process or spool entry left; srun ran",
        old.pid
    ))
}

/// slurmctld stopped (SIGSTOP) for [`OUTAGE`], then continued; slurmd must stay up with the
/// same PID throughout. Returns how long the node took to be idle again afterwards.
fn outage(ctx: &mut Ctx<'_>, during: impl FnOnce(&Ctx<'_>) -> Result<()>) -> Result<Duration> {
    let slurmd = ctx.slurmd_record()?;
    ctx.cluster.pause(Daemon::Slurmctld)?;
    let t = Instant::now();
    let result = (|| {
        during(ctx)?;
        while t.elapsed() < OUTAGE {
            if slurmd.liveness() != Liveness::Running {
                return Err(ctx.cluster.check_daemons().err().unwrap_or_else(|| {
                    Error::Scenario(format!(
                        "slurmd {} stopped while slurmctld was unreachable",
                        slurmd.pid
                    ))
                }));
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        Ok(())
    })();
    ctx.cluster.resume(Daemon::Slurmctld)?;
    result?;
    let back = Instant::now();
    ctx.wait_node_idle(Duration::from_secs(120))?;
    let now = ctx.cluster.record(Daemon::Slurmd(0)).map(|d| d.pid);
    if now != Some(slurmd.pid) || slurmd.liveness() != Liveness::Running {
        return Err(Error::Scenario(format!(
            "slurmd {} was replaced ({now:?}) during the controller outage",
            slurmd.pid
        )));
    }
    Ok(back.elapsed())
}

/// SMD-010: the controller unreachable for 60 s (slurmctld stopped with SIGSTOP, then
/// SIGCONT), once while idle and once while a job runs and ends during the outage: slurmd
/// keeps running with the same PID, the node is usable again afterwards, the job's end
/// reaches slurmctld and sacct (COMPLETED 0:0), and a new step runs.
pub fn controller_pause(ctx: &mut Ctx<'_>) -> Result<String> {
    let idle = outage(ctx, |_| Ok(()))?;
    ctx.srun_expect(
        &["-N1", "/bin/echo", "after-idle-outage"],
        "after-idle-outage",
    )?;
    let (id, pids, go) = waiting_job(ctx, "through-outage")?;
    let busy = outage(ctx, |ctx| {
        // The job ends while slurmctld cannot hear about it.
        std::fs::write(&go, "").map_err(|e| Error::io(&go, e))?;
        ctx.wait_gone(&pids, Duration::from_secs(30))
    })?;
    let state = ctx.wait_state(id, &["COMPLETED"], Duration::from_secs(120))?;
    let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
    if acct.exit_code != "0:0" {
        return Err(Error::Scenario(format!(
            "job {id}: sacct {} {}, expected COMPLETED 0:0",
            acct.state, acct.exit_code
        )));
    }
    ctx.srun_expect(
        &["-N1", "/bin/echo", "after-busy-outage"],
        "after-busy-outage",
    )?;
    Ok(format!(
        "two {}-s controller outages: idle (node usable {:.1?} after SIGCONT), and with job {id} ending inside it (node usable {:.1?} after, job {state}, sacct 0:0); slurmd kept its PID; srun ran after each",
        OUTAGE.as_secs(),
        idle,
        busy
    ))
}

/// A UNIX socket file nobody listens on (a daemon killed before it could unlink it).
fn stale_socket(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    driver_common::util::fs::remove_optional(path)?;
    let l = std::os::unix::net::UnixListener::bind(path).map_err(|e| Error::io(path, e))?;
    drop(l);
    Ok(())
}

/// Set a file's modification time `age` into the past.
fn age_file(path: &Path, age: Duration) -> Result<()> {
    use nix::sys::stat::{UtimensatFlags, utimensat};
    use nix::sys::time::TimeSpec;
    let then = std::time::SystemTime::now()
        .checked_sub(age)
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .ok_or_else(|| Error::Scenario("the clock is before 1970".into()))?;
    let ts = TimeSpec::from_duration(then);
    utimensat(
        nix::fcntl::AT_FDCWD,
        path,
        &ts,
        &ts,
        UtimensatFlags::NoFollowSymlink,
    )
    .map_err(|e| Error::io(path, std::io::Error::from(e)))
}

/// Whether something listens on the UNIX socket `path` (a stale one refuses: ECONNREFUSED;
/// an inode number cannot tell, the filesystem reuses a freed one at once).
fn listening(path: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(path).is_ok()
}

/// Stop slurmd, leave a stale SACK socket (and whatever `plant` leaves), start it again
/// (with `args`); the SACK socket must be a new one and a client on the node must
/// authenticate through it. Returns the log lines the start wrote.
fn restart_on_stale(
    ctx: &mut Ctx<'_>,
    args: &[&str],
    plant: impl FnOnce() -> Result<()>,
) -> Result<String> {
    let node = ctx.first_node();
    let sack = ctx.cluster.layout().node_sack_socket(&node);
    ctx.cluster.stop(Daemon::Slurmd(0))?;
    plant()?;
    stale_socket(&sack)?;
    if listening(&sack) {
        return Err(Error::Scenario(format!(
            "{}: the planted stale SACK socket accepts connections",
            sack.display()
        )));
    }
    let log = ctx.cluster.log(Daemon::Slurmd(0));
    let mark = LogMark::take(&log);
    ctx.cluster.set_slurmd_args(0, args)?;
    let started = ctx.cluster.start(ctx.sh, Daemon::Slurmd(0));
    ctx.cluster.set_slurmd_args(0, &[])?;
    started?;
    if !listening(&sack) {
        return Err(Error::Scenario(format!(
            "{}: slurmd started but nobody listens on the SACK socket (the stale one was not replaced)",
            sack.display()
        )));
    }
    let mut c = ctx.cluster.tool_on(0, "scontrol")?;
    c.args(["show", "node", &node]);
    driver_common::util::process::bounded::read_bounded(c, super::client::CLIENT_TIMEOUT)
        .map_err(|e| e.context("a client on the node, through the new SACK socket"))?;
    ctx.srun_expect(&["-N1", "/bin/echo", "fresh-state"], "fresh-state")?;
    Ok(mark.added())
}

/// SMD-013: slurmd restarted on stale state, in two phases as the proof of concept did.
/// A: a normal start on a corrupt `cred_state`, a step socket of a step that died 11 minutes
/// ago and a SACK socket nobody listens on: slurmd starts and says the credential state is
/// bad, unlinks the dead step's socket (slurmd does so for sockets older than 10 minutes that
/// refuse connections: src/common/stepd_api.c), replaces the SACK socket (clients
/// authenticate), runs a step and then saves a valid `cred_state`. B: a clean start (`-c`)
/// on a vestigial batch directory `job99999` and a stale SACK socket: the directory is
/// purged (only `-c` does that, src/slurmd/slurmd/slurmd.c) and the SACK socket replaced.
pub fn stale_spool(ctx: &mut Ctx<'_>) -> Result<String> {
    let node = ctx.first_node();
    let spool = ctx.cluster.layout().node_spool(&node);
    let cred = spool.join("cred_state");
    let garbage: Vec<u8> = b"not a credential state \xff\x00\x13"
        .iter()
        .copied()
        .cycle()
        .take(200)
        .collect();
    let step_sock = spool.join(format!("{node}_99999.0"));
    let log_a = restart_on_stale(ctx, &[], || {
        driver_common::util::fs::write_atomic(&cred, &garbage, 0o600)?;
        stale_socket(&step_sock)?;
        age_file(&step_sock, Duration::from_secs(11 * 60))
    })?;
    let cred_line = log_a
        .lines()
        .find(|l| l.contains("cred") && (l.contains("error") || l.contains("warning")))
        .map(|l| l.trim().to_string())
        .ok_or_else(|| {
            Error::Scenario(format!(
                "slurmd started on a corrupt cred_state and logged nothing about it:\n{}",
                log_a.lines().take(40).collect::<Vec<_>>().join("\n")
            ))
        })?;
    if step_sock.exists() {
        return Err(Error::Scenario(format!(
            "{} (a dead step's socket, 11 minutes old) is still there",
            step_sock.display()
        )));
    }
    // A successful step launch saves the credential state (src/slurmd/slurmd/req.c).
    let rewritten = poll(
        "slurmd to save a new cred_state",
        Duration::from_secs(30),
        POLL,
        || {
            Ok(std::fs::read(&cred)
                .ok()
                .filter(|b| *b != garbage && !b.is_empty()))
        },
    )?;
    let vestigial = spool.join("job99999");
    let log_b = restart_on_stale(ctx, &["-c"], || {
        std::fs::create_dir_all(&vestigial).map_err(|e| Error::io(&vestigial, e))?;
        driver_common::util::fs::write_atomic(
            &vestigial.join("slurm_script"),
            b"#!/bin/sh\necho stale\n",
            0o700,
        )
    })?;
    let purged = log_b
        .lines()
        .find(|l| l.contains("Purging vestigial job script") && l.contains("job99999"))
        .map(|l| l.trim().to_string());
    if vestigial.exists() || purged.is_none() {
        return Err(Error::Scenario(format!(
            "clean start: {} exists: {}, purge logged: {purged:?}",
            vestigial.display(),
            vestigial.exists()
        )));
    }
    ctx.wait_node_idle(Duration::from_secs(30))?;
    Ok(format!(
        "A: corrupt cred_state ({cred_line:?}), dead step socket unlinked, stale SACK socket (refusing connections) replaced by a listening one, srun ran, cred_state rewritten ({} bytes); B: clean start purged job99999, SACK socket listening again, srun ran",
        rewritten.len()
    ))
}
