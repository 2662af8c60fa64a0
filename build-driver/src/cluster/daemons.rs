//! Client commands run with a deadline (killed and reaped when it passes), polling, log tails.
//! Commands are `std::process::Command`s or anything that converts into one (xshell's `Cmd`).

use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Run `cmd` to completion with a deadline; on timeout the child is killed and reaped and an
/// error names the command. A non-zero exit is returned in the `Output`, not as an error.
pub fn run_bounded(command: impl Into<Command>, timeout: Duration) -> Result<Output> {
    let mut command: Command = command.into();
    let shown = show(&command);
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
pub fn read_bounded(cmd: impl Into<Command>, timeout: Duration) -> Result<String> {
    let cmd: Command = cmd.into();
    let shown = show(&cmd);
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

/// Whether a process exists (signal 0 sends nothing).
pub fn process_exists(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// `program arg...` for messages (program's file name only).
pub fn show(cmd: &Command) -> String {
    let prog = Path::new(cmd.get_program())
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if args.is_empty() {
        prog
    } else {
        format!("{prog} {}", args.join(" "))
    }
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

    /// A `Command` from program and arguments.
    fn command<I, S>(program: impl AsRef<std::ffi::OsStr>, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut c = Command::new(program);
        c.args(args);
        c
    }

    #[test]
    fn run_bounded__returns_output_and_status() {
        let out = run_bounded(
            command("sh", ["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
        assert_eq!(out.status.code(), Some(3));
    }

    #[test]
    fn run_bounded__kills_on_timeout() {
        let start = Instant::now();
        let err = run_bounded(command("sleep", ["30"]), Duration::from_millis(300)).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(err.to_string().contains("did not finish"), "{err}");
    }

    #[test]
    fn read_bounded__nonzero_exit_is_an_error() {
        assert!(matches!(
            read_bounded(command("false", [""; 0]), Duration::from_secs(10)),
            Err(Error::Command { .. })
        ));
        assert_eq!(
            read_bounded(command("echo", ["hi"]), Duration::from_secs(10)).unwrap(),
            "hi\n"
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
