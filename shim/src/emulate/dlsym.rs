//! `dlsym` finds no `close_range` on macOS.
//!
//! Linux behaviour: glibc 2.34 and later export `close_range`; Slurm 26.11's `fd.c` probes
//! for it at run time (`dlsym(dlopen(NULL), "close_range")`, then its own
//! `close_range_internal`, defined only `#ifdef SYS_close_range`) and, when found, closes
//! every descriptor above the ones it keeps in one call.
//!
//! macOS behaviour: libSystem has no `close_range` and `<sys/syscall.h>` no
//! `SYS_close_range` (xnu-11417.101.15 bsd/kern/syscalls.master has none), so the probe
//! fails and `closeall()` takes its fallback: without `/proc/self/fd` (see
//! [`super::hidden_paths`]) a loop of `close()` up to the soft `RLIMIT_NOFILE`, which is
//! infinite once slurmd raised it (see [`super::rlimit`]): the proof of concept's ~187 s per
//! slurmstepd launch (POC-DEFECTS D13). The darwin personality's `sys/syscall.h` wrapper
//! removes `SYS_close_range`; this model makes `dlsym` of either name return NULL (with
//! `dlerror()` reporting nothing found, as dyld's `dlsym` sets it).
//!
//! Portability problems not fixed: `dlsym(RTLD_NEXT, ...)` resolves relative to the shim's
//! library instead of the caller's (Slurm never uses `RTLD_NEXT`).
#![allow(clippy::missing_safety_doc)]

use libc::{c_char, c_void};
use std::ffi::CStr;

use super::{report, scope};

/// Model name (for [`scope::OFF_ENV`]).
pub const NAME: &str = "no-close-range";

/// The symbols libSystem does not have.
pub const MISSING: &[&[u8]] = &[b"close_range", b"close_range_internal"];

/// Whether macOS's `dlsym` finds nothing for `name`.
pub fn missing_on_macos(name: &[u8]) -> bool {
    MISSING.contains(&name)
}

/// `dlsym(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    if !name.is_null() && scope::active(NAME) {
        // SAFETY: the caller passes a NUL-terminated symbol name.
        let n = unsafe { CStr::from_ptr(name) }.to_bytes();
        if missing_on_macos(n) {
            report::applied("dlsym(close_range) -> NULL (libSystem has no close_range)");
            // Leave dlerror() with a message, as a failed lookup does: look up a name that
            // cannot exist.
            // SAFETY: a NUL-terminated literal; the result is discarded.
            let _ = unsafe { libc::dlsym(handle, c"slurm_shim: no such symbol on macOS".as_ptr()) };
            return std::ptr::null_mut();
        }
    }
    // SAFETY: the arguments go to the real call unchanged.
    unsafe { libc::dlsym(handle, name) }
}
