//! `getpeereid`, the BSD call slurmstepd's `__APPLE__` branch uses for a connecting client's
//! credentials (src/slurmd/slurmstepd/req.c `_handle_accept`), answered on Linux.
//!
//! macOS behaviour (getpeereid(3), Libc gen/FreeBSD/getpeereid.c): the effective uid and gid
//! of the peer of a connected `AF_UNIX` stream socket, from `LOCAL_PEERCRED`; `ENOTCONN`
//! for an unconnected socket, `ENOTSOCK`/`EBADF` as `getsockopt` gives them.
//!
//! Linux mechanism: `getsockopt(SO_PEERCRED)` (glibc has no `getpeereid`).
//!
//! Portability problems not fixed: an unconnected `AF_UNIX` socket gives Linux's
//! `{pid 0, uid -1}` answer, mapped to `ENOTCONN`; other socket families give what Linux's
//! `SO_PEERCRED` gives.
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, gid_t, uid_t};

use super::report;
use crate::errno::{self, Errno};

/// The peer's effective ids.
pub fn peer_ids(fd: c_int) -> Result<(uid_t, gid_t), Errno> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred`/`len` are writable with the size given.
    Errno::result(unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    })?;
    if cred.pid == 0 && cred.uid == uid_t::MAX {
        return Err(Errno(libc::ENOTCONN));
    }
    Ok((cred.uid, cred.gid))
}

/// `getpeereid(3)` (macOS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_getpeereid(
    fd: c_int,
    euid: *mut uid_t,
    egid: *mut gid_t,
) -> c_int {
    crate::counted!(slurm_shim_getpeereid);
    report::applied("getpeereid (macOS) answered with SO_PEERCRED (darwin personality)");
    if euid.is_null() || egid.is_null() {
        return errno::to_c(Err(Errno(libc::EFAULT)));
    }
    errno::to_c(peer_ids(fd).map(|(u, g)| {
        // SAFETY: both pointers are non-NULL and writable.
        unsafe {
            *euid = u;
            *egid = g;
        }
        0
    }))
}
