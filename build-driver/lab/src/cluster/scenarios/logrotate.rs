//! Log rotation (SMD-127): the log renamed under a running slurmd, then SIGUSR2, slurmd's
//! documented signal to reopen its log file (slurmd(8)).
//!
//! A descriptor is matched to a file by identity, not by path: `stat()` of
//! `/proc/<pid>/fd/<n>` follows the link to the open file itself (its `st_dev`, `st_ino`),
//! while the link's text is the path as the kernel names it from the process's root, which
//! differs from the harness's path under a chroot, bind mounts or a private mount namespace
//! (a fresh-machine chroot's run found 0 descriptors on the log by path, 2026-12-01).

use super::super::daemon::Daemon;
use super::client::{Ctx, JOB_TIMEOUT, POLL, all_hold, q};
use super::reconfigure::mentions_job;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use nix::sys::signal::Signal;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A file's identity: (`st_dev`, `st_ino`).
type Identity = (u64, u64);

/// One descriptor of a process: its number, the link's text (for messages) and the identity
/// of the file it is open on.
#[derive(Debug)]
struct Fd {
    fd: u32,
    link: PathBuf,
    file: Identity,
}

fn identity(path: &Path) -> Result<Identity> {
    let m = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    Ok((m.dev(), m.ino()))
}

/// The descriptors of `pid` (those closed while they are read are left out).
fn descriptors(pid: u32) -> Vec<Fd> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| {
                let e = e.ok()?;
                Some(Fd {
                    fd: e.file_name().to_str()?.parse().ok()?,
                    link: std::fs::read_link(e.path()).ok()?,
                    file: identity(&e.path()).ok()?,
                })
            })
            .collect()
        })
        .unwrap_or_default()
}

/// How many of `fds` are open on the file at `path` now (none if there is no file there).
fn open_on(fds: &[Fd], path: &Path) -> usize {
    identity(path).map_or(0, |id| fds.iter().filter(|f| f.file == id).count())
}

/// The link text of the first of `fds` open on the file at `path` (for the report: it shows
/// how this mount view names the file).
fn link_on(fds: &[Fd], path: &Path) -> String {
    let id = identity(path).ok();
    fds.iter()
        .find(|f| Some(f.file) == id)
        .map_or_else(|| "none".into(), |f| f.link.display().to_string())
}

/// `fd -> link (dev:ino)` of each descriptor, for a message.
fn describe(fds: &[Fd]) -> String {
    fds.iter()
        .map(|f| {
            format!(
                "{} -> {} ({}:{})",
                f.fd,
                f.link.display(),
                f.file.0,
                f.file.1
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Exactly one descriptor of slurmd on its log before the rotation: returns them all.
fn descriptors_before(pid: u32, log: &Path) -> Result<Vec<Fd>> {
    let before = descriptors(pid);
    if open_on(&before, log) != 1 {
        return Err(Error::Scenario(format!(
            "slurmd {pid} has {} descriptors on {} ({:?}) before the rotation (expected 1); its descriptors: {}",
            open_on(&before, log),
            log.display(),
            identity(log).ok(),
            describe(&before)
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
fn settled_descriptors(pid: u32, before: usize) -> Result<Vec<Fd>> {
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
            "{e}: slurmd had {before} descriptors before the rotation and now {}",
            describe(&descriptors(pid))
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
    driver_common::util::fs::remove_optional(&rotated)?;
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
            (
                same_pid,
                format!("slurmd {} still runs with its PID", rec.pid),
            ),
            (
                on_new == 1,
                format!("{on_new} descriptor(s) on the new log"),
            ),
            (
                on_old == 0,
                format!("{on_old} descriptor(s) on the renamed log"),
            ),
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
        "job {id} ran through the rename + SIGUSR2: launch in {}, end in the new {} ({} bytes); slurmd {} kept its PID, one descriptor on the new log (its link reads {}), none on the old, {} -> {} descriptors; 15 heartbeats, COMPLETED",
        rotated.display(),
        log.display(),
        new_text.len(),
        rec.pid,
        link_on(&after, &log),
        before.len(),
        after.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file opened through a symlinked directory: the descriptor's link names the real
    /// directory, so a path comparison finds nothing; the identity finds the descriptor.
    #[test]
    fn open_on__matches_the_file_whatever_path_the_link_shows() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let alias = dir.path().join("alias");
        std::os::unix::fs::symlink(&real, &alias).unwrap();
        let log = alias.join("slurmd.log");
        let _a = std::fs::File::create(&log).unwrap();
        let fds = descriptors(std::process::id());
        assert!(fds.iter().all(|f| f.link != log), "{}", describe(&fds));
        assert_eq!(open_on(&fds, &log), 1, "{}", describe(&fds));
        assert_eq!(open_on(&fds, &real.join("slurmd.log")), 1);
        let _b = std::fs::File::open(&log).unwrap();
        assert_eq!(open_on(&descriptors(std::process::id()), &log), 2);
    }

    /// The rotation's view: after a rename the descriptor is on the renamed file, and a new
    /// file at the old path has none; a path with no file has none.
    #[test]
    fn open_on__follows_a_rename() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("slurmd.log");
        let rotated = dir.path().join("slurmd.log.rotated");
        let _f = std::fs::File::create(&log).unwrap();
        std::fs::rename(&log, &rotated).unwrap();
        assert_eq!(open_on(&descriptors(std::process::id()), &log), 0);
        std::fs::write(&log, "new").unwrap();
        let fds = descriptors(std::process::id());
        assert_eq!((open_on(&fds, &log), open_on(&fds, &rotated)), (0, 1));
    }
}
