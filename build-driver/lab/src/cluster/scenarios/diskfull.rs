//! A full disk under slurmd (SMD-113), on tiny file systems of the node's own (a tmpfs with
//! `size=` in its mount namespace, node_view.rs), never the machine's disk:
//!
//! - the spool directory full: a batch launch cannot write the job's script
//!   (src/slurmd/slurmstepd/mgr.c `_make_batch_script`), slurmctld drains the node with a
//!   reason and requeues the job; once space is freed and the node resumed, a job runs;
//! - the log directory full: slurmd cannot write its log and keeps running; jobs run; once
//!   space is freed its lines appear again;
//! - the log full from slurmd's start (its log file is `/dev/full`): the first registration
//!   counts as done. Its reply path writes a debug line, whose failed write leaves `errno`
//!   at `ENOSPC` after a successful RPC; Slurm's `send_registration_msg` read `errno` as the
//!   result and registered again (patch 0066).
//!
//! The tmpfs is seen from outside through `/proc/<slurmd pid>/root` (it exists only in
//! slurmd's namespace).

use super::super::daemon::Daemon;
use super::super::handle::NodeMount;
use super::client::{Ctx, JOB_TIMEOUT, LogMark, POLL};
use super::node_view::with_node_mounts;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Sizes of the tiny file systems (kB).
const SPOOL_KB: u64 = 512;
const LOG_KB: u64 = 512;

/// Write zeros into `path` until the file system is full; returns the bytes written.
fn fill(path: &Path) -> Result<u64> {
    let mut f = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let block = vec![0u8; 4096];
    let mut n = 0u64;
    loop {
        match f.write(&block) {
            Ok(0) => break,
            Ok(k) => n += k as u64,
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    // What is left after the page-sized writes: fill it to the last byte.
    loop {
        match f.write(&block[..1]) {
            Ok(1) => n += 1,
            Ok(_) => break,
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(n)
}

/// `path` inside node 1's slurmd's mount namespace.
fn in_slurmd(ctx: &Ctx<'_>, path: &Path) -> PathBuf {
    ctx.cluster.seen_by(Daemon::Slurmd(0), path)
}

/// SMD-113, spool: slurmd runs on a 512 kB spool that is then filled. A batch job's launch
/// fails (its script cannot be written): the node drains with a reason, the job is requeued
/// and its payload never runs, slurmd keeps running. Space freed, the node resumed and the
/// job released, it runs to COMPLETED.
pub fn spool_full(ctx: &mut Ctx<'_>) -> Result<String> {
    let spool = ctx.cluster.layout().node_spool(&ctx.first_node());
    let mounts = [NodeMount::Tmpfs {
        target: spool.clone(),
        size_kb: SPOOL_KB,
    }];
    with_node_mounts(ctx, &mounts, |ctx| {
        let filler = in_slurmd(ctx, &spool.join("filler"));
        let filled = fill(&filler)?;
        let marker = ctx.path("spool-full-ran");
        let id = ctx.sbatch(
            "spool-full",
            &["-n1"],
            &format!("touch {}\n", super::client::q(&marker)),
        )?;
        let (state, reason) = ctx.wait_drained("")?;
        let job_state = ctx.job_state(id)?;
        if marker.exists() {
            return Err(Error::Scenario(format!(
                "job {id}: its payload ran although the spool was full"
            )));
        }
        ctx.cluster.check_daemons()?;
        std::fs::remove_file(&filler).map_err(|e| Error::io(&filler, e))?;
        ctx.resume_node(Duration::from_secs(60))?;
        // A requeued job is held after a launch failure: release it. Its begin time was also
        // put past the credential's lifetime (120 s by default; src/slurmctld/job_mgr.c,
        // batch_requeue_fini(), 24.11.5): bring it back to now.
        ctx.read("scontrol", &["release", &id.to_string()])?;
        let job = format!("JobId={id}");
        ctx.read("scontrol", &["update", &job, "StartTime=now"])?;
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
        if !marker.exists() {
            return Err(Error::Scenario(format!(
                "job {id} COMPLETED after recovery but its payload did not run"
            )));
        }
        Ok(format!(
            "spool tmpfs of {SPOOL_KB} kB filled ({filled} bytes): job {id} did not run, node {state} Reason={reason:?}, job {job_state}; slurmd kept running; space freed, node resumed, job {id} released and COMPLETED"
        ))
    })
}

/// SMD-113, logs: slurmd runs with its log directory on a 512 kB tmpfs, which is then
/// filled: slurmd keeps running and a job runs (its lines are lost, nothing else). Space
/// freed, slurmd logs again (the next job's lines appear).
pub fn log_full(ctx: &mut Ctx<'_>) -> Result<String> {
    let logs = ctx.cluster.layout().logs();
    let log = ctx.cluster.log(Daemon::Slurmd(0));
    let mounts = [NodeMount::Tmpfs {
        target: logs.clone(),
        size_kb: LOG_KB,
    }];
    with_node_mounts(ctx, &mounts, |ctx| {
        let inner_log = in_slurmd(ctx, &log);
        let filler = in_slurmd(ctx, &logs.join("filler"));
        let filled = fill(&filler)?;
        let size_full = std::fs::metadata(&inner_log).map(|m| m.len()).unwrap_or(0);
        let a = ctx.sbatch("log-full", &["-n1"], "echo ran\n")?;
        ctx.wait_state(a, &["COMPLETED"], JOB_TIMEOUT)?;
        ctx.srun_expect(&["-N1", "/bin/echo", "log-full"], "log-full")?;
        ctx.cluster.check_daemons()?;
        // The node must become usable (IDLE, nothing allocated) with its log still full.
        ctx.wait_node_idle(Duration::from_secs(30))
            .map_err(|e| e.context("with its log directory full"))?;
        let size_after = std::fs::metadata(&inner_log).map(|m| m.len()).unwrap_or(0);
        std::fs::remove_file(&filler).map_err(|e| Error::io(&filler, e))?;
        let b = ctx.sbatch("log-freed", &["-n1"], "echo ran\n")?;
        ctx.wait_state(b, &["COMPLETED"], JOB_TIMEOUT)?;
        let text = poll(
            "slurmd to log job lines again after the space was freed",
            Duration::from_secs(30),
            POLL,
            || {
                let text = std::fs::read(&inner_log)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                Ok(super::reconfigure::mentions_job(&text, b).then_some(text))
            },
        )?;
        let lost_a = !super::reconfigure::mentions_job(&text, a);
        Ok(format!(
            "log tmpfs of {LOG_KB} kB filled ({filled} bytes; log {size_full} -> {size_after} bytes while full): slurmd kept running, node IDLE, job {a} COMPLETED (its lines lost: {lost_a}), srun ran; space freed: job {b} logged again ({} bytes)",
            text.len()
        ))
    })
}

/// A file whose every write fails with `ENOSPC` (Linux's full(4)): a log on a full disk.
const FULL_DEVICE: &str = "/dev/full";
/// What slurmd prints when it took its registration for failed.
const REGISTRATION_FAILED: &str = "Unable to register with slurm controller";
/// What slurmd prints once the controller's reply to its first registration is handled.
const REGISTRATION_ANSWERED: &str = "_handle_node_reg_resp: slurmctld sent back";

/// Issue 22: slurmd starts with its log file on `/dev/full` (every write `ENOSPC`, as on a
/// full disk from the first line). The controller answers its first registration, and the
/// debug line about that answer fails to be written, leaving `errno` set. slurmd must take
/// the registration for done: its stderr (the cluster's `.out` file, on a disk with space)
/// shows the answer and no "Unable to register ... No space left on device" after it.
pub fn registration_log_full(ctx: &mut Ctx<'_>) -> Result<String> {
    let log = ctx.cluster.log(Daemon::Slurmd(0));
    let real_log = LogMark::take(&log);
    let out = LogMark::take(&ctx.cluster.output(Daemon::Slurmd(0)));
    let mounts = [NodeMount::Bind {
        source: PathBuf::from(FULL_DEVICE),
        target: log,
    }];
    with_node_mounts(ctx, &mounts, |ctx| {
        poll(
            "slurmd's stderr to show the controller's answer to its registration",
            Duration::from_secs(30),
            POLL,
            || Ok(out.added().contains(REGISTRATION_ANSWERED).then_some(())),
        )?;
        // The failed verdict is printed right after the answer, in the same thread.
        std::thread::sleep(Duration::from_secs(2));
        // The precondition: the answer's line reached stderr but not the log file.
        if real_log.added().contains(REGISTRATION_ANSWERED) {
            return Err(Error::Scenario(format!(
                "slurmd's log file got the answer's line: it was not on {FULL_DEVICE}"
            )));
        }
        let text = out.added();
        if let Some(line) = text.lines().find(|l| l.contains(REGISTRATION_FAILED)) {
            return Err(Error::Scenario(format!(
                "slurmd took its answered registration for failed (log on {FULL_DEVICE}): {line:?}"
            )));
        }
        ctx.wait_node_idle(Duration::from_secs(30))
            .map_err(|e| e.context(format!("with its log on {FULL_DEVICE}")))?;
        Ok(format!(
            "log on {FULL_DEVICE}: the controller answered the first registration and slurmd took it for done (no {REGISTRATION_FAILED:?} on its stderr), node IDLE"
        ))
    })
}
