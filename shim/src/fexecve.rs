//! `fexecve()`: execute the program a descriptor refers to.
//!
//! # Linux behaviour emulated
//! `int fexecve(int fd, char *const argv[], char *const envp[])` (fexecve(3), glibc
//! `sysdeps/unix/sysv/linux/fexecve.c`): `EINVAL` when `fd < 0` or `argv` or `envp` is
//! NULL; otherwise `execveat(fd, "", argv, envp, AT_EMPTY_PATH)`, so `EBADF` for a
//! descriptor that is not open, `EACCES` for a directory, a pipe, a socket or a file
//! without execute permission, and the errors of `execve()`. It returns only on failure.
//!
//! # macOS mechanism used
//! macOS has no `fexecve`. The shim checks the arguments as glibc does, `fstat()`s the
//! descriptor (`EBADF`; anything but a regular file gives `EACCES`), asks the kernel for the
//! path of the file with `fcntl(F_GETPATH)` and calls `execve()` on that path. It allocates
//! nothing, so a child can call it right after `fork()` in a threaded process. `execve()` of
//! `/dev/fd/N` is not used: on macOS `/dev/fd/N` is an fdesc vnode that is not a regular
//! file, which exec rejects. On Linux the same logic runs with `readlink("/proc/self/fd/N")`
//! in place of `F_GETPATH`, so the tests compare it with glibc.
//!
//! # Portability problems not fixed
//! * The file is executed by path: if it was renamed or replaced after it was opened, the
//!   file now at that path runs (or `ENOENT`); a deleted file cannot be executed (Linux
//!   can). Execute permission is checked on the path, not on the descriptor.
//! * Slurm only calls it after `open(O_PATH)` under `__linux__` (run_command.c), so on
//!   macOS it is a link-time symbol that is never reached.

use libc::{c_char, c_int};

use crate::errno::{self, Errno};

/// Room for a path returned by the OS, with its terminating NUL.
const PATH_ROOM: usize = 1025;

#[cfg(target_vendor = "apple")]
mod os {
    use super::PATH_ROOM;
    use crate::errno::Errno;
    use libc::c_int;

    /// The path of the file `fd` refers to, NUL-terminated in `buf`.
    pub fn fd_path(fd: c_int, buf: &mut [u8; PATH_ROOM]) -> Result<(), Errno> {
        // F_GETPATH writes at most MAXPATHLEN (1024) bytes including the NUL.
        // SAFETY: `buf` is writable for PATH_ROOM > MAXPATHLEN bytes.
        Errno::result(unsafe { libc::fcntl(fd, libc::F_GETPATH, buf.as_mut_ptr()) })?;
        if buf.contains(&0) {
            Ok(())
        } else {
            Err(Errno(libc::ENAMETOOLONG))
        }
    }
}

#[cfg(target_os = "linux")]
mod os {
    use super::PATH_ROOM;
    use crate::errno::Errno;
    use libc::c_int;

    /// The path of the file `fd` refers to, NUL-terminated in `buf`.
    pub fn fd_path(fd: c_int, buf: &mut [u8; PATH_ROOM]) -> Result<(), Errno> {
        // "/proc/self/fd/" + up to 10 digits + NUL, built without allocating.
        let mut link = [0u8; 32];
        let prefix = b"/proc/self/fd/";
        link[..prefix.len()].copy_from_slice(prefix);
        let mut digits = [0u8; 10];
        let mut n = fd.unsigned_abs();
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let tail = &digits[i..];
        link[prefix.len()..prefix.len() + tail.len()].copy_from_slice(tail);
        // SAFETY: `link` is NUL-terminated; `buf` is writable for PATH_ROOM - 1 bytes.
        let n =
            unsafe { libc::readlink(link.as_ptr().cast(), buf.as_mut_ptr().cast(), PATH_ROOM - 1) };
        if n < 0 {
            return Err(Errno::last());
        }
        let n = n as usize;
        if n >= PATH_ROOM - 1 {
            return Err(Errno(libc::ENAMETOOLONG));
        }
        buf[n] = 0;
        Ok(())
    }
}

/// The safe core: checks `fd` and finds the path to execute, NUL-terminated in `buf`.
pub fn fexecve_path(fd: c_int, buf: &mut [u8; PATH_ROOM]) -> Result<(), Errno> {
    if fd < 0 {
        return Err(Errno(libc::EINVAL));
    }
    // SAFETY: libc::stat is plain old data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable struct stat.
    Errno::result(unsafe { libc::fstat(fd, &mut st) })?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(Errno(libc::EACCES));
    }
    os::fd_path(fd, buf)
}

/// `fexecve(3)` for C callers. Returns only on failure.
///
/// The argument types are Linux's (`char *const argv[]`, `char *const envp[]`, unistd.h),
/// so a caller written against Linux compiles against the generated header with `-Werror`.
///
/// # Safety
/// `argv` and `envp` must be NULL or NULL-terminated arrays of NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_fexecve(
    fd: c_int,
    argv: *const *mut c_char,
    envp: *const *mut c_char,
) -> c_int {
    crate::counted!(slurm_shim_fexecve);
    if argv.is_null() || envp.is_null() {
        return errno::to_c(Err(Errno(libc::EINVAL)));
    }
    let mut buf = [0u8; PATH_ROOM];
    if let Err(e) = fexecve_path(fd, &mut buf) {
        return errno::to_c(Err(e));
    }
    // SAFETY: `buf` is NUL-terminated; `argv` and `envp` are valid by the caller's contract.
    unsafe { libc::execve(buf.as_ptr().cast(), argv.cast(), envp.cast()) }
}
