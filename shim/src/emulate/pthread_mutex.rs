//! `pthread_mutex_*` as macOS libpthread answers them: a mutex that was never initialised
//! (or was destroyed) is refused with `EINVAL`.
//!
//! # Linux behaviour
//! glibc 2.36 (`nptl/pthread_mutex_lock.c`, `_trylock.c`, `_timedlock.c`, `_unlock.c`,
//! `_destroy.c`) uses whatever the memory holds: an all-zero mutex is a valid unlocked
//! `PTHREAD_MUTEX_TIMED_NP` mutex, so Slurm code that locks a mutex in `xmalloc`'d memory
//! without `slurm_mutex_init()` works. `pthread_mutex_destroy` gives `EBUSY` for a locked
//! non-robust mutex and 0 otherwise; it never checks that the mutex was initialised.
//!
//! # macOS behaviour modelled (libpthread-539, `src/pthread_mutex.c`)
//! * `pthread_mutex_lock`, `_trylock`, `_unlock`: a signature other than `_PTHREAD_MUTEX_SIG`
//!   / `_SIG_fast` goes to `_pthread_mutex_check_init_slow`, which initialises a statically
//!   initialised mutex (`_PTHREAD_*MUTEX_SIG_init`, type from the low nibble) and answers
//!   `EINVAL` for anything else. Slurm's `slurm_mutex_lock()` turns that into
//!   `fatal_abort("pthread_mutex_lock(): Invalid argument")`.
//! * `pthread_mutex_init`: never refuses a mutex that is already initialised (the `EBUSY`
//!   check is compiled out, `#if 0`, "conformance tests depend on not having this
//!   behavior"); an attribute object without its signature is `EINVAL`.
//! * `pthread_mutex_destroy`: a live mutex that is locked or has waiters is `EBUSY`; a
//!   live unlocked one or a statically initialised one is destroyed (signature 0, so any
//!   later use is `EINVAL`); anything else is `EINVAL`.
//! * Types: NORMAL does no owner checks, ERRORCHECK gives `EDEADLK` (trylock `EBUSY`) on a
//!   relock and `EPERM` on unlock by a non-owner, RECURSIVE counts: glibc's answers are the
//!   same, so the model leaves the locking itself to glibc.
//!
//! The model checks the marker (`super::pthread_sig`) and then calls glibc. A NULL mutex is
//! `EINVAL` (macOS would crash). Each refusal is reported once per call site through
//! [`crate::emulate::report::apply`] (which, in its diagnostic observe mode, keeps glibc's
//! answer instead).
//!
//! # Portability problems not fixed
//! * `pthread_mutex_timedlock` does not exist on macOS; it is mapped (with the same check)
//!   only so that the object model stays coherent. `pthread_mutex_clocklock`,
//!   `_consistent`, `_getprioceiling`/`_setprioceiling` keep glibc's behaviour.
//! * Robust mutexes (`pthread_mutexattr_setrobust`, which macOS lacks) are refused by
//!   `pthread_mutex_init` with `EINVAL`: glibc keeps their robust list where the marker is.
//! * A recursive mutex's count is limited to `USHRT_MAX` on macOS and `UINT_MAX` in glibc
//!   (`EAGAIN` past it).
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, pthread_mutex_t, pthread_mutexattr_t, timespec};

use super::pthread_sig::{self, MUTEX_SIG, MUTEX_SIG_OFFSET, State, checked_entry};
use super::report;

/// Whether `m` may be used: `Ok` for a live or statically initialised mutex (which becomes
/// live, as on its first use on macOS), else `EINVAL` (reported as `what`).
///
/// # Safety
/// `m` must be NULL or point to a `pthread_mutex_t`.
pub unsafe fn check(m: *const pthread_mutex_t, what: &'static str) -> Result<(), c_int> {
    if m.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: `m` points to a pthread_mutex_t, 40 bytes and 8-aligned.
    let sig = unsafe { pthread_sig::load(m, MUTEX_SIG_OFFSET) };
    match pthread_sig::mutex_state(sig) {
        State::Live => Ok(()),
        State::Static => {
            // SAFETY: as above; the first use makes it live, as on macOS.
            unsafe { pthread_sig::promote(m.cast_mut(), MUTEX_SIG_OFFSET, sig, MUTEX_SIG) };
            Ok(())
        }
        State::Invalid => match report::apply(pthread_sig::NAME, what) {
            true => Err(libc::EINVAL),
            false => Ok(()),
        },
    }
}

/// `pthread_mutex_init(3p)` as on macOS: glibc's init, then the live marker.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_pthread_mutex_init(
    m: *mut pthread_mutex_t,
    attr: *const pthread_mutexattr_t,
) -> c_int {
    crate::counted!(slurm_shim_pthread_mutex_init);
    if m.is_null() {
        return libc::EINVAL;
    }
    if !attr.is_null() {
        let mut robust: c_int = 0;
        // SAFETY: `attr` is the caller's attribute object; `robust` is a local.
        let refused = unsafe { libc::pthread_mutexattr_getrobust(attr, &mut robust) } != 0
            || robust != libc::PTHREAD_MUTEX_STALLED;
        if refused
            && report::apply(
                pthread_sig::NAME,
                "pthread_mutex_init with a robust attribute -> EINVAL (macOS has no robust mutexes)",
            )
        {
            return libc::EINVAL;
        }
    }
    // SAFETY: `m` is writable storage for a mutex; `attr` is NULL or initialised.
    let r = unsafe { libc::pthread_mutex_init(m, attr) };
    if r == 0 {
        // SAFETY: `m` is a pthread_mutex_t that glibc has just initialised.
        unsafe { pthread_sig::store(m, MUTEX_SIG_OFFSET, MUTEX_SIG) };
    }
    r
}

/// `pthread_mutex_destroy(3p)` as on macOS.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_pthread_mutex_destroy(m: *mut pthread_mutex_t) -> c_int {
    crate::counted!(slurm_shim_pthread_mutex_destroy);
    const WHAT: &str = "pthread_mutex_destroy of a never-initialised or destroyed mutex -> EINVAL (libpthread-539 pthread_mutex.c: signature check)";
    // SAFETY: `m` is NULL or the caller's mutex.
    if let Err(e) = unsafe { check(m, WHAT) } {
        return e;
    }
    // SAFETY: `m` is a mutex with a valid marker; glibc gives EBUSY while it is locked.
    let r = unsafe { libc::pthread_mutex_destroy(m) };
    if r == 0 {
        // SAFETY: as above; destroyed, so any later use is refused.
        unsafe { pthread_sig::store(m, MUTEX_SIG_OFFSET, 0) };
    }
    r
}

checked_entry!(
    /// `pthread_mutex_lock(3p)` as on macOS.
    slurm_shim_pthread_mutex_lock(m: *mut pthread_mutex_t)
        => check, libc::pthread_mutex_lock,
        "pthread_mutex_lock on a never-initialised or destroyed mutex -> EINVAL (libpthread-539 pthread_mutex.c: _pthread_mutex_check_init_slow)"
);
checked_entry!(
    /// `pthread_mutex_trylock(3p)` as on macOS.
    slurm_shim_pthread_mutex_trylock(m: *mut pthread_mutex_t)
        => check, libc::pthread_mutex_trylock,
        "pthread_mutex_trylock on a never-initialised or destroyed mutex -> EINVAL (libpthread-539 pthread_mutex.c: _pthread_mutex_check_init_slow)"
);
checked_entry!(
    /// `pthread_mutex_timedlock(3p)`: macOS has none; the same check as lock, then glibc.
    slurm_shim_pthread_mutex_timedlock(m: *mut pthread_mutex_t, abstime: *const timespec)
        => check, libc::pthread_mutex_timedlock,
        "pthread_mutex_timedlock on a never-initialised or destroyed mutex -> EINVAL (modelled on pthread_mutex_lock: macOS has no timedlock)"
);
checked_entry!(
    /// `pthread_mutex_unlock(3p)` as on macOS.
    slurm_shim_pthread_mutex_unlock(m: *mut pthread_mutex_t)
        => check, libc::pthread_mutex_unlock,
        "pthread_mutex_unlock on a never-initialised or destroyed mutex -> EINVAL (libpthread-539 pthread_mutex.c: _pthread_mutex_unlock_init_slow)"
);
