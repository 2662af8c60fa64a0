//! `pipe2()`: a pipe whose two ends are created with `O_CLOEXEC` and/or `O_NONBLOCK`.
//!
//! # Linux behaviour emulated
//! `int pipe2(int pipefd[2], int flags)` (pipe(2)): `flags` is a combination of
//! `O_CLOEXEC` (both ends get `FD_CLOEXEC`, atomically) and `O_NONBLOCK` (both open file
//! descriptions get `O_NONBLOCK`); any other bit gives `EINVAL`, checked before anything
//! else; `EFAULT` for a bad `pipefd`; `EMFILE`/`ENFILE` as `pipe()`. On failure `pipefd` is
//! left untouched and no descriptor is left open.
//!
//! # macOS mechanism used
//! `pipe()` followed by `fcntl(F_SETFD, FD_CLOEXEC)` on both ends and
//! `fcntl(F_SETFL, O_NONBLOCK)` on both ends (gnulib `lib/pipe2.c`). When `O_CLOEXEC` is
//! asked for, `pipe()` and the `fcntl` calls run under [`crate::cloexec::with_fork_lock`],
//! so no `fork()` in another thread sees the ends without `FD_CLOEXEC`. Linux runs the same
//! code (the differential tests compare it with glibc's `pipe2`).
//!
//! # Portability problems not fixed
//! * Linux-only flags `O_DIRECT` (packet mode) and `O_NOTIFICATION_PIPE` give `EINVAL`.
//! * Only a NULL `pipefd` is detected as `EFAULT`; another invalid pointer crashes.
//! * Children made by `vfork()`/`posix_spawn()` are not covered (see [`crate::cloexec`]).

use std::os::fd::{AsFd, FromRawFd, IntoRawFd, OwnedFd};

use libc::c_int;

use crate::cloexec;
use crate::errno::{self, Errno};

/// What the caller asked for in `flags`.
#[derive(Clone, Copy, Debug)]
struct Flags {
    cloexec: bool,
    nonblock: bool,
}

fn parse_flags(flags: c_int) -> Result<Flags, Errno> {
    if flags & !(libc::O_CLOEXEC | libc::O_NONBLOCK) != 0 {
        return Err(Errno(libc::EINVAL));
    }
    Ok(Flags {
        cloexec: flags & libc::O_CLOEXEC != 0,
        nonblock: flags & libc::O_NONBLOCK != 0,
    })
}

/// The safe core: both ends of a new pipe, read end first, with `flags` applied.
pub fn pipe2_impl(flags: c_int) -> Result<[OwnedFd; 2], Errno> {
    let f = parse_flags(flags)?;
    cloexec::creating(f.cloexec, || {
        let mut raw = [-1 as c_int; 2];
        // SAFETY: `raw` is a valid, writable array of two ints.
        Errno::result(unsafe { libc::pipe(raw.as_mut_ptr()) })?;
        // SAFETY: pipe() succeeded, so both are new descriptors that nothing else owns.
        let ends = unsafe { [OwnedFd::from_raw_fd(raw[0]), OwnedFd::from_raw_fd(raw[1])] };
        for end in &ends {
            cloexec::apply(end.as_fd(), f.cloexec, f.nonblock)?;
        }
        Ok(ends)
    })
}

/// `pipe2(2)` for C callers.
///
/// # Safety
/// `fds` must be NULL or point to two writable `int`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_pipe2(fds: *mut c_int, flags: c_int) -> c_int {
    crate::counted!(slurm_shim_pipe2);
    // Linux checks the flags before touching `pipefd`, so EINVAL wins over EFAULT.
    if let Err(e) = parse_flags(flags) {
        return errno::to_c(Err(e));
    }
    if fds.is_null() {
        return errno::to_c(Err(Errno(libc::EFAULT)));
    }
    errno::to_c(pipe2_impl(flags).map(|[r, w]| {
        // SAFETY: `fds` is non-NULL and, by the caller's contract, points to two ints.
        unsafe {
            *fds = r.into_raw_fd();
            *fds.add(1) = w.into_raw_fd();
        }
        0
    }))
}
