//! `get_current_dir_name`: the current directory, preferring `$PWD` when it is correct.
//!
//! Linux behaviour emulated: glibc's `get_current_dir_name` (getcwd(3),
//! `io/getdirname.c`): if the environment variable `PWD` is set and names the same
//! directory as `"."` (same `st_dev` and `st_ino` from `stat`), a `malloc`ed copy of `PWD`
//! is returned (so a path through symbolic links is kept); otherwise the result of
//! `getcwd(NULL, 0)`. The caller frees the result with `free`. On failure NULL with
//! `getcwd`'s errno.
//!
//! macOS mechanism: the same calls; Darwin's `getcwd(NULL, 0)` also allocates the buffer
//! (getcwd(3)), and `strdup` allocates with `malloc`. There is no OS-specific seam: the code
//! below runs unchanged on both systems and is compared with glibc's function on Linux.
//!
//! Portability problems not fixed: none known. As with glibc, reading `PWD` races with a
//! concurrent `setenv` in another thread.
#![allow(clippy::missing_safety_doc)]

use core::mem::MaybeUninit;

use libc::c_char;

use crate::errno;

fn same_file(a: *const c_char, b: *const c_char) -> bool {
    let mut sa = MaybeUninit::<libc::stat>::uninit();
    let mut sb = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: both paths are NUL-terminated strings; the stat buffers are writable.
    let ok = unsafe { libc::stat(a, sa.as_mut_ptr()) == 0 && libc::stat(b, sb.as_mut_ptr()) == 0 };
    if !ok {
        return false;
    }
    // SAFETY: both stat calls succeeded and initialised the buffers.
    let (sa, sb) = unsafe { (sa.assume_init(), sb.assume_init()) };
    sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
}

/// `get_current_dir_name(3)`: `$PWD` if it names `"."`, else `getcwd(NULL, 0)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_get_current_dir_name() -> *mut c_char {
    crate::counted!(slurm_shim_get_current_dir_name);
    // SAFETY: the name is NUL-terminated; the result is NULL or a NUL-terminated string
    // owned by the environment, read before any other call here could change it.
    let pwd = unsafe { libc::getenv(c"PWD".as_ptr()) };
    if !pwd.is_null() {
        let saved = errno::get();
        if same_file(pwd, c".".as_ptr()) {
            errno::set(saved);
            // SAFETY: `pwd` is a valid NUL-terminated string; strdup sets errno on failure.
            return unsafe { libc::strdup(pwd) };
        }
        errno::set(saved);
    }
    // SAFETY: getcwd with a NULL buffer and size 0 allocates the result (glibc and Darwin).
    unsafe { libc::getcwd(core::ptr::null_mut(), 0) }
}
