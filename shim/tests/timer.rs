//! Tests of `slurm_shim::timer`: the exported functions against glibc's own POSIX timers
//! (same inputs, same return, errno and observable timing), and the service core with a
//! fake wall clock that the test steps.
//!
//! Signals: each test that counts signals uses its own real-time signal and holds
//! `SERIAL` so timing tests do not disturb one another; the handler only touches atomics.
//! Tests that need a process in which every thread blocks a signal run in a `fork()` child
//! (single-threaded), which also exercises the shim's fork handling.
#![allow(non_snake_case)]
// Every unsafe block here is a direct call of a C timer or signal function with pointers to
// locals built on the line before; a SAFETY line on each would repeat that.
#![allow(clippy::undocumented_unsafe_blocks)]
#![cfg(target_os = "linux")]

use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use libc::{c_int, clockid_t, sigevent, sigval, timespec};
use slurm_shim::timer::{
    self, Clock, ClockKind, Notify, SystemClock, TimerService, slurm_shim_itimerspec as Its,
};

// ---------------------------------------------------------------------------------------
// Two implementations behind one interface.

type Id = *mut c_void;

trait Api {
    const NAME: &'static str;
    unsafe fn create(clock: clockid_t, sev: *mut sigevent, id: *mut Id) -> c_int;
    unsafe fn settime(id: Id, flags: c_int, new: *const Its, old: *mut Its) -> c_int;
    unsafe fn gettime(id: Id, cur: *mut Its) -> c_int;
    fn getoverrun(id: Id) -> c_int;
    fn delete(id: Id) -> c_int;
}

struct Shim;
struct Glibc;

impl Api for Shim {
    const NAME: &'static str = "shim";
    unsafe fn create(clock: clockid_t, sev: *mut sigevent, id: *mut Id) -> c_int {
        unsafe { timer::slurm_shim_timer_create(clock, sev, id) }
    }
    unsafe fn settime(id: Id, flags: c_int, new: *const Its, old: *mut Its) -> c_int {
        unsafe { timer::slurm_shim_timer_settime(id, flags, new, old) }
    }
    unsafe fn gettime(id: Id, cur: *mut Its) -> c_int {
        unsafe { timer::slurm_shim_timer_gettime(id, cur) }
    }
    fn getoverrun(id: Id) -> c_int {
        timer::slurm_shim_timer_getoverrun(id)
    }
    fn delete(id: Id) -> c_int {
        timer::slurm_shim_timer_delete(id)
    }
}

impl Api for Glibc {
    const NAME: &'static str = "glibc";
    unsafe fn create(clock: clockid_t, sev: *mut sigevent, id: *mut Id) -> c_int {
        unsafe { libc::timer_create(clock, sev, id) }
    }
    unsafe fn settime(id: Id, flags: c_int, new: *const Its, old: *mut Its) -> c_int {
        unsafe { libc::timer_settime(id, flags, new.cast(), old.cast()) }
    }
    unsafe fn gettime(id: Id, cur: *mut Its) -> c_int {
        unsafe { libc::timer_gettime(id, cur.cast()) }
    }
    fn getoverrun(id: Id) -> c_int {
        unsafe { libc::timer_getoverrun(id) }
    }
    fn delete(id: Id) -> c_int {
        unsafe { libc::timer_delete(id) }
    }
}

const _: () = assert!(size_of::<Its>() == size_of::<libc::itimerspec>());

/// `Ok(rc)` or `Err(errno)`.
fn res(rc: c_int) -> Result<c_int, c_int> {
    if rc == -1 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(rc)
    }
}

fn ts(sec: i64, nsec: i64) -> timespec {
    timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}
fn ms(v: i64) -> timespec {
    ts(v / 1000, (v % 1000) * 1_000_000)
}
fn its(value: timespec, interval: timespec) -> Its {
    Its {
        it_interval: interval,
        it_value: value,
    }
}
fn ns(t: &timespec) -> i64 {
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}
fn now_ns(clock: clockid_t) -> i64 {
    let mut t = ts(0, 0);
    unsafe { libc::clock_gettime(clock, &mut t) };
    ns(&t)
}

/// glibc's `struct sigevent` with the `_sigev_thread` member of its union.
#[repr(C)]
struct SevThread {
    value: sigval,
    signo: c_int,
    notify: c_int,
    function: Option<extern "C" fn(sigval)>,
    attributes: *mut c_void,
    _pad: [c_int; 8],
}
const _: () = assert!(size_of::<SevThread>() == size_of::<sigevent>());

fn sev(notify: c_int, signo: c_int) -> sigevent {
    let mut s: sigevent = unsafe { std::mem::zeroed() };
    s.sigev_notify = notify;
    s.sigev_signo = signo;
    s
}
fn sev_thread(function: Option<extern "C" fn(sigval)>, value: usize) -> sigevent {
    let t = SevThread {
        value: sigval {
            sival_ptr: value as *mut c_void,
        },
        signo: 0,
        notify: libc::SIGEV_THREAD,
        function,
        attributes: std::ptr::null_mut(),
        _pad: [0; 8],
    };
    unsafe { std::mem::transmute::<SevThread, sigevent>(t) }
}

fn create<A: Api>(clock: clockid_t, mut s: Option<sigevent>) -> Result<Id, c_int> {
    let mut id: Id = std::ptr::null_mut();
    let p = s
        .as_mut()
        .map_or(std::ptr::null_mut(), |s| s as *mut sigevent);
    res(unsafe { A::create(clock, p, &mut id) }).map(|_| id)
}
fn settime<A: Api>(id: Id, flags: c_int, new: &Its) -> Result<Its, c_int> {
    let mut old = its(ts(-7, -7), ts(-7, -7));
    res(unsafe { A::settime(id, flags, new, &mut old) }).map(|_| old)
}
fn gettime<A: Api>(id: Id) -> Result<Its, c_int> {
    let mut cur = its(ts(-7, -7), ts(-7, -7));
    res(unsafe { A::gettime(id, &mut cur) }).map(|_| cur)
}

// ---------------------------------------------------------------------------------------
// Signal counting.

static SERIAL: Mutex<()> = Mutex::new(());
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

static COUNT: [AtomicUsize; 65] = [const { AtomicUsize::new(0) }; 65];
static STAMP: [AtomicI64; 65] = [const { AtomicI64::new(0) }; 65];

extern "C" fn on_signal(sig: c_int) {
    let mut t = ts(0, 0);
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    STAMP[sig as usize].store(ns(&t), Ordering::SeqCst);
    COUNT[sig as usize].fetch_add(1, Ordering::SeqCst);
}

fn install(sig: c_int, handler: extern "C" fn(c_int)) {
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(sig, &sa, std::ptr::null_mut()), 0);
    }
}

/// A real-time signal for one test, with the counting handler installed and reset.
fn rt_signal(n: c_int) -> c_int {
    let sig = libc::SIGRTMIN() + n;
    assert!(sig <= libc::SIGRTMAX());
    install(sig, on_signal);
    COUNT[sig as usize].store(0, Ordering::SeqCst);
    sig
}

fn count(sig: c_int) -> usize {
    COUNT[sig as usize].load(Ordering::SeqCst)
}

/// Waits until `sig` has been counted `n` times (or `limit` passes); returns the count.
fn wait_count(sig: c_int, n: usize, limit: Duration) -> usize {
    let start = Instant::now();
    while count(sig) < n && start.elapsed() < limit {
        std::thread::sleep(Duration::from_micros(200));
    }
    count(sig)
}

// ---------------------------------------------------------------------------------------
// Invalid arguments: same errno as glibc.

fn check_create_errors<A: Api>() -> Vec<Result<(), c_int>> {
    let mut out = Vec::new();
    let mut probe = |clock: clockid_t, s: Option<sigevent>| {
        let r = create::<A>(clock, s);
        if let Ok(id) = r {
            A::delete(id);
        }
        out.push(r.map(|_| ()));
    };
    let rt = libc::SIGRTMIN();
    probe(9999, None);
    probe(libc::CLOCK_MONOTONIC, Some(sev(999, rt)));
    probe(libc::CLOCK_MONOTONIC, Some(sev(3, rt)));
    probe(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_SIGNAL, 0)));
    probe(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_SIGNAL, -1)));
    probe(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_SIGNAL, 65)));
    probe(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_SIGNAL, 64)));
    probe(libc::CLOCK_REALTIME, Some(sev(libc::SIGEV_NONE, 999)));
    probe(libc::CLOCK_REALTIME, Some(sev(libc::SIGEV_NONE, 0)));
    extern "C" fn nop(_: sigval) {}
    let mut t = sev_thread(Some(nop), 1);
    unsafe { (*(&mut t as *mut sigevent).cast::<SevThread>()).signo = 0 };
    probe(libc::CLOCK_MONOTONIC, Some(t));
    out
}

#[test]
fn timer_create__invalid_clock_and_sigevent_errno_like_glibc() {
    let shim = check_create_errors::<Shim>();
    let glibc = check_create_errors::<Glibc>();
    assert_eq!(shim, glibc);
    let e = Err(libc::EINVAL);
    assert_eq!(shim, vec![e, e, e, e, e, e, Ok(()), Ok(()), Ok(()), Ok(())]);
}

#[test]
fn timer_create__unsupported_clocks_and_null_function_einval() {
    // Documented divergences: glibc accepts these.
    for clock in [libc::CLOCK_PROCESS_CPUTIME_ID, libc::CLOCK_BOOTTIME] {
        assert_eq!(
            create::<Shim>(clock, None).map(|_| ()),
            Err(libc::EINVAL),
            "clock {clock}"
        );
    }
    assert_eq!(
        create::<Shim>(libc::CLOCK_MONOTONIC, Some(sev_thread(None, 0))).map(|_| ()),
        Err(libc::EINVAL)
    );
    let s = sev(libc::SIGEV_SIGNAL | libc::SIGEV_THREAD_ID, libc::SIGRTMIN());
    assert_eq!(
        create::<Shim>(libc::CLOCK_MONOTONIC, Some(s)).map(|_| ()),
        Err(libc::EINVAL)
    );
}

#[test]
fn timer_create__null_timerid_efault() {
    let rc = unsafe {
        Shim::create(
            libc::CLOCK_MONOTONIC,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(res(rc), Err(libc::EFAULT));
    // Validation of the clock comes first, as in the kernel.
    let rc = unsafe { Shim::create(9999, std::ptr::null_mut(), std::ptr::null_mut()) };
    assert_eq!(res(rc), Err(libc::EINVAL));
}

fn check_settime_errors<A: Api>() -> Vec<Result<c_int, c_int>> {
    let id = create::<A>(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_NONE, 0))).unwrap();
    let bad = [
        its(ts(0, 1_000_000_000), ts(0, 0)),
        its(ts(0, -1), ts(0, 0)),
        its(ts(-1, 0), ts(0, 0)),
        its(ms(10), ts(0, 1_000_000_000)),
        its(ms(10), ts(-1, 0)),
    ];
    let mut out = Vec::new();
    for flags in [0, libc::TIMER_ABSTIME] {
        for b in &bad {
            let mut old = its(ts(-7, -7), ts(-7, -7));
            out.push(res(unsafe { A::settime(id, flags, b, &mut old) }));
            assert_eq!(
                (old.it_value.tv_sec, old.it_value.tv_nsec),
                (-7, -7),
                "{} old touched",
                A::NAME
            );
        }
    }
    out.push(res(unsafe {
        A::settime(id, 0, std::ptr::null(), std::ptr::null_mut())
    }));
    // Unknown flags are ignored by the kernel: a relative 10 s arming.
    out.push(res(unsafe {
        A::settime(id, 0x100, &its(ts(10, 0), ts(0, 0)), std::ptr::null_mut())
    }));
    let cur = gettime::<A>(id).unwrap();
    assert!(
        cur.it_value.tv_sec == 9 || cur.it_value.tv_sec == 10,
        "{}: {:?}",
        A::NAME,
        cur
    );
    out.push(res(unsafe { A::gettime(id, std::ptr::null_mut()) }));
    assert_eq!(A::delete(id), 0);
    out
}

#[test]
fn timer_settime__invalid_values_flags_and_null_errno_like_glibc() {
    let shim = check_settime_errors::<Shim>();
    let glibc = check_settime_errors::<Glibc>();
    assert_eq!(shim, glibc);
    let e = Err(libc::EINVAL);
    let mut expect = vec![e; 11];
    expect.push(Ok(0));
    expect.push(Err(libc::EFAULT));
    assert_eq!(shim, expect);
}

fn check_bad_id<A: Api>(id: Id) -> [Result<c_int, c_int>; 4] {
    let v = its(ms(10), ts(0, 0));
    let mut cur = its(ts(-7, -7), ts(-7, -7));
    [
        res(unsafe { A::settime(id, 0, &v, std::ptr::null_mut()) }),
        res(unsafe { A::gettime(id, &mut cur) }),
        res(A::getoverrun(id)),
        res(A::delete(id)),
    ]
}

#[test]
fn timer_ops__bad_id_einval_like_glibc() {
    let e = Err(libc::EINVAL);
    let bogus = 0x1234_5678usize as Id;
    assert_eq!(check_bad_id::<Glibc>(bogus), [e; 4]);
    assert_eq!(check_bad_id::<Shim>(bogus), [e; 4]);
    // Ids glibc would dereference or that may be live kernel ids: shim only.
    for id in [0usize, 1, usize::MAX, (-5isize) as usize, 0x7fff_ffff] {
        assert_eq!(check_bad_id::<Shim>(id as Id), [e; 4], "id {id:#x}");
    }
    // A deleted id stays invalid, even when its slot is reused.
    let id = create::<Shim>(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_NONE, 0))).unwrap();
    assert_eq!(Shim::delete(id), 0);
    let again = create::<Shim>(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_NONE, 0))).unwrap();
    assert_ne!(again, id);
    assert_eq!(check_bad_id::<Shim>(id), [e; 4]);
    assert_eq!(gettime::<Shim>(again).map(|c| ns(&c.it_value)), Ok(0));
    assert_eq!(Shim::delete(again), 0);
    let g = create::<Glibc>(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_NONE, 0))).unwrap();
    assert_eq!(Glibc::delete(g), 0);
    assert_eq!(res(Glibc::delete(g)), e);
}

#[test]
fn timer_ops__errno_preserved_on_success() {
    let id = create::<Shim>(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_NONE, 0))).unwrap();
    unsafe { *libc::__errno_location() = 1234 };
    assert_eq!(
        unsafe { Shim::settime(id, 0, &its(ms(50), ms(0)), std::ptr::null_mut()) },
        0
    );
    let mut cur = Its::ZERO;
    assert_eq!(unsafe { Shim::gettime(id, &mut cur) }, 0);
    assert_eq!(Shim::getoverrun(id), 0);
    assert_eq!(Shim::delete(id), 0);
    assert_eq!(unsafe { *libc::__errno_location() }, 1234);
}

// ---------------------------------------------------------------------------------------
// Deadlines.

/// Arms a SIGEV_SIGNAL timer for `after_ms` (absolute if `abs`) and returns the lateness
/// of the delivery in microseconds.
fn lateness<A: Api>(clock: clockid_t, abs: bool, after_ms: i64, sig: c_int) -> i64 {
    COUNT[sig as usize].store(0, Ordering::SeqCst);
    let id = create::<A>(clock, Some(sev(libc::SIGEV_SIGNAL, sig))).unwrap();
    let start_mono = now_ns(libc::CLOCK_MONOTONIC);
    let (flags, value) = if abs {
        (libc::TIMER_ABSTIME, now_ns(clock) + after_ms * 1_000_000)
    } else {
        (0, after_ms * 1_000_000)
    };
    let deadline = start_mono + after_ms * 1_000_000;
    settime::<A>(
        id,
        flags,
        &its(ts(value / 1_000_000_000, value % 1_000_000_000), ts(0, 0)),
    )
    .unwrap();
    assert_eq!(
        wait_count(sig, 1, Duration::from_secs(2)),
        1,
        "{} never fired",
        A::NAME
    );
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(count(sig), 1, "{}: one-shot fired twice", A::NAME);
    assert_eq!(A::delete(id), 0);
    (STAMP[sig as usize].load(Ordering::SeqCst) - deadline) / 1000
}

fn check_deadline(clock: clockid_t, abs: bool, sig_n: c_int) {
    let _g = serial();
    let sig = rt_signal(sig_n);
    let g = lateness::<Glibc>(clock, abs, 30, sig);
    let s = lateness::<Shim>(clock, abs, 30, sig);
    eprintln!("clock {clock} abs {abs}: lateness glibc {g} us, shim {s} us");
    // Never early (1 ms slack for the realtime/monotonic conversion of the deadline).
    assert!(g > -1000 && s > -1000, "early: glibc {g} shim {s}");
    assert!(s < 40_000, "shim {s} us late (glibc {g})");
}

#[test]
fn timer_settime__relative_monotonic_fires_on_time() {
    check_deadline(libc::CLOCK_MONOTONIC, false, 1);
}

#[test]
fn timer_settime__absolute_realtime_sigalrm_path_fires_on_time() {
    check_deadline(libc::CLOCK_REALTIME, true, 2);
}

#[test]
fn timer_settime__absolute_monotonic_fires_on_time() {
    check_deadline(libc::CLOCK_MONOTONIC, true, 3);
}

/// Slurm's conmgr arms `CLOCK_TAI` + `TIMER_ABSTIME` under `__linux__`, which the darwin
/// personality keeps defined.
#[test]
fn timer_settime__absolute_tai_fires_on_time() {
    check_deadline(libc::CLOCK_TAI, true, 14);
}

fn past_deadline<A: Api>(sig: c_int) -> Duration {
    COUNT[sig as usize].store(0, Ordering::SeqCst);
    let id = create::<A>(libc::CLOCK_REALTIME, Some(sev(libc::SIGEV_SIGNAL, sig))).unwrap();
    let start = Instant::now();
    settime::<A>(id, libc::TIMER_ABSTIME, &its(ts(1000, 0), ts(0, 0))).unwrap();
    assert_eq!(wait_count(sig, 1, Duration::from_secs(1)), 1, "{}", A::NAME);
    let took = start.elapsed();
    assert_eq!(
        gettime::<A>(id).map(|c| (ns(&c.it_value), ns(&c.it_interval))),
        Ok((0, 0))
    );
    assert_eq!(A::delete(id), 0);
    took
}

#[test]
fn timer_settime__absolute_past_deadline_fires_at_once() {
    let _g = serial();
    let sig = rt_signal(4);
    let g = past_deadline::<Glibc>(sig);
    let s = past_deadline::<Shim>(sig);
    eprintln!("past deadline: glibc {g:?}, shim {s:?}");
    assert!(s < Duration::from_millis(20), "{s:?}");
}

fn rearm<A: Api>(sig: c_int, first_ms: i64, second_ms: i64) -> (i64, i64) {
    COUNT[sig as usize].store(0, Ordering::SeqCst);
    let id = create::<A>(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_SIGNAL, sig))).unwrap();
    let start = now_ns(libc::CLOCK_MONOTONIC);
    settime::<A>(id, 0, &its(ms(first_ms), ms(0))).unwrap();
    let old = settime::<A>(id, 0, &its(ms(second_ms), ms(0))).unwrap();
    let old_ms = ns(&old.it_value) / 1_000_000;
    assert!(
        old_ms > first_ms - 20 && old_ms <= first_ms,
        "{}: old {old:?}",
        A::NAME
    );
    assert_eq!(ns(&old.it_interval), 0);
    assert_eq!(wait_count(sig, 1, Duration::from_secs(2)), 1, "{}", A::NAME);
    let fired_ms = (STAMP[sig as usize].load(Ordering::SeqCst) - start) / 1_000_000;
    // Nothing else comes, in particular not at the first deadline.
    let quiet =
        (first_ms.max(second_ms) + 40 - (now_ns(libc::CLOCK_MONOTONIC) - start) / 1_000_000).max(0);
    std::thread::sleep(Duration::from_millis(quiet as u64));
    assert_eq!(count(sig), 1, "{}", A::NAME);
    assert_eq!(A::delete(id), 0);
    (fired_ms, old_ms)
}

#[test]
fn timer_settime__rearm_earlier() {
    let _g = serial();
    let sig = rt_signal(5);
    let (g, _) = rearm::<Glibc>(sig, 300, 20);
    let (s, _) = rearm::<Shim>(sig, 300, 20);
    eprintln!("rearm earlier: fired glibc {g} ms, shim {s} ms");
    assert!((20..60).contains(&s), "shim fired at {s} ms");
}

#[test]
fn timer_settime__rearm_later() {
    let _g = serial();
    let sig = rt_signal(6);
    let (g, _) = rearm::<Glibc>(sig, 20, 150);
    let (s, _) = rearm::<Shim>(sig, 20, 150);
    eprintln!("rearm later: fired glibc {g} ms, shim {s} ms");
    assert!((150..190).contains(&s), "shim fired at {s} ms");
}

fn disarm_and_delete<A: Api>(sig: c_int) {
    COUNT[sig as usize].store(0, Ordering::SeqCst);
    let id = create::<A>(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_SIGNAL, sig))).unwrap();
    settime::<A>(id, 0, &its(ms(30), ms(10))).unwrap();
    let old = settime::<A>(id, 0, &its(ms(0), ms(10))).unwrap();
    assert!(
        ns(&old.it_value) > 0 && ns(&old.it_interval) == 10_000_000,
        "{}: {old:?}",
        A::NAME
    );
    let cur = gettime::<A>(id).unwrap();
    assert_eq!(
        (ns(&cur.it_value), ns(&cur.it_interval)),
        (0, 0),
        "{}",
        A::NAME
    );
    // Delete while armed.
    let id2 = create::<A>(libc::CLOCK_REALTIME, Some(sev(libc::SIGEV_SIGNAL, sig))).unwrap();
    let soon = now_ns(libc::CLOCK_REALTIME) + 20_000_000;
    settime::<A>(
        id2,
        libc::TIMER_ABSTIME,
        &its(ts(soon / 1_000_000_000, soon % 1_000_000_000), ms(5)),
    )
    .unwrap();
    assert_eq!(A::delete(id2), 0);
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(count(sig), 0, "{}: delivery after disarm/delete", A::NAME);
    assert_eq!(A::delete(id), 0);
}

#[test]
fn timer_settime__disarm_and_delete_while_armed_no_delivery() {
    let _g = serial();
    let sig = rt_signal(7);
    disarm_and_delete::<Glibc>(sig);
    disarm_and_delete::<Shim>(sig);
}

static ALRM: AtomicUsize = AtomicUsize::new(0);
extern "C" fn on_alrm(_: c_int) {
    ALRM.fetch_add(1, Ordering::SeqCst);
}

fn null_sigevent<A: Api>() {
    ALRM.store(0, Ordering::SeqCst);
    let id = create::<A>(libc::CLOCK_REALTIME, None).unwrap();
    settime::<A>(id, 0, &its(ms(10), ms(0))).unwrap();
    let start = Instant::now();
    while ALRM.load(Ordering::SeqCst) == 0 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(ALRM.load(Ordering::SeqCst), 1, "{}", A::NAME);
    assert_eq!(A::delete(id), 0);
}

#[test]
fn timer_create__null_sigevent_sends_sigalrm() {
    let _g = serial();
    install(libc::SIGALRM, on_alrm);
    null_sigevent::<Glibc>();
    null_sigevent::<Shim>();
}

// ---------------------------------------------------------------------------------------
// gettime / SIGEV_NONE.

fn none_countdown<A: Api>() -> (i64, i64, i64, i64) {
    let id = create::<A>(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_NONE, 0))).unwrap();
    settime::<A>(id, 0, &its(ms(200), ms(50))).unwrap();
    let a = gettime::<A>(id).unwrap();
    assert_eq!(ns(&a.it_interval), 50_000_000, "{}", A::NAME);
    std::thread::sleep(Duration::from_millis(20));
    let b = gettime::<A>(id).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let c = gettime::<A>(id).unwrap();
    assert_eq!(A::getoverrun(id), 0, "{}", A::NAME);
    // One-shot SIGEV_NONE: zero once expired.
    let id1 = create::<A>(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_NONE, 0))).unwrap();
    settime::<A>(id1, 0, &its(ms(10), ms(0))).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let d = gettime::<A>(id1).unwrap();
    assert_eq!(A::delete(id), 0);
    assert_eq!(A::delete(id1), 0);
    (
        ns(&a.it_value),
        ns(&b.it_value),
        ns(&c.it_value),
        ns(&d.it_value) + ns(&d.it_interval),
    )
}

#[test]
fn timer_gettime__sigev_none_counts_down_like_glibc() {
    let g = none_countdown::<Glibc>();
    let s = none_countdown::<Shim>();
    eprintln!("SIGEV_NONE countdown ns: glibc {g:?}, shim {s:?}");
    for (name, (a, b, c, d)) in [("glibc", g), ("shim", s)] {
        assert!(a > 190_000_000 && a <= 200_000_000, "{name} a={a}");
        assert!(b < a && b > 100_000_000, "{name} b={b}");
        assert!(c > 0 && c <= 50_000_000, "{name} periodic remainder {c}");
        assert_eq!(d, 0, "{name}");
    }
}

#[test]
fn timer_gettime__realtime_absolute_reports_relative_remaining() {
    for (name, r) in [
        ("glibc", rt_remaining::<Glibc>()),
        ("shim", rt_remaining::<Shim>()),
    ] {
        assert!(r > 4_900_000_000 && r <= 5_000_000_000, "{name}: {r}");
    }
}

fn rt_remaining<A: Api>() -> i64 {
    let id = create::<A>(libc::CLOCK_REALTIME, Some(sev(libc::SIGEV_NONE, 0))).unwrap();
    let at = now_ns(libc::CLOCK_REALTIME) + 5_000_000_000;
    settime::<A>(
        id,
        libc::TIMER_ABSTIME,
        &its(ts(at / 1_000_000_000, at % 1_000_000_000), ms(0)),
    )
    .unwrap();
    let r = ns(&gettime::<A>(id).unwrap().it_value);
    assert_eq!(A::delete(id), 0);
    r
}

// ---------------------------------------------------------------------------------------
// SIGEV_THREAD.

static SIVAL: AtomicUsize = AtomicUsize::new(0);
static SIVAL_CALLS: AtomicUsize = AtomicUsize::new(0);
extern "C" fn record_sival(v: sigval) {
    SIVAL.store(v.sival_ptr as usize, Ordering::SeqCst);
    SIVAL_CALLS.fetch_add(1, Ordering::SeqCst);
}

fn thread_sival<A: Api>() -> usize {
    static LOCK: Mutex<()> = Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    SIVAL.store(0, Ordering::SeqCst);
    SIVAL_CALLS.store(0, Ordering::SeqCst);
    let value = 0x5eed_1234usize;
    let id = create::<A>(
        libc::CLOCK_MONOTONIC,
        Some(sev_thread(Some(record_sival), value)),
    )
    .unwrap();
    settime::<A>(id, 0, &its(ms(10), ms(0))).unwrap();
    let start = Instant::now();
    while SIVAL_CALLS.load(Ordering::SeqCst) == 0 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(SIVAL_CALLS.load(Ordering::SeqCst), 1, "{}", A::NAME);
    assert_eq!(A::delete(id), 0);
    SIVAL.load(Ordering::SeqCst)
}

#[test]
fn timer_create__sigev_thread_delivers_sival_like_glibc() {
    assert_eq!(thread_sival::<Glibc>(), 0x5eed_1234);
    assert_eq!(thread_sival::<Shim>(), 0x5eed_1234);
}

static HITS: [AtomicUsize; 200] = [const { AtomicUsize::new(0) }; 200];
extern "C" fn hit(v: sigval) {
    HITS[v.sival_ptr as usize].fetch_add(1, Ordering::SeqCst);
}

#[test]
fn timer_create__200_timers_all_fire_once() {
    let ids: Vec<Id> = (0..200)
        .map(|i| {
            let id = create::<Shim>(libc::CLOCK_MONOTONIC, Some(sev_thread(Some(hit), i))).unwrap();
            settime::<Shim>(id, 0, &its(ms(5 + (i as i64 * 7) % 40), ms(0))).unwrap();
            id
        })
        .collect();
    let start = Instant::now();
    while HITS.iter().any(|h| h.load(Ordering::SeqCst) == 0)
        && start.elapsed() < Duration::from_secs(3)
    {
        std::thread::sleep(Duration::from_millis(2));
    }
    eprintln!("200 timers fired within {:?}", start.elapsed());
    std::thread::sleep(Duration::from_millis(20));
    for (i, h) in HITS.iter().enumerate() {
        assert_eq!(h.load(Ordering::SeqCst), 1, "timer {i}");
    }
    for id in ids {
        assert_eq!(Shim::delete(id), 0);
    }
}

static SLOW_CALLS: AtomicUsize = AtomicUsize::new(0);
static SLOW_OVERRUN: AtomicI64 = AtomicI64::new(-1);
static SLOW_ID: AtomicUsize = AtomicUsize::new(0);
extern "C" fn slow(_: sigval) {
    let n = SLOW_CALLS.fetch_add(1, Ordering::SeqCst);
    if n == 0 {
        std::thread::sleep(Duration::from_millis(55));
    } else if n == 1 {
        let o = Shim::getoverrun(SLOW_ID.load(Ordering::SeqCst) as Id);
        SLOW_OVERRUN.store(o as i64, Ordering::SeqCst);
    }
}

#[test]
fn timer_getoverrun__sigev_thread_busy_callback_counts_overruns() {
    // Shim only: glibc runs each SIGEV_THREAD expiration on a new thread, so a busy
    // callback does not hold back the next one there.
    let id = create::<Shim>(libc::CLOCK_MONOTONIC, Some(sev_thread(Some(slow), 0))).unwrap();
    SLOW_ID.store(id as usize, Ordering::SeqCst);
    settime::<Shim>(id, 0, &its(ms(10), ms(10))).unwrap();
    let start = Instant::now();
    while SLOW_OVERRUN.load(Ordering::SeqCst) < 0 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(Shim::delete(id), 0);
    let calls = SLOW_CALLS.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(
        SLOW_CALLS.load(Ordering::SeqCst),
        calls,
        "callback after delete returned"
    );
    let o = SLOW_OVERRUN.load(Ordering::SeqCst);
    // 55 ms busy at a 10 ms period: the queued expiration plus about 4 overruns.
    assert!((2..=7).contains(&o), "overrun {o}");
}

static CAP_OVERRUN: AtomicI64 = AtomicI64::new(-1);
extern "C" fn cap_cb(v: sigval) {
    let id = CAP_ID.load(Ordering::SeqCst) as Id;
    let o = if v.sival_ptr.is_null() {
        Glibc::getoverrun(id)
    } else {
        Shim::getoverrun(id)
    };
    // glibc runs each delivery on a new thread: keep the largest report.
    CAP_OVERRUN.fetch_max(i64::from(o), Ordering::SeqCst);
}
static CAP_ID: AtomicUsize = AtomicUsize::new(0);

fn overrun_cap<A: Api>(shim: bool) -> i64 {
    CAP_OVERRUN.store(-1, Ordering::SeqCst);
    // An absolute deadline about 1 s after the epoch with a 100 ms period: ~1.7e10 missed
    // periods. Its phase puts the next period 90 ms ahead, so the first callback (on a new
    // thread with glibc) reads its overrun before the next delivery replaces it.
    let id = create::<A>(
        libc::CLOCK_REALTIME,
        Some(sev_thread(Some(cap_cb), shim as usize)),
    )
    .unwrap();
    CAP_ID.store(id as usize, Ordering::SeqCst);
    let period = 100_000_000;
    let first = 1_000_000_000 + (now_ns(libc::CLOCK_REALTIME) + 90_000_000) % period;
    settime::<A>(
        id,
        libc::TIMER_ABSTIME,
        &its(ts(first / 1_000_000_000, first % 1_000_000_000), ms(100)),
    )
    .unwrap();
    let start = Instant::now();
    while CAP_OVERRUN.load(Ordering::SeqCst) < 0 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(A::delete(id), 0);
    CAP_OVERRUN.load(Ordering::SeqCst)
}

#[test]
fn timer_getoverrun__capped_at_delaytimer_max_like_glibc() {
    static LOCK: Mutex<()> = Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let g = overrun_cap::<Glibc>(false);
    let s = overrun_cap::<Shim>(true);
    assert_eq!(g, i64::from(c_int::MAX));
    assert_eq!(s, i64::from(timer::DELAYTIMER_MAX));
}

// ---------------------------------------------------------------------------------------
// fork(): a single-threaded child blocks the signal, so overruns accumulate as on Linux.

static CHILD_USE_SHIM: AtomicUsize = AtomicUsize::new(0);
static CHILD_ID: AtomicUsize = AtomicUsize::new(0);
static CHILD_OVERRUN: AtomicI64 = AtomicI64::new(-1);
extern "C" fn child_handler(_: c_int) {
    let id = CHILD_ID.load(Ordering::SeqCst) as Id;
    let o = if CHILD_USE_SHIM.load(Ordering::SeqCst) == 1 {
        Shim::getoverrun(id)
    } else {
        Glibc::getoverrun(id)
    };
    if CHILD_OVERRUN.load(Ordering::SeqCst) < 0 {
        CHILD_OVERRUN.store(o as i64, Ordering::SeqCst);
    }
}

/// Runs `body` in a fork child and returns its exit status.
fn in_child(body: impl FnOnce() -> i32) -> i32 {
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = body();
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status), "child status {status:#x}");
    libc::WEXITSTATUS(status)
}

fn blocked_overrun<A: Api>(shim: bool, sig: c_int) -> i32 {
    in_child(|| unsafe {
        CHILD_USE_SHIM.store(shim as usize, Ordering::SeqCst);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        install(sig, child_handler);
        let Ok(id) = create::<A>(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_SIGNAL, sig))) else {
            return 250;
        };
        CHILD_ID.store(id as usize, Ordering::SeqCst);
        if settime::<A>(id, 0, &its(ms(10), ms(10))).is_err() {
            return 251;
        }
        let nap = ts(0, 105_000_000);
        libc::nanosleep(&nap, std::ptr::null_mut());
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        let o = CHILD_OVERRUN.load(Ordering::SeqCst);
        A::delete(id);
        if o < 0 { 252 } else { o.min(200) as i32 }
    })
}

#[test]
fn timer_getoverrun__blocked_signal_counts_overruns_like_glibc() {
    let _g = serial();
    let sig = libc::SIGRTMIN() + 8;
    let g = blocked_overrun::<Glibc>(false, sig);
    let s = blocked_overrun::<Shim>(true, sig);
    eprintln!("overrun after 105 ms blocked at a 10 ms period: glibc {g}, shim {s}");
    assert!((5..=20).contains(&g), "glibc {g}");
    assert!((5..=20).contains(&s), "shim {s}");
    assert!((g - s).abs() <= 3, "glibc {g} shim {s}");
}

#[test]
fn timer__fork_child_has_no_timers_and_gets_its_own_thread() {
    let _g = serial();
    let sig = rt_signal(9);
    let id = create::<Shim>(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_SIGNAL, sig))).unwrap();
    settime::<Shim>(id, 0, &its(ts(30, 0), ms(0))).unwrap();
    let code = in_child(|| {
        if gettime::<Shim>(id).map(|_| ()) != Err(libc::EINVAL) {
            return 1;
        }
        COUNT[sig as usize].store(0, Ordering::SeqCst);
        let Ok(mine) = create::<Shim>(libc::CLOCK_MONOTONIC, Some(sev(libc::SIGEV_SIGNAL, sig)))
        else {
            return 2;
        };
        if settime::<Shim>(mine, 0, &its(ms(10), ms(0))).is_err() {
            return 3;
        }
        for _ in 0..1000 {
            if count(sig) == 1 {
                return 0;
            }
            let nap = ts(0, 1_000_000);
            unsafe { libc::nanosleep(&nap, std::ptr::null_mut()) };
        }
        4
    });
    assert_eq!(code, 0, "child failed at step {code}");
    // The parent's timer is untouched and no signal reached the parent.
    let cur = gettime::<Shim>(id).unwrap();
    assert!(cur.it_value.tv_sec >= 29, "{cur:?}");
    assert_eq!(count(sig), 0);
    assert_eq!(Shim::delete(id), 0);
}

// ---------------------------------------------------------------------------------------
// The wall clock stepped through the Clock seam.

#[derive(Debug, Default)]
struct FakeClock {
    step: AtomicI64,
}
impl Clock for FakeClock {
    fn now(&self, kind: ClockKind) -> i128 {
        let mono = SystemClock.now(ClockKind::Monotonic);
        match kind {
            ClockKind::Monotonic => mono,
            ClockKind::Realtime => {
                mono + 1_700_000_000 * 1_000_000_000 + i128::from(self.step.load(Ordering::SeqCst))
            }
            // TAI runs 37 s ahead of the wall clock.
            ClockKind::Tai => self.now(ClockKind::Realtime) + 37 * 1_000_000_000,
        }
    }
}

static FAKE_HITS: [AtomicI64; 4] = [const { AtomicI64::new(0) }; 4];
extern "C" fn fake_hit(v: sigval) {
    FAKE_HITS[v.sival_ptr as usize].store(now_ns(libc::CLOCK_MONOTONIC), Ordering::SeqCst);
}

fn notify(slot: usize) -> Notify {
    Notify::Thread {
        function: fake_hit,
        value: slot,
    }
}

fn hit_at(slot: usize) -> i64 {
    FAKE_HITS[slot].load(Ordering::SeqCst)
}

fn abs_its(at: i128) -> Its {
    its(
        ts((at / 1_000_000_000) as i64, (at % 1_000_000_000) as i64),
        ts(0, 0),
    )
}

#[test]
fn timer_settime__realtime_step_forward_fires_absolute_deadline_promptly() {
    let clock = Arc::new(FakeClock::default());
    let svc = TimerService::new(clock.clone(), timer::REALTIME_POLL);
    let id = svc.create(ClockKind::Realtime, notify(0)).unwrap();
    let hour = 3600 * 1_000_000_000i64;
    svc.settime(
        id,
        libc::TIMER_ABSTIME,
        &abs_its(clock.now(ClockKind::Realtime) + i128::from(hour)),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(120));
    assert_eq!(hit_at(0), 0, "fired before the step");
    let stepped = now_ns(libc::CLOCK_MONOTONIC);
    clock.step.store(hour, Ordering::SeqCst);
    let start = Instant::now();
    while hit_at(0) == 0 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let delay_ms = (hit_at(0) - stepped) / 1_000_000;
    eprintln!("fired {delay_ms} ms after the wall-clock step");
    assert!(
        hit_at(0) != 0 && delay_ms <= 2 * timer::REALTIME_POLL.as_millis() as i64 + 20,
        "{delay_ms} ms"
    );
    svc.delete(id).unwrap();
}

#[test]
fn timer_settime__realtime_step_back_delays_absolute_deadline() {
    let clock = Arc::new(FakeClock::default());
    let svc = TimerService::new(clock.clone(), timer::REALTIME_POLL);
    let id = svc.create(ClockKind::Realtime, notify(1)).unwrap();
    let hour = 3600 * 1_000_000_000i64;
    svc.settime(
        id,
        libc::TIMER_ABSTIME,
        &abs_its(clock.now(ClockKind::Realtime) + 60_000_000),
    )
    .unwrap();
    clock.step.store(-hour, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        hit_at(1),
        0,
        "fired although the wall clock went back an hour"
    );
    let left = svc.gettime(id).unwrap();
    assert!(left.it_value.tv_sec >= 3599, "{left:?}");
    clock.step.store(0, Ordering::SeqCst);
    let start = Instant::now();
    while hit_at(1) == 0 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        start.elapsed() < Duration::from_millis(200),
        "{:?}",
        start.elapsed()
    );
    svc.delete(id).unwrap();
}

#[test]
fn timer_settime__relative_realtime_ignores_step() {
    let clock = Arc::new(FakeClock::default());
    let svc = TimerService::new(clock.clone(), timer::REALTIME_POLL);
    let id = svc.create(ClockKind::Realtime, notify(2)).unwrap();
    let armed = now_ns(libc::CLOCK_MONOTONIC);
    svc.settime(id, 0, &its(ms(150), ms(0))).unwrap();
    clock.step.store(3600 * 1_000_000_000, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(hit_at(2), 0, "a relative timer followed the wall clock");
    let start = Instant::now();
    while hit_at(2) == 0 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let at = (hit_at(2) - armed) / 1_000_000;
    assert!((150..200).contains(&at), "fired at {at} ms");
    svc.delete(id).unwrap();
}

#[test]
fn timer_service__drop_stops_threads_and_ids_are_per_registry() {
    let clock = Arc::new(FakeClock::default());
    let svc = TimerService::new(clock, timer::REALTIME_POLL);
    let id = svc.create(ClockKind::Monotonic, notify(3)).unwrap();
    svc.settime(id, 0, &its(ts(10, 0), ms(0))).unwrap();
    let other = TimerService::new(Arc::new(SystemClock), timer::REALTIME_POLL);
    assert_eq!(
        other.gettime(id).map(|_| ()),
        Err(slurm_shim::errno::Errno(libc::EINVAL))
    );
    drop(svc);
    drop(other);
    assert_eq!(hit_at(3), 0);
}

static BUSY_STARTED: AtomicUsize = AtomicUsize::new(0);
static BUSY_FINISHED: AtomicUsize = AtomicUsize::new(0);
extern "C" fn busy(_: sigval) {
    BUSY_STARTED.store(1, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(60));
    BUSY_FINISHED.store(1, Ordering::SeqCst);
}

#[test]
fn timer_delete__waits_for_the_running_callback() {
    let svc = TimerService::new(Arc::new(SystemClock), timer::REALTIME_POLL);
    let id = svc
        .create(
            ClockKind::Monotonic,
            Notify::Thread {
                function: busy,
                value: 0,
            },
        )
        .unwrap();
    svc.settime(id, 0, &its(ms(5), ms(0))).unwrap();
    let start = Instant::now();
    while BUSY_STARTED.load(Ordering::SeqCst) == 0 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_micros(200));
    }
    assert_eq!(BUSY_STARTED.load(Ordering::SeqCst), 1);
    svc.delete(id).unwrap();
    assert_eq!(
        BUSY_FINISHED.load(Ordering::SeqCst),
        1,
        "delete returned while the callback ran"
    );
}

static SELF_DELETE: AtomicUsize = AtomicUsize::new(0);
static SELF_DELETE_RC: AtomicI64 = AtomicI64::new(-2);
extern "C" fn delete_self(_: sigval) {
    let rc = Shim::delete(SELF_DELETE.load(Ordering::SeqCst) as Id);
    SELF_DELETE_RC.store(i64::from(rc), Ordering::SeqCst);
}

#[test]
fn timer_delete__from_its_own_callback_does_not_deadlock() {
    let id = create::<Shim>(
        libc::CLOCK_MONOTONIC,
        Some(sev_thread(Some(delete_self), 0)),
    )
    .unwrap();
    SELF_DELETE.store(id as usize, Ordering::SeqCst);
    settime::<Shim>(id, 0, &its(ms(5), ms(5))).unwrap();
    let start = Instant::now();
    while SELF_DELETE_RC.load(Ordering::SeqCst) == -2 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_micros(200));
    }
    assert_eq!(SELF_DELETE_RC.load(Ordering::SeqCst), 0);
    assert_eq!(
        res(Shim::delete(id)),
        Err(libc::EINVAL),
        "already deleted by its callback"
    );
}
