//! `emulate::pthread_cond`: the darwin personality's condition-variable calls against
//! glibc's on the same objects, and a producer/consumer stress test (no lost wakeups, every
//! item consumed once).
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use libc::{EINVAL, ETIMEDOUT, pthread_cond_t, pthread_mutex_t, timespec};
use slurm_shim::emulate::pthread_cond::*;
use slurm_shim::emulate::pthread_mutex::*;

fn zeroed<T>() -> Box<T> {
    // SAFETY: all-zero bytes are a valid value of glibc's pthread types.
    Box::new(unsafe { std::mem::zeroed() })
}

fn after(d: Duration) -> timespec {
    let mut t = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid out-parameter.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut t) };
    let ns = t.tv_nsec as u128 + d.as_nanos();
    t.tv_sec += (ns / 1_000_000_000) as libc::time_t;
    t.tv_nsec = (ns % 1_000_000_000) as libc::c_long;
    t
}

fn initialised_pair() -> (Box<pthread_cond_t>, Box<pthread_mutex_t>) {
    let mut c = zeroed::<pthread_cond_t>();
    let mut m = zeroed::<pthread_mutex_t>();
    // SAFETY: fresh objects.
    unsafe {
        assert_eq!(slurm_shim_pthread_cond_init(&mut *c, std::ptr::null()), 0);
        assert_eq!(slurm_shim_pthread_mutex_init(&mut *m, std::ptr::null()), 0);
    }
    (c, m)
}

#[test]
fn pthread_cond_signal__zeroed_cond_is_einval_where_glibc_accepts_it() {
    let mut c = zeroed::<pthread_cond_t>();
    let (_, mut m) = initialised_pair();
    let past = timespec {
        tv_sec: 1,
        tv_nsec: 0,
    };
    // SAFETY: valid objects used by this thread only.
    unsafe {
        assert_eq!(slurm_shim_pthread_cond_signal(&mut *c), EINVAL);
        assert_eq!(slurm_shim_pthread_cond_broadcast(&mut *c), EINVAL);
        assert_eq!(slurm_shim_pthread_mutex_lock(&mut *m), 0);
        assert_eq!(slurm_shim_pthread_cond_wait(&mut *c, &mut *m), EINVAL);
        assert_eq!(
            slurm_shim_pthread_cond_timedwait(&mut *c, &mut *m, &past),
            EINVAL
        );
        // glibc on the same memory.
        assert_eq!(
            libc::pthread_cond_timedwait(&mut *c, &mut *m, &past),
            ETIMEDOUT
        );
        assert_eq!(slurm_shim_pthread_mutex_unlock(&mut *m), 0);
        assert_eq!(libc::pthread_cond_signal(&mut *c), 0);
        assert_eq!(slurm_shim_pthread_cond_destroy(&mut *c), EINVAL);
        assert_eq!(libc::pthread_cond_destroy(&mut *c), 0);
        assert_eq!(slurm_shim_pthread_cond_signal(std::ptr::null_mut()), EINVAL);
    }
}

#[test]
fn pthread_cond_wait__with_a_zeroed_mutex_is_einval() {
    let (mut c, _) = initialised_pair();
    let mut zm = zeroed::<pthread_mutex_t>();
    let past = timespec {
        tv_sec: 1,
        tv_nsec: 0,
    };
    // SAFETY: valid objects; the model refuses before glibc touches the mutex.
    unsafe {
        assert_eq!(slurm_shim_pthread_cond_wait(&mut *c, &mut *zm), EINVAL);
        assert_eq!(
            slurm_shim_pthread_cond_timedwait(&mut *c, &mut *zm, &past),
            EINVAL
        );
        assert_eq!(libc::pthread_mutex_lock(&mut *zm), 0);
        assert_eq!(
            libc::pthread_cond_timedwait(&mut *c, &mut *zm, &past),
            ETIMEDOUT,
            "glibc"
        );
        assert_eq!(libc::pthread_mutex_unlock(&mut *zm), 0);
    }
}

#[test]
fn pthread_cond_timedwait__times_out_and_checks_nanoseconds() {
    let (mut c, mut m) = initialised_pair();
    let bad = timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000_000,
    };
    let soon = after(Duration::from_millis(20));
    // SAFETY: initialised objects used by this thread only.
    unsafe {
        assert_eq!(slurm_shim_pthread_mutex_lock(&mut *m), 0);
        let t0 = std::time::Instant::now();
        assert_eq!(
            slurm_shim_pthread_cond_timedwait(&mut *c, &mut *m, &soon),
            ETIMEDOUT
        );
        assert!(t0.elapsed() >= Duration::from_millis(15), "returned early");
        assert_eq!(
            slurm_shim_pthread_cond_timedwait(&mut *c, &mut *m, &bad),
            EINVAL
        );
        assert_eq!(
            libc::pthread_cond_timedwait(&mut *c, &mut *m, &bad),
            EINVAL,
            "glibc"
        );
        assert_eq!(slurm_shim_pthread_mutex_unlock(&mut *m), 0);
    }
}

#[test]
fn pthread_cond_destroy__destroyed_cond_is_einval() {
    let (mut c, _) = initialised_pair();
    // SAFETY: an initialised condition variable without waiters.
    unsafe {
        assert_eq!(slurm_shim_pthread_cond_destroy(&mut *c), 0);
        assert_eq!(slurm_shim_pthread_cond_signal(&mut *c), EINVAL);
        assert_eq!(slurm_shim_pthread_cond_destroy(&mut *c), EINVAL);
        assert_eq!(libc::pthread_cond_signal(&mut *c), 0, "glibc");
        assert_eq!(slurm_shim_pthread_cond_init(&mut *c, std::ptr::null()), 0);
        assert_eq!(slurm_shim_pthread_cond_signal(&mut *c), 0);
    }
}

/// A bounded queue guarded by one mutex and two condition variables, all the model's.
struct Queue {
    m: pthread_mutex_t,
    not_empty: pthread_cond_t,
    not_full: pthread_cond_t,
    items: std::cell::UnsafeCell<std::collections::VecDeque<u64>>,
}
// SAFETY: `items` is only touched with `m` held.
unsafe impl Sync for Queue {}

const CAPACITY: usize = 4;

impl Queue {
    fn m(&self) -> *mut pthread_mutex_t {
        (&raw const self.m).cast_mut()
    }
    fn cond(c: &pthread_cond_t) -> *mut pthread_cond_t {
        (c as *const pthread_cond_t).cast_mut()
    }
    fn push(&self, v: u64) {
        // SAFETY: initialised objects; `items` only with `m` held.
        unsafe {
            assert_eq!(slurm_shim_pthread_mutex_lock(self.m()), 0);
            while (*self.items.get()).len() == CAPACITY {
                assert_eq!(
                    slurm_shim_pthread_cond_wait(Self::cond(&self.not_full), self.m()),
                    0
                );
            }
            (*self.items.get()).push_back(v);
            assert_eq!(
                slurm_shim_pthread_cond_signal(Self::cond(&self.not_empty)),
                0
            );
            assert_eq!(slurm_shim_pthread_mutex_unlock(self.m()), 0);
        }
    }
    fn pop(&self) -> u64 {
        // SAFETY: as in push.
        unsafe {
            assert_eq!(slurm_shim_pthread_mutex_lock(self.m()), 0);
            loop {
                if let Some(v) = (*self.items.get()).pop_front() {
                    assert_eq!(
                        slurm_shim_pthread_cond_signal(Self::cond(&self.not_full)),
                        0
                    );
                    assert_eq!(slurm_shim_pthread_mutex_unlock(self.m()), 0);
                    return v;
                }
                // Timed half of the time, so both waits are exercised; a far deadline
                // (a lost wakeup still shows as the watchdog firing).
                let far = after(Duration::from_secs(60));
                let r = if v_parity() {
                    slurm_shim_pthread_cond_timedwait(Self::cond(&self.not_empty), self.m(), &far)
                } else {
                    slurm_shim_pthread_cond_wait(Self::cond(&self.not_empty), self.m())
                };
                assert_eq!(r, 0);
            }
        }
    }
}

fn v_parity() -> bool {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed) % 2 == 0
}

#[test]
fn pthread_cond_wait__producer_consumer_loses_no_wakeup() {
    const PRODUCERS: u64 = 2;
    const CONSUMERS: u64 = 2;
    const ITEMS: u64 = 20_000; // per producer
    let q: &'static Queue = Box::leak(Box::new(Queue {
        // SAFETY: zeroed, then initialised by the model below.
        m: unsafe { std::mem::zeroed() },
        // SAFETY: as above.
        not_empty: unsafe { std::mem::zeroed() },
        // SAFETY: as above.
        not_full: unsafe { std::mem::zeroed() },
        items: std::cell::UnsafeCell::new(Default::default()),
    }));
    // SAFETY: the leaked objects live for the whole process.
    unsafe {
        assert_eq!(slurm_shim_pthread_mutex_init(q.m(), std::ptr::null()), 0);
        assert_eq!(
            slurm_shim_pthread_cond_init(Queue::cond(&q.not_empty), std::ptr::null()),
            0
        );
        assert_eq!(
            slurm_shim_pthread_cond_init(Queue::cond(&q.not_full), std::ptr::null()),
            0
        );
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let consumed: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
    let count: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
    let total = PRODUCERS * ITEMS;
    let mut threads = Vec::new();
    for p in 0..PRODUCERS {
        threads.push(std::thread::spawn(move || {
            for i in 1..=ITEMS {
                q.push(p * ITEMS + i);
            }
        }));
    }
    for c in 0..CONSUMERS {
        let done_tx = done_tx.clone();
        threads.push(std::thread::spawn(move || {
            // Each consumer takes an equal share.
            for _ in 0..total / CONSUMERS {
                consumed.fetch_add(q.pop(), Ordering::Relaxed);
                count.fetch_add(1, Ordering::Relaxed);
            }
            done_tx.send(c).expect("send");
        }));
    }
    for _ in 0..CONSUMERS {
        if done_rx.recv_timeout(Duration::from_secs(120)).is_err() {
            panic!(
                "a consumer is stuck after {} of {total} items: a lost wakeup",
                count.load(Ordering::Relaxed)
            );
        }
    }
    for t in threads {
        t.join().expect("worker");
    }
    assert_eq!(count.load(Ordering::Relaxed), total);
    assert_eq!(
        consumed.load(Ordering::Relaxed),
        total * (total + 1) / 2,
        "each item once"
    );
}

#[test]
fn pthread_cond_broadcast__wakes_every_waiter_of_each_round() {
    const WAITERS: usize = 4;
    const ROUNDS: u64 = 500;
    struct Gate {
        m: pthread_mutex_t,
        c: pthread_cond_t,
        round: std::cell::UnsafeCell<u64>,
        arrived: std::cell::UnsafeCell<usize>,
    }
    // SAFETY: the cells are only touched with `m` held.
    unsafe impl Sync for Gate {}
    let g: &'static Gate = Box::leak(Box::new(Gate {
        // SAFETY: zeroed, then initialised below.
        m: unsafe { std::mem::zeroed() },
        // SAFETY: as above.
        c: unsafe { std::mem::zeroed() },
        round: std::cell::UnsafeCell::new(0),
        arrived: std::cell::UnsafeCell::new(0),
    }));
    let m = (&raw const g.m).cast_mut() as usize;
    let c = (&raw const g.c).cast_mut() as usize;
    // SAFETY: leaked objects.
    unsafe {
        assert_eq!(
            slurm_shim_pthread_mutex_init(m as *mut _, std::ptr::null()),
            0
        );
        assert_eq!(
            slurm_shim_pthread_cond_init(c as *mut _, std::ptr::null()),
            0
        );
    }
    // A barrier: the last thread to arrive advances the round and broadcasts.
    let threads: Vec<_> = (0..WAITERS)
        .map(|_| {
            std::thread::spawn(move || {
                let (m, c) = (m as *mut pthread_mutex_t, c as *mut pthread_cond_t);
                for _ in 0..ROUNDS {
                    // SAFETY: initialised objects; the cells only with `m` held.
                    unsafe {
                        assert_eq!(slurm_shim_pthread_mutex_lock(m), 0);
                        let mine = *g.round.get();
                        *g.arrived.get() += 1;
                        if *g.arrived.get() == WAITERS {
                            *g.arrived.get() = 0;
                            *g.round.get() += 1;
                            assert_eq!(slurm_shim_pthread_cond_broadcast(c), 0);
                        } else {
                            while *g.round.get() == mine {
                                assert_eq!(slurm_shim_pthread_cond_wait(c, m), 0);
                            }
                        }
                        assert_eq!(slurm_shim_pthread_mutex_unlock(m), 0);
                    }
                }
            })
        })
        .collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for t in threads {
            t.join().expect("waiter");
        }
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("a barrier round never completed: a broadcast missed a waiter");
    // SAFETY: every thread has ended.
    assert_eq!(unsafe { *g.round.get() }, ROUNDS);
}

#[test]
fn pthread_cond_signal__strict_handoff_needs_every_signal() {
    // Two threads pass a turn back and forth; each waits (untimed) until it is its turn,
    // so one lost signal while the other side sleeps stops both: the watchdog fires.
    const ROUNDS: u64 = 20_000;
    struct Turn {
        m: pthread_mutex_t,
        c: [pthread_cond_t; 2],
        turn: std::cell::UnsafeCell<u64>,
    }
    // SAFETY: `turn` is only touched with `m` held.
    unsafe impl Sync for Turn {}
    let t: &'static Turn = Box::leak(Box::new(Turn {
        // SAFETY: zeroed, then initialised below.
        m: unsafe { std::mem::zeroed() },
        // SAFETY: as above.
        c: unsafe { std::mem::zeroed() },
        turn: std::cell::UnsafeCell::new(0),
    }));
    let m = (&raw const t.m).cast_mut() as usize;
    let c = [0, 1].map(|i| (&raw const t.c[i]).cast_mut() as usize);
    // SAFETY: leaked objects.
    unsafe {
        assert_eq!(
            slurm_shim_pthread_mutex_init(m as *mut _, std::ptr::null()),
            0
        );
        for c in c {
            assert_eq!(
                slurm_shim_pthread_cond_init(c as *mut _, std::ptr::null()),
                0
            );
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    for me in 0..2u64 {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let m = m as *mut pthread_mutex_t;
            let (mine, theirs) = (c[me as usize] as *mut _, c[1 - me as usize] as *mut _);
            for round in 0..ROUNDS {
                // SAFETY: initialised objects; `turn` only with `m` held.
                unsafe {
                    assert_eq!(slurm_shim_pthread_mutex_lock(m), 0);
                    while *t.turn.get() % 2 != me {
                        assert_eq!(slurm_shim_pthread_cond_wait(mine, m), 0);
                    }
                    assert_eq!(*t.turn.get(), 2 * round + me);
                    *t.turn.get() += 1;
                    assert_eq!(slurm_shim_pthread_cond_signal(theirs), 0);
                    assert_eq!(slurm_shim_pthread_mutex_unlock(m), 0);
                }
            }
            let _ = tx.send(());
        });
    }
    for _ in 0..2 {
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the handoff stopped: a signal was lost");
    }
    // SAFETY: both threads have finished their rounds.
    assert_eq!(unsafe { *t.turn.get() }, 2 * ROUNDS);
}
