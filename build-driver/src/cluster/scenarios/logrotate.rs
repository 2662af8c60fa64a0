//! Log rotation (SMD-127): the log renamed under a running slurmd, then SIGUSR2, slurmd's
//! documented signal to reopen its log file (slurmd(8)).

use super::super::daemon::Daemon;
use super::client::{Ctx, JOB_TIMEOUT, POLL, all_hold, q};
use super::reconfigure::mentions_job;
use crate::error::{Error, Result};
use crate::util::process::bounded::poll;
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The descriptors of `pid` and where they point.
fn descriptors(pid: u32) -> Vec<(u32, PathBuf)> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| {
                let e = e.ok()?;
                let fd = e.file_name().to_str()?.parse().ok()?;
                Some((fd, std::fs::read_link(e.path()).ok()?))
            })
            .collect()
        })
        .unwrap_or_default()
}

/// How many descriptors of `pid` point at `path` (`(deleted)` suffix and all).
fn open_on(fds: &[(u32, PathBuf)], path: &Path) -> usize {
    fds.iter().filter(|(_, p)| p == path).count()
}

/// Exactly one descriptor of slurmd on its log before the rotation: returns them all.
fn descriptors_before(pid: u32, log: &Path) -> Result<Vec<(u32, PathBuf)>> {
    let before = descriptors(pid);
    if open_on(&before, log) != 1 {
        return Err(Error::Scenario(format!(
            "slurmd {pid} has {} descriptors on {} before the rotation (expected 1)",
            open_on(&before, log),
            log.display()
        )));
    }
    Ok(before)
}

/// A 15-beat batch job; after its third beat the log is renamed to `rotated` and slurmd
/// gets SIGUSR2 (it must make a new file at `log`). Returns the job's id and its beats once
/// it COMPLETED and its processes are gone.
fn rotate_under_job(ctx: &mut Ctx<'_>, log: &Path, rotated: &Path) -> Result<(u32, Vec<String>)> {
    let beats = ctx.path("heartbeat");
    let body = format!(
        "for i in $(seq 1 15); do echo beat $i >> {b}; sleep 1; done\necho done\n",
        b = q(&beats)
    );
    let id = ctx.sbatch("rotate", &["-n1"], &body)?;
    ctx.wait_lines(&beats, 3, JOB_TIMEOUT)?;
    std::fs::rename(log, rotated).map_err(|e| Error::io(log, e))?;
    ctx.cluster.kill(Daemon::Slurmd(0), Signal::SIGUSR2)?;
    poll(
        "slurmd to reopen its log after SIGUSR2",
        Duration::from_secs(20),
        POLL,
        || Ok(log.exists().then_some(())),
    )?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let beat_lines = ctx.wait_lines(&beats, 15, JOB_TIMEOUT)?;
    ctx.wait_no_job_processes(Duration::from_secs(30))?;
    Ok((id, beat_lines))
}

/// slurmd's descriptors once they are no more than `before`.
fn settled_descriptors(pid: u32, before: usize) -> Result<Vec<(u32, PathBuf)>> {
    poll(
        "slurmd's descriptors to settle",
        Duration::from_secs(20),
        POLL,
        || {
            let now = descriptors(pid);
            Ok((now.len() <= before).then_some(now))
        },
    )
    .map_err(|e| {
        Error::Scenario(format!(
            "{e}: slurmd had {before} descriptors before the rotation and now {:?}",
            descriptors(pid)
        ))
    })
}

/// SMD-127: while a batch job runs (a 15 s heartbeat), slurmd's log is renamed and slurmd
/// gets SIGUSR2: it reopens its log (a new file at the configured path), keeps its PID, and
/// afterwards holds exactly one descriptor on the new file, none on the renamed one, and no
/// more descriptors than before. The rename loses no lines: the job's launch is in the
/// renamed file, its end in the new one, and the job completes with its 15 heartbeats.
pub fn rename_and_reopen(ctx: &mut Ctx<'_>) -> Result<String> {
    let rec = ctx.slurmd_record()?;
    let log = ctx.cluster.log(Daemon::Slurmd(0));
    let rotated = log.with_extension("log.rotated");
    crate::util::fs::remove_optional(&rotated)?;
    ctx.wait_node_idle(Duration::from_secs(30))?;
    let before = descriptors_before(rec.pid, &log)?;
    let (id, beat_lines) = rotate_under_job(ctx, &log, &rotated)?;
    let old_text = std::fs::read_to_string(&rotated).map_err(|e| Error::io(&rotated, e))?;
    let new_text = poll(
        "slurmd to log the job's end in the new file",
        Duration::from_secs(30),
        POLL,
        || {
            let t = std::fs::read_to_string(&log).unwrap_or_default();
            Ok(mentions_job(&t, id).then_some(t))
        },
    )?;
    let after = settled_descriptors(rec.pid, before.len())?;
    let same_pid = ctx.cluster.is_running(Daemon::Slurmd(0))
        && ctx.cluster.record(Daemon::Slurmd(0)).map(|r| r.pid) == Some(rec.pid);
    let (on_new, on_old) = (open_on(&after, &log), open_on(&after, &rotated));
    all_hold(
        "log rotation",
        &[
            (same_pid, format!("slurmd {} still runs with its PID", rec.pid)),
            (on_new == 1, format!("{on_new} descriptor(s) on the new log")),
            (on_old == 0, format!("{on_old} descriptor(s) on the renamed log")),
            (
                mentions_job(&old_text, id),
                format!("job {id}'s launch in the renamed log"),
            ),
            (
                beat_lines.len() == 15,
                format!("{} heartbeats", beat_lines.len()),
            ),
        ],
    )?;
    Ok(format!(
        "job {id} ran through the rename + SIGUSR2: launch in {}, end in the new {} ({} bytes); slurmd {} kept its PID, one descriptor on the new log, none on the old, {} -> {} descriptors; 15 heartbeats, COMPLETED",
        rotated.display(),
        log.display(),
        new_text.len(),
        rec.pid,
        before.len(),
        after.len()
    ))
}
