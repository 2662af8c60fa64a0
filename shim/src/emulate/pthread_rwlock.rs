//! `pthread_rwlock_*` as macOS libpthread answers them: a lock that was never initialised
//! (or was destroyed) is refused with `EINVAL`, and initialising a lock that is live and
//! held is refused with `EBUSY`.
//!
//! # Linux behaviour
//! glibc 2.36 (`nptl/pthread_rwlock_common.c`, `_init.c`, `_destroy.c`) treats all-zero
//! memory as a valid unlocked lock; `pthread_rwlock_init` overwrites whatever is there
//! (memset) and `pthread_rwlock_destroy` always returns 0.
//!
//! # macOS behaviour modelled (libpthread-539, `src/pthread_rwlock.c`)
//! * `pthread_rwlock_rdlock`, `_wrlock`, `_tryrdlock`, `_trywrlock`, `_unlock`: a signature
//!   other than `_PTHREAD_RWLOCK_SIG` goes to `_pthread_rwlock_check_init_slow`, which
//!   initialises a statically initialised lock (`_PTHREAD_RWLOCK_SIG_init`) and answers
//!   `EINVAL` for anything else.
//! * `pthread_rwlock_init`: an attribute without its signature is `EINVAL`; a live lock
//!   (`_SIG`) that `_pthread_rwlock_check_busy` finds held (lock and unlock generation
//!   counts differ) is `EBUSY`: Slurm's `auth.c` `_atfork_child` re-initialises a lock
//!   another thread of the parent held at `fork`, which is why `crate::rwlock` (the fix
//!   that resets the lock first) exists and runs on top of this model.
//! * `pthread_rwlock_destroy`: a live lock that is held is `EBUSY`; a live free or static
//!   one is destroyed (signature 0); anything else is `EINVAL`.
//!
//! "Held" is asked of glibc itself: `pthread_rwlock_trywrlock` fails while any thread holds
//! the lock for reading or writing (and is undone at once when it succeeds). The marker is
//! `__pad2` (see `super::pthread_sig`).
//!
//! # Portability problems not fixed
//! * macOS's busy check also counts waiters of a lock nobody holds (a transient state);
//!   the trywrlock probe does not.
//! * macOS returns 0 for the unlock of an unlocked lock; glibc's answer (undefined
//!   behaviour) is kept.
//! * `pthread_rwlock_timedrdlock`/`_timedwrlock` do not exist on macOS; they are mapped with
//!   the same check so the object model stays coherent. The `clock*` variants are not.
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, pthread_rwlock_t, pthread_rwlockattr_t, timespec};

use super::pthread_sig::{
    self, RWLOCK_SIG, RWLOCK_SIG_INIT, RWLOCK_SIG_OFFSET, State, checked_entry,
};
use super::report;

/// The darwin personality's `PTHREAD_RWLOCK_INITIALIZER`: glibc's, with the static marker.
pub fn static_initializer() -> pthread_rwlock_t {
    let mut l = libc::PTHREAD_RWLOCK_INITIALIZER;
    // SAFETY: `l` is a local pthread_rwlock_t.
    unsafe { pthread_sig::store(&mut l, RWLOCK_SIG_OFFSET, RWLOCK_SIG_INIT) };
    l
}

/// The marker state of `l`, or `EINVAL` for NULL.
///
/// # Safety
/// `l` must be NULL or point to a `pthread_rwlock_t`.
unsafe fn state(l: *const pthread_rwlock_t) -> Result<State, c_int> {
    if l.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: `l` points to a pthread_rwlock_t, 56 bytes and 8-aligned.
    Ok(pthread_sig::rwlock_state(unsafe {
        pthread_sig::load(l, RWLOCK_SIG_OFFSET)
    }))
}

/// Whether `l` may be used (a static lock becomes live, as on its first use on macOS);
/// else `EINVAL` (reported as `what`).
///
/// # Safety
/// As [`state`].
unsafe fn check(l: *const pthread_rwlock_t, what: &'static str) -> Result<(), c_int> {
    // SAFETY: per the contract.
    match unsafe { state(l) }? {
        State::Live => Ok(()),
        State::Static => {
            // SAFETY: `l` is a lock; its first use makes it live, as on macOS.
            unsafe {
                pthread_sig::promote(l.cast_mut(), RWLOCK_SIG_OFFSET, RWLOCK_SIG_INIT, RWLOCK_SIG)
            };
            Ok(())
        }
        State::Invalid => match report::apply(pthread_sig::NAME, what) {
            true => Err(libc::EINVAL),
            false => Ok(()),
        },
    }
}

/// Whether some thread holds `l` (glibc's trywrlock fails), undoing a successful probe.
///
/// # Safety
/// `l` must point to a lock with a valid marker.
unsafe fn held(l: *mut pthread_rwlock_t) -> bool {
    // SAFETY: per the contract.
    match unsafe { libc::pthread_rwlock_trywrlock(l) } {
        0 => {
            // SAFETY: this thread has just taken it.
            unsafe { libc::pthread_rwlock_unlock(l) };
            false
        }
        _ => true,
    }
}

/// The model of macOS's `pthread_rwlock_init` (no `slurm_shim_` export of its own: the
/// header maps `pthread_rwlock_init` onto `crate::rwlock`'s fix, which calls this).
///
/// # Safety
/// `l` NULL or writable storage for a lock; `attr` NULL or an initialised attribute.
pub unsafe fn init(l: *mut pthread_rwlock_t, attr: *const pthread_rwlockattr_t) -> c_int {
    // SAFETY: per the contract.
    let st = match unsafe { state(l) } {
        Ok(s) => s,
        Err(e) => return e,
    };
    // SAFETY: a live marker, so `l` is a lock glibc initialised.
    let busy = st == State::Live && unsafe { held(l) };
    if busy
        && report::apply(
            pthread_sig::NAME,
            "pthread_rwlock_init of a live, held rwlock -> EBUSY (libpthread-539 pthread_rwlock.c: _pthread_rwlock_check_busy)",
        )
    {
        return libc::EBUSY;
    }
    // SAFETY: per the contract.
    let r = unsafe { libc::pthread_rwlock_init(l, attr) };
    if r == 0 {
        // SAFETY: glibc has just initialised `l`.
        unsafe { pthread_sig::store(l, RWLOCK_SIG_OFFSET, RWLOCK_SIG) };
    }
    r
}

/// `pthread_rwlock_destroy(3p)` as on macOS.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_pthread_rwlock_destroy(l: *mut pthread_rwlock_t) -> c_int {
    crate::counted!(slurm_shim_pthread_rwlock_destroy);
    const WHAT: &str = "pthread_rwlock_destroy of a never-initialised or destroyed rwlock -> EINVAL (libpthread-539 pthread_rwlock.c: signature check)";
    // SAFETY: `l` is NULL or the caller's lock.
    let st = match unsafe { state(l) } {
        Ok(s) => s,
        Err(e) => return e,
    };
    if st == State::Invalid && report::apply(pthread_sig::NAME, WHAT) {
        return libc::EINVAL;
    }
    // SAFETY: a live marker, so `l` is a lock glibc initialised.
    let busy = st == State::Live && unsafe { held(l) };
    if busy
        && report::apply(
            pthread_sig::NAME,
            "pthread_rwlock_destroy of a held rwlock -> EBUSY (libpthread-539 pthread_rwlock.c: _pthread_rwlock_check_busy)",
        )
    {
        return libc::EBUSY;
    }
    // SAFETY: a marked lock nobody holds.
    let r = unsafe { libc::pthread_rwlock_destroy(l) };
    if r == 0 {
        // SAFETY: as above; destroyed, so later use is refused.
        unsafe { pthread_sig::store(l, RWLOCK_SIG_OFFSET, 0) };
    }
    r
}

/// glibc's lock calls (the timed ones are not in the libc crate).
mod glibc {
    use libc::{c_int, pthread_rwlock_t, timespec};
    pub use libc::{
        pthread_rwlock_rdlock, pthread_rwlock_tryrdlock, pthread_rwlock_trywrlock,
        pthread_rwlock_unlock, pthread_rwlock_wrlock,
    };
    unsafe extern "C" {
        pub fn pthread_rwlock_timedrdlock(l: *mut pthread_rwlock_t, t: *const timespec) -> c_int;
        pub fn pthread_rwlock_timedwrlock(l: *mut pthread_rwlock_t, t: *const timespec) -> c_int;
    }
}

checked_entry!(
    /// `pthread_rwlock_rdlock(3p)` as on macOS.
    slurm_shim_pthread_rwlock_rdlock(l: *mut pthread_rwlock_t)
        => check, glibc::pthread_rwlock_rdlock, "pthread_rwlock_rdlock on a never-initialised or destroyed rwlock -> EINVAL (libpthread-539 pthread_rwlock.c: _pthread_rwlock_check_init_slow)"
);
checked_entry!(
    /// `pthread_rwlock_tryrdlock(3p)` as on macOS.
    slurm_shim_pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t)
        => check, glibc::pthread_rwlock_tryrdlock, "pthread_rwlock_tryrdlock on a never-initialised or destroyed rwlock -> EINVAL (libpthread-539 pthread_rwlock.c: _pthread_rwlock_check_init_slow)"
);
checked_entry!(
    /// `pthread_rwlock_wrlock(3p)` as on macOS.
    slurm_shim_pthread_rwlock_wrlock(l: *mut pthread_rwlock_t)
        => check, glibc::pthread_rwlock_wrlock, "pthread_rwlock_wrlock on a never-initialised or destroyed rwlock -> EINVAL (libpthread-539 pthread_rwlock.c: _pthread_rwlock_check_init_slow)"
);
checked_entry!(
    /// `pthread_rwlock_trywrlock(3p)` as on macOS.
    slurm_shim_pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t)
        => check, glibc::pthread_rwlock_trywrlock, "pthread_rwlock_trywrlock on a never-initialised or destroyed rwlock -> EINVAL (libpthread-539 pthread_rwlock.c: _pthread_rwlock_check_init_slow)"
);
checked_entry!(
    /// `pthread_rwlock_unlock(3p)` as on macOS.
    slurm_shim_pthread_rwlock_unlock(l: *mut pthread_rwlock_t)
        => check, glibc::pthread_rwlock_unlock, "pthread_rwlock_unlock on a never-initialised or destroyed rwlock -> EINVAL (libpthread-539 pthread_rwlock.c: _pthread_rwlock_unlock_slow)"
);
checked_entry!(
    /// `pthread_rwlock_timedrdlock(3p)`: macOS has none; checked as rdlock, then glibc.
    slurm_shim_pthread_rwlock_timedrdlock(l: *mut pthread_rwlock_t, abstime: *const timespec)
        => check, glibc::pthread_rwlock_timedrdlock, "pthread_rwlock_timedrdlock on a never-initialised or destroyed rwlock -> EINVAL (modelled on pthread_rwlock_rdlock: macOS has no timedrdlock)"
);
checked_entry!(
    /// `pthread_rwlock_timedwrlock(3p)`: macOS has none; checked as wrlock, then glibc.
    slurm_shim_pthread_rwlock_timedwrlock(l: *mut pthread_rwlock_t, abstime: *const timespec)
        => check, glibc::pthread_rwlock_timedwrlock, "pthread_rwlock_timedwrlock on a never-initialised or destroyed rwlock -> EINVAL (modelled on pthread_rwlock_wrlock: macOS has no timedwrlock)"
);
