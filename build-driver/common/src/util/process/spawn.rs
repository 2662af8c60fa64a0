//! What a child must do between `fork` and `exec`, which xshell cannot express: a new session
//! (detached daemons), a private mount namespace with our directory on `/run` (side-by-side
//! clusters), a pseudo-terminal as controlling terminal (`srun --pty`), the umask and
//! resource limits a submitting user's shell would have (clients whose settings Slurm
//! propagates into the job). This is the driver's only use of `pre_exec`.
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

/// One more mount in a private mount namespace, after `/run` (a node's own view of a file or
/// directory: its user database, a tiny file system for its spool).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtraMount {
    /// `mount --bind source target` (a file onto a file, a directory onto a directory).
    Bind {
        source: std::ffi::CString,
        target: std::ffi::CString,
    },
    /// A new `tmpfs` on `target` with mount options `options` (`size=256k,mode=0755`).
    Tmpfs {
        target: std::ffi::CString,
        options: std::ffi::CString,
    },
}

/// The child enters a new mount namespace (`unshare(CLONE_NEWNS)`), makes every mount in it
/// private and bind-mounts `run_dir` onto `/run`, then makes the `extra` mounts in order;
/// with `hostname` it also enters a new UTS namespace (`CLONE_NEWUTS`) and takes that host
/// name (a node of a cluster on one machine). Linux only; elsewhere the child fails with
/// `ENOSYS`.
pub fn private_run(
    cmd: &mut Command,
    run_dir: std::ffi::CString,
    hostname: Option<std::ffi::CString>,
    extra: Vec<ExtraMount>,
) {
    // SAFETY: the hook runs in the forked child before exec; unshare(2), mount(2) and
    // sethostname(2) are async-signal-safe, and their arguments are C strings made before the
    // fork (moved into the hook; nix passes a `&CStr` and an `OsStr` through without copying;
    // iterating the vector reads memory made before the fork and allocates nothing).
    unsafe {
        cmd.pre_exec(move || enter_private_run(&run_dir, hostname.as_deref(), &extra));
    }
}

#[cfg(target_os = "linux")]
fn enter_private_run(
    run_dir: &CStr,
    hostname: Option<&CStr>,
    extra: &[ExtraMount],
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
    for m in extra {
        match m {
            ExtraMount::Bind { source, target } => mount(
                Some(source.as_c_str()),
                target.as_c_str(),
                NONE,
                MsFlags::MS_BIND,
                NONE,
            )?,
            ExtraMount::Tmpfs { target, options } => mount(
                Some(c"tmpfs"),
                target.as_c_str(),
                Some(c"tmpfs"),
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                Some(options.as_c_str()),
            )?,
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn enter_private_run(
    _run_dir: &CStr,
    _hostname: Option<&CStr>,
    _extra: &[ExtraMount],
) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
}

/// The child runs with file mode creation mask `mask`.
pub fn umask(cmd: &mut Command, mask: u32) {
    let mode = nix::sys::stat::Mode::from_bits_truncate(mask as libc::mode_t);
    // SAFETY: the hook runs in the forked child before exec and only calls umask(2), which is
    // async-signal-safe and cannot fail; `mode` is a plain integer copied into the hook.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::stat::umask(mode);
            Ok(())
        });
    }
}

/// The child runs with these soft limits (resource, value; the hard limits unchanged).
pub fn soft_limits(cmd: &mut Command, limits: Vec<(nix::sys::resource::Resource, u64)>) {
    // SAFETY: the hook runs in the forked child before exec and only calls getrlimit(2) and
    // setrlimit(2), both async-signal-safe; the list was built before the fork and is only
    // read (no allocation in the child).
    unsafe {
        cmd.pre_exec(move || {
            for &(resource, soft) in &limits {
                let (_, hard) = nix::sys::resource::getrlimit(resource)?;
                nix::sys::resource::setrlimit(resource, soft, hard)?;
            }
            Ok(())
        });
    }
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

    #[cfg(target_os = "linux")]
    #[test]
    fn private_run__extra_bind_and_tmpfs_in_the_child_only() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: mount namespaces need root");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let (run, host, node, small) = (
            t.path().join("run"),
            t.path().join("host.txt"),
            t.path().join("node.txt"),
            t.path().join("small"),
        );
        std::fs::create_dir_all(&run).unwrap();
        std::fs::create_dir_all(&small).unwrap();
        std::fs::write(&host, "host\n").unwrap();
        std::fs::write(&node, "node\n").unwrap();
        let c = |p: &std::path::Path| std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!(
            "cat {}; stat -f -c %T {}; df -k {} | tail -1",
            host.display(),
            small.display(),
            small.display()
        ));
        private_run(
            &mut cmd,
            c(&run),
            None,
            vec![
                ExtraMount::Bind {
                    source: c(&node),
                    target: c(&host),
                },
                ExtraMount::Tmpfs {
                    target: c(&small),
                    options: std::ffi::CString::new("size=256k,mode=0755").unwrap(),
                },
            ],
        );
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(lines[0], "node", "{text}");
        assert_eq!(lines[1], "tmpfs", "{text}");
        assert_eq!(lines[2].split_whitespace().nth(1), Some("256"), "{text}");
        // Outside the child nothing changed.
        crate::testing::assert_file(&host, "host\n");
    }

    #[test]
    fn umask__child_has_the_mask() {
        let mut c = Command::new("sh");
        c.args(["-c", "umask"]);
        umask(&mut c, 0o027);
        let out = c.output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0027");
    }

    #[test]
    fn soft_limits__child_has_them_hard_unchanged() {
        use nix::sys::resource::{Resource, getrlimit};
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        let mut c = Command::new("sh");
        c.args(["-c", "ulimit -S -n; ulimit -H -n"]);
        soft_limits(&mut c, vec![(Resource::RLIMIT_NOFILE, 77)]);
        let out = c.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(v[0], "77", "{text}");
        let want_hard = if hard == libc::RLIM_INFINITY {
            "unlimited".to_string()
        } else {
            hard.to_string()
        };
        assert_eq!(v[1], want_hard, "{text}");
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
