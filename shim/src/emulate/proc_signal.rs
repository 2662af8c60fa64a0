//! `proc_signal_with_audittoken`: signal a process only if it is still the one an
//! `audit_token_t` names, answered on Linux with a pidfd (darwin personality only).
//!
//! macOS behaviour emulated (SDK `libproc.h`; xnu-11417.101.15
//! libsyscall/wrappers/libproc/libproc.c, bsd/kern/proc_info.c
//! `proc_signal_with_audittoken` → `psignal_by_audit_token`, bsd/kern/kern_proc.c
//! `proc_find_audit_token`): the kernel looks the process up by the token's pid
//! (`val[5]`) and compares the token's pid version (`val[7]`, `p_idversion`) with the
//! process's under the same reference it then signals, so a pid that was reused since the
//! token was taken is never signalled. Returns 0 or the errno **value** (not -1): `ESRCH`
//! (no such process, a zombie, or another generation of the pid), `EPERM`, `EINVAL` (bad
//! signal, or a buffer that is not an `audit_token_t`). Only the pid and the pid version
//! are compared, so a token built from `proc_pidinfo(PROC_PIDUNIQIDENTIFIERINFO)`'s
//! `p_idversion` works. The call exists since xnu-10063.101.15 (macOS 14.4): older kernels
//! answer `EINVAL` for the unknown call number, and callers must fall back to checking the
//! identity and then calling `kill(2)`.
//!
//! Linux mechanism: `pidfd_open(pid)`, then `/proc/<pid>/stat`'s start time compared with
//! the token's version ([`procfs::pid_version`]), then `pidfd_send_signal` on the same
//! descriptor: the descriptor pins the process that was checked, so the check and the
//! signal cannot be split by a pid reuse either.
//!
//! Portability problems not fixed: the personality models macOS 14.4 or later (the call
//! always exists); the other members of the token (audit user, session, ...) are ignored,
//! as XNU ignores them.
#![allow(clippy::missing_safety_doc)]

use libc::c_int;

use super::{proc_bsdinfo, procfs, report};

/// `audit_token_t` (SDK `mach/message.h`): eight `unsigned int`s.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct audit_token_t {
    /// `val[5]` is the pid, `val[7]` the pid version (bsm/libbsm.h `audit_token_to_pid`,
    /// `audit_token_to_pidversion`).
    pub val: [u32; 8],
}

/// Signals the process the token names, or gives the errno value.
pub fn signal_by_token(token: &audit_token_t, sig: c_int) -> Result<(), c_int> {
    let pid = token.val[5] as i32;
    let version = token.val[7] as i32;
    if pid <= 0 {
        return Err(libc::ESRCH);
    }
    if !(0..=64).contains(&sig) {
        return Err(libc::EINVAL);
    }
    // SAFETY: pidfd_open has no memory-safety preconditions.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(crate::errno::get());
    }
    let fd = fd as c_int;
    let same = proc_bsdinfo::lookup(pid, false)
        .is_ok_and(|st| procfs::pid_version(st.start_ticks) == version);
    let rc = if same {
        // SAFETY: `fd` is the pidfd opened above; no siginfo is passed.
        let r = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                sig,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(crate::errno::get())
        }
    } else {
        Err(libc::ESRCH)
    };
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
    rc
}

/// `proc_signal_with_audittoken(3)` (macOS 14.4 and later).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_proc_signal_with_audittoken(
    token: *const audit_token_t,
    sig: c_int,
) -> c_int {
    crate::counted!(slurm_shim_proc_signal_with_audittoken);
    report::applied(
        "proc_signal_with_audittoken (macOS libproc) answered with pidfd_open + start-time check + pidfd_send_signal (darwin personality)",
    );
    if token.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: non-NULL, points at the caller's token.
    let token = unsafe { *token };
    match crate::errno::preserve(|| signal_by_token(&token, sig)) {
        Ok(()) => 0,
        Err(e) => e,
    }
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    fn token_of(pid: i32, version: i32) -> audit_token_t {
        let mut t = audit_token_t::default();
        t.val[5] = pid as u32;
        t.val[7] = version as u32;
        t
    }

    #[test]
    fn proc_signal__right_generation_is_signalled_wrong_one_is_not() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let pid = child.id() as i32;
        let st = proc_bsdinfo::lookup(pid, false).expect("child");
        let version = procfs::pid_version(st.start_ticks);
        assert_eq!(
            signal_by_token(&token_of(pid, version + 1), 0),
            Err(libc::ESRCH)
        );
        assert_eq!(
            signal_by_token(&token_of(pid, version + 1), libc::SIGKILL),
            Err(libc::ESRCH)
        );
        assert!(
            child.try_wait().expect("try_wait").is_none(),
            "the wrong generation was killed"
        );
        assert_eq!(
            signal_by_token(&token_of(pid, version), libc::SIGKILL),
            Ok(())
        );
        let status = child.wait().expect("wait");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert_eq!(signal_by_token(&token_of(0, 0), 0), Err(libc::ESRCH));
    }
}
