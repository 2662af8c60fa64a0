//! What a child must do between `fork` and `exec`, which xshell cannot express: a new session
//! (detached daemons), a private mount namespace with our directory on `/run` (side-by-side
//! clusters), a pseudo-terminal as controlling terminal (`srun --pty`). This is the driver's
//! only use of `pre_exec`.
//!
//! Each hook calls only async-signal-safe system calls through nix's and rustix's safe
//! wrappers, on memory prepared before the fork (C strings, no allocation in the child).
//! `pre_exec` itself stays `unsafe` in std, because std cannot check that promise; each block
//! below says why it holds.

use std::ffi::CStr;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The child starts a new session (`setsid`): it outlives the harness and no terminal signal
/// of ours reaches it.
pub fn new_session(cmd: &mut Command) {
    // SAFETY: the hook runs in the forked child before exec and only calls setsid(2), which is
    // async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()?;
            Ok(())
        });
    }
}

/// The child enters a new mount namespace (`unshare(CLONE_NEWNS)`), makes every mount in it
/// private and bind-mounts `run_dir` onto `/run`, then each `(ours, target)` of `binds`;
/// with `hostname` it also enters a new UTS namespace (`CLONE_NEWUTS`) and takes that host
/// name (a node of a cluster on one machine). Linux only; elsewhere the child fails with
/// `ENOSYS`.
pub fn private_run(
    cmd: &mut Command,
    run_dir: std::ffi::CString,
    hostname: Option<std::ffi::CString>,
    binds: Vec<(std::ffi::CString, std::ffi::CString)>,
) {
    // SAFETY: the hook runs in the forked child before exec; unshare(2), mount(2) and
    // sethostname(2) are async-signal-safe, and their arguments are C strings made before the
    // fork (moved into the hook; nix passes a `&CStr` and an `OsStr` through without copying;
    // iterating the vector reads memory made before the fork and allocates nothing).
    unsafe {
        cmd.pre_exec(move || enter_private_run(&run_dir, hostname.as_deref(), &binds));
    }
}

#[cfg(target_os = "linux")]
fn enter_private_run(
    run_dir: &CStr,
    hostname: Option<&CStr>,
    binds: &[(std::ffi::CString, std::ffi::CString)],
) -> std::io::Result<()> {
    use nix::mount::{MsFlags, mount};
    use nix::sched::CloneFlags;
    use std::os::unix::ffi::OsStrExt;
    const NONE: Option<&CStr> = None;
    let flags = match hostname {
        Some(_) => CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWUTS,
        None => CloneFlags::CLONE_NEWNS,
    };
    nix::sched::unshare(flags)?;
    if let Some(name) = hostname {
        nix::unistd::sethostname(std::ffi::OsStr::from_bytes(name.to_bytes()))?;
    }
    mount(
        NONE,
        c"/",
        NONE,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        NONE,
    )?;
    mount(Some(run_dir), c"/run", NONE, MsFlags::MS_BIND, NONE)?;
    for (ours, target) in binds {
        mount(
            Some(ours.as_c_str()),
            target.as_c_str(),
            NONE,
            MsFlags::MS_BIND,
            NONE,
        )?;
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn enter_private_run(
    _run_dir: &CStr,
    _hostname: Option<&CStr>,
    _binds: &[(std::ffi::CString, std::ffi::CString)],
) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
}

/// The child starts a new session whose controlling terminal is its standard input (which
/// the caller set to a pseudo-terminal's slave), as in an interactive login.
pub fn controlling_terminal(cmd: &mut Command) {
    // SAFETY: the hook runs in the forked child before exec and only calls setsid(2) and
    // ioctl(TIOCSCTTY) on descriptor 0, both async-signal-safe; rustix's `stdin()` is a
    // constant borrowed descriptor, no allocation.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()?;
            rustix::process::ioctl_tiocsctty(rustix::stdio::stdin())?;
            Ok(())
        });
    }
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn new_session__child_leads_its_own_session() {
        let mut c = Command::new("sh");
        c.args(["-c", "ps -o sid= -p $$; echo $$"]);
        new_session(&mut c);
        let out = c.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(v.len(), 2, "{text}");
        assert_eq!(v[0], v[1], "session id is the child's pid: {text}");
        let ours = nix::unistd::getsid(None).unwrap().to_string();
        assert_ne!(v[0], ours);
    }

    #[test]
    fn controlling_terminal__stdin_pty_becomes_the_tty() {
        let pty = nix::pty::openpty(None, None).unwrap();
        let mut c = Command::new("sh");
        c.args(["-c", "tty <&0 >/dev/null && test -t 0 && ps -o tty= -p $$"]);
        c.stdin(pty.slave.try_clone().unwrap());
        controlling_terminal(&mut c);
        let out = c.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let tty = String::from_utf8_lossy(&out.stdout);
        assert!(tty.trim().starts_with("pts/"), "{tty:?}");
    }
}
