//! `sigtimedwait()`: take one pending signal of a set, waiting at most a given time.
//!
//! # Linux behaviour emulated
//! `int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)`
//! (sigtimedwait(2)): the signals in `set` must be blocked by the caller. If one of them is
//! pending for the calling thread or the process, it is removed from the pending set and its
//! number is returned (with `info->si_signo` when `info` is not NULL). Otherwise the call
//! waits until one arrives or `timeout` has passed: `-1` with `EAGAIN` then (a zero timeout
//! polls). A NULL `timeout` waits without limit, as `sigwaitinfo()`. `EINVAL` for a timeout
//! whose `tv_nsec` is not in 0..1e9 or whose `tv_sec` is negative.
//!
//! Slurm calls it once, in 26.05's tls/s2n (`tls_s2n.c`, upstream ea09830984): with a zero
//! timeout, to consume the SIGPIPE its own shutdown write may have raised while SIGPIPE was
//! blocked.
//!
//! # macOS mechanism used
//! macOS has `sigpending()` and `sigwait()` but no `sigtimedwait()` (no prototype in the
//! SDK's `<signal.h>`, no symbol in libSystem). A signal of `set` that is pending is taken
//! with `sigwait()`, which then returns at once; whether one is pending is asked with
//! `sigpending()` first, so `sigwait()` never blocks. Without one, the call checks again
//! every millisecond until the timeout has passed. Linux runs the same code (the
//! differential tests compare it with glibc's `sigtimedwait`).
//!
//! # Portability problems not fixed
//! * `info` gets only `si_signo` (the rest is zeroed): `sigwait()` reports no sender, code
//!   or value.
//! * A signal that arrives while the call waits is seen up to 1 ms late.
//! * Which signal is taken when several of `set` are pending is `sigwait()`'s choice.
//! * `EINTR` (a handler of a signal outside `set` ran) is not reported: the wait goes on.

use std::time::{Duration, Instant};

use libc::{c_int, siginfo_t, sigset_t, timespec};

use crate::errno::{self, Errno};

/// How often a waiting call checks for a pending signal again.
const POLL: Duration = Duration::from_millis(1);

/// The highest signal number looked at (Linux's real-time signals end at 64; macOS has 31).
/// `sigismember()` refuses a number the system does not have, which counts as "not in".
const LAST_SIGNAL: c_int = 64;

/// A valid timeout as a `Duration` (`EINVAL` as Linux for a bad one).
fn duration_of(t: &timespec) -> Result<Duration, Errno> {
    if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) {
        return Err(Errno(libc::EINVAL));
    }
    Ok(Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
}

/// The first signal of `set` that is pending for this thread or the process, if any.
fn pending_in(set: &sigset_t) -> Result<Option<c_int>, Errno> {
    // SAFETY: an all-zero sigset_t is a valid object; sigemptyset makes it the empty set.
    let mut pending: sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `pending` is a valid, writable sigset_t.
    Errno::result(unsafe { libc::sigpending(&mut pending) })?;
    for sig in 1..=LAST_SIGNAL {
        // SAFETY: both sets are valid; `sig` is in the range sigismember accepts.
        let both =
            unsafe { libc::sigismember(set, sig) == 1 && libc::sigismember(&pending, sig) == 1 };
        if both {
            return Ok(Some(sig));
        }
    }
    Ok(None)
}

/// The safe core: the number of the signal taken, or `EAGAIN` once `timeout` (None: no
/// limit) has passed with none of `set` pending.
pub fn sigtimedwait_impl(set: &sigset_t, timeout: Option<Duration>) -> Result<c_int, Errno> {
    let start = Instant::now();
    loop {
        if pending_in(set)?.is_some() {
            let mut sig: c_int = 0;
            // SAFETY: `set` is a valid sigset_t and `sig` a writable int. A signal of `set`
            // is pending and blocked (the caller's contract), so sigwait returns at once.
            let rc = unsafe { libc::sigwait(set, &mut sig) };
            return if rc == 0 { Ok(sig) } else { Err(Errno(rc)) };
        }
        if let Some(limit) = timeout {
            let spent = start.elapsed();
            if spent >= limit {
                return Err(Errno(libc::EAGAIN));
            }
            std::thread::sleep(POLL.min(limit - spent));
        } else {
            std::thread::sleep(POLL);
        }
    }
}

/// `sigtimedwait(2)` for C callers.
///
/// # Safety
/// `set` must point to a valid `sigset_t`; `info` must be NULL or point to a writable
/// `siginfo_t`; `timeout` must be NULL or point to a valid `timespec`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_sigtimedwait(
    set: *const sigset_t,
    info: *mut siginfo_t,
    timeout: *const timespec,
) -> c_int {
    crate::counted!(slurm_shim_sigtimedwait);
    if set.is_null() {
        return errno::to_c(Err(Errno(libc::EFAULT)));
    }
    // SAFETY: non-NULL, and by the caller's contract a valid timespec.
    let limit = match unsafe { timeout.as_ref() }.map(duration_of).transpose() {
        Ok(l) => l,
        Err(e) => return errno::to_c(Err(e)),
    };
    // SAFETY: non-NULL, and by the caller's contract a valid sigset_t.
    let set = unsafe { &*set };
    match sigtimedwait_impl(set, limit) {
        Ok(sig) => {
            // SAFETY: by the caller's contract, NULL or a writable siginfo_t; zeroed, then
            // the one field macOS's sigwait can tell.
            if let Some(info) = unsafe { info.as_mut() } {
                // SAFETY: an all-zero siginfo_t is a valid value.
                *info = unsafe { std::mem::zeroed() };
                info.si_signo = sig;
            }
            sig
        }
        Err(e) => errno::to_c(Err(e)),
    }
}
