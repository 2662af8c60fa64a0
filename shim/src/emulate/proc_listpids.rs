//! `proc_listpids` and its wrappers `proc_listallpids`, `proc_listpgrppids`,
//! `proc_listchildpids`: macOS's process listing, answered from Linux's `/proc` (darwin
//! personality only).
//!
//! macOS behaviour emulated (xnu-11417.101.15 bsd/kern/proc_info.c `proc_listpids`,
//! libsyscall/wrappers/libproc/libproc.c; constants from the SDK's sys/proc_info.h):
//!
//! * `proc_listpids(type, typeinfo, buffer, size)` writes the pids of the processes that
//!   match (`PROC_ALL_PIDS`; `PROC_PGRP_ONLY`, `PROC_PPID_ONLY`, `PROC_TTY_ONLY`,
//!   `PROC_UID_ONLY` (effective uid), `PROC_RUID_ONLY` with `typeinfo`) as `int`s and
//!   returns the number of **bytes** written; zombies are listed too (the kernel walks
//!   `allproc`, then `zombproc`). An unknown type matches nothing (0 bytes).
//! * With a NULL buffer it returns `(nprocs + 20) * sizeof(int)`, an estimate for sizing;
//!   a buffer smaller than one `int` is `ENOMEM`; a buffer too small for every match is
//!   filled and the rest is silently left out (callers retry with a larger one when the
//!   result fills the buffer). Errors return 0 with `errno` set.
//! * `proc_listallpids`, `proc_listpgrppids` and `proc_listchildpids` return a **count** of
//!   pids (the bytes divided by `sizeof(int)`), with a NULL buffer the estimate as a count.
//! * No privilege is needed (`NO_CHECK_SAME_USER`).
//!
//! Linux mechanism: the numeric entries of `/proc`, and for the filtered types one read of
//! `/proc/<pid>/stat` per process (`status` for the uid types).
//!
//! Portability problems not fixed: pids come in ascending order (macOS: newest first, then
//! zombies); the kernel's estimate counts Linux's processes; `PROC_TTY_ONLY` compares
//! Linux's encoding of the terminal device; `PROC_KDBG_ONLY` matches nothing.
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, c_void};

use super::{procfs, report};
use crate::errno::{self, Errno};

/// `PROC_ALL_PIDS`.
pub const PROC_ALL_PIDS: u32 = 1;
/// `PROC_PGRP_ONLY`.
pub const PROC_PGRP_ONLY: u32 = 2;
/// `PROC_TTY_ONLY`.
pub const PROC_TTY_ONLY: u32 = 3;
/// `PROC_UID_ONLY`.
pub const PROC_UID_ONLY: u32 = 4;
/// `PROC_RUID_ONLY`.
pub const PROC_RUID_ONLY: u32 = 5;
/// `PROC_PPID_ONLY`.
pub const PROC_PPID_ONLY: u32 = 6;

const INT: usize = std::mem::size_of::<c_int>();

/// The pids `proc_listpids(kind, arg)` selects.
pub fn select(kind: u32, arg: u32) -> Vec<i32> {
    let all = procfs::pids();
    let by_stat = |keep: &dyn Fn(&procfs::ProcStat) -> bool| -> Vec<i32> {
        all.iter()
            .copied()
            .filter(|&p| procfs::stat_of(p).is_some_and(|s| keep(&s)))
            .collect()
    };
    let by_status = |keep: &dyn Fn(&procfs::ProcStatus) -> bool| -> Vec<i32> {
        all.iter()
            .copied()
            .filter(|&p| procfs::status_of(p).is_some_and(|s| keep(&s)))
            .collect()
    };
    let a = arg as i32;
    match kind {
        PROC_ALL_PIDS => all,
        PROC_PGRP_ONLY => by_stat(&|s| s.pgrp == a),
        PROC_PPID_ONLY => by_stat(&|s| s.ppid == a),
        PROC_TTY_ONLY => by_stat(&|s| s.tty_nr != 0 && s.tty_nr == a),
        PROC_UID_ONLY => by_status(&|s| s.uids[1] == arg),
        PROC_RUID_ONLY => by_status(&|s| s.uids[0] == arg),
        _ => Vec::new(),
    }
}

/// The estimate a NULL buffer gets, in bytes.
pub fn estimate() -> usize {
    (procfs::pids().len() + 20) * INT
}

/// `proc_listpids` on a safe buffer: the bytes it returns, or the errno.
pub fn list_into(kind: u32, arg: u32, out: Option<&mut [c_int]>) -> Result<usize, Errno> {
    let Some(out) = out else {
        return Ok(estimate());
    };
    if out.is_empty() {
        return Err(Errno(libc::ENOMEM));
    }
    let pids = select(kind, arg);
    let n = pids.len().min(out.len());
    out[..n].copy_from_slice(&pids[..n]);
    Ok(n * INT)
}

/// The buffer of a C caller as a slice (`None` for NULL), or `ENOMEM` when it cannot hold
/// one `int`.
///
/// # Safety
/// `buffer` must be NULL or writable for `size` bytes.
unsafe fn caller_buffer<'a>(buffer: *mut c_void, size: c_int) -> Option<&'a mut [c_int]> {
    if buffer.is_null() {
        return None;
    }
    let n = usize::try_from(size).unwrap_or(0) / INT;
    // SAFETY: non-NULL and writable for `size >= n * INT` bytes per the contract (an `int`
    // buffer from the caller, so aligned).
    Some(unsafe { std::slice::from_raw_parts_mut(buffer.cast::<c_int>(), n) })
}

/// `proc_listpids(3)` (macOS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_proc_listpids(
    kind: u32,
    typeinfo: u32,
    buffer: *mut c_void,
    size: c_int,
) -> c_int {
    crate::counted!(slurm_shim_proc_listpids);
    report::applied("proc_listpids (macOS libproc) answered from /proc (darwin personality)");
    // SAFETY: the caller's buffer, as proc_listpids(3) requires it.
    let out = unsafe { caller_buffer(buffer, size) };
    match errno::preserve(|| list_into(kind, typeinfo, out)) {
        Ok(bytes) => bytes.min(c_int::MAX as usize) as c_int,
        Err(Errno(e)) => {
            errno::set(e);
            0
        }
    }
}

/// The libproc wrappers: `proc_listpids` divided by `sizeof(int)`.
///
/// # Safety
/// As [`slurm_shim_proc_listpids`].
unsafe fn count(kind: u32, arg: u32, buffer: *mut c_void, size: c_int) -> c_int {
    // SAFETY: forwarded under the same contract.
    let bytes = unsafe { slurm_shim_proc_listpids(kind, arg, buffer, size) };
    bytes / INT as c_int
}

/// `proc_listallpids(3)` (macOS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_proc_listallpids(buffer: *mut c_void, size: c_int) -> c_int {
    crate::counted!(slurm_shim_proc_listallpids);
    // SAFETY: the caller's buffer, as proc_listallpids(3) requires it.
    unsafe { count(PROC_ALL_PIDS, 0, buffer, size) }
}

/// `proc_listpgrppids(3)` (macOS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_proc_listpgrppids(
    pgrp: libc::pid_t,
    buffer: *mut c_void,
    size: c_int,
) -> c_int {
    crate::counted!(slurm_shim_proc_listpgrppids);
    // SAFETY: the caller's buffer, as proc_listpgrppids(3) requires it.
    unsafe { count(PROC_PGRP_ONLY, pgrp as u32, buffer, size) }
}

/// `proc_listchildpids(3)` (macOS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_proc_listchildpids(
    ppid: libc::pid_t,
    buffer: *mut c_void,
    size: c_int,
) -> c_int {
    crate::counted!(slurm_shim_proc_listchildpids);
    // SAFETY: the caller's buffer, as proc_listchildpids(3) requires it.
    unsafe { count(PROC_PPID_ONLY, ppid as u32, buffer, size) }
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn proc_listpids__null_buffer_estimates_and_tiny_buffer_is_enomem() {
        assert!(list_into(PROC_ALL_PIDS, 0, None).unwrap() >= 21 * INT);
        assert_eq!(
            list_into(PROC_ALL_PIDS, 0, Some(&mut [])),
            Err(Errno(libc::ENOMEM))
        );
    }

    #[test]
    fn proc_listpids__children_of_this_process() {
        let child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("spawn sleep");
        // SAFETY: getpid cannot fail.
        let me = unsafe { libc::getpid() };
        let kids = select(PROC_PPID_ONLY, me as u32);
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        assert!(kids.contains(&(child.id() as i32)), "{kids:?}");
        assert!(select(99, 0).is_empty());
    }
}
