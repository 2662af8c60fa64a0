//! No `/proc`, `/run`, `/sys` or `/dev/shm`, as far as Slurm's own code can see.
//!
//! Linux behaviour: procfs (`/proc/self/fd`, `/proc/<pid>/stat`, `/proc/self/exe`, ...),
//! sysfs (`/sys/fs/cgroup`, `/sys/devices/system/cpu`), the `/run` tmpfs and `/dev/shm`.
//!
//! macOS behaviour: none of these exist. The sealed system volume's root has no `proc`,
//! `run` or `sys` (only `/var/run`, which is `/private/var/run`); XNU has no procfs (process
//! data comes from `sysctl(KERN_PROC)` and libproc's `proc_pidinfo`), and POSIX shared
//! memory has no file system. So every unguarded `/proc` read in Slurm fails on a Mac with
//! `ENOENT`, as the proof of concept saw (POC-DEFECTS D20: `cannot stat file
//! /proc/47029/fd/3`; D19: `/run` absent).
//!
//! Mechanism: the path calls Slurm's sources make (found by grepping 24.11.5 and the 26.11
//! snapshot for the literals: `open`, `openat`, `fopen`, `opendir`, `stat`, `lstat`,
//! `statfs`, `statvfs`, `access`, `readlink`, `realpath`, `unlink`, `mkdir`, `rmdir`,
//! `symlink`, `chdir`; `connect`/`bind` of `AF_UNIX` paths are in
//! [`super::unix_socket`]) are re-targeted in Slurm's translation units; an absolute path
//! equal to or below a hidden directory gives `ENOENT` without reaching the kernel. The
//! shim's own Linux seams, the libraries Slurm links (hwloc, munge, ...) and the cluster
//! harness keep the real file system. `/var/run` is *not* hidden: on Debian it is a symlink
//! to `/run`, where the harness bind-mounts each cluster's private run directory, and patch
//! 0011 puts macOS's SACK sockets there, so `/var/run/slurm` works as `/private/var/run/slurm`
//! does on a Mac while `/run/slurm` does not exist. On a Mac `/var/run` is a real directory
//! (only `/var` is a symlink, to `private/var`), and Slurm relies on it: auth/slurm opens it
//! with `O_DIRECTORY | O_NOFOLLOW` (`_prepare_run_dir`, sack.c), which on Debian fails with
//! `ELOOP` because the last component is the symlink. So when `/var/run` is a symlink to
//! `/run`, the shim resolves it itself for these calls ([`mac_path`]): Slurm's `/var/run/...`
//! reaches `/run/...`, a real directory, as on a Mac. This mapping applies in every process
//! (it is the Mac's file-system layout, not a failure model).
//!
//! Portability problems not fixed: only absolute paths are checked (a relative path that
//! reaches `/proc` from a working directory of `/` is not caught); `/dev/fd` (a symlink to
//! `/proc/self/fd` on Linux, devfs's fdesc on macOS) stays usable, as it is on a Mac;
//! `execve("/proc/self/exe")` is not intercepted (Slurm's `run_command` uses it only
//! `#if defined(__linux__)`).
#![allow(clippy::missing_safety_doc)]

use libc::{c_char, c_int, mode_t};
use std::ffi::{CStr, CString};
use std::path::Path;
use std::sync::OnceLock;

use super::{report, scope};
use crate::errno;

/// Model name (for [`scope::OFF_ENV`]).
pub const NAME: &str = "hidden-paths";

/// The directories a Mac does not have.
pub const HIDDEN: &[&str] = &["/proc", "/run", "/sys", "/dev/shm"];

/// Whether `path` (as the caller spelled it) is, or is below, a hidden directory.
pub fn is_hidden(path: &[u8]) -> bool {
    HIDDEN.iter().any(|dir| {
        let d = dir.as_bytes();
        path.starts_with(d) && (path.len() == d.len() || path[d.len()] == b'/')
    })
}

/// Whether the call on `path` must fail with `ENOENT` (and reports it once per site).
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string.
pub unsafe fn refuse(path: *const c_char, what: &'static str) -> bool {
    if path.is_null() {
        return false;
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    if is_hidden(bytes) && scope::active(NAME) {
        report::applied_to(what, bytes);
        return true;
    }
    false
}

/// Whether this machine's `/var/run` is a symlink to `/run` (Debian, most Linux systems).
fn var_run_is_run() -> bool {
    static IS: OnceLock<bool> = OnceLock::new();
    *IS.get_or_init(|| {
        std::fs::read_link("/var/run")
            .is_ok_and(|t| t == Path::new("/run") || t == Path::new("../run"))
    })
}

/// The path as a Mac sees the file system: `/var/run[/...]` is a real directory there, so on
/// a machine where it is a symlink to `/run` the symlink is resolved here.
pub fn mac_path_for(path: &[u8], var_run_is_run: bool) -> Option<Vec<u8>> {
    let rest = path.strip_prefix(b"/var/run")?;
    if !var_run_is_run || !(rest.is_empty() || rest.starts_with(b"/")) {
        return None;
    }
    let mut v = b"/run".to_vec();
    v.extend_from_slice(rest);
    Some(v)
}

/// [`mac_path_for`] on a C path: `Some(new path)` when it must be rewritten.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string.
pub unsafe fn mac_path(path: *const c_char) -> Option<CString> {
    if path.is_null() {
        return None;
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    CString::new(mac_path_for(bytes, var_run_is_run())?).ok()
}

fn enoent<T>(fail: T) -> T {
    errno::set(libc::ENOENT);
    fail
}

macro_rules! hide {
    ($what:literal, $path:ident, $fail:expr, $call:expr) => {{
        // SAFETY: the C caller passes a NUL-terminated path (or NULL), as the real call needs.
        if unsafe { refuse($path, concat!($what, " of a path macOS does not have -> ENOENT (no /proc, /run, /sys, /dev/shm on macOS)")) } {
            return enoent($fail);
        }
        // SAFETY: as above.
        let mapped = unsafe { mac_path($path) };
        let $path = mapped.as_ref().map_or($path, |p| p.as_ptr());
        // SAFETY: the arguments go to the real call unchanged (the path possibly mapped to
        // the same directory without the /var/run symlink).
        unsafe { $call }
    }};
}

/// `open(2)`. Called through glibc's variadic prototype: on the Linux ABIs (x86-64 System V,
/// AAPCS64) the optional mode travels in the third argument register either way, and is
/// only read with `O_CREAT`/`O_TMPFILE`, as the kernel does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    crate::counted!(slurm_shim_open);
    hide!("open", path, -1, libc::open(path, flags, mode))
}

/// `open64(2)` (see [`slurm_shim_open`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_open64(
    path: *const c_char,
    flags: c_int,
    mode: mode_t,
) -> c_int {
    crate::counted!(slurm_shim_open64);
    hide!("open", path, -1, libc::open64(path, flags, mode))
}

/// `openat(2)` (see [`slurm_shim_open`]); only absolute paths are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: mode_t,
) -> c_int {
    crate::counted!(slurm_shim_openat);
    hide!("openat", path, -1, libc::openat(dirfd, path, flags, mode))
}

/// `fopen(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_fopen(
    path: *const c_char,
    mode: *const c_char,
) -> *mut libc::FILE {
    crate::counted!(slurm_shim_fopen);
    hide!("fopen", path, std::ptr::null_mut(), libc::fopen(path, mode))
}

/// `fopen64(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_fopen64(
    path: *const c_char,
    mode: *const c_char,
) -> *mut libc::FILE {
    crate::counted!(slurm_shim_fopen64);
    hide!(
        "fopen",
        path,
        std::ptr::null_mut(),
        libc::fopen64(path, mode)
    )
}

/// `opendir(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_opendir(path: *const c_char) -> *mut libc::DIR {
    crate::counted!(slurm_shim_opendir);
    hide!("opendir", path, std::ptr::null_mut(), libc::opendir(path))
}

/// `stat(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_stat(path: *const c_char, buf: *mut libc::stat) -> c_int {
    crate::counted!(slurm_shim_stat);
    hide!("stat", path, -1, libc::stat(path, buf))
}

/// `lstat(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_lstat(path: *const c_char, buf: *mut libc::stat) -> c_int {
    crate::counted!(slurm_shim_lstat);
    hide!("lstat", path, -1, libc::lstat(path, buf))
}

/// `statfs(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_statfs(path: *const c_char, buf: *mut libc::statfs) -> c_int {
    crate::counted!(slurm_shim_statfs);
    hide!("statfs", path, -1, libc::statfs(path, buf))
}

/// `statvfs(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_statvfs(path: *const c_char, buf: *mut libc::statvfs) -> c_int {
    crate::counted!(slurm_shim_statvfs);
    hide!("statvfs", path, -1, libc::statvfs(path, buf))
}

/// `access(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_access(path: *const c_char, mode: c_int) -> c_int {
    crate::counted!(slurm_shim_access);
    hide!("access", path, -1, libc::access(path, mode))
}

/// `readlink(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_readlink(
    path: *const c_char,
    buf: *mut c_char,
    len: libc::size_t,
) -> libc::ssize_t {
    crate::counted!(slurm_shim_readlink);
    hide!("readlink", path, -1, libc::readlink(path, buf, len))
}

/// `realpath(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_realpath(
    path: *const c_char,
    resolved: *mut c_char,
) -> *mut c_char {
    crate::counted!(slurm_shim_realpath);
    hide!(
        "realpath",
        path,
        std::ptr::null_mut(),
        libc::realpath(path, resolved)
    )
}

/// `unlink(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_unlink(path: *const c_char) -> c_int {
    crate::counted!(slurm_shim_unlink);
    hide!("unlink", path, -1, libc::unlink(path))
}

/// `mkdir(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_mkdir(path: *const c_char, mode: mode_t) -> c_int {
    crate::counted!(slurm_shim_mkdir);
    hide!("mkdir", path, -1, libc::mkdir(path, mode))
}

/// `rmdir(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_rmdir(path: *const c_char) -> c_int {
    crate::counted!(slurm_shim_rmdir);
    hide!("rmdir", path, -1, libc::rmdir(path))
}

/// `symlink(2)`: the link's own path is checked (its target is only text).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_symlink(
    target: *const c_char,
    linkpath: *const c_char,
) -> c_int {
    crate::counted!(slurm_shim_symlink);
    hide!("symlink", linkpath, -1, libc::symlink(target, linkpath))
}

/// `chdir(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_chdir(path: *const c_char) -> c_int {
    crate::counted!(slurm_shim_chdir);
    hide!("chdir", path, -1, libc::chdir(path))
}
