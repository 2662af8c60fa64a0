//! `socket()` and `socketpair()` with `SOCK_CLOEXEC` / `SOCK_NONBLOCK` OR-ed into the type.
//!
//! # Linux behaviour emulated
//! Since Linux 2.6.27 the `type` argument of `socket()` and `socketpair()` may carry
//! `SOCK_CLOEXEC` (the new descriptors get `FD_CLOEXEC`, atomically) and `SOCK_NONBLOCK`
//! (their open file descriptions get `O_NONBLOCK`) (socket(2), socketpair(2)). The kernel
//! splits `type` at `SOCK_TYPE_MASK` (0xf): any bit above it other than these two flags
//! gives `EINVAL`, before the domain or the base type is looked at. Everything else (errno
//! for a bad domain, type or protocol) is the plain call's. `socketpair()` leaves `sv`
//! untouched on failure and gives `EFAULT` for a bad `sv`.
//!
//! # macOS mechanism used
//! The macOS SDK has neither flag; `slurm_shim.h` defines them as unused high bits
//! ([`crate::consts::SLURM_SHIM_SOCK_CLOEXEC`], [`crate::consts::SLURM_SHIM_SOCK_NONBLOCK`]).
//! The shim strips them, calls the plain function, then `fcntl(F_SETFD, FD_CLOEXEC)` and
//! `fcntl(F_SETFL, O_NONBLOCK)`; with `SOCK_CLOEXEC` the creation and the `fcntl` run under
//! [`crate::cloexec::with_fork_lock`]. On Linux the same code runs with glibc's flag
//! values, so the tests compare it with glibc.
//!
//! # Portability problems not fixed
//! * Only a NULL `sv` is detected as `EFAULT` (before the domain is checked, where Linux
//!   would report a bad domain first); another invalid pointer crashes.
//! * `socket()` is a function here: code that takes the address of `socket` gets the shim.

use std::os::fd::{AsFd, FromRawFd, IntoRawFd, OwnedFd};

use libc::c_int;

use crate::cloexec;
use crate::consts::flags::{SOCK_CLOEXEC, SOCK_NONBLOCK};
use crate::errno::{self, Errno};

/// Linux's `SOCK_TYPE_MASK`: the bits of `type` that hold the socket type itself.
const SOCK_TYPE_MASK: c_int = 0xf;

/// A `type` argument split into the base type and the two creation flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockType {
    /// The type to pass to the plain call (`SOCK_STREAM`, ...).
    pub base: c_int,
    /// `SOCK_CLOEXEC` was given.
    pub cloexec: bool,
    /// `SOCK_NONBLOCK` was given.
    pub nonblock: bool,
}

/// Splits `ty` as Linux does: `EINVAL` for an unknown bit above `SOCK_TYPE_MASK`.
pub fn split_type(ty: c_int) -> Result<SockType, Errno> {
    let flags = ty & !SOCK_TYPE_MASK;
    if flags & !(SOCK_CLOEXEC | SOCK_NONBLOCK) != 0 {
        return Err(Errno(libc::EINVAL));
    }
    Ok(SockType {
        base: ty & SOCK_TYPE_MASK,
        cloexec: flags & SOCK_CLOEXEC != 0,
        nonblock: flags & SOCK_NONBLOCK != 0,
    })
}

/// The safe core of `socket()`.
pub fn socket_impl(domain: c_int, ty: c_int, protocol: c_int) -> Result<OwnedFd, Errno> {
    let t = split_type(ty)?;
    cloexec::creating(t.cloexec, || {
        // SAFETY: socket() takes integers only.
        let raw = Errno::result(unsafe { libc::socket(domain, t.base, protocol) })?;
        // SAFETY: socket() succeeded, so `raw` is a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        cloexec::apply(fd.as_fd(), t.cloexec, t.nonblock)?;
        Ok(fd)
    })
}

/// The safe core of `socketpair()`.
pub fn socketpair_impl(domain: c_int, ty: c_int, protocol: c_int) -> Result<[OwnedFd; 2], Errno> {
    let t = split_type(ty)?;
    cloexec::creating(t.cloexec, || {
        let mut raw = [-1 as c_int; 2];
        // SAFETY: `raw` is a valid, writable array of two ints.
        Errno::result(unsafe { libc::socketpair(domain, t.base, protocol, raw.as_mut_ptr()) })?;
        // SAFETY: socketpair() succeeded, so both are new descriptors nothing else owns.
        let pair = unsafe { [OwnedFd::from_raw_fd(raw[0]), OwnedFd::from_raw_fd(raw[1])] };
        for end in &pair {
            cloexec::apply(end.as_fd(), t.cloexec, t.nonblock)?;
        }
        Ok(pair)
    })
}

/// `socket(2)` for C callers.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
    crate::counted!(slurm_shim_socket);
    errno::to_c(socket_impl(domain, ty, protocol).map(IntoRawFd::into_raw_fd))
}

/// `socketpair(2)` for C callers.
///
/// # Safety
/// `sv` must be NULL or point to two writable `int`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_socketpair(
    domain: c_int,
    ty: c_int,
    protocol: c_int,
    sv: *mut c_int,
) -> c_int {
    crate::counted!(slurm_shim_socketpair);
    // Linux checks the type flags first, so EINVAL wins over EFAULT.
    if let Err(e) = split_type(ty) {
        return errno::to_c(Err(e));
    }
    if sv.is_null() {
        return errno::to_c(Err(Errno(libc::EFAULT)));
    }
    errno::to_c(socketpair_impl(domain, ty, protocol).map(|[a, b]| {
        // SAFETY: `sv` is non-NULL and, by the caller's contract, points to two ints.
        unsafe {
            *sv = a.into_raw_fd();
            *sv.add(1) = b.into_raw_fd();
        }
        0
    }))
}
