//! `extern-adopted-orphan` (`macos-native`; PoC D17, patch 0028): a process adopted into a
//! job's extern step (what pam_slurm_adopt does when a user logs in to a node of their job)
//! leaves a child behind when it exits; `_wait_extern_pid()`
//! (`src/slurmd/slurmstepd/req.c`) must find that orphan among the step's processes, see
//! that init is its parent now, and track it. It read the parent from `/proc/<pid>/stat`,
//! which a Mac does not have (the darwin personality hides `/proc` as macOS lacks it): every
//! orphan went untracked, silently. 0028 reads the parent with `sysctl(KERN_PROC_PID)`.
//!
//! The harness adopts the process itself, speaking slurmstepd's socket protocol as
//! `stepd_connect()` and `stepd_add_extern_pid()` (`src/common/stepd_api.c`) do: the
//! caller's protocol version, then `REQUEST_ADD_EXTERN_PID` and the pid; root may adopt
//! into any job. The evidence is the stepd's own line for the orphan's pid
//! (`_handle_add_extern_pid_internal: for StepId=<job>.extern, pid <orphan>`, debug level).
//! proctrack/darwin (this profile) keeps the orphan among the step's processes after its
//! parent exits; proctrack/pgid would not list it at all, so the scenario needs the profile.

use super::super::daemon::Daemon;
use super::client::{Ctx, JOB_TIMEOUT, LogMark, POLL, hold_until, q};
use super::reconf::{self, Change};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use driver_common::util::signal::process_exists;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// `REQUEST_ADD_EXTERN_PID` of `step_msg_t` (`src/common/stepd_api.h`): the 23rd entry from
/// `REQUEST_CONNECT = 0` in every line this project builds (24.11 to the 26.11 snapshot; a
/// test counts it in each fetched source).
pub const REQUEST_ADD_EXTERN_PID: i32 = 22;
/// `SLURM_EXTERN_CONT`: the extern step's id, in its socket's name.
const EXTERN_STEP: u32 = 0xffff_fffc;

pub fn adopted_orphan(ctx: &mut Ctx<'_>) -> Result<String> {
    let change = Change {
        lines: vec!["PrologFlags=contain".into()],
        restart: Change::controller_and_nodes(ctx),
        ..Change::default()
    };
    reconf::with_change(ctx, &change, adopt_and_orphan)
}

fn adopt_and_orphan(ctx: &mut Ctx<'_>) -> Result<String> {
    let go = ctx.path("extern-go");
    let id = ctx.sbatch("extern-holder", &["-n1"], &hold_until(&go, "echo done\n"))?;
    ctx.wait_state(id, &["RUNNING"], JOB_TIMEOUT)?;
    let node = ctx.cluster.nodes()[0].name.clone();
    let socket = ctx
        .cluster
        .layout()
        .node_spool(&node)
        .join(format!("{node}_{id}.{EXTERN_STEP}"));
    poll("the extern step's socket", JOB_TIMEOUT, POLL, || {
        Ok(socket.exists().then_some(()))
    })?;
    let protocol = protocol_version(ctx)?;
    let log = LogMark::take(&ctx.cluster.log(Daemon::Slurmd(0)));
    // The adopted process: it forks the orphan-to-be a second after it starts (so it is
    // adopted first), lives 3 s more, and exits.
    let orphan_file = ctx.path("extern-orphan.pid");
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args([
        "-c",
        &format!(
            "sleep 1; sleep 300 & echo $! > {}; sleep 3",
            q(&orphan_file)
        ),
    ])
    .stdin(std::process::Stdio::null());
    driver_common::util::process::spawn::new_session(&mut cmd);
    let mut parent = cmd.spawn().map_err(|source| Error::Spawn {
        program: "/bin/sh (the adopted process)".into(),
        source,
    })?;
    let adopted = parent.id();
    let answer = add_extern_pid(&socket, protocol, adopted);
    let orphan = ctx.wait_pids(&orphan_file, 1).map(|p| p[0]);
    let waited = parent.wait();
    let result = answer.and_then(|rc| {
        let orphan = orphan?;
        waited.map_err(|e| Error::Scenario(format!("waiting for the adopted process: {e}")))?;
        if rc != 0 {
            return Err(Error::Scenario(format!(
                "slurmstepd answered {rc} to REQUEST_ADD_EXTERN_PID for pid {adopted}"
            )));
        }
        let line = |pid: u32| format!("for StepId={id}.extern, pid {pid}");
        let found = poll(
            "the extern step to track the orphan",
            Duration::from_secs(20),
            POLL,
            || Ok(log.added().contains(&line(orphan)).then_some(())),
        );
        let text = log.added();
        if !text.contains(&line(adopted)) {
            return Err(Error::Scenario(format!(
                "slurmstepd did not log the adoption of pid {adopted} (`{}`)",
                line(adopted)
            )));
        }
        found.map_err(|e| {
            Error::Scenario(format!(
                "{e}: the adopted process {adopted} exited and left {orphan} (now a child of init); _wait_extern_pid() never tracked it (PoC D17: it reads /proc/<pid>/stat, which macOS lacks; patch 0028 reads sysctl KERN_PROC_PID)"
            ))
        })?;
        Ok(orphan)
    });
    // The job ends; the extern step's processes go with it (the orphan, tracked or not, is
    // this harness's descendant and is killed by it if still there).
    std::fs::write(&go, "").map_err(|e| Error::io(&go, e))?;
    let ended = ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT);
    let orphan = match result {
        Ok(o) => o,
        Err(e) => {
            kill_orphan(&orphan_file);
            return Err(e);
        }
    };
    ended?;
    if ctx.wait_gone(&[orphan], Duration::from_secs(15)).is_err() {
        kill_orphan(&orphan_file);
        return Err(Error::Scenario(format!(
            "job {id} completed, the orphan {orphan} it tracked in its extern step still runs"
        )));
    }
    Ok(format!(
        "job {id}: pid {adopted} adopted into the extern step; its orphan {orphan} tracked after it exited, and gone with the job"
    ))
}

/// Kills the orphan named in `file` if it still runs (it descends from this harness).
fn kill_orphan(file: &Path) {
    let pid = std::fs::read_to_string(file)
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok());
    if let Some(pid) = pid.filter(|p| process_exists(*p)) {
        driver_common::util::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    }
}

/// The protocol version of the node's build (`SLURM_PROTOCOL_VERSION`).
fn protocol_version(ctx: &Ctx<'_>) -> Result<i32> {
    let prefix = &ctx.cluster.nodes()[0].prefix;
    let m = driver_common::staging::Manifest::read(prefix)?;
    let line = driver_common::lines::Line::from_name(&m.line, "the node's build")?;
    Ok(i32::from(line.facts().protocol))
}

/// `stepd_connect()` then `stepd_add_extern_pid()`: native-endian ints, as Slurm writes them.
fn add_extern_pid(socket: &Path, protocol: i32, pid: u32) -> Result<i32> {
    let io = |e: std::io::Error| Error::io(socket, e);
    let mut s = UnixStream::connect(socket).map_err(io)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(io)?;
    s.write_all(&protocol.to_ne_bytes()).map_err(io)?;
    let mut answer = [0u8; 4];
    s.read_exact(&mut answer).map_err(io)?;
    let theirs = i32::from_ne_bytes(answer);
    if theirs <= 0 {
        return Err(Error::Scenario(format!(
            "slurmstepd refused protocol version {protocol:#x} (answered {theirs})"
        )));
    }
    s.write_all(&REQUEST_ADD_EXTERN_PID.to_ne_bytes())
        .map_err(io)?;
    s.write_all(&(pid as i32).to_ne_bytes()).map_err(io)?;
    s.read_exact(&mut answer).map_err(io)?;
    Ok(i32::from_ne_bytes(answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constant is the entry's index in each fetched line's `step_msg_t`.
    #[test]
    fn request_add_extern_pid__is_the_index_in_every_fetched_line() {
        let root = driver_common::project_root();
        let mut checked = 0;
        for f in driver_common::lines::LINES {
            let Ok(dirs) = std::fs::read_dir(root.join("slurm-src")) else {
                break;
            };
            for d in dirs.flatten() {
                let name = d.file_name().to_string_lossy().to_string();
                if !name.starts_with(f.name) {
                    continue;
                }
                let h = d.path().join("src/common/stepd_api.h");
                let Ok(text) = std::fs::read_to_string(&h) else {
                    continue;
                };
                assert_eq!(
                    index_of(&text, "REQUEST_ADD_EXTERN_PID"),
                    Some(REQUEST_ADD_EXTERN_PID as usize),
                    "{}",
                    h.display()
                );
                checked += 1;
            }
        }
        println!("REQUEST_ADD_EXTERN_PID checked in {checked} fetched source(s)");
    }

    /// The index of `name` in the `step_msg_t` enum (entries counted from `REQUEST_CONNECT = 0`).
    fn index_of(header: &str, name: &str) -> Option<usize> {
        let start = header.find("REQUEST_CONNECT = 0")?;
        let body = &header[start..header[start..].find('}')? + start];
        body.split(',')
            .map(|e| e.split('=').next().unwrap_or("").trim())
            .position(|e| e == name)
    }

    #[test]
    fn index_of__counts_entries() {
        let h = "typedef enum {\n\tREQUEST_CONNECT = 0,\n\tA,\n\tB,\n} x;";
        assert_eq!(index_of(h, "B"), Some(2));
        assert_eq!(index_of(h, "C"), None);
    }
}
