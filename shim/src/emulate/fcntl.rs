//! `fcntl` with macOS's `F_GETPATH`, which patch 0020's `fd_resolve_path()` uses on
//! `__APPLE__` (src/common/fd.c; diagnostics: the path behind a descriptor in log lines).
//!
//! macOS behaviour (fcntl(2), xnu-11417.101.15 bsd/kern/kern_descrip.c `case F_GETPATH`):
//! command 50 copies the path of the vnode behind the descriptor into the caller's buffer of
//! `MAXPATHLEN` (1024) bytes, NUL-terminated, and returns 0; a descriptor that is not a
//! vnode (a socket, a pipe) is `EBADF`.
//!
//! Linux mechanism: `readlink("/proc/self/fd/<n>")`; links of the `socket:[...]`,
//! `pipe:[...]` and `anon_inode:` kinds are not paths and give `EBADF`. Every other command
//! goes to glibc's `fcntl` unchanged. glibc's prototype is variadic; on the Linux ABIs
//! (x86-64 System V, AAPCS64) the optional third argument travels in the third integer
//! register either way, and is passed on as it came (an integer or a pointer).
//!
//! Portability problems not fixed: a path longer than 1023 bytes is `ENAMETOOLONG` (macOS
//! truncates nothing either: it fails with `ENOSPC`).
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, c_long};
use std::os::unix::ffi::OsStrExt;

use super::{procfs, report};
use crate::errno::{self, Errno};

/// macOS's `F_GETPATH`.
pub const F_GETPATH: c_int = 50;
/// macOS's `MAXPATHLEN`.
pub const MAXPATHLEN: usize = 1024;

/// The path `F_GETPATH` gives for `fd` of this process.
pub fn path_of(fd: c_int) -> Result<Vec<u8>, Errno> {
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    let p = procfs::fd_path(me, fd).ok_or(Errno(libc::EBADF))?;
    let b = p.as_os_str().as_bytes().to_vec();
    if !b.starts_with(b"/") {
        return Err(Errno(libc::EBADF));
    }
    if b.len() >= MAXPATHLEN {
        return Err(Errno(libc::ENAMETOOLONG));
    }
    Ok(b)
}

/// `fcntl(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_fcntl(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    crate::counted!(slurm_shim_fcntl);
    if cmd != F_GETPATH {
        // SAFETY: the arguments go to the real call as they came.
        return unsafe { libc::fcntl(fd, cmd, arg) };
    }
    report::applied("fcntl(F_GETPATH) (macOS) answered from /proc/self/fd (darwin personality)");
    let buf = arg as *mut u8;
    if buf.is_null() {
        return errno::to_c(Err(Errno(libc::EFAULT)));
    }
    errno::to_c(errno::preserve(|| path_of(fd)).map(|p| {
        // SAFETY: F_GETPATH's buffer holds MAXPATHLEN bytes and `p` is shorter.
        unsafe {
            std::ptr::copy_nonoverlapping(p.as_ptr(), buf, p.len());
            *buf.add(p.len()) = 0;
        }
        0
    }))
}
