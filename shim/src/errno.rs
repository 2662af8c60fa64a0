//! Reading and writing the calling thread's `errno`, and the `Errno` type used by every
//! safe core in this crate.
//!
//! glibc exposes the thread's errno through `__errno_location()`, Apple's libSystem through
//! `__error()`; both return a pointer to a thread-local `int`.

use libc::c_int;

/// An errno value returned by a safe core (`fn foo_impl(...) -> Result<T, Errno>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub c_int);

impl Errno {
    /// The calling thread's current errno.
    pub fn last() -> Errno {
        Errno(get())
    }

    /// `Ok(value)` when `value != -1`, otherwise the current errno (nix's `Errno::result`).
    pub fn result(value: c_int) -> Result<c_int, Errno> {
        if value == -1 {
            Err(Errno::last())
        } else {
            Ok(value)
        }
    }
}

fn location() -> *mut c_int {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: __errno_location has no preconditions and returns this thread's errno slot.
    unsafe {
        libc::__errno_location()
    }
    #[cfg(target_vendor = "apple")]
    // SAFETY: __error has no preconditions and returns this thread's errno slot.
    unsafe {
        libc::__error()
    }
}

/// The calling thread's errno.
pub fn get() -> c_int {
    // SAFETY: `location()` points at this thread's errno, valid for the thread's lifetime.
    unsafe { *location() }
}

/// Set the calling thread's errno.
pub fn set(value: c_int) {
    // SAFETY: `location()` points at this thread's errno, valid for the thread's lifetime.
    unsafe { *location() = value }
}

/// Runs `f` and restores errno afterwards: for success paths that made internal calls
/// which may have clobbered it (gnulib's discipline).
pub fn preserve<T>(f: impl FnOnce() -> T) -> T {
    let saved = get();
    let out = f();
    set(saved);
    out
}

/// Maps a safe core's result onto the C convention: the value on success, or
/// `errno = e; -1` on failure.
pub fn to_c(result: Result<c_int, Errno>) -> c_int {
    match result {
        Ok(v) => v,
        Err(Errno(e)) => {
            set(e);
            -1
        }
    }
}
