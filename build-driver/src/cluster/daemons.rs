//! Child processes we own: the daemons (started in the foreground with `-D`, stopped by
//! PID with SIGTERM then SIGKILL) and client commands run with a deadline.
//!
//! Only processes this module spawned are ever signalled, and only while they have not been
//! reaped (`try_wait` is `None`), so their PID cannot have been reused.

use crate::error::{Error, Result};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use xshell::{Cmd, Shell, cmd};

/// A daemon we started.
#[derive(Debug)]
pub struct Daemon {
    pub name: String,
    child: Option<Child>,
    /// Where its stdout and stderr go.
    pub output: PathBuf,
}

/// How a daemon ended when stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It had already exited on its own.
    AlreadyExited,
    /// It exited within the grace period after SIGTERM.
    Terminated,
    /// It ignored SIGTERM and was killed.
    Killed,
}

impl Daemon {
    /// Spawn `cmd` (built by `xshell::cmd!`, so with the shell's directory and environment)
    /// with stdout and stderr appended to `output`.
    pub fn start(name: &str, cmd: Cmd<'_>, output: &Path) -> Result<Daemon> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(output)
            .map_err(|e| Error::io(output, e))?;
        let err = out.try_clone().map_err(|e| Error::io(output, e))?;
        let mut command: Command = cmd.into();
        command.stdin(Stdio::null()).stdout(out).stderr(err);
        let child = command
            .spawn()
            .map_err(|e| Error::Cluster(format!("cannot start {name}: {e}")))?;
        Ok(Daemon {
            name: name.to_string(),
            child: Some(child),
            output: output.to_path_buf(),
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// An error if the daemon has exited (a daemon run with `-D` only exits on failure).
    pub fn check_running(&mut self) -> Result<()> {
        let Some(child) = self.child.as_mut() else {
            return Err(Error::Cluster(format!("{} was already stopped", self.name)));
        };
        match child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(Error::Cluster(format!(
                "{} exited early ({status}); its output: {}",
                self.name,
                self.output.display()
            ))),
            Err(e) => Err(Error::Cluster(format!("cannot query {}: {e}", self.name))),
        }
    }

    /// SIGTERM by PID, wait up to `grace`, then SIGKILL; the child is reaped in every case.
    pub fn stop(&mut self, sh: &Shell, grace: Duration) -> Result<Stopped> {
        let Some(mut child) = self.child.take() else {
            return Ok(Stopped::AlreadyExited);
        };
        let name = &self.name;
        if child
            .try_wait()
            .map_err(|e| Error::Cluster(format!("cannot query {name}: {e}")))?
            .is_some()
        {
            return Ok(Stopped::AlreadyExited);
        }
        // Not reaped yet, so the PID is still ours.
        let pid = child.id().to_string();
        cmd!(sh, "kill -TERM {pid}")
            .quiet()
            .ignore_stderr()
            .run()
            .ok();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            match child.try_wait() {
                Ok(Some(_)) => return Ok(Stopped::Terminated),
                Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                Err(e) => return Err(Error::Cluster(format!("cannot query {name}: {e}"))),
            }
        }
        child
            .kill()
            .map_err(|e| Error::Cluster(format!("cannot kill {name}: {e}")))?;
        child
            .wait()
            .map_err(|e| Error::Cluster(format!("cannot reap {name}: {e}")))?;
        Ok(Stopped::Killed)
    }
}

impl Drop for Daemon {
    /// Last resort on early returns and panics: never leave a daemon behind.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Ok(None) = child.try_wait() {
                child.kill().ok();
                child.wait().ok();
            }
        }
    }
}

/// Run `cmd` to completion with a deadline; on timeout the child is killed and reaped and an
/// error names the command. A non-zero exit is returned in the `Output`, not as an error.
pub fn run_bounded(cmd: Cmd<'_>, timeout: Duration) -> Result<Output> {
    let shown = cmd.to_string();
    let mut command: Command = cmd.into();
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|e| Error::Cluster(format!("cannot run `{shown}`: {e}")))?;
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .map(|pipe| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                p.read_to_end(&mut buf).ok();
            }
            buf
        })
    })
    .collect();
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                child.kill().ok();
                child.wait().ok();
                return Err(Error::Cluster(format!(
                    "`{shown}` did not finish within {timeout:?}"
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(Error::Cluster(format!("cannot wait for `{shown}`: {e}"))),
        }
    };
    let mut bufs = readers.into_iter().map(|h| h.join().unwrap_or_default());
    let stdout = bufs.next().unwrap_or_default();
    let stderr = bufs.next().unwrap_or_default();
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// `run_bounded`, requiring success; returns stdout.
pub fn read_bounded(cmd: Cmd<'_>, timeout: Duration) -> Result<String> {
    let shown = cmd.to_string();
    let out = run_bounded(cmd, timeout)?;
    if !out.status.success() {
        return Err(Error::Command {
            step: "cluster".into(),
            program: shown,
            detail: format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Poll `probe` every `every` until it returns `Some`, or fail after `timeout` with `what`.
pub fn poll<T>(
    what: &str,
    timeout: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = probe()? {
            return Ok(v);
        }
        if Instant::now() >= deadline {
            return Err(Error::Cluster(format!(
                "timed out after {timeout:?} waiting for {what}"
            )));
        }
        std::thread::sleep(every);
    }
}

/// Whether a process exists (`kill -0`, which sends nothing).
pub fn process_exists(sh: &Shell, pid: u32) -> bool {
    let pid = pid.to_string();
    cmd!(sh, "kill -0 {pid}")
        .quiet()
        .ignore_stderr()
        .ignore_stdout()
        .run()
        .is_ok()
}

/// The last `n` lines of a file, or a note that it cannot be read.
pub fn file_tail(path: &Path, n: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => crate::check::tail(&bytes, n),
        Err(e) => format!("(cannot read: {e})"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(non_snake_case)]
    use super::*;

    #[test]
    fn run_bounded__returns_output_and_status() {
        let sh = Shell::new().unwrap();
        let out = run_bounded(
            cmd!(sh, "sh -c 'echo out; echo err >&2; exit 3'"),
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
        assert_eq!(out.status.code(), Some(3));
    }

    #[test]
    fn run_bounded__kills_on_timeout() {
        let sh = Shell::new().unwrap();
        let start = Instant::now();
        let err = run_bounded(cmd!(sh, "sleep 30"), Duration::from_millis(300)).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(err.to_string().contains("did not finish"), "{err}");
    }

    #[test]
    fn read_bounded__nonzero_exit_is_an_error() {
        let sh = Shell::new().unwrap();
        assert!(matches!(
            read_bounded(cmd!(sh, "false"), Duration::from_secs(10)),
            Err(Error::Command { .. })
        ));
        assert_eq!(
            read_bounded(cmd!(sh, "echo hi"), Duration::from_secs(10)).unwrap(),
            "hi\n"
        );
    }

    #[test]
    fn daemon__stop_terminates_with_sigterm() {
        let sh = Shell::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut d =
            Daemon::start("sleeper", cmd!(sh, "sleep 60"), &dir.path().join("out")).unwrap();
        let pid = d.pid().unwrap();
        d.check_running().unwrap();
        assert!(process_exists(&sh, pid));
        assert_eq!(
            d.stop(&sh, Duration::from_secs(10)).unwrap(),
            Stopped::Terminated
        );
        assert!(d.check_running().is_err());
        assert_eq!(
            d.stop(&sh, Duration::from_secs(1)).unwrap(),
            Stopped::AlreadyExited
        );
    }

    #[test]
    fn daemon__stop_kills_what_ignores_sigterm() {
        let sh = Shell::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ready = dir.path().join("ready");
        let script = format!(
            "trap '' TERM; touch {}; while :; do sleep 1; done",
            ready.display()
        );
        let mut d = Daemon::start(
            "stubborn",
            cmd!(sh, "sh -c {script}"),
            &dir.path().join("out"),
        )
        .unwrap();
        poll(
            "trap installed",
            Duration::from_secs(10),
            Duration::from_millis(20),
            || Ok(ready.exists().then_some(())),
        )
        .unwrap();
        assert_eq!(
            d.stop(&sh, Duration::from_millis(500)).unwrap(),
            Stopped::Killed
        );
    }

    #[test]
    fn daemon__early_exit_is_reported() {
        let sh = Shell::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut d = Daemon::start(
            "quitter",
            cmd!(sh, "sh -c 'echo bye; exit 1'"),
            &dir.path().join("out"),
        )
        .unwrap();
        let err = poll(
            "exit",
            Duration::from_secs(10),
            Duration::from_millis(20),
            || Ok(d.check_running().err()),
        )
        .unwrap();
        assert!(err.to_string().contains("quitter exited early"), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("out")).unwrap(),
            "bye\n"
        );
    }

    #[test]
    fn poll__times_out_with_the_subject() {
        let err = poll::<()>(
            "godot",
            Duration::from_millis(50),
            Duration::from_millis(10),
            || Ok(None),
        )
        .unwrap_err();
        assert!(err.to_string().contains("godot"), "{err}");
    }

    #[test]
    fn file_tail__last_lines_or_note() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("log");
        std::fs::write(&f, "1\n2\n3\n").unwrap();
        assert_eq!(file_tail(&f, 2), "2\n3");
        assert!(file_tail(&dir.path().join("none"), 2).starts_with("(cannot read"));
    }
}
