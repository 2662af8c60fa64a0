//! `pthread_cond_*` as macOS libpthread answers them: a condition variable that was never
//! initialised (or was destroyed), or a wait with such a mutex, is refused with `EINVAL`.
//!
//! # Linux behaviour
//! glibc 2.36 (`nptl/pthread_cond_wait.c`, `_signal.c`, `_broadcast.c`, `_destroy.c`)
//! treats all-zero memory as a valid `PTHREAD_COND_INITIALIZER` condition variable, and its
//! wait unlocks and relocks whatever mutex it is given.
//!
//! # macOS behaviour modelled (libpthread-539, `src/pthread_cond.c`)
//! * `pthread_cond_signal`, `_broadcast`: `_pthread_cond_check_init` initialises a
//!   statically initialised condition variable (`_PTHREAD_COND_SIG_init`) and answers
//!   `EINVAL` for any signature but `_SIG_pristine`, `_SIG_psynch`, `_SIG_ulock`.
//! * `pthread_cond_wait`, `_timedwait` (`_pthread_cond_wait`): first `EINVAL` unless the
//!   *mutex* has a live or static signature, then the same check of the condition
//!   variable, then `EINVAL` for a timeout with `tv_nsec` outside `[0, 1e9)`. A NULL
//!   `abstime` means no timeout (the wait is `_pthread_cond_wait(cond, mutex, NULL, ...)`);
//!   glibc would dereference it. The deadline is `CLOCK_REALTIME` (`__gettimeofday`); macOS
//!   has no `pthread_condattr_setclock` and Slurm never calls it.
//! * `pthread_cond_init`: never refuses (no busy check); `pthread_cond_destroy`: a static
//!   or initialised one is destroyed (signature 0, later use `EINVAL`) even with waiters
//!   (the `EBUSY` is commented out); anything else is `EINVAL`.
//!
//! The marker is glibc's process-shared bit of `__wrefs` (see `super::pthread_sig`): the
//! model's `pthread_cond_init` and the darwin personality's `PTHREAD_COND_INITIALIZER`
//! (`shim/include/emulate/pthread.h`) set it, destroy clears the word. Waiting, signalling
//! and timing are glibc's own algorithm, so the model adds one load to each call.
//!
//! Cancellation: `pthread_cond_wait` and `_timedwait` stay cancellation points. glibc acts
//! on a cancellation inside its wait with a forced unwind (it relocks the mutex and runs the
//! caller's cleanup handlers). The entry points are plain `extern "C"` functions whose only
//! call that can be cancelled is glibc's wait, declared `"C"` by the libc crate, so rustc
//! gives them no landing pad (with `panic = "abort"`) and the unwinder passes through them
//! by their unwind tables, as through a C frame. Declaring the wait `"C-unwind"` instead
//! makes rustc add an abort-on-unwind landing pad: the first version did, and
//! `shim/tests/emulate_pthread_h.rs` ("cancelled cond wait") aborted in
//! `panic_cannot_unwind`. That test is what keeps this true.
//!
//! # Portability problems not fixed
//! * macOS answers `EINVAL` when one condition variable is waited on with two different
//!   mutexes at once (`cond->busy`, psynch only); there is no room to record the mutex.
//! * The marker is one bit (see `super::pthread_sig`), and glibc treats every condition
//!   variable of the darwin personality as process-shared: its futex calls are the shared
//!   kind (the kernel hashes the page, not the address; see `benches/pthread.rs`).
//! * `pthread_cond_clockwait` (glibc only) is not mapped.
#![allow(clippy::missing_safety_doc)]

use std::sync::atomic::Ordering;

use libc::{c_int, pthread_cond_t, pthread_condattr_t, pthread_mutex_t, timespec};

use super::pthread_mutex;
use super::pthread_sig::{self, COND_MARK, checked_entry};
use super::report;

/// Whether `cond` may be used: its marker bit is set; else `EINVAL` (reported as `what`).
///
/// # Safety
/// `cond` must be NULL or point to a `pthread_cond_t`.
unsafe fn check(cond: *mut pthread_cond_t, what: &'static str) -> Result<(), c_int> {
    if cond.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: `cond` points to a pthread_cond_t.
    if unsafe { pthread_sig::cond_wrefs(cond) }.load(Ordering::Relaxed) & COND_MARK == 0
        && report::apply(pthread_sig::NAME, what)
    {
        return Err(libc::EINVAL);
    }
    Ok(())
}

/// `pthread_cond_init(3p)` as on macOS: glibc's init, then the marker.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_pthread_cond_init(
    cond: *mut pthread_cond_t,
    attr: *const pthread_condattr_t,
) -> c_int {
    crate::counted!(slurm_shim_pthread_cond_init);
    if cond.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: `cond` is writable storage for a condition variable; `attr` NULL or valid.
    let r = unsafe { libc::pthread_cond_init(cond, attr) };
    if r == 0 {
        // SAFETY: glibc has just initialised `cond`; nobody else uses it yet.
        unsafe { pthread_sig::cond_wrefs(cond) }.fetch_or(COND_MARK, Ordering::Release);
    }
    r
}

/// `pthread_cond_destroy(3p)` as on macOS.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_pthread_cond_destroy(cond: *mut pthread_cond_t) -> c_int {
    crate::counted!(slurm_shim_pthread_cond_destroy);
    const WHAT: &str = "pthread_cond_destroy of a never-initialised or destroyed condition variable -> EINVAL (libpthread-539 pthread_cond.c: signature check)";
    // SAFETY: `cond` is NULL or the caller's condition variable.
    if let Err(e) = unsafe { check(cond, WHAT) } {
        return e;
    }
    // SAFETY: a marked condition variable; glibc waits for woken waiters to leave it.
    let r = unsafe { libc::pthread_cond_destroy(cond) };
    if r == 0 {
        // SAFETY: glibc has finished with it; clearing the word removes the marker.
        unsafe { pthread_sig::cond_wrefs(cond) }.store(0, Ordering::Release);
    }
    r
}

checked_entry!(
    /// `pthread_cond_signal(3p)` as on macOS.
    slurm_shim_pthread_cond_signal(cond: *mut pthread_cond_t)
        => check, libc::pthread_cond_signal,
        "pthread_cond_signal on a never-initialised or destroyed condition variable -> EINVAL (libpthread-539 pthread_cond.c: _pthread_cond_check_init)"
);
checked_entry!(
    /// `pthread_cond_broadcast(3p)` as on macOS.
    slurm_shim_pthread_cond_broadcast(cond: *mut pthread_cond_t)
        => check, libc::pthread_cond_broadcast,
        "pthread_cond_broadcast on a never-initialised or destroyed condition variable -> EINVAL (libpthread-539 pthread_cond.c: _pthread_cond_check_init)"
);

/// The checks `_pthread_cond_wait` makes before it waits: the mutex, then the condition
/// variable.
///
/// # Safety
/// Both pointers NULL or pointing to objects of their types.
unsafe fn check_wait(
    cond: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    what_mutex: &'static str,
    what_cond: &'static str,
) -> Result<(), c_int> {
    // SAFETY: per the contract.
    unsafe { pthread_mutex::check(m, what_mutex) }?;
    // SAFETY: per the contract.
    unsafe { check(cond, what_cond) }
}

/// `pthread_cond_wait(3p)` as on macOS; a cancellation point (see the module doc).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_pthread_cond_wait(
    cond: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
) -> c_int {
    crate::counted!(slurm_shim_pthread_cond_wait);
    // SAFETY: the caller's objects (or NULL), checked before glibc sees them.
    if let Err(e) = unsafe {
        check_wait(
            cond,
            m,
            "pthread_cond_wait with a never-initialised or destroyed mutex -> EINVAL (libpthread-539 pthread_cond.c: _pthread_cond_wait)",
            "pthread_cond_wait on a never-initialised or destroyed condition variable -> EINVAL (libpthread-539 pthread_cond.c: _pthread_cond_check_init)",
        )
    } {
        return e;
    }
    // SAFETY: both objects are marked; this frame holds nothing to drop while it waits.
    unsafe { libc::pthread_cond_wait(cond, m) }
}

/// `pthread_cond_timedwait(3p)` as on macOS; a cancellation point (see the module doc).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_pthread_cond_timedwait(
    cond: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    abstime: *const timespec,
) -> c_int {
    crate::counted!(slurm_shim_pthread_cond_timedwait);
    // SAFETY: the caller's objects (or NULL), checked before glibc sees them.
    if let Err(e) = unsafe {
        check_wait(
            cond,
            m,
            "pthread_cond_timedwait with a never-initialised or destroyed mutex -> EINVAL (libpthread-539 pthread_cond.c: _pthread_cond_wait)",
            "pthread_cond_timedwait on a never-initialised or destroyed condition variable -> EINVAL (libpthread-539 pthread_cond.c: _pthread_cond_check_init)",
        )
    } {
        return e;
    }
    if abstime.is_null() {
        // macOS: no deadline. SAFETY: both objects are marked; nothing to drop here.
        return unsafe { libc::pthread_cond_wait(cond, m) };
    }
    // SAFETY: both objects are marked, `abstime` is the caller's non-NULL timespec (glibc
    // checks its tv_nsec as macOS does); nothing to drop while it waits.
    unsafe { libc::pthread_cond_timedwait(cond, m, abstime) }
}
