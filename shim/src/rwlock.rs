//! `pthread_rwlock_init` that may re-initialise a lock another thread held at `fork` time.
//!
//! Linux behaviour emulated: glibc's `pthread_rwlock_init` (pthread_rwlock_init(3p)) never
//! inspects the previous contents of the lock, so a child of `fork` can re-initialise a lock
//! its parent held (Slurm's `auth.c` `_atfork_child` does exactly that and
//! `slurm_rwlock_init` aborts on any error: DARWIN-CATALOG A14).
//!
//! macOS mechanism: Darwin's libpthread returns `EBUSY` when the lock's memory still looks
//! initialised and held (`_pthread_rwlock_check_busy`). The shim first overwrites the lock
//! with `PTHREAD_RWLOCK_INITIALIZER`, which makes it look unused, and then calls the real
//! `pthread_rwlock_init`.
//!
//! Linux (the darwin personality): the same two steps run on top of the model of Darwin's
//! libpthread ([`crate::emulate::pthread_rwlock`]): the reset writes the personality's
//! `PTHREAD_RWLOCK_INITIALIZER` (glibc's plus the static signature) and the init is the
//! model's, which by itself gives `EBUSY` for a live, held lock as Darwin does. So Slurm's
//! call goes through this fix, then the modelled macOS behaviour, then glibc.
//!
//! Portability problems not fixed:
//! * Re-initialising a lock other live threads are using is undefined behaviour on every
//!   system; the shim only makes the fork-child case (one thread left) work.
//! * A NULL lock gives `EINVAL` (glibc would crash).
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, pthread_rwlock_t, pthread_rwlockattr_t};

/// `pthread_rwlock_init(3p)`: reset to the static initialiser, then initialise. Returns 0
/// or an error number (pthread convention; errno is not touched).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_pthread_rwlock_init(
    lock: *mut pthread_rwlock_t,
    attr: *const pthread_rwlockattr_t,
) -> c_int {
    crate::counted!(slurm_shim_pthread_rwlock_init);
    if lock.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: `lock` is non-NULL and, per the caller's contract, points at writable storage
    // for a pthread_rwlock_t that no other thread uses during initialisation; writing the
    // static initialiser does not read (or drop) the old contents.
    unsafe { lock.write(os::STATIC_INITIALIZER()) };
    // SAFETY: `lock` now holds a valid unused lock; `attr` is NULL or the caller's
    // initialised attribute object.
    unsafe { os::init(lock, attr) }
}

#[cfg(not(target_os = "linux"))]
#[allow(non_snake_case)]
mod os {
    pub fn STATIC_INITIALIZER() -> libc::pthread_rwlock_t {
        libc::PTHREAD_RWLOCK_INITIALIZER
    }
    pub use libc::pthread_rwlock_init as init;
}

#[cfg(target_os = "linux")]
#[allow(non_snake_case)]
mod os {
    pub use crate::emulate::pthread_rwlock::init;
    pub use crate::emulate::pthread_rwlock::static_initializer as STATIC_INITIALIZER;
}
