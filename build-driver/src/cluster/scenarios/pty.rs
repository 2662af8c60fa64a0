//! `srun --pty /bin/sh` driven through a real pseudo-terminal (openpty): what we type reaches
//! the remote shell, its output comes back, the task's stdin is a terminal, and the shell's
//! exit status becomes srun's.

use super::client::Ctx;
use crate::error::{Error, Result};
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// What srun prints when it was built without `HAVE_PTY_H` (src/srun/opt.c).
const PTY_UNSUPPORTED: &str = "--pty not currently supported on this system type";

pub fn srun_pty(ctx: &mut Ctx<'_>) -> Result<String> {
    let (master, slave) = open_pty()?;
    let mut cmd = ctx.tool("srun");
    cmd.args(["-N1", "--pty", "/bin/sh"]);
    let clone = |fd: &OwnedFd| -> Result<Stdio> {
        Ok(Stdio::from(
            fd.try_clone()
                .map_err(|e| Error::Cluster(format!("dup pty: {e}")))?,
        ))
    };
    cmd.stdin(clone(&slave)?)
        .stdout(clone(&slave)?)
        .stderr(clone(&slave)?);
    // SAFETY: setsid and ioctl(TIOCSCTTY) are async-signal-safe; run in the child before exec
    // so the pty becomes srun's controlling terminal, as in an interactive login.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::Cluster(format!("cannot start srun --pty: {e}")))?;
    drop(cmd);
    drop(slave);
    let mut reader = std::fs::File::from(
        master
            .try_clone()
            .map_err(|e| Error::Cluster(format!("dup pty: {e}")))?,
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
    let input = "test -t 0 && echo stdin-is-a-tty; echo pty-$((6*7)) $SLURM_JOB_ID; exit 7\n";
    writer
        .write_all(input.as_bytes())
        .map_err(|e| Error::Cluster(format!("write to pty: {e}")))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() > deadline => {
                child.kill().ok();
                child.wait().ok();
                return Err(Error::Cluster("srun --pty did not exit within 60 s".into()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(Error::Cluster(format!("wait for srun --pty: {e}"))),
        }
    };
    drop(writer);
    let output = String::from_utf8_lossy(&collector.join().unwrap_or_default()).into_owned();
    // The shell's own output lines (the terminal also echoes the typed line).
    let printed: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("pty-42") || *l == "stdin-is-a-tty")
        .collect();
    let ran = status.code() == Some(7) && printed.iter().any(|l| l.starts_with("pty-42 "));
    if ran && output.contains(PTY_UNSUPPORTED) {
        ctx.gap = Some(format!(
            "srun --pty is off in this build (\"{PTY_UNSUPPORTED}\"): HAVE_PTY_H is undefined because macOS has no <pty.h> (openpty is in <util.h>), DARWIN-CATALOG A15, not fixed yet"
        ));
        return Ok(format!(
            "without a terminal the typed line still ran: {printed:?}, exit status 7"
        ));
    }
    if !ran || !printed.contains(&"stdin-is-a-tty") {
        return Err(Error::Cluster(format!(
            "srun --pty: {status}, expected exit 7 with `stdin-is-a-tty` and `pty-42 <job id>` printed; terminal output {output:?}"
        )));
    }
    Ok(format!("typed a line, got {:?}, exit status 7", printed))
}

/// A new pseudo-terminal pair (master, slave).
fn open_pty() -> Result<(OwnedFd, OwnedFd)> {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors; name, termios and winsize may be NULL.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    if rc != 0 {
        return Err(Error::Cluster(format!(
            "openpty: {}",
            std::io::Error::last_os_error()
        )));
    }
    for fd in [master, slave] {
        // SAFETY: fcntl on a descriptor we own; close-on-exec so srun only gets the copies
        // installed as its stdio (else the master never reports EIO when srun exits).
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    // SAFETY: both are fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) })
}
