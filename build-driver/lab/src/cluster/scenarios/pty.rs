//! `srun --pty /bin/sh` driven through a real pseudo-terminal (openpty): what we type reaches
//! the remote shell, its output comes back, the task's stdin is a terminal, and the shell's
//! exit status becomes srun's.

use super::client::Ctx;
use driver_common::error::{Error, Result};
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What srun prints when it was built without `HAVE_PTY_H` (src/srun/opt.c).
const PTY_UNSUPPORTED: &str = "--pty not currently supported on this system type";

/// Runs `cmd` (an `srun --pty` command line) with a new pseudo-terminal as its controlling
/// terminal and stdio, types `input`, and returns srun's exit status and everything the
/// terminal showed.
fn drive(mut cmd: std::process::Command, input: &str) -> Result<(ExitStatus, String)> {
    let (master, slave) = open_pty()?;
    let clone = |fd: &OwnedFd| -> Result<Stdio> {
        Ok(Stdio::from(
            fd.try_clone()
                .map_err(|e| Error::io("the pseudo-terminal", e))?,
        ))
    };
    cmd.stdin(clone(&slave)?)
        .stdout(clone(&slave)?)
        .stderr(clone(&slave)?);
    // The pty becomes srun's controlling terminal, as in an interactive login.
    driver_common::util::process::spawn::controlling_terminal(&mut cmd);
    let mut child = cmd.spawn().map_err(|source| Error::Spawn {
        program: "srun --pty".into(),
        source,
    })?;
    drop(cmd);
    drop(slave);
    let mut reader = std::fs::File::from(
        master
            .try_clone()
            .map_err(|e| Error::io("the pseudo-terminal", e))?,
    );
    let collector = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO once every slave descriptor is closed (srun exited).
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        all
    });
    let mut writer = std::fs::File::from(master);
    writer
        .write_all(input.as_bytes())
        .map_err(|e| Error::io("the pseudo-terminal", e))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() > deadline => {
                child.kill().ok();
                child.wait().ok();
                return Err(Error::Timeout {
                    what: "srun --pty".into(),
                    after: Duration::from_secs(60),
                });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(source) => {
                return Err(Error::Wait {
                    program: "srun --pty".into(),
                    source,
                });
            }
        }
    };
    drop(writer);
    let output = String::from_utf8_lossy(&collector.join().unwrap_or_default()).into_owned();
    Ok((status, output))
}

/// The shell's own output lines that start with one of `marks` (the terminal also echoes
/// the typed line, which starts with the command, not with a mark). A shell prompt (`$ `,
/// `# `) in front is dropped: the line is typed before the shell is ready, so the terminal
/// echoes it first and the prompt then lands in front of the command's output.
fn printed<'a>(output: &'a str, marks: &[&str]) -> Vec<&'a str> {
    output
        .lines()
        .map(|l| {
            let mut l = l.trim();
            while let Some(rest) = l.strip_prefix("$ ").or_else(|| l.strip_prefix("# ")) {
                l = rest.trim_start();
            }
            l
        })
        .filter(|l| marks.iter().any(|m| l.starts_with(m)))
        .collect()
}

pub fn srun_pty(ctx: &mut Ctx<'_>) -> Result<String> {
    let mut cmd = ctx.tool("srun");
    cmd.args(["-N1", "--pty", "/bin/sh"]);
    let input = "test -t 0 && echo stdin-is-a-tty; echo pty-$((6*7)) $SLURM_JOB_ID; exit 7\n";
    let (status, output) = drive(cmd, input)?;
    let printed = printed(&output, &["pty-42 ", "stdin-is-a-tty"]);
    let ran = status.code() == Some(7) && printed.iter().any(|l| l.starts_with("pty-42 "));
    if ran && output.contains(PTY_UNSUPPORTED) {
        ctx.gap = Some(format!(
            "srun --pty is off in this build (\"{PTY_UNSUPPORTED}\"): configure found no <pty.h>, so HAVE_PTY_H is undefined; macOS has none (openpty is in <util.h>) and needs shim/include/compat/pty.h on configure's include path, which `cargo xtask build-slurm` gives every macOS build (DARWIN-CATALOG A15)"
        ));
        return Ok(format!(
            "without a terminal the typed line still ran: {printed:?}, exit status 7"
        ));
    }
    if !ran || !printed.contains(&"stdin-is-a-tty") {
        return Err(Error::Scenario(format!(
            "srun --pty: {status}, expected exit 7 with `stdin-is-a-tty` and `pty-42 <job id>` printed; terminal output {output:?}"
        )));
    }
    let root = format!("typed a line, got {printed:?}, exit status 7");
    Ok(format!("{root}; {}", user_round(ctx)?))
}

/// The same as the unprivileged test user (Linux harness: `runuser`): the job's terminal
/// must belong to that user. slurmstepd opens it after dropping to the user's effective
/// uid; with `HAVE_SETRESUID` (Linux) it also switches the real uid, without it (the darwin
/// personality, macOS) it does not, and the owner must still be the user.
#[cfg(target_os = "linux")]
fn user_round(ctx: &mut Ctx<'_>) -> Result<String> {
    let user = super::super::user::ensure_test_user()?;
    let mut cmd = ctx.tool_as(&user.name, "srun");
    cmd.args(["-N1", "--pty", "/bin/sh"]);
    // `ls -lnL` prints the owner's uid on Linux and macOS alike.
    let input = "echo \"owner-$(ls -lnL \"$(tty)\" | awk '{print $3}') uid-$(id -u)\"; exit 0\n";
    let (status, output) = drive(cmd, input)?;
    let seen = printed(&output, &["owner-"]);
    let want = format!("owner-{} uid-{}", user.uid, user.uid);
    if !status.success() || seen.first() != Some(&want.as_str()) {
        return Err(Error::Scenario(format!(
            "srun --pty as {}: {status}, expected exit 0 and {want:?}; terminal output {output:?}",
            user.name
        )));
    }
    Ok(format!(
        "as {}: the job's terminal belongs to uid {}",
        user.name, user.uid
    ))
}

#[cfg(not(target_os = "linux"))]
fn user_round(_ctx: &mut Ctx<'_>) -> Result<String> {
    Ok("the round as the unprivileged user needs the Linux harness (runuser): not run".into())
}

/// A new pseudo-terminal pair (master, slave), both close-on-exec, so srun only gets the
/// copies installed as its stdio (else the master never reports EIO when srun exits).
fn open_pty() -> Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{F_SETFD, FdFlag, fcntl};
    let os = |call: &str, source| Error::Os {
        call: call.to_string(),
        source,
    };
    let pty = nix::pty::openpty(None, None).map_err(|e| os("openpty", e))?;
    for fd in [&pty.master, &pty.slave] {
        fcntl(fd, F_SETFD(FdFlag::FD_CLOEXEC)).map_err(|e| os("fcntl(F_SETFD)", e))?;
    }
    Ok((pty.master, pty.slave))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed__output_after_a_prompt_and_not_the_echo() {
        let out = "echo \"owner-$(id -u)\"; exit 0\r\n$ owner-1001 uid-1001\r\n# $ pty-42 7\r\n";
        assert_eq!(
            printed(out, &["owner-", "pty-42 "]),
            ["owner-1001 uid-1001", "pty-42 7"]
        );
        assert!(printed("echo owner-x\r\n", &["owner-"]).is_empty());
    }
}
