//! Timer lateness: time from a timer's deadline to its delivery, shim vs glibc.
//!
//! Scenarios (each with absolute `CLOCK_MONOTONIC` deadlines, so the deadline is exact):
//! * `thread seq`: 500 one-shot 2 ms `SIGEV_THREAD` timers, one after another;
//! * `signal seq`: the same with `SIGEV_SIGNAL` (a handler records the time);
//! * `thread batch`: 500 `SIGEV_THREAD` timers armed for the same instant.
//!
//! Prints p50/p99/max lateness per implementation and the shim-minus-glibc difference.
//! Target: shim p99 <= glibc p99 + 1 ms. On macOS there is no glibc baseline (Darwin has
//! no POSIX timers): only the shim's figures are printed.

use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use libc::{c_int, sigevent, sigval, timespec};
use slurm_shim::timer::{self, slurm_shim_itimerspec as Its};

const N: usize = 500;
const AFTER_NS: i64 = 2_000_000;

static STAMPS: [AtomicI64; N] = [const { AtomicI64::new(0) }; N];
static SIGNAL_STAMP: AtomicI64 = AtomicI64::new(0);

fn now_ns() -> i64 {
    let mut t = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

fn at(ns: i64) -> Its {
    Its {
        it_interval: timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: timespec {
            tv_sec: ns / 1_000_000_000,
            tv_nsec: ns % 1_000_000_000,
        },
    }
}

extern "C" fn record(v: sigval) {
    STAMPS[v.sival_ptr as usize].store(now_ns(), Ordering::SeqCst);
}

extern "C" fn on_signal(_: c_int) {
    SIGNAL_STAMP.store(now_ns(), Ordering::SeqCst);
}

#[cfg(target_os = "linux")]
#[repr(C)]
struct RawSigevent {
    value: sigval,
    signo: c_int,
    notify: c_int,
    function: Option<extern "C" fn(sigval)>,
    attributes: *mut c_void,
    pad: [c_int; 8],
}

#[cfg(target_vendor = "apple")]
#[repr(C)]
struct RawSigevent {
    notify: c_int,
    signo: c_int,
    value: sigval,
    function: Option<extern "C" fn(sigval)>,
    attributes: *mut c_void,
}

fn sev(notify: c_int, signo: c_int, value: usize) -> sigevent {
    let raw = RawSigevent {
        value: sigval {
            sival_ptr: value as *mut c_void,
        },
        signo,
        notify,
        function: Some(record),
        attributes: std::ptr::null_mut(),
        #[cfg(target_os = "linux")]
        pad: [0; 8],
    };
    // SAFETY: RawSigevent has the size and layout of this OS's struct sigevent.
    unsafe { std::mem::transmute::<RawSigevent, sigevent>(raw) }
}

#[cfg(target_os = "linux")]
fn bench_signal() -> c_int {
    libc::SIGRTMIN() + 1
}
#[cfg(target_vendor = "apple")]
fn bench_signal() -> c_int {
    libc::SIGUSR1
}

/// The five timer functions of one implementation.
struct Api {
    name: &'static str,
    create: unsafe fn(libc::clockid_t, *mut sigevent, *mut *mut c_void) -> c_int,
    settime: unsafe fn(*mut c_void, c_int, *const Its, *mut Its) -> c_int,
    delete: fn(*mut c_void) -> c_int,
}

fn shim() -> Api {
    Api {
        name: "shim",
        // SAFETY: the callers pass valid pointers (see `create` and `arm`).
        create: |c, s, t| unsafe { timer::slurm_shim_timer_create(c, s, t) },
        // SAFETY: as above.
        settime: |t, f, n, o| unsafe { timer::slurm_shim_timer_settime(t, f, n, o) },
        delete: |t| timer::slurm_shim_timer_delete(t),
    }
}

#[cfg(target_os = "linux")]
fn glibc() -> Option<Api> {
    Some(Api {
        name: "glibc",
        // SAFETY: the callers pass valid pointers (see `create` and `arm`).
        create: |c, s, t| unsafe { libc::timer_create(c, s, t) },
        // SAFETY: as above; the shim's itimerspec has glibc's layout.
        settime: |t, f, n, o| unsafe { libc::timer_settime(t, f, n.cast(), o.cast()) },
        // SAFETY: glibc checks the id (only ids it returned are passed).
        delete: |t| unsafe { libc::timer_delete(t) },
    })
}
#[cfg(target_vendor = "apple")]
fn glibc() -> Option<Api> {
    println!("no glibc baseline: macOS has no timer_create; shim figures only");
    None
}

fn create(api: &Api, s: &mut sigevent) -> *mut c_void {
    let mut id: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid sigevent and out-pointer.
    let rc = unsafe { (api.create)(libc::CLOCK_MONOTONIC, s, &mut id) };
    assert_eq!(rc, 0, "{} timer_create", api.name);
    id
}

fn arm(api: &Api, id: *mut c_void, deadline: i64) {
    // SAFETY: valid itimerspec; NULL old value.
    let rc = unsafe {
        (api.settime)(
            id,
            slurm_shim::consts::flags::TIMER_ABSTIME,
            &at(deadline),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0, "{} timer_settime", api.name);
}

fn wait_until(f: impl Fn() -> bool) {
    let limit = now_ns() + 2_000_000_000;
    while !f() && now_ns() < limit {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Lateness samples (ns) of `n` sequential SIGEV_THREAD timers.
fn thread_seq(api: &Api, n: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(n);
    for (i, stamp) in STAMPS.iter().enumerate().take(n) {
        stamp.store(0, Ordering::SeqCst);
        let id = create(api, &mut sev(libc::SIGEV_THREAD, 0, i));
        let deadline = now_ns() + AFTER_NS;
        arm(api, id, deadline);
        wait_until(|| stamp.load(Ordering::SeqCst) != 0);
        out.push(stamp.load(Ordering::SeqCst) - deadline);
        (api.delete)(id);
    }
    out
}

/// Lateness samples (ns) of `n` sequential SIGEV_SIGNAL timers on one timer.
fn signal_seq(api: &Api, n: usize) -> Vec<i64> {
    let sig = bench_signal();
    let id = create(api, &mut sev(libc::SIGEV_SIGNAL, sig, 0));
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        SIGNAL_STAMP.store(0, Ordering::SeqCst);
        let deadline = now_ns() + AFTER_NS;
        arm(api, id, deadline);
        wait_until(|| SIGNAL_STAMP.load(Ordering::SeqCst) != 0);
        out.push(SIGNAL_STAMP.load(Ordering::SeqCst) - deadline);
    }
    (api.delete)(id);
    out
}

/// Lateness samples (ns) of 500 SIGEV_THREAD timers armed for one instant (`n` ignored).
fn thread_batch(api: &Api, _n: usize) -> Vec<i64> {
    let ids: Vec<_> = (0..N)
        .map(|i| {
            STAMPS[i].store(0, Ordering::SeqCst);
            create(api, &mut sev(libc::SIGEV_THREAD, 0, i))
        })
        .collect();
    let deadline = now_ns() + 20 * AFTER_NS;
    for &id in &ids {
        arm(api, id, deadline);
    }
    wait_until(|| STAMPS.iter().all(|s| s.load(Ordering::SeqCst) != 0));
    for &id in &ids {
        (api.delete)(id);
    }
    STAMPS
        .iter()
        .map(|s| s.load(Ordering::SeqCst) - deadline)
        .collect()
}

#[derive(Clone, Copy)]
struct Stats {
    p50: f64,
    p99: f64,
    max: f64,
}

fn stats(mut v: Vec<i64>) -> Stats {
    v.sort_unstable();
    let pick = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0;
    Stats {
        p50: pick(0.5),
        p99: pick(0.99),
        max: pick(1.0),
    }
}

fn main() {
    // Benches are run as `cargo bench`, which passes `--bench`; nothing to parse.
    let sig = bench_signal();
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
    let shim = shim();
    let baseline = glibc();
    // Sequential scenarios alternate shim and glibc in rounds of 50 timers, so that load
    // from other processes falls on both alike; the batch runs once each.
    type Scenario = (&'static str, fn(&Api, usize) -> Vec<i64>, usize);
    let scenarios: [Scenario; 3] = [
        ("thread seq", thread_seq, 10),
        ("signal seq", signal_seq, 10),
        ("thread batch", thread_batch, 1),
    ];
    println!(
        "timer lateness, {N} one-shot timers per scenario, deadline 2 ms (batch: 40 ms), microseconds"
    );
    println!(
        "{:<13} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>12} {:>9}",
        "scenario",
        "shim p50",
        "shim p99",
        "shim max",
        "glibc p50",
        "glibc p99",
        "glibc max",
        "p99 diff",
        "p99 ratio"
    );
    let mut ok = true;
    for (name, run, rounds) in scenarios {
        let per_round = N / rounds;
        let (mut shim_samples, mut glibc_samples) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            shim_samples.extend(run(&shim, per_round));
            if let Some(g) = &baseline {
                glibc_samples.extend(run(g, per_round));
            }
        }
        let s = stats(shim_samples);
        match &baseline {
            Some(_) => {
                let g = stats(glibc_samples);
                let diff = s.p99 - g.p99;
                ok &= diff <= 1000.0;
                println!(
                    "{:<13} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>+12.1} {:>9.2}",
                    name,
                    s.p50,
                    s.p99,
                    s.max,
                    g.p50,
                    g.p99,
                    g.max,
                    diff,
                    s.p99 / g.p99.max(1.0)
                );
            }
            None => println!(
                "{:<13} {:>10.1} {:>10.1} {:>10.1}",
                name, s.p50, s.p99, s.max
            ),
        }
    }
    if baseline.is_some() {
        println!(
            "target shim p99 <= glibc p99 + 1000 us: {}",
            if ok { "met" } else { "NOT met" }
        );
    }
}
