//! Where the darwin personality keeps a macOS-style signature inside glibc's pthread objects.
//!
//! # Linux behaviour
//! glibc's static initialisers (`PTHREAD_MUTEX_INITIALIZER`, `PTHREAD_COND_INITIALIZER`,
//! `PTHREAD_RWLOCK_INITIALIZER`, glibc 2.36 `sysdeps/nptl/pthread.h`) are all zeros apart
//! from a type field, so glibc cannot tell a never-initialised object in zeroed memory
//! from an initialised one, and it accepts both.
//!
//! # macOS behaviour modelled
//! libpthread (libpthread-539, `include/pthread/pthread_impl.h`, `src/types_internal.h`)
//! starts every mutex, condition variable and rwlock with a 32-bit signature word: the
//! static initialisers put `_PTHREAD_*_SIG_init` there, `pthread_*_init` (or the first use
//! of a statically initialised object) the live `_PTHREAD_*_SIG`, `pthread_*_destroy`
//! `_PTHREAD_NO_SIG` (0). Every call checks it and answers `EINVAL` for anything else.
//!
//! # Mechanism: a marker inside the object, glibc 2.36 on x86_64
//! The marker lives in the object itself, never in a table of addresses, so memory that is
//! freed without `destroy` and handed out again zeroed (Slurm's `xmalloc`) carries no
//! previous state, and a struct copy carries the marker with it. Its place, from
//! `/usr/include/x86_64-linux-gnu/bits/struct_mutex.h`, `struct_rwlock.h` and
//! `thread-shared-types.h` (glibc 2.36, the same in the glibc source tree
//! `sysdeps/x86/nptl/bits/`), each checked from C by `shim/tests/emulate_pthread_c.rs`:
//!
//! * `pthread_mutex_t` (40 bytes): `__data.__list.__prev`, 8 bytes at offset
//!   [`MUTEX_SIG_OFFSET`]. glibc writes `__list` only for robust mutexes (`ENQUEUE_MUTEX`,
//!   `DEQUEUE_MUTEX` in `nptl/descr.h`, used under `PTHREAD_MUTEX_ROBUST_*` and robust PI
//!   kinds only); `pthread_mutex_init` zeroes it (memset), after which the model writes the
//!   marker. Robust mutexes, which macOS does not have, are refused by the model's init.
//! * `pthread_rwlock_t` (56 bytes): `__data.__pad2`, 8 bytes at offset
//!   [`RWLOCK_SIG_OFFSET`], which no glibc 2.36 code reads or writes (only
//!   `pthread_rwlock_init`'s memset).
//! * `pthread_cond_t` (48 bytes) has no spare field: every word is part of glibc's
//!   algorithm (`nptl/pthread_cond_wait.c`, "__wrefs ... Bit 0 is true iff this is a
//!   process-shared condvar"). The marker is that bit, [`COND_MARK`] in `__wrefs` at
//!   offset [`COND_WREFS_OFFSET`]: the darwin personality's condition variables are all
//!   process-shared to glibc, which changes only the futex operations it uses
//!   (`FUTEX_SHARED` instead of `FUTEX_PRIVATE`, correct for private memory too), and a
//!   zeroed or destroyed one has the bit clear.
//!
//! Mutex and rwlock markers are 64-bit: Apple's 32-bit value in the low half, [`TAG`]
//! ("SHIM") in the high half, so random memory passes with odds of 2^-64.
//!
//! # Portability problems not fixed
//! * The condition-variable marker is one bit: garbage memory (not zeroed memory) passes the
//!   check half of the time, where macOS rejects all but 2^-32 of it.
//! * The layout is glibc 2.36's on x86_64 (LP64); the emulation wrapper header refuses other
//!   targets at compile time.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The models' name for [`super::scope`] (`SLURM_SHIM_EMULATION_OFF=pthread-signature`).
pub const NAME: &str = "pthread-signature";

/// High half of every mutex/rwlock marker: "SHIM".
pub const TAG: u64 = 0x5348_494D << 32;

/// A live (initialised) mutex: `_PTHREAD_MUTEX_SIG` ('MUTX').
pub const MUTEX_SIG: u64 = TAG | 0x4D55_5458;
/// `PTHREAD_MUTEX_INITIALIZER`: `_PTHREAD_MUTEX_SIG_init`.
pub const MUTEX_SIG_INIT: u64 = TAG | 0x32AA_ABA7;
/// `PTHREAD_ERRORCHECK_MUTEX_INITIALIZER(_NP)`: `_PTHREAD_ERRORCHECK_MUTEX_SIG_init`.
pub const MUTEX_SIG_INIT_ERRORCHECK: u64 = TAG | 0x32AA_ABA1;
/// `PTHREAD_RECURSIVE_MUTEX_INITIALIZER(_NP)`: `_PTHREAD_RECURSIVE_MUTEX_SIG_init`.
pub const MUTEX_SIG_INIT_RECURSIVE: u64 = TAG | 0x32AA_ABA2;
/// `_PTHREAD_MUTEX_SIG_init_MASK`, `_PTHREAD_MUTEX_SIG_init_CMP`: any static mutex type.
const MUTEX_SIG_INIT_MASK: u64 = 0xFFFF_FFFF_FFFF_FFF0;
const MUTEX_SIG_INIT_CMP: u64 = TAG | 0x32AA_ABA0;

/// A live rwlock: `_PTHREAD_RWLOCK_SIG` ('RWLK').
pub const RWLOCK_SIG: u64 = TAG | 0x5257_4C4B;
/// `PTHREAD_RWLOCK_INITIALIZER`: `_PTHREAD_RWLOCK_SIG_init`.
pub const RWLOCK_SIG_INIT: u64 = TAG | 0x2DA8_B3B4;

/// Offset of `__data.__list.__prev` in glibc's x86_64 `pthread_mutex_t`.
pub const MUTEX_SIG_OFFSET: usize = 24;
/// Offset of `__data.__pad2` in glibc's x86_64 `pthread_rwlock_t`.
pub const RWLOCK_SIG_OFFSET: usize = 40;
/// Offset of `__data.__wrefs` in glibc's `pthread_cond_t`.
pub const COND_WREFS_OFFSET: usize = 36;
/// glibc's `__PTHREAD_COND_SHARED_MASK`: the condition variable's marker bit.
pub const COND_MARK: u32 = 1;

/// What a mutex/rwlock marker says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Initialised by `pthread_*_init`.
    Live,
    /// Statically initialised, not yet destroyed.
    Static,
    /// Never initialised, destroyed, or not this kind of object.
    Invalid,
}

/// The marker of a mutex or rwlock: the 8 bytes at `offset` in `*obj`.
///
/// # Safety
/// `obj` must be valid for reads of `offset + 8` bytes and 8-aligned at `offset`.
pub unsafe fn load<T>(obj: *const T, offset: usize) -> u64 {
    // SAFETY: per the contract the word is in bounds and aligned; glibc never writes it
    // (see the module doc), other accesses are the model's own atomics.
    unsafe { AtomicU64::from_ptr(obj.cast::<u8>().add(offset).cast_mut().cast()) }
        .load(Ordering::Acquire)
}

/// Writes the marker of a mutex or rwlock.
///
/// # Safety
/// As [`load`], and `obj` must be writable.
pub unsafe fn store<T>(obj: *mut T, offset: usize, sig: u64) {
    // SAFETY: as in `load`.
    unsafe { AtomicU64::from_ptr(obj.cast::<u8>().add(offset).cast()) }
        .store(sig, Ordering::Release);
}

/// Turns a static marker `from` into the live `to`, as macOS does on an object's first use
/// (`_pthread_*_check_init_slow`); a concurrent first use may win the race, which is fine.
///
/// # Safety
/// As [`store`].
pub unsafe fn promote<T>(obj: *mut T, offset: usize, from: u64, to: u64) {
    // SAFETY: as in `load`.
    let word = unsafe { AtomicU64::from_ptr(obj.cast::<u8>().add(offset).cast()) };
    let _ = word.compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire);
}

/// The state of a mutex marker.
pub fn mutex_state(sig: u64) -> State {
    if sig == MUTEX_SIG {
        State::Live
    } else if sig & MUTEX_SIG_INIT_MASK == MUTEX_SIG_INIT_CMP {
        State::Static
    } else {
        State::Invalid
    }
}

/// The state of a rwlock marker.
pub fn rwlock_state(sig: u64) -> State {
    match sig {
        RWLOCK_SIG => State::Live,
        RWLOCK_SIG_INIT => State::Static,
        _ => State::Invalid,
    }
}

/// `__wrefs` of a condition variable, as an atomic.
///
/// # Safety
/// `cond` must point to a `pthread_cond_t` (48 bytes, 8-aligned) valid for the lifetime
/// the caller uses the reference for.
pub unsafe fn cond_wrefs<'a>(cond: *mut libc::pthread_cond_t) -> &'a AtomicU32 {
    // SAFETY: offset 36 is inside the object and 4-aligned; glibc accesses the word
    // atomically too.
    unsafe { AtomicU32::from_ptr(cond.cast::<u8>().add(COND_WREFS_OFFSET).cast()) }
}

/// Defines an exported entry point that checks its object with `$check` (which reports and
/// gives `EINVAL`), refuses NULL extra pointer arguments with `EINVAL`, then calls glibc.
macro_rules! checked_entry {
    ($(#[$doc:meta])* $name:ident($obj:ident: $ty:ty $(, $arg:ident: $aty:ty)*)
        => $check:path, $glibc:path, $what:literal) => {
        $(#[$doc])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($obj: $ty $(, $arg: $aty)*) -> libc::c_int {
            crate::counted!($name);
            $( if $arg.is_null() { return libc::EINVAL; } )*
            // SAFETY: the object is NULL or the caller's; `$check` refuses NULL itself.
            if let Err(e) = unsafe { $check($obj, $what) } {
                return e;
            }
            // SAFETY: an object with a valid marker; other arguments are the caller's, non-NULL.
            unsafe { $glibc($obj $(, $arg)*) }
        }
    };
}
pub(crate) use checked_entry;

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn pthread_sig__states_follow_apples_masks() {
        assert_eq!(mutex_state(MUTEX_SIG), State::Live);
        for s in [
            MUTEX_SIG_INIT,
            MUTEX_SIG_INIT_ERRORCHECK,
            MUTEX_SIG_INIT_RECURSIVE,
        ] {
            assert_eq!(mutex_state(s), State::Static, "{s:#x}");
        }
        for s in [0, 0x4D55_5458, 0x32AA_ABA7, RWLOCK_SIG, u64::MAX] {
            assert_eq!(mutex_state(s), State::Invalid, "{s:#x}");
        }
        assert_eq!(rwlock_state(RWLOCK_SIG), State::Live);
        assert_eq!(rwlock_state(RWLOCK_SIG_INIT), State::Static);
        assert_eq!(rwlock_state(0), State::Invalid);
        assert_eq!(rwlock_state(MUTEX_SIG), State::Invalid);
    }
}
