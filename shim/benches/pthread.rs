//! The darwin personality's pthread model against glibc's own calls.
//!
//! `cargo bench -p slurm-shim --bench pthread` prints one row per operation: ns per
//! operation for glibc and for the model (median of several rounds) and the ratio. The model
//! adds one marker load (and a branch) per call; condition variables are process-shared to
//! glibc (the marker bit), so a signal that wakes a waiter is the shared futex kind: the
//! handoff row measures that.
// Every unsafe block here is a direct pthread call on objects made just before; a SAFETY line
// on each would repeat that.
#![allow(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("pthread bench skipped: the model and its glibc baseline exist on Linux only");
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(target_os = "linux")]
mod linux {
    use std::hint::black_box;
    use std::time::Instant;

    use libc::{c_int, pthread_cond_t, pthread_mutex_t, pthread_rwlock_t};
    use slurm_shim::emulate::pthread_rwlock as rwlock;
    use slurm_shim::emulate::{pthread_cond as cond, pthread_mutex as mutex};

    const ROUNDS: usize = 7;

    /// Median ns per call of `f` run `n` times, over ROUNDS rounds.
    fn time(n: usize, mut f: impl FnMut()) -> f64 {
        for _ in 0..n / 10 {
            f();
        }
        let mut samples: Vec<f64> = (0..ROUNDS)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..n {
                    f();
                }
                start.elapsed().as_nanos() as f64 / n as f64
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        samples[ROUNDS / 2]
    }

    type MutexFn = unsafe extern "C" fn(*mut pthread_mutex_t) -> c_int;
    type CondFn = unsafe extern "C" fn(*mut pthread_cond_t) -> c_int;
    type WaitFn = unsafe extern "C" fn(*mut pthread_cond_t, *mut pthread_mutex_t) -> c_int;
    type RwFn = unsafe extern "C" fn(*mut pthread_rwlock_t) -> c_int;

    /// A mutex and condition variable initialised by glibc (`model == false`) or the model.
    fn objects(model: bool) -> (&'static mut pthread_mutex_t, &'static mut pthread_cond_t) {
        let m: &'static mut pthread_mutex_t = Box::leak(Box::new(unsafe { std::mem::zeroed() }));
        let c: &'static mut pthread_cond_t = Box::leak(Box::new(unsafe { std::mem::zeroed() }));
        unsafe {
            if model {
                assert_eq!(mutex::slurm_shim_pthread_mutex_init(m, std::ptr::null()), 0);
                assert_eq!(cond::slurm_shim_pthread_cond_init(c, std::ptr::null()), 0);
            } else {
                assert_eq!(libc::pthread_mutex_init(m, std::ptr::null()), 0);
                assert_eq!(libc::pthread_cond_init(c, std::ptr::null()), 0);
            }
        }
        (m, c)
    }

    fn lock_pair(model: bool, lock: MutexFn, unlock: MutexFn) -> f64 {
        let (m, _) = objects(model);
        let m: *mut pthread_mutex_t = m;
        time(2_000_000, || unsafe {
            assert_eq!(lock(black_box(m)), 0);
            assert_eq!(unlock(black_box(m)), 0);
        })
    }

    fn signal_no_waiter(model: bool, signal: CondFn) -> f64 {
        let (_, c) = objects(model);
        let c: *mut pthread_cond_t = c;
        time(2_000_000, || unsafe {
            assert_eq!(signal(black_box(c)), 0);
        })
    }

    /// ns per handoff between two threads that take turns (each handoff is one signal that
    /// wakes a sleeping waiter, one wait, one lock/unlock pair).
    fn handoff(model: bool, lock: MutexFn, unlock: MutexFn, signal: CondFn, wait: WaitFn) -> f64 {
        const N: u64 = 20_000;
        let mut samples = vec![];
        for _ in 0..ROUNDS {
            let (m, c0) = objects(model);
            let (_, c1) = objects(model);
            let turn: &'static mut u64 = Box::leak(Box::new(0));
            let (m, c, turn) = (
                m as *mut _ as usize,
                [c0 as *mut _ as usize, c1 as *mut _ as usize],
                turn as *mut u64 as usize,
            );
            let start = Instant::now();
            let threads: Vec<_> = (0..2u64)
                .map(|me| {
                    std::thread::spawn(move || unsafe {
                        let (m, turn) = (m as *mut pthread_mutex_t, turn as *mut u64);
                        let mine = c[me as usize] as *mut pthread_cond_t;
                        let theirs = c[1 - me as usize] as *mut pthread_cond_t;
                        for _ in 0..N {
                            assert_eq!(lock(m), 0);
                            while turn.read() % 2 != me {
                                assert_eq!(wait(mine, m), 0);
                            }
                            *turn += 1;
                            assert_eq!(signal(theirs), 0);
                            assert_eq!(unlock(m), 0);
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().expect("handoff thread");
            }
            samples.push(start.elapsed().as_nanos() as f64 / (2 * N) as f64);
        }
        samples.sort_by(f64::total_cmp);
        samples[ROUNDS / 2]
    }

    fn rd_pair(model: bool, rdlock: RwFn, unlock: RwFn) -> f64 {
        let l: &'static mut pthread_rwlock_t = Box::leak(Box::new(if model {
            rwlock::static_initializer()
        } else {
            libc::PTHREAD_RWLOCK_INITIALIZER
        }));
        let l: *mut pthread_rwlock_t = l;
        time(2_000_000, || unsafe {
            assert_eq!(rdlock(black_box(l)), 0);
            assert_eq!(unlock(black_box(l)), 0);
        })
    }

    pub fn main() {
        println!(
            "{:<52} {:>10} {:>10} {:>7}",
            "operation (ns)", "glibc", "model", "ratio"
        );
        let row = |name: &str, g: f64, s: f64| {
            println!("{name:<52} {g:>10.1} {s:>10.1} {:>7.2}", s / g);
        };
        row(
            "mutex lock + unlock, uncontended",
            lock_pair(false, libc::pthread_mutex_lock, libc::pthread_mutex_unlock),
            lock_pair(
                true,
                mutex::slurm_shim_pthread_mutex_lock,
                mutex::slurm_shim_pthread_mutex_unlock,
            ),
        );
        row(
            "mutex trylock + unlock, uncontended",
            lock_pair(
                false,
                libc::pthread_mutex_trylock,
                libc::pthread_mutex_unlock,
            ),
            lock_pair(
                true,
                mutex::slurm_shim_pthread_mutex_trylock,
                mutex::slurm_shim_pthread_mutex_unlock,
            ),
        );
        row(
            "cond signal, no waiter",
            signal_no_waiter(false, libc::pthread_cond_signal),
            signal_no_waiter(true, cond::slurm_shim_pthread_cond_signal),
        );
        row(
            "cond broadcast, no waiter",
            signal_no_waiter(false, libc::pthread_cond_broadcast),
            signal_no_waiter(true, cond::slurm_shim_pthread_cond_broadcast),
        );
        row(
            "rwlock rdlock + unlock, uncontended",
            rd_pair(
                false,
                libc::pthread_rwlock_rdlock,
                libc::pthread_rwlock_unlock,
            ),
            rd_pair(
                true,
                rwlock::slurm_shim_pthread_rwlock_rdlock,
                rwlock::slurm_shim_pthread_rwlock_unlock,
            ),
        );
        row(
            "cond handoff between 2 threads (signal wakes a waiter)",
            handoff(
                false,
                libc::pthread_mutex_lock,
                libc::pthread_mutex_unlock,
                libc::pthread_cond_signal,
                libc::pthread_cond_wait,
            ),
            handoff(
                true,
                mutex::slurm_shim_pthread_mutex_lock,
                mutex::slurm_shim_pthread_mutex_unlock,
                cond::slurm_shim_pthread_cond_signal,
                cond::slurm_shim_pthread_cond_wait,
            ),
        );
    }
}
