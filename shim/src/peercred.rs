//! `getsockopt` answering Linux's `SO_PEERCRED` (and `SO_ACCEPTCONN` on macOS).
//!
//! Linux behaviour emulated (socket(7), unix(7)): `getsockopt(fd, SOL_SOCKET, SO_PEERCRED,
//! &ucred, &len)` on a connected `AF_UNIX` socket gives the peer's `{pid, uid, gid}` as of
//! `connect`/`socketpair`. Like the kernel, a `len` smaller than `sizeof(struct ucred)`
//! gets a truncated copy (no error) and `*len` is set to the bytes written; a negative
//! `len` is `EINVAL`; NULL pointers are `EFAULT`; `EBADF` and `ENOTSOCK` for bad
//! descriptors. Every other option is passed to the OS `getsockopt` unchanged.
//!
//! macOS mechanism: `getsockopt(fd, SOL_LOCAL, LOCAL_PEERCRED)` into `struct xucred`
//! (sys/ucred.h: the reply is only trusted when its length is `sizeof(struct xucred)`,
//! `cr_version == XUCRED_VERSION` and `1 <= cr_ngroups <= NGROUPS`, else `EINVAL`; the gid
//! is `cr_groups[0]`, the effective gid), plus `getsockopt(fd, SOL_LOCAL, LOCAL_PEERPID)`
//! for the pid (DARWIN-CATALOG B1: xucred has no `cr_pid` on macOS). The two OS calls sit
//! behind the [`PeerOs`] seam; on Linux the seam reads `SO_PEERCRED` and presents it as an
//! xucred, so the validation and combining logic is the same code on both systems.
//!
//! `SO_ACCEPTCONN` (DARWIN-CATALOG D2): XNU's `sogetopt` does not know it (`ENOPROTOOPT`),
//! and Slurm 26.11's conmgr rejects every descriptor then. On macOS the shim answers it
//! from `proc_pidfdinfo(getpid(), fd, PROC_PIDFDSOCKETINFO)`: `soi_options & SO_ACCEPTCONN`
//! (xnu `bsd/sys/proc_info.h`). The answer is used only when the reply is long enough and
//! its `soi_type` equals `getsockopt(SO_TYPE)`, a check that the structure layout is the
//! one assumed; otherwise the original `ENOPROTOOPT` is returned. On Linux the kernel
//! answers `SO_ACCEPTCONN` itself; the decoding ([`acceptconn_from_fdinfo`]) is tested with
//! synthetic replies.
//!
//! Portability problems not fixed:
//! * On a non-`AF_UNIX` or unconnected socket Linux returns `{0, -1, -1}`; macOS's
//!   `LOCAL_PEERCRED` fails (`ENOTCONN`, `EOPNOTSUPP`...) and the shim passes that error on.
//! * Darwin's credential is the peer's at `connect` time for the uid/groups, but
//!   `LOCAL_PEERPID` is the pid of the process that connected, which is the same thing.
#![allow(clippy::missing_safety_doc)]

use core::mem::size_of;

use libc::{c_int, c_short, c_uint, c_void, gid_t, pid_t, socklen_t, uid_t};

use crate::consts::flags;
use crate::errno::{self, Errno};

/// `struct ucred` (Linux layout), filled for `SO_PEERCRED`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct slurm_shim_ucred {
    /// Peer process id.
    pub pid: pid_t,
    /// Peer effective user id.
    pub uid: uid_t,
    /// Peer effective group id.
    pub gid: gid_t,
}

/// `NGROUPS` of Darwin's `struct xucred`.
pub const XUCRED_NGROUPS: usize = 16;
/// `XUCRED_VERSION`.
pub const XUCRED_VERSION: c_uint = 0;

/// Darwin's `struct xucred` (sys/ucred.h), declared here so the logic builds on Linux.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawXucred {
    /// Structure version.
    pub cr_version: c_uint,
    /// Effective user id.
    pub cr_uid: uid_t,
    /// Number of groups.
    pub cr_ngroups: c_short,
    /// Groups; `[0]` is the effective gid.
    pub cr_groups: [gid_t; XUCRED_NGROUPS],
}

#[cfg(target_vendor = "apple")]
const _: () = assert!(size_of::<RawXucred>() == size_of::<libc::xucred>());

/// The OS mechanism: Darwin's `LOCAL_PEERCRED` and `LOCAL_PEERPID`.
pub trait PeerOs {
    /// The peer's xucred and the length the OS reported for it.
    fn peer_xucred(&self, fd: c_int) -> Result<(RawXucred, socklen_t), Errno>;
    /// The peer's pid.
    fn peer_pid(&self, fd: c_int) -> Result<pid_t, Errno>;
}

/// The real OS.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealPeerOs;

fn raw_getsockopt<T>(fd: c_int, level: c_int, name: c_int, v: &mut T) -> Result<socklen_t, Errno> {
    let mut len = size_of::<T>() as socklen_t;
    // SAFETY: `v` is writable for `len` bytes; `len` is a valid socklen_t.
    Errno::result(unsafe {
        libc::getsockopt(fd, level, name, (v as *mut T).cast::<c_void>(), &mut len)
    })?;
    Ok(len)
}

impl PeerOs for RealPeerOs {
    #[cfg(target_vendor = "apple")]
    fn peer_xucred(&self, fd: c_int) -> Result<(RawXucred, socklen_t), Errno> {
        let mut x = RawXucred::default();
        let len = raw_getsockopt(fd, libc::SOL_LOCAL, libc::LOCAL_PEERCRED, &mut x)?;
        Ok((x, len))
    }

    #[cfg(target_vendor = "apple")]
    fn peer_pid(&self, fd: c_int) -> Result<pid_t, Errno> {
        let mut pid: pid_t = 0;
        let len = raw_getsockopt(fd, libc::SOL_LOCAL, libc::LOCAL_PEERPID, &mut pid)?;
        if len as usize != size_of::<pid_t>() {
            return Err(Errno(libc::EINVAL));
        }
        Ok(pid)
    }

    #[cfg(target_os = "linux")]
    fn peer_xucred(&self, fd: c_int) -> Result<(RawXucred, socklen_t), Errno> {
        let mut u = libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        };
        raw_getsockopt(fd, libc::SOL_SOCKET, libc::SO_PEERCRED, &mut u)?;
        let mut x = RawXucred {
            cr_version: XUCRED_VERSION,
            cr_uid: u.uid,
            cr_ngroups: 1,
            ..Default::default()
        };
        x.cr_groups[0] = u.gid;
        Ok((x, size_of::<RawXucred>() as socklen_t))
    }

    #[cfg(target_os = "linux")]
    fn peer_pid(&self, fd: c_int) -> Result<pid_t, Errno> {
        let mut u = libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        };
        raw_getsockopt(fd, libc::SOL_SOCKET, libc::SO_PEERCRED, &mut u)?;
        Ok(u.pid)
    }
}

/// Validates a Darwin xucred reply and combines it with the peer pid.
pub fn peercred_impl(os: &impl PeerOs, fd: c_int) -> Result<slurm_shim_ucred, Errno> {
    let (x, len) = os.peer_xucred(fd)?;
    if len as usize != size_of::<RawXucred>()
        || x.cr_version != XUCRED_VERSION
        || x.cr_ngroups < 1
        || x.cr_ngroups as usize > XUCRED_NGROUPS
    {
        return Err(Errno(libc::EINVAL));
    }
    let pid = os.peer_pid(fd)?;
    Ok(slurm_shim_ucred {
        pid,
        uid: x.cr_uid,
        gid: x.cr_groups[0],
    })
}

/// Offset of `psi.soi_type` in Darwin's `struct socket_fdinfo`.
pub const SOI_TYPE_OFFSET: usize = 24 + 152;
/// Offset of `psi.soi_options` in Darwin's `struct socket_fdinfo`.
pub const SOI_OPTIONS_OFFSET: usize = 24 + 164;
/// Darwin's `SO_ACCEPTCONN` bit in `so_options`.
pub const DARWIN_SO_ACCEPTCONN: u16 = 0x0002;

/// Decodes a `PROC_PIDFDSOCKETINFO` reply of `reply.len()` bytes: `Some(0 | 1)` for
/// `SO_ACCEPTCONN`, or `None` when the reply is too short or its `soi_type` is not
/// `so_type` (the layout is not the one assumed).
pub fn acceptconn_from_fdinfo(reply: &[u8], so_type: c_int) -> Option<c_int> {
    let ty = reply.get(SOI_TYPE_OFFSET..SOI_TYPE_OFFSET + 4)?;
    let opt = reply.get(SOI_OPTIONS_OFFSET..SOI_OPTIONS_OFFSET + 2)?;
    let ty = c_int::from_ne_bytes([ty[0], ty[1], ty[2], ty[3]]);
    let opt = u16::from_ne_bytes([opt[0], opt[1]]);
    (ty == so_type).then_some(c_int::from(opt & DARWIN_SO_ACCEPTCONN != 0))
}

#[cfg(target_vendor = "apple")]
fn acceptconn_darwin(fd: c_int) -> Option<c_int> {
    /// `PROC_PIDFDSOCKETINFO` (sys/proc_info.h).
    const PROC_PIDFDSOCKETINFO: c_int = 3;
    #[repr(C, align(8))]
    struct Buf([u8; 2048]);
    let mut so_type: c_int = 0;
    raw_getsockopt(fd, libc::SOL_SOCKET, libc::SO_TYPE, &mut so_type).ok()?;
    let mut buf = Buf([0; 2048]);
    // SAFETY: `buf` is writable for the size passed (larger than struct socket_fdinfo,
    // which the kernel accepts; it returns the bytes written).
    let n = unsafe {
        libc::proc_pidfdinfo(
            libc::getpid(),
            fd,
            PROC_PIDFDSOCKETINFO,
            buf.0.as_mut_ptr().cast::<c_void>(),
            2048,
        )
    };
    let n = usize::try_from(n).ok()?.min(buf.0.len());
    acceptconn_from_fdinfo(&buf.0[..n], so_type)
}

/// Copies `bytes` to the caller's option buffer, truncated to `*len` like Linux.
///
/// # Safety
/// `value` is writable for `*len` bytes; `len` is valid.
unsafe fn copy_out(bytes: &[u8], value: *mut c_void, len: *mut socklen_t) {
    // SAFETY: `len` is valid per the contract.
    let n = (unsafe { *len } as usize).min(bytes.len());
    // SAFETY: `value` has room for `*len >= n` bytes; the regions cannot overlap.
    unsafe {
        core::ptr::copy_nonoverlapping(bytes.as_ptr(), value.cast::<u8>(), n);
        *len = n as socklen_t;
    }
}

/// `getsockopt(2)`, answering `SO_PEERCRED` (and on macOS `SO_ACCEPTCONN`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_getsockopt(
    fd: c_int,
    level: c_int,
    name: c_int,
    value: *mut c_void,
    len: *mut socklen_t,
) -> c_int {
    crate::counted!(slurm_shim_getsockopt);
    if level == libc::SOL_SOCKET && name == flags::SO_PEERCRED {
        if len.is_null() {
            return errno::to_c(Err(Errno(libc::EFAULT)));
        }
        // SAFETY: `len` is non-NULL and points at the caller's socklen_t.
        if (unsafe { *len } as c_int) < 0 {
            return errno::to_c(Err(Errno(libc::EINVAL)));
        }
        let cred = match errno::preserve(|| peercred_impl(&RealPeerOs, fd)) {
            Ok(c) => c,
            Err(e) => return errno::to_c(Err(e)),
        };
        // SAFETY: reading len again, as above.
        if value.is_null() && unsafe { *len } > 0 {
            return errno::to_c(Err(Errno(libc::EFAULT)));
        }
        let mut bytes = [0u8; size_of::<slurm_shim_ucred>()];
        bytes[0..4].copy_from_slice(&cred.pid.to_ne_bytes());
        bytes[4..8].copy_from_slice(&cred.uid.to_ne_bytes());
        bytes[8..12].copy_from_slice(&cred.gid.to_ne_bytes());
        // SAFETY: `value` has room for `*len` bytes (or *len is 0); `len` is valid.
        unsafe { copy_out(&bytes, value, len) };
        return 0;
    }
    // SAFETY: pass-through with the caller's arguments and contract.
    let rc = unsafe { libc::getsockopt(fd, level, name, value, len) };
    #[cfg(target_vendor = "apple")]
    if rc == -1
        && level == libc::SOL_SOCKET
        && name == libc::SO_ACCEPTCONN
        && errno::get() == libc::ENOPROTOOPT
        && !len.is_null()
    {
        let saved = errno::get();
        if let Some(v) = acceptconn_darwin(fd) {
            // SAFETY: `len` is non-NULL; `value` has room for `*len` bytes per the contract.
            if value.is_null() && unsafe { *len } > 0 {
                return errno::to_c(Err(Errno(libc::EFAULT)));
            }
            // SAFETY: as above.
            unsafe { copy_out(&v.to_ne_bytes(), value, len) };
            errno::set(saved);
            return 0;
        }
        errno::set(saved);
    }
    rc
}
