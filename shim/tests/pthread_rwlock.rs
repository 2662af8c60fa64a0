//! `emulate::pthread_rwlock`: the darwin personality's rwlock calls against glibc's on the
//! same objects, the model's `EBUSY` for re-initialising a held lock (which `rwlock.rs`, the
//! fix, turns back into success), and readers/writers under contention.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

use libc::{EBUSY, EDEADLK, EINVAL, pthread_rwlock_t};
use slurm_shim::emulate::pthread_rwlock::{self as model, *};
use slurm_shim::rwlock::slurm_shim_pthread_rwlock_init;

fn zeroed() -> Box<pthread_rwlock_t> {
    // SAFETY: all-zero bytes are a valid pthread_rwlock_t value for glibc.
    Box::new(unsafe { std::mem::zeroed() })
}

#[test]
fn pthread_rwlock_rdlock__zeroed_lock_is_einval_where_glibc_locks_it() {
    let mut l = zeroed();
    // SAFETY: a valid (zeroed) lock used by this thread only.
    unsafe {
        assert_eq!(slurm_shim_pthread_rwlock_rdlock(&mut *l), EINVAL);
        assert_eq!(slurm_shim_pthread_rwlock_wrlock(&mut *l), EINVAL);
        assert_eq!(slurm_shim_pthread_rwlock_tryrdlock(&mut *l), EINVAL);
        assert_eq!(slurm_shim_pthread_rwlock_trywrlock(&mut *l), EINVAL);
        assert_eq!(slurm_shim_pthread_rwlock_unlock(&mut *l), EINVAL);
        assert_eq!(slurm_shim_pthread_rwlock_destroy(&mut *l), EINVAL);
        assert_eq!(libc::pthread_rwlock_rdlock(&mut *l), 0, "glibc");
        assert_eq!(libc::pthread_rwlock_unlock(&mut *l), 0, "glibc");
        assert_eq!(
            slurm_shim_pthread_rwlock_rdlock(std::ptr::null_mut()),
            EINVAL
        );
        assert_eq!(
            slurm_shim_pthread_rwlock_timedrdlock(&mut *l, std::ptr::null()),
            EINVAL,
            "NULL deadline"
        );
    }
}

#[test]
fn pthread_rwlock_init__model_alone_refuses_reinit_of_held_lock() {
    let mut l = zeroed();
    // SAFETY: a valid lock used by this thread only.
    unsafe {
        assert_eq!(model::init(&mut *l, std::ptr::null()), 0);
        assert_eq!(model::init(&mut *l, std::ptr::null()), 0, "live but free");
        assert_eq!(slurm_shim_pthread_rwlock_wrlock(&mut *l), 0);
        assert_eq!(
            model::init(&mut *l, std::ptr::null()),
            EBUSY,
            "Darwin's answer"
        );
        assert_eq!(
            libc::pthread_rwlock_init(&mut *l, std::ptr::null()),
            0,
            "glibc's answer"
        );
        assert_eq!(model::init(&mut *l, std::ptr::null()), 0);
        assert_eq!(slurm_shim_pthread_rwlock_rdlock(&mut *l), 0);
        assert_eq!(
            model::init(&mut *l, std::ptr::null()),
            EBUSY,
            "read-held too"
        );
        // Through the fix (what Slurm's pthread_rwlock_init reaches): reset, then the model.
        assert_eq!(slurm_shim_pthread_rwlock_init(&mut *l, std::ptr::null()), 0);
        assert_eq!(
            slurm_shim_pthread_rwlock_trywrlock(&mut *l),
            0,
            "free after the fix"
        );
        assert_eq!(slurm_shim_pthread_rwlock_unlock(&mut *l), 0);
    }
}

#[test]
fn pthread_rwlock_destroy__held_is_ebusy_where_glibc_succeeds() {
    let mut l = zeroed();
    // SAFETY: a valid lock used by this thread only.
    unsafe {
        assert_eq!(slurm_shim_pthread_rwlock_init(&mut *l, std::ptr::null()), 0);
        assert_eq!(slurm_shim_pthread_rwlock_wrlock(&mut *l), 0);
        assert_eq!(slurm_shim_pthread_rwlock_wrlock(&mut *l), EDEADLK);
        assert_eq!(slurm_shim_pthread_rwlock_destroy(&mut *l), EBUSY);
        assert_eq!(libc::pthread_rwlock_destroy(&mut *l), 0, "glibc");
        assert_eq!(slurm_shim_pthread_rwlock_unlock(&mut *l), 0);
        assert_eq!(slurm_shim_pthread_rwlock_destroy(&mut *l), 0);
        assert_eq!(
            slurm_shim_pthread_rwlock_rdlock(&mut *l),
            EINVAL,
            "use after destroy"
        );
        // The static initialiser the fix writes is usable, and destroyable.
        l.as_mut().clone_from(&model::static_initializer());
        assert_eq!(slurm_shim_pthread_rwlock_tryrdlock(&mut *l), 0);
        assert_eq!(slurm_shim_pthread_rwlock_unlock(&mut *l), 0);
        assert_eq!(slurm_shim_pthread_rwlock_destroy(&mut *l), 0);
    }
}

#[test]
fn pthread_rwlock_wrlock__readers_never_see_a_half_write_under_contention() {
    const WRITERS: usize = 2;
    const READERS: usize = 3;
    const ROUNDS: u64 = 20_000;
    struct Pair {
        l: pthread_rwlock_t,
        a: std::cell::UnsafeCell<u64>,
        b: std::cell::UnsafeCell<u64>,
    }
    // SAFETY: `a`/`b` are written with the write lock and read with a read lock.
    unsafe impl Sync for Pair {}
    let p: &'static Pair = Box::leak(Box::new(Pair {
        l: model::static_initializer(),
        a: std::cell::UnsafeCell::new(0),
        b: std::cell::UnsafeCell::new(0),
    }));
    let l = (&raw const p.l).cast_mut() as usize;
    let mut threads = Vec::new();
    for _ in 0..WRITERS {
        threads.push(std::thread::spawn(move || {
            let l = l as *mut pthread_rwlock_t;
            for i in 0..ROUNDS {
                // SAFETY: a statically initialised lock; the pair only with it held.
                unsafe {
                    let r = if i % 2 == 0 {
                        slurm_shim_pthread_rwlock_wrlock(l)
                    } else {
                        loop {
                            match slurm_shim_pthread_rwlock_trywrlock(l) {
                                EBUSY => std::thread::yield_now(),
                                r => break r,
                            }
                        }
                    };
                    assert_eq!(r, 0);
                    let a = p.a.get().read_volatile();
                    p.a.get().write_volatile(a + 1);
                    std::hint::spin_loop();
                    let b = p.b.get().read_volatile();
                    p.b.get().write_volatile(b + 1);
                    assert_eq!(slurm_shim_pthread_rwlock_unlock(l), 0);
                }
            }
        }));
    }
    for _ in 0..READERS {
        threads.push(std::thread::spawn(move || {
            let l = l as *mut pthread_rwlock_t;
            for _ in 0..ROUNDS {
                // SAFETY: as above, reading only.
                unsafe {
                    assert_eq!(slurm_shim_pthread_rwlock_rdlock(l), 0);
                    let (a, b) = (p.a.get().read_volatile(), p.b.get().read_volatile());
                    assert_eq!(a, b, "a reader saw a half-finished write");
                    assert_eq!(slurm_shim_pthread_rwlock_unlock(l), 0);
                }
            }
        }));
    }
    for t in threads {
        t.join().expect("worker");
    }
    // SAFETY: all workers have ended.
    unsafe {
        assert_eq!(*p.a.get(), WRITERS as u64 * ROUNDS);
        assert_eq!(*p.b.get(), WRITERS as u64 * ROUNDS);
    }
}
