//! Programs run with a deadline: killed and reaped when it passes, so a hanging client or
//! test run cannot eat CI's time. [`run_bounded`]/[`read_bounded`] capture the output (client
//! commands); [`run_inherit_bounded`] lets it through and kills the program's whole process
//! group (cargo and the test binaries it started). [`poll`] waits for a condition.
//! Commands are `std::process::Command`s or anything that converts into one (xshell's `Cmd`).

use crate::error::{Error, Result};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// Now plus `timeout`; a timeout past what the clock can hold waits as long as it can
/// (checked: `Instant + Duration` panics on overflow).
fn deadline(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 86_400)))
        .unwrap_or(now)
}

/// Waits for `child` until `deadline`; `None` when it is still running then.
fn wait_until(child: &mut Child, shown: &str, deadline: Instant) -> Result<Option<ExitStatus>> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(Some(status)),
            Ok(None) if Instant::now() >= deadline => return Ok(None),
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(source) => {
                return Err(Error::Wait {
                    program: shown.to_string(),
                    source,
                });
            }
        }
    }
}

/// Run `cmd` to completion with a deadline; on timeout the child is killed and reaped and an
/// error names the command. A non-zero exit is returned in the `Output`, not as an error.
pub fn run_bounded(command: impl Into<Command>, timeout: Duration) -> Result<Output> {
    let mut command: Command = command.into();
    let shown = show(&command);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|source| Error::Spawn {
        program: shown.clone(),
        source,
    })?;
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
    let Some(status) = wait_until(&mut child, &shown, deadline(timeout))? else {
        child.kill().ok();
        child.wait().ok();
        return Err(Error::Timeout {
            what: format!("`{shown}`"),
            after: timeout,
        });
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

/// Run `cmd` with inherited output in its own process group; after `timeout` the whole group
/// is killed. A non-zero exit is an [`Error::Command`] naming `step`.
pub fn run_inherit_bounded(cmd: impl Into<Command>, step: &str, timeout: Duration) -> Result<()> {
    let mut command: Command = cmd.into();
    let shown = show(&command);
    command.process_group(0);
    let mut child = command.spawn().map_err(|source| Error::Spawn {
        program: shown.clone(),
        source,
    })?;
    match wait_until(&mut child, &shown, deadline(timeout))? {
        Some(status) if status.success() => Ok(()),
        Some(status) => Err(Error::Command {
            step: step.into(),
            program: shown,
            detail: status.to_string(),
        }),
        None => {
            // Our child is not reaped yet, so its process group id is still ours.
            crate::util::signal::kill_group(child.id());
            child.wait().ok();
            Err(Error::Timeout {
                what: format!("`{shown}` (its process group was killed)"),
                after: timeout,
            })
        }
    }
}

/// Run `cmd` with stdin from `/dev/null` and stdout and stderr written to `log` (created),
/// with a deadline; on timeout the child is killed and reaped. Returns its exit status.
pub fn run_to_log_bounded(
    cmd: impl Into<Command>,
    log: &Path,
    timeout: Duration,
) -> Result<ExitStatus> {
    let mut command: Command = cmd.into();
    let shown = show(&command);
    let out = std::fs::File::create(log).map_err(|e| Error::io(log, e))?;
    let err = out.try_clone().map_err(|e| Error::io(log, e))?;
    command.stdin(Stdio::null()).stdout(out).stderr(err);
    let mut child = command.spawn().map_err(|source| Error::Spawn {
        program: shown.clone(),
        source,
    })?;
    match wait_until(&mut child, &shown, deadline(timeout))? {
        Some(status) => Ok(status),
        None => {
            child.kill().ok();
            child.wait().ok();
            Err(Error::Timeout {
                what: format!("`{shown}` (see {})", log.display()),
                after: timeout,
            })
        }
    }
}

/// Poll `probe` every `every` until it returns `Some`, or fail after `timeout` with `what`.
pub fn poll<T>(
    what: &str,
    timeout: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let deadline = deadline(timeout);
    loop {
        if let Some(v) = probe()? {
            return Ok(v);
        }
        if Instant::now() >= deadline {
            return Err(Error::TimedOut {
                waiting_for: what.to_string(),
                after: timeout,
            });
        }
        std::thread::sleep(every);
    }
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

#[cfg(test)]
mod tests {
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
    fn run_bounded__attack_timeout_past_the_clock_does_not_panic() {
        let huge = Duration::from_secs(u64::MAX);
        let out = run_bounded(command("true", [""; 0]), huge).unwrap();
        assert!(out.status.success());
        let (_d, log) = crate::testing::scratch("l");
        assert!(run_to_log_bounded(command("true", [""; 0]), &log, huge).is_ok());
        assert!(run_inherit_bounded(command("true", [""; 0]), "t", huge).is_ok());
        assert!(poll("x", huge, Duration::from_millis(1), || Ok(Some(()))).is_ok());
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
    fn run_to_log_bounded__status_output_in_the_log_and_timeout() {
        let (_d, log) = crate::testing::scratch("x.log");
        let st = run_to_log_bounded(
            command("sh", ["-c", "echo out; echo err >&2; exit 4"]),
            &log,
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(st.code(), Some(4));
        crate::testing::assert_file(&log, "out\nerr\n");
        let start = Instant::now();
        let e = run_to_log_bounded(command("sleep", ["30"]), &log, Duration::from_millis(300))
            .unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(e.to_string().contains("did not finish"), "{e}");
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
    fn run_inherit_bounded__kills_the_whole_group_on_timeout() {
        let (_dir, pidfile) = crate::testing::scratch("grandchild");
        // The shell starts a grandchild (as cargo starts test binaries) and waits for it.
        let script = format!("sleep 60 & echo $! > {}; wait", pidfile.display());
        let start = Instant::now();
        let err = run_inherit_bounded(
            command("sh", ["-c", &script]),
            "ci",
            Duration::from_millis(500),
        )
        .unwrap_err();
        assert!(err.to_string().contains("did not finish"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(20));
        let pid: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild was killed too (give the kernel a moment to reap it via init).
        let gone = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(100));
            !crate::util::signal::process_exists(pid)
        });
        assert!(gone, "grandchild {pid} survived");
    }

    #[test]
    fn run_inherit_bounded__reports_exit_status() {
        assert!(
            run_inherit_bounded(command("true", [""; 0]), "ci", Duration::from_secs(10)).is_ok()
        );
        let err = run_inherit_bounded(
            command("sh", ["-c", "exit 7"]),
            "ci",
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert!(err.to_string().contains('7'), "{err}");
    }
}
