//! Running programs. Foreground programs go through xshell (`cmd!`); this module owns
//! `std::process` for what xshell cannot do, and nothing else in the driver spawns:
//!
//! * here: finding programs on the PATH, checked xshell runs, the last lines of output, a
//!   background child whose output goes to a file ([`spawn_logged`]);
//! * [`bounded`]: runs with a deadline (killed and reaped when it passes);
//! * [`logged`]: long runs with their output in a log file and progress on the terminal;
//! * [`spawn`]: what needs code in the child before `exec` (`pre_exec`): detached daemons in
//!   their own session, a private mount namespace, a controlling terminal.

pub mod bounded;
pub mod logged;
pub mod spawn;

use crate::error::{Error, Result};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use xshell::Shell;

/// Parallel jobs when none are asked for: the number of CPUs (CI machines have 2).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Whether `path` is an executable regular file.
pub fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The first executable `program` in the shell's PATH.
pub fn find_program(sh: &Shell, program: &str) -> Option<PathBuf> {
    let path = sh.var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

/// Whether `program` is an executable file on the shell's PATH.
pub fn on_path(sh: &Shell, program: &str) -> bool {
    find_program(sh, program).is_some()
}

/// Fails with [`Error::MissingTool`] (naming `step` and the `fix`) unless `program` is an
/// executable file on the shell's PATH.
pub fn require_tool(sh: &Shell, program: &str, step: &str, fix: &str) -> Result<()> {
    if on_path(sh, program) {
        Ok(())
    } else {
        Err(Error::MissingTool {
            program: program.into(),
            step: step.into(),
            fix: fix.into(),
        })
    }
}

/// Runs `command` quietly; a non-zero exit becomes [`Error::Command`] naming `step` and
/// `program`, with the last lines of its standard error.
pub fn run_checked(command: xshell::Cmd<'_>, step: &str, program: &str) -> Result<()> {
    let out = command.quiet().ignore_status().output()?;
    if out.status.success() {
        return Ok(());
    }
    Err(Error::Command {
        step: step.into(),
        program: program.into(),
        detail: tail(&out.stderr, 15),
    })
}

/// Starts `cmd` in the background: stdin from /dev/null, stdout and stderr to `log`
/// (created or truncated). The caller owns the child: it kills and reaps it.
pub fn spawn_logged(mut cmd: std::process::Command, log: &Path) -> Result<std::process::Child> {
    let program = bounded::show(&cmd);
    let out = std::fs::File::create(log).map_err(|e| Error::io(log, e))?;
    let err = out.try_clone().map_err(|e| Error::io(log, e))?;
    cmd.stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|source| Error::Spawn { program, source })
}

/// The last `n` lines of a program's output (lossily decoded, surrounding blank space
/// trimmed).
pub fn tail(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The last `n` lines of a file, or a note that it cannot be read.
pub fn file_tail(path: &Path, n: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => tail(&bytes, n),
        Err(e) => format!("(cannot read: {e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn require_tool__missing_program_is_missing_tool() {
        let sh = Shell::new().unwrap();
        let e = require_tool(&sh, "no-such-program-xyz", "testing", "install it").unwrap_err();
        assert!(matches!(e, Error::MissingTool { .. }), "{e}");
        assert!(e.to_string().contains("install it"), "{e}");
        require_tool(&sh, "sh", "testing", "").unwrap();
        assert!(find_program(&sh, "sh").is_some_and(|p| p.is_absolute()));
    }

    #[test]
    fn tail__last_lines_trimmed_and_file_tail_notes_unreadable() {
        assert_eq!(tail(b"1\n2\n3\n\n", 2), "2\n3");
        assert_eq!(tail(b"only", 5), "only");
        let (dir, f) = crate::testing::scratch("log");
        std::fs::write(&f, "1\n2\n3\n").unwrap();
        assert_eq!(file_tail(&f, 2), "2\n3");
        assert!(file_tail(&dir.path().join("none"), 2).starts_with("(cannot read"));
    }

    #[test]
    fn run_checked__failure_names_step_and_program_with_stderr() {
        let sh = Shell::new().unwrap();
        let e = run_checked(
            xshell::cmd!(sh, "sh -c 'echo bad >&2; exit 2'"),
            "step x",
            "sh",
        )
        .unwrap_err();
        let s = e.to_string();
        assert!(s.contains("step x") && s.contains("bad"), "{s}");
        run_checked(xshell::cmd!(sh, "true"), "step", "true").unwrap();
    }
}
