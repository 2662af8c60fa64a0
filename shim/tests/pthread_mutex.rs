//! `emulate::pthread_mutex`: the darwin personality's mutex calls against glibc's own on
//! the same objects, and under contention.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

use libc::{EBUSY, EINVAL, pthread_mutex_t};
use slurm_shim::emulate::pthread_mutex::*;
use slurm_shim::emulate::pthread_sig::{MUTEX_SIG_INIT, MUTEX_SIG_OFFSET};

/// A mutex in zeroed heap memory (what `xmalloc` hands out).
fn zeroed() -> Box<pthread_mutex_t> {
    // SAFETY: all-zero bytes are a valid pthread_mutex_t value for glibc.
    Box::new(unsafe { std::mem::zeroed() })
}

/// The darwin personality's `PTHREAD_MUTEX_INITIALIZER` (glibc's plus the static marker).
fn statically_initialised() -> Box<pthread_mutex_t> {
    let mut m = Box::new(libc::PTHREAD_MUTEX_INITIALIZER);
    // SAFETY: the marker word is inside the mutex (offset checked from C).
    unsafe {
        (&raw mut *m)
            .cast::<u8>()
            .add(MUTEX_SIG_OFFSET)
            .cast::<u64>()
            .write(MUTEX_SIG_INIT)
    };
    m
}

#[test]
fn pthread_mutex_lock__zeroed_mutex_is_einval_where_glibc_locks_it() {
    let mut m = zeroed();
    // SAFETY: `m` is a valid (zeroed) mutex used by this thread only.
    unsafe {
        assert_eq!(slurm_shim_pthread_mutex_lock(&mut *m), EINVAL);
        assert_eq!(slurm_shim_pthread_mutex_trylock(&mut *m), EINVAL);
        assert_eq!(slurm_shim_pthread_mutex_unlock(&mut *m), EINVAL);
        assert_eq!(slurm_shim_pthread_mutex_destroy(&mut *m), EINVAL);
        // glibc on the same memory: a valid unlocked mutex.
        assert_eq!(libc::pthread_mutex_lock(&mut *m), 0);
        assert_eq!(libc::pthread_mutex_unlock(&mut *m), 0);
        assert_eq!(libc::pthread_mutex_destroy(&mut *m), 0);
    }
}

#[test]
fn pthread_mutex_lock__null_is_einval() {
    // SAFETY: NULL is checked before any access.
    unsafe {
        assert_eq!(slurm_shim_pthread_mutex_lock(std::ptr::null_mut()), EINVAL);
        assert_eq!(
            slurm_shim_pthread_mutex_init(std::ptr::null_mut(), std::ptr::null()),
            EINVAL
        );
    }
}

#[test]
fn pthread_mutex_lock__static_and_initialised_mutexes_work() {
    let mut s = statically_initialised();
    let mut i = zeroed();
    // SAFETY: valid mutexes used by this thread only.
    unsafe {
        assert_eq!(slurm_shim_pthread_mutex_lock(&mut *s), 0);
        assert_eq!(slurm_shim_pthread_mutex_trylock(&mut *s), EBUSY);
        assert_eq!(slurm_shim_pthread_mutex_unlock(&mut *s), 0);
        assert_eq!(slurm_shim_pthread_mutex_init(&mut *i, std::ptr::null()), 0);
        assert_eq!(slurm_shim_pthread_mutex_trylock(&mut *i), 0);
        assert_eq!(slurm_shim_pthread_mutex_unlock(&mut *i), 0);
    }
}

#[test]
fn pthread_mutex_destroy__locked_is_ebusy_and_destroyed_is_einval() {
    let mut m = zeroed();
    // SAFETY: a valid mutex used by this thread only.
    unsafe {
        assert_eq!(slurm_shim_pthread_mutex_init(&mut *m, std::ptr::null()), 0);
        assert_eq!(slurm_shim_pthread_mutex_lock(&mut *m), 0);
        assert_eq!(slurm_shim_pthread_mutex_destroy(&mut *m), EBUSY);
        assert_eq!(slurm_shim_pthread_mutex_unlock(&mut *m), 0);
        assert_eq!(slurm_shim_pthread_mutex_destroy(&mut *m), 0);
        assert_eq!(
            slurm_shim_pthread_mutex_lock(&mut *m),
            EINVAL,
            "use after destroy"
        );
        assert_eq!(slurm_shim_pthread_mutex_destroy(&mut *m), EINVAL);
        // glibc destroys twice without complaint.
        assert_eq!(libc::pthread_mutex_destroy(&mut *m), 0);
        // Re-initialising a destroyed mutex makes it usable again (macOS and glibc).
        assert_eq!(slurm_shim_pthread_mutex_init(&mut *m, std::ptr::null()), 0);
        assert_eq!(slurm_shim_pthread_mutex_lock(&mut *m), 0);
        assert_eq!(slurm_shim_pthread_mutex_unlock(&mut *m), 0);
    }
}

#[test]
fn pthread_mutex_init__initialised_locked_mutex_is_not_refused() {
    let mut m = zeroed();
    // SAFETY: a valid mutex used by this thread only.
    unsafe {
        assert_eq!(slurm_shim_pthread_mutex_init(&mut *m, std::ptr::null()), 0);
        assert_eq!(slurm_shim_pthread_mutex_lock(&mut *m), 0);
        // libpthread-539 compiles its EBUSY check out (#if 0).
        assert_eq!(slurm_shim_pthread_mutex_init(&mut *m, std::ptr::null()), 0);
        assert_eq!(
            slurm_shim_pthread_mutex_trylock(&mut *m),
            0,
            "unlocked by the re-init"
        );
        assert_eq!(slurm_shim_pthread_mutex_unlock(&mut *m), 0);
    }
}

#[test]
fn pthread_mutex_lock__counts_add_up_under_contention() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 50_000;
    struct Shared {
        m: pthread_mutex_t,
        count: std::cell::UnsafeCell<u64>,
    }
    // SAFETY: `count` is only touched with `m` held.
    unsafe impl Sync for Shared {}
    let shared: &'static Shared = Box::leak(Box::new(Shared {
        // SAFETY: zeroed, then initialised by the model below.
        m: unsafe { std::mem::zeroed() },
        count: std::cell::UnsafeCell::new(0),
    }));
    let m = &raw const shared.m as *mut pthread_mutex_t;
    // SAFETY: the leaked mutex lives for the whole process.
    let r = unsafe { slurm_shim_pthread_mutex_init(m, std::ptr::null()) };
    assert_eq!(r, 0);
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let m = m as usize;
            std::thread::spawn(move || {
                let m = m as *mut pthread_mutex_t;
                for i in 0..ROUNDS {
                    // SAFETY: an initialised mutex; `count` only with it held.
                    unsafe {
                        let r = if i % 2 == 0 {
                            slurm_shim_pthread_mutex_lock(m)
                        } else {
                            loop {
                                match slurm_shim_pthread_mutex_trylock(m) {
                                    EBUSY => std::hint::spin_loop(),
                                    r => break r,
                                }
                            }
                        };
                        assert_eq!(r, 0);
                        let c = shared.count.get();
                        let v = c.read_volatile();
                        c.write_volatile(v + 1);
                        assert_eq!(slurm_shim_pthread_mutex_unlock(m), 0);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("worker");
    }
    // SAFETY: all workers have ended.
    assert_eq!(unsafe { *shared.count.get() }, (THREADS * ROUNDS) as u64);
}
