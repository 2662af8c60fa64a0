//! `proc_pidpath` and `proc_pidinfo(PROC_PIDLISTFDS)`, macOS's libproc calls behind Slurm's
//! `__APPLE__` branches, answered from Linux's `/proc` (darwin personality only).
//!
//! macOS behaviour emulated (the SDK's libproc.h and sys/proc_info.h; Libc-less libproc in
//! libsyscall, xnu-11417.101.15 libsyscall/wrappers/libproc/libproc.c and bsd/kern/proc_info.c):
//!
//! * `proc_pidpath(pid, buf, size)`: the executable's path, NUL-terminated; returns its
//!   length; `size` must be at least `PROC_PIDPATHINFO_SIZE` (1024) or it is `EINVAL`
//!   (libproc.c checks `buffersize < PROC_PIDPATHINFO_SIZE`); no such process is `ESRCH`.
//!   Patch 0014: slurmd finds its own binary with it.
//! * `proc_pidinfo(pid, PROC_PIDLISTFDS, 0, buf, size)`: an array of `struct proc_fdinfo
//!   { int32_t proc_fd; uint32_t proc_fdtype; }`; returns the bytes written; with a NULL
//!   buffer the bytes needed (proc_info.c `proc_pidfdlist` adds room for 20 more
//!   descriptors). The way to close every descriptor without `/proc/self/fd` or
//!   `close_range` (PoC D13's fix).
//! * `proc_pidinfo`'s process flavors (`PROC_PIDTBSDINFO`, `PROC_PIDTASKINFO`,
//!   `PROC_PIDT_SHORTBSDINFO`, `PROC_PIDUNIQIDENTIFIERINFO`, `PROC_PIDT_BSDINFOWITHUNIQID`)
//!   are [`super::proc_bsdinfo`]'s: a buffer smaller than the flavor's structure is
//!   `ENOMEM`, a NULL one `EFAULT`. Other flavors give `ENOTSUP` here.
//!
//! Linux mechanism: `/proc/<pid>/exe`, `/proc/<pid>/fd` ([`super::procfs`]); descriptor
//! types from `stat` of `/proc/<pid>/fd/<n>` (`S_ISSOCK` socket, `S_ISFIFO` pipe, an
//! `anon_inode:[eventpoll]` link kqueue, else vnode).
//!
//! Failures return 0 with `errno` set, as libproc does. Portability problems not fixed: the
//! flavors not listed (`PROC_PIDTHREADINFO`, `PROC_PIDREGIONINFO`, ...) are `ENOTSUP`; a
//! descriptor's type is one of vnode, socket, pipe or kqueue.
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, c_void};
use std::os::unix::ffi::OsStrExt;

use super::{proc_bsdinfo, procfs, report};
use crate::errno::{self, Errno};

/// `PROC_PIDLISTFDS`.
pub const PROC_PIDLISTFDS: c_int = 1;
/// `PROC_PIDPATHINFO_SIZE`.
pub const PROC_PIDPATHINFO_SIZE: u32 = 1024;
/// `PROX_FDTYPE_VNODE`.
pub const PROX_FDTYPE_VNODE: u32 = 1;
/// `PROX_FDTYPE_SOCKET`.
pub const PROX_FDTYPE_SOCKET: u32 = 2;
/// `PROX_FDTYPE_KQUEUE`.
pub const PROX_FDTYPE_KQUEUE: u32 = 5;
/// `PROX_FDTYPE_PIPE`.
pub const PROX_FDTYPE_PIPE: u32 = 6;

/// `struct proc_fdinfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct proc_fdinfo {
    /// The descriptor.
    pub proc_fd: i32,
    /// `PROX_FDTYPE_*`.
    pub proc_fdtype: u32,
}

/// The macOS type of descriptor `fd` of `pid`.
pub fn fd_type(pid: i32, fd: i32) -> u32 {
    let link = format!("/proc/{pid}/fd/{fd}");
    if procfs::fd_path(pid, fd).is_some_and(|p| {
        p.as_os_str()
            .as_bytes()
            .starts_with(b"anon_inode:[eventpoll]")
    }) {
        return PROX_FDTYPE_KQUEUE;
    }
    match std::fs::metadata(link) {
        Ok(m) => {
            use std::os::unix::fs::FileTypeExt;
            let t = m.file_type();
            if t.is_socket() {
                PROX_FDTYPE_SOCKET
            } else if t.is_fifo() {
                PROX_FDTYPE_PIPE
            } else {
                PROX_FDTYPE_VNODE
            }
        }
        Err(_) => PROX_FDTYPE_VNODE,
    }
}

/// The descriptor list `proc_pidinfo(PROC_PIDLISTFDS)` gives.
pub fn list_fds(pid: i32) -> Result<Vec<proc_fdinfo>, Errno> {
    let mut fds = procfs::fds(pid).ok_or(Errno(libc::ESRCH))?;
    // SAFETY: getpid has no preconditions.
    if pid == unsafe { libc::getpid() } {
        // /proc/self/fd lists the descriptor that reads it, closed by now; XNU's list is
        // taken in the kernel and names only open ones.
        // SAFETY: F_GETFD only asks about the number.
        fds.retain(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0);
    }
    Ok(fds
        .into_iter()
        .map(|fd| proc_fdinfo {
            proc_fd: fd,
            proc_fdtype: fd_type(pid, fd),
        })
        .collect())
}

/// `proc_pidpath(3)` (macOS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_proc_pidpath(
    pid: c_int,
    buffer: *mut c_void,
    size: u32,
) -> c_int {
    crate::counted!(slurm_shim_proc_pidpath);
    report::applied(
        "proc_pidpath (macOS libproc) answered from /proc/<pid>/exe (darwin personality)",
    );
    if buffer.is_null() || size < PROC_PIDPATHINFO_SIZE {
        errno::set(libc::EINVAL);
        return 0;
    }
    let Some(path) = procfs::exe(pid) else {
        errno::set(libc::ESRCH);
        return 0;
    };
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() + 1 > size as usize {
        errno::set(libc::ENAMETOOLONG);
        return 0;
    }
    // SAFETY: `buffer` is writable for `size > bytes.len()` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.cast::<u8>(), bytes.len());
        *buffer.cast::<u8>().add(bytes.len()) = 0;
    }
    bytes.len() as c_int
}

/// `proc_pidinfo(3)` (macOS) for one of [`proc_bsdinfo`]'s fixed-size flavors.
///
/// # Safety
/// `buffer` must be NULL or writable for `size` bytes.
unsafe fn pidinfo_fixed(
    pid: c_int,
    flavor: c_int,
    arg: u64,
    buffer: *mut c_void,
    size: c_int,
    need: usize,
) -> c_int {
    report::applied(
        "proc_pidinfo(BSD/task/unique-id flavors) (macOS libproc) answered from /proc/<pid> (darwin personality)",
    );
    if usize::try_from(size).unwrap_or(0) < need {
        errno::set(libc::ENOMEM);
        return 0;
    }
    if buffer.is_null() {
        errno::set(libc::EFAULT);
        return 0;
    }
    match errno::preserve(|| proc_bsdinfo::answer(pid, flavor, arg)) {
        Ok(bytes) => {
            // SAFETY: `buffer` is writable for `size >= need == bytes.len()` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.cast::<u8>(), bytes.len())
            };
            bytes.len() as c_int
        }
        Err(Errno(e)) => {
            errno::set(e);
            0
        }
    }
}

/// `proc_pidinfo(3)` (macOS): `PROC_PIDLISTFDS` and [`proc_bsdinfo`]'s flavors.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_proc_pidinfo(
    pid: c_int,
    flavor: c_int,
    arg: u64,
    buffer: *mut c_void,
    size: c_int,
) -> c_int {
    crate::counted!(slurm_shim_proc_pidinfo);
    if let Some(need) = proc_bsdinfo::size_of_flavor(flavor) {
        // SAFETY: the caller's buffer, as proc_pidinfo(3) requires it.
        return unsafe { pidinfo_fixed(pid, flavor, arg, buffer, size, need) };
    }
    if flavor != PROC_PIDLISTFDS {
        errno::set(libc::ENOTSUP);
        return 0;
    }
    report::applied(
        "proc_pidinfo(PROC_PIDLISTFDS) (macOS libproc) answered from /proc/<pid>/fd (darwin personality)",
    );
    let list = match errno::preserve(|| list_fds(pid)) {
        Ok(l) => l,
        Err(Errno(e)) => {
            errno::set(e);
            return 0;
        }
    };
    let each = std::mem::size_of::<proc_fdinfo>();
    if buffer.is_null() {
        return ((list.len() + 20) * each) as c_int;
    }
    let room = usize::try_from(size).unwrap_or(0) / each;
    let n = room.min(list.len());
    // SAFETY: `buffer` is writable for `size >= n * each` bytes.
    unsafe { std::ptr::copy_nonoverlapping(list.as_ptr(), buffer.cast::<proc_fdinfo>(), n) };
    (n * each) as c_int
}
