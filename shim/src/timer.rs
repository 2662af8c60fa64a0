//! POSIX per-process timers: `timer_create`, `timer_settime`, `timer_gettime`,
//! `timer_getoverrun`, `timer_delete`, `struct itimerspec`, `timer_t`, `TIMER_ABSTIME`.
//!
//! # Linux behaviour emulated
//! (timer_create(2), timer_settime(2), timer_getoverrun(2), timer_delete(2); kernel
//! `kernel/time/posix-timers.c`, glibc `sysdeps/unix/sysv/linux/timer_*.c`.)
//!
//! * Clocks `CLOCK_REALTIME` and `CLOCK_MONOTONIC`, and on Linux `CLOCK_TAI` (what Slurm
//!   uses under `__linux__`, so in the darwin personality). Any other clock id gives `EINVAL`.
//! * `sigevent`: `NULL` means `SIGEV_SIGNAL` with `SIGALRM`; `SIGEV_SIGNAL` sends a
//!   process-directed signal; `SIGEV_THREAD` calls `sigev_notify_function(sigev_value)` on
//!   a thread; `SIGEV_NONE` delivers nothing (only `timer_gettime` observes the timer). An
//!   unknown `sigev_notify`, or a signal number outside `1..=max` for `SIGEV_SIGNAL`, gives
//!   `EINVAL`, as the kernel's `good_sigevent()`. As in glibc, `sigev_signo` is ignored for
//!   `SIGEV_THREAD`.
//! * `timer_settime`: a `NULL` new value, a negative `tv_sec` or a `tv_nsec` outside
//!   `0..1e9` (in the value or the interval) give `EINVAL`. Flags other than
//!   `TIMER_ABSTIME` are ignored, as by the kernel. A zero `it_value` disarms the timer
//!   (and clears its interval). An absolute deadline in the past expires at once (a
//!   periodic one then counts the intervals it missed as overruns). A relative
//!   `CLOCK_REALTIME` timer runs on the monotonic clock, so setting the wall clock does not
//!   move it; an absolute `CLOCK_REALTIME` deadline follows the wall clock, so a step
//!   forward past it fires it promptly (the kernel's `clock_was_set()`). The old setting is
//!   returned in `old_value` when it is not `NULL`.
//! * `timer_gettime`: the remaining time (relative) and the interval; `{0, 1}` for a timer
//!   that has expired but whose notification is not yet sent, zero for a disarmed one, and
//!   for a periodic `SIGEV_NONE` timer the time to its next period.
//! * `timer_getoverrun`: the expirations that happened between the queueing of the last
//!   delivered notification and its delivery, capped at `DELAYTIMER_MAX` (`INT_MAX`).
//! * An unknown or deleted timer id gives `EINVAL` (ids are opaque small integers, looked up
//!   in a registry with a generation number: never dereferenced).
//! * `timer_delete` of an armed timer: no notification is sent after it returns.
//! * Timers are not inherited by a `fork()` child.
//!
//! # macOS mechanism used
//! Darwin has no POSIX per-process timers. One service thread per process (started by the
//! first `timer_create` that needs it, all signals blocked) keeps every armed timer and
//! sleeps on a `std::sync::Condvar` until the earliest deadline, then sends
//! `kill(getpid(), signo)`. While an absolute `CLOCK_REALTIME` deadline is armed it never
//! sleeps longer than [`REALTIME_POLL`], so a step of the wall clock is noticed within that
//! time. The clocks are read through the [`Clock`] seam (`clock_gettime(2)`), which tests
//! replace to step a fake wall clock. `SIGEV_THREAD` callbacks run one at a time on a
//! second thread, the dispatcher (also started lazily, all signals blocked, Rust's default
//! stack size; `sigev_notify_attributes` is ignored). A timer whose callback is still
//! queued counts further expirations as overruns instead of queueing again, like a pending
//! signal on Linux. `timer_delete` called while the timer's callback runs waits for it to
//! return (unless called from that callback). The registry lock is held with all signals
//! blocked in the calling thread, so `timer_settime`/`timer_gettime`/`timer_getoverrun`
//! from a signal handler cannot deadlock against the interrupted thread. Fork safety: the
//! registry records the pid that created it; a child (another pid) transparently starts
//! with a fresh, empty registry and no threads (the parent's copy is abandoned).
//!
//! The same logic runs on Linux (where it is tested against glibc's timers); only the
//! constants and the `sigevent` layout differ.
//!
//! # Portability problems not fixed
//! * `SIGEV_SIGNAL` cannot carry `sigev_value`: `kill()` sends no `si_value` (Darwin has no
//!   `sigqueue()`), `si_code` is `SI_USER`, not `SI_TIMER`, and signals do not queue.
//! * Overrun counting for `SIGEV_SIGNAL` detects a still-undelivered signal with
//!   `sigpending(2)` from the service thread. On Linux that sees process-directed pending
//!   signals; on Darwin a process-directed signal that every thread blocks may be parked on
//!   another thread, in which case each expiration sends another (merged) signal and the
//!   overrun count stays 0.
//! * `SIGEV_THREAD_ID`, CPU-time clocks, `CLOCK_BOOTTIME` and the alarm
//!   clocks are not supported (`EINVAL`); `SIGEV_THREAD` with a `NULL` function gives
//!   `EINVAL` (glibc accepts it and crashes at expiry).
//! * `timer_create` with a `NULL` `timerid` gives `EFAULT` (glibc crashes).
//! * A signal already sent when `timer_settime` or `timer_delete` runs is not retracted.
//! * Timing: deadlines are met within the service thread's wake-up latency (tens of
//!   microseconds on an idle machine), not by a kernel hrtimer.
#![allow(clippy::missing_safety_doc)]

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use libc::{c_int, c_void, clockid_t, sigevent, sigval, timespec};

use crate::consts::flags::TIMER_ABSTIME;
use crate::errno::{self, Errno};

/// `timer_t`: an opaque handle (a small integer cast to a pointer, never dereferenced).
pub type slurm_shim_timer_t = *mut c_void;

/// `struct itimerspec`, with the layout of Linux's.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct slurm_shim_itimerspec {
    /// Period of a periodic timer; zero for a one-shot timer.
    pub it_interval: timespec,
    /// Time to the next expiration (relative, or absolute with `TIMER_ABSTIME`).
    pub it_value: timespec,
}

impl slurm_shim_itimerspec {
    /// A zero (disarmed) setting.
    pub const ZERO: slurm_shim_itimerspec = slurm_shim_itimerspec {
        it_interval: ts(0, 0),
        it_value: ts(0, 0),
    };
}

/// `DELAYTIMER_MAX` as on Linux: the cap of an overrun count.
pub const DELAYTIMER_MAX: c_int = c_int::MAX;

/// Longest sleep of the service thread while an absolute `CLOCK_REALTIME` deadline is armed:
/// the bound on how late such a timer fires after the wall clock is stepped past it.
pub const REALTIME_POLL: Duration = Duration::from_millis(50);

/// Most timers alive at once per process (beyond: `EAGAIN`, as Linux's `RLIMIT_SIGPENDING`).
pub const MAX_TIMERS: usize = (1 << INDEX_BITS) - 2;

const NSEC: i128 = 1_000_000_000;
const INDEX_BITS: u32 = 20;
const INDEX_MASK: usize = (1 << INDEX_BITS) - 1;
const GEN_MAX: u32 = (1 << (31 - INDEX_BITS)) - 1;

const fn ts(sec: libc::time_t, nsec: libc::c_long) -> timespec {
    timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}

// ---------------------------------------------------------------------------------------
// Seams: clocks and the OS mechanisms.

/// The two clocks a timer can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockKind {
    /// `CLOCK_REALTIME`, the wall clock (can be stepped).
    Realtime,
    /// `CLOCK_MONOTONIC`.
    Monotonic,
    /// `CLOCK_TAI` (Linux only): the wall clock plus the kernel's TAI offset. Slurm picks it
    /// under `__linux__` (`TIMESPEC_CLOCK_TYPE`), which the darwin personality keeps
    /// defined; on macOS Slurm uses `CLOCK_REALTIME`. An absolute TAI deadline is converted
    /// to the wall clock when armed (the offset changes only at a leap second), and then
    /// behaves exactly as a `CLOCK_REALTIME` one.
    Tai,
}

impl ClockKind {
    /// The clock a C `clockid_t` names, or `EINVAL`.
    pub fn from_clockid(clockid: clockid_t) -> Result<ClockKind, Errno> {
        if clockid == libc::CLOCK_REALTIME {
            Ok(ClockKind::Realtime)
        } else if clockid == libc::CLOCK_MONOTONIC {
            Ok(ClockKind::Monotonic)
        } else if cfg!(target_os = "linux") && clockid == CLOCK_TAI {
            Ok(ClockKind::Tai)
        } else {
            Err(Errno(libc::EINVAL))
        }
    }
}

/// Linux's `CLOCK_TAI` (11); never matched on macOS, where it is not a clock.
const CLOCK_TAI: clockid_t = 11;

/// The seam through which timers read the time, in nanoseconds since each clock's epoch.
/// [`SystemClock`] reads the OS; tests supply a clock whose wall time they can step.
pub trait Clock: Send + Sync + 'static {
    /// The current time of `kind`, in nanoseconds.
    fn now(&self, kind: ClockKind) -> i128;
}

/// The OS clocks (`clock_gettime(2)`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self, kind: ClockKind) -> i128 {
        let id = match kind {
            ClockKind::Realtime => libc::CLOCK_REALTIME,
            ClockKind::Monotonic => libc::CLOCK_MONOTONIC,
            ClockKind::Tai if cfg!(target_os = "linux") => CLOCK_TAI,
            ClockKind::Tai => libc::CLOCK_REALTIME,
        };
        let mut t = ts(0, 0);
        // SAFETY: `t` is a valid, writable timespec; both clock ids exist on Linux and macOS.
        let rc = unsafe { libc::clock_gettime(id, &mut t) };
        if rc != 0 {
            return 0;
        }
        ts_to_ns(&t)
    }
}

/// The lowest-level OS mechanisms: the only part that differs between Linux and macOS.
mod os {
    use libc::{c_int, c_void, pid_t, sigset_t, sigval};

    /// Highest valid signal number for `SIGEV_SIGNAL` (the kernel checks `SIGRTMAX`, 64).
    #[cfg(target_os = "linux")]
    pub const MAX_SIGNAL: c_int = 64;
    /// Highest valid signal number (Darwin's `NSIG` is 32).
    #[cfg(target_vendor = "apple")]
    pub const MAX_SIGNAL: c_int = 31;

    /// glibc's `struct sigevent` up to the `_sigev_thread` member of its union.
    #[cfg(target_os = "linux")]
    #[repr(C)]
    pub struct RawSigevent {
        pub value: sigval,
        pub signo: c_int,
        pub notify: c_int,
        pub function: *mut c_void,
        pub attributes: *mut c_void,
    }

    /// Darwin's `struct sigevent` (sys/signal.h).
    #[cfg(target_vendor = "apple")]
    #[repr(C)]
    pub struct RawSigevent {
        pub notify: c_int,
        pub signo: c_int,
        pub value: sigval,
        pub function: *mut c_void,
        pub attributes: *mut c_void,
    }

    const _: () = assert!(size_of::<RawSigevent>() <= size_of::<libc::sigevent>());

    /// Sends `signo` to the whole process `pid`.
    pub fn send_signal(pid: pid_t, signo: c_int) {
        // SAFETY: kill has no memory-safety preconditions.
        let _ = unsafe { libc::kill(pid, signo) };
    }

    /// Whether `signo` is pending for the process (or the calling thread).
    pub fn signal_pending(signo: c_int) -> bool {
        let mut set = empty_set();
        // SAFETY: `set` is a valid, writable sigset_t.
        if unsafe { libc::sigpending(&mut set) } != 0 {
            return false;
        }
        // SAFETY: `set` was initialised by sigpending.
        unsafe { libc::sigismember(&set, signo) == 1 }
    }

    fn empty_set() -> sigset_t {
        // SAFETY: sigset_t is plain data; all-zero is a valid (empty) value, and
        // sigemptyset then initialises it the portable way.
        let mut set: sigset_t = unsafe { core::mem::zeroed() };
        // SAFETY: `set` is a valid, writable sigset_t.
        unsafe { libc::sigemptyset(&mut set) };
        set
    }

    /// Blocks every signal in the calling thread until dropped (then restores the mask).
    pub struct SignalsBlocked {
        old: sigset_t,
    }

    impl SignalsBlocked {
        pub fn new() -> SignalsBlocked {
            let mut all = empty_set();
            let mut old = empty_set();
            // SAFETY: both sets are valid; sigfillset/pthread_sigmask only write them.
            unsafe {
                libc::sigfillset(&mut all);
                libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
            }
            SignalsBlocked { old }
        }
    }

    impl Drop for SignalsBlocked {
        fn drop(&mut self) {
            // SAFETY: `self.old` is the mask saved by `new`.
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, core::ptr::null_mut()) };
        }
    }
}

// ---------------------------------------------------------------------------------------
// Time arithmetic.

fn ts_to_ns(t: &timespec) -> i128 {
    i128::from(t.tv_sec) * NSEC + i128::from(t.tv_nsec)
}

fn ns_to_ts(ns: i128) -> timespec {
    let ns = ns.max(0);
    let sec = ns / NSEC;
    let sec = libc::time_t::try_from(sec).unwrap_or(libc::time_t::MAX);
    // `ns % NSEC` is in 0..1e9, which fits every c_long.
    let nsec = libc::c_long::try_from(ns % NSEC).unwrap_or(0);
    ts(sec, nsec)
}

/// Linux's `timespec64_valid()`: `tv_sec >= 0` and `0 <= tv_nsec < 1e9`.
fn ts_valid(t: &timespec) -> bool {
    t.tv_sec >= 0 && t.tv_nsec >= 0 && i128::from(t.tv_nsec) < NSEC
}

fn ns_to_duration(ns: i128) -> Duration {
    Duration::from_nanos(u64::try_from(ns.max(0)).unwrap_or(u64::MAX))
}

fn clamp_overrun(n: u64) -> c_int {
    // DELAYTIMER_MAX is INT_MAX: every value that does not fit is capped to it.
    c_int::try_from(n).unwrap_or(DELAYTIMER_MAX)
}

// ---------------------------------------------------------------------------------------
// The registry.

/// A `SIGEV_THREAD` notify function.
pub type NotifyFunction = unsafe extern "C" fn(sigval);

/// How a timer notifies its expirations (a parsed `struct sigevent`).
#[derive(Clone, Copy, Debug)]
pub enum Notify {
    /// `SIGEV_NONE`.
    None,
    /// `SIGEV_SIGNAL`: `kill(getpid(), signo)`.
    Signal {
        /// The signal number.
        signo: c_int,
    },
    /// `SIGEV_THREAD`: `function(value)` on the dispatcher thread.
    Thread {
        /// `sigev_notify_function`.
        function: NotifyFunction,
        /// `sigev_value.sival_ptr` (or `sival_int`), as pointer bits.
        value: usize,
    },
}

impl Notify {
    /// Parses a C `struct sigevent`, checking it as Linux does (`EINVAL` when invalid).
    ///
    /// # Safety
    /// `sevp` must be `NULL` or point to a readable `struct sigevent`.
    pub unsafe fn from_sigevent(sevp: *const sigevent) -> Result<Notify, Errno> {
        if sevp.is_null() {
            return Ok(Notify::Signal {
                signo: libc::SIGALRM,
            });
        }
        // SAFETY: the caller guarantees a readable sigevent; RawSigevent is a prefix of it.
        let raw = unsafe { &*sevp.cast::<os::RawSigevent>() };
        let signal_ok = raw.signo > 0 && raw.signo <= os::MAX_SIGNAL;
        match raw.notify {
            libc::SIGEV_NONE => Ok(Notify::None),
            libc::SIGEV_SIGNAL if signal_ok => Ok(Notify::Signal { signo: raw.signo }),
            libc::SIGEV_THREAD if !raw.function.is_null() => {
                // SAFETY: a non-null `sigev_notify_function` is, by the sigevent(7)
                // contract, a `void (*)(union sigval)`, ABI-identical to NotifyFunction.
                let function: NotifyFunction = unsafe { core::mem::transmute(raw.function) };
                Ok(Notify::Thread {
                    function,
                    value: raw.value.sival_ptr as usize,
                })
            }
            _ => Err(Errno(libc::EINVAL)),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Arm {
    /// The clock the deadline is measured on.
    base: ClockKind,
    /// Next expiration, nanoseconds on `base`.
    deadline: i128,
    /// Period in nanoseconds; 0 for a one-shot timer.
    interval: i128,
}

#[derive(Debug)]
struct Timer {
    clock: ClockKind,
    notify: Notify,
    arm: Option<Arm>,
    /// Bumped by every `settime`: a queued callback of an older arming is dropped.
    arm_seq: u64,
    /// A notification was sent (signal) or queued (thread) and its delivery is not yet
    /// accounted for.
    outstanding: bool,
    /// Overruns accumulated for the outstanding notification.
    overrun_acc: u64,
    /// What `timer_getoverrun` reports.
    overrun_last: c_int,
}

#[derive(Debug)]
struct Slot {
    generation: u32,
    timer: Option<Timer>,
}

#[derive(Debug)]
struct Job {
    index: usize,
    generation: u32,
    arm_seq: u64,
    function: NotifyFunction,
    value: usize,
}

#[derive(Debug, Default)]
struct State {
    slots: Vec<Slot>,
    free: Vec<usize>,
    live: usize,
    service: Option<JoinHandle<()>>,
    dispatcher: Option<JoinHandle<()>>,
    queue: VecDeque<Job>,
    /// The timer whose callback the dispatcher is running.
    running: Option<(usize, u32)>,
    shutdown: bool,
}

fn encode(index: usize, generation: u32) -> usize {
    ((generation as usize) << INDEX_BITS) | (index + 1)
}

fn decode(id: usize) -> Option<(usize, u32)> {
    if id > c_int::MAX as usize || id & INDEX_MASK == 0 {
        return None;
    }
    Some(((id & INDEX_MASK) - 1, u32::try_from(id >> INDEX_BITS).ok()?))
}

impl State {
    fn timer(&self, id: usize) -> Result<&Timer, Errno> {
        let (index, generation) = decode(id).ok_or(Errno(libc::EINVAL))?;
        match self.slots.get(index) {
            Some(Slot {
                generation: g,
                timer: Some(t),
            }) if *g == generation => Ok(t),
            _ => Err(Errno(libc::EINVAL)),
        }
    }

    fn timer_mut(&mut self, id: usize) -> Result<&mut Timer, Errno> {
        let (index, generation) = decode(id).ok_or(Errno(libc::EINVAL))?;
        match self.slots.get_mut(index) {
            Some(Slot {
                generation: g,
                timer: Some(t),
            }) if *g == generation => Ok(t),
            _ => Err(Errno(libc::EINVAL)),
        }
    }
}

thread_local! {
    /// On a dispatcher thread: the address of the registry it serves.
    static DISPATCHER_OF: Cell<usize> = const { Cell::new(0) };
}

/// One registry of timers with its service and dispatcher threads.
struct Shared {
    pid: libc::pid_t,
    clock: Arc<dyn Clock>,
    realtime_poll: Duration,
    state: Mutex<State>,
    /// Wakes the service thread (a timer was armed or the registry shuts down).
    service_cv: Condvar,
    /// Wakes the dispatcher (a callback was queued).
    dispatch_cv: Condvar,
    /// Signalled when the dispatcher finishes a callback.
    done_cv: Condvar,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn new(clock: Arc<dyn Clock>, realtime_poll: Duration) -> Shared {
        Shared {
            // SAFETY: getpid has no preconditions.
            pid: unsafe { libc::getpid() },
            clock,
            realtime_poll,
            state: Mutex::new(State::default()),
            service_cv: Condvar::new(),
            dispatch_cv: Condvar::new(),
            done_cv: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the threads `notify` needs. The caller holds the lock with all signals
    /// blocked, so the new threads are born with every signal blocked.
    fn ensure_threads(self: &Arc<Self>, st: &mut State, notify: Notify) -> Result<(), Errno> {
        if matches!(notify, Notify::None) {
            return Ok(());
        }
        if st.service.is_none() {
            let me = Arc::clone(self);
            let handle = std::thread::Builder::new()
                .name("slurm-shim-timer".into())
                .stack_size(256 * 1024)
                .spawn(move || me.service_loop())
                .map_err(|_| Errno(libc::EAGAIN))?;
            st.service = Some(handle);
        }
        if matches!(notify, Notify::Thread { .. }) && st.dispatcher.is_none() {
            let me = Arc::clone(self);
            let handle = std::thread::Builder::new()
                .name("slurm-shim-timer-cb".into())
                .spawn(move || me.dispatch_loop())
                .map_err(|_| Errno(libc::EAGAIN))?;
            st.dispatcher = Some(handle);
        }
        Ok(())
    }

    fn create(self: &Arc<Self>, clock: ClockKind, notify: Notify) -> Result<usize, Errno> {
        let _blocked = os::SignalsBlocked::new();
        let mut st = self.lock();
        if st.live >= MAX_TIMERS {
            return Err(Errno(libc::EAGAIN));
        }
        self.ensure_threads(&mut st, notify)?;
        let timer = Timer {
            clock,
            notify,
            arm: None,
            arm_seq: 0,
            outstanding: false,
            overrun_acc: 0,
            overrun_last: 0,
        };
        let index = match st.free.pop() {
            Some(i) => i,
            None => {
                st.slots.push(Slot {
                    generation: 1,
                    timer: None,
                });
                st.slots.len() - 1
            }
        };
        let slot = st.slots.get_mut(index).ok_or(Errno(libc::EAGAIN))?;
        slot.timer = Some(timer);
        let id = encode(index, slot.generation);
        st.live += 1;
        Ok(id)
    }

    fn remaining(&self, t: &Timer) -> slurm_shim_itimerspec {
        let Some(arm) = t.arm else {
            return slurm_shim_itimerspec::ZERO;
        };
        let now = self.clock.now(arm.base);
        let mut left = arm.deadline - now;
        if left <= 0 {
            left = match (t.notify, arm.interval) {
                // SIGEV_NONE one-shot: expired, hence disarmed.
                (Notify::None, 0) => return slurm_shim_itimerspec::ZERO,
                // SIGEV_NONE periodic: time to the next period.
                (Notify::None, iv) => iv - (now - arm.deadline) % iv,
                // Expired, notification about to be sent (Linux reports 1 ns).
                _ => 1,
            };
        }
        slurm_shim_itimerspec {
            it_interval: ns_to_ts(arm.interval),
            it_value: ns_to_ts(left),
        }
    }

    fn settime(
        &self,
        id: usize,
        flags: c_int,
        new: &slurm_shim_itimerspec,
    ) -> Result<slurm_shim_itimerspec, Errno> {
        if !ts_valid(&new.it_interval) || !ts_valid(&new.it_value) {
            return Err(Errno(libc::EINVAL));
        }
        let _blocked = os::SignalsBlocked::new();
        let mut st = self.lock();
        let clock = Arc::clone(&self.clock);
        let old = self.remaining(st.timer(id)?);
        let t = st.timer_mut(id)?;
        let value = ts_to_ns(&new.it_value);
        t.arm = if value == 0 {
            None
        } else if flags & TIMER_ABSTIME != 0 && t.clock == ClockKind::Tai {
            let offset = clock.now(ClockKind::Tai) - clock.now(ClockKind::Realtime);
            Some(Arm {
                base: ClockKind::Realtime,
                deadline: value - offset,
                interval: ts_to_ns(&new.it_interval),
            })
        } else if flags & TIMER_ABSTIME != 0 {
            Some(Arm {
                base: t.clock,
                deadline: value,
                interval: ts_to_ns(&new.it_interval),
            })
        } else {
            // A relative timer runs on the monotonic clock, whatever its clock (Linux
            // hrtimer_init() does the same for CLOCK_REALTIME).
            let base = ClockKind::Monotonic;
            Some(Arm {
                base,
                deadline: clock.now(base) + value,
                interval: ts_to_ns(&new.it_interval),
            })
        };
        t.arm_seq = t.arm_seq.wrapping_add(1);
        t.outstanding = false;
        t.overrun_acc = 0;
        t.overrun_last = 0;
        let wake = t.arm.is_some() && !matches!(t.notify, Notify::None);
        drop(st);
        if wake {
            self.service_cv.notify_one();
        }
        Ok(old)
    }

    fn gettime(&self, id: usize) -> Result<slurm_shim_itimerspec, Errno> {
        let _blocked = os::SignalsBlocked::new();
        let st = self.lock();
        Ok(self.remaining(st.timer(id)?))
    }

    fn getoverrun(&self, id: usize) -> Result<c_int, Errno> {
        let _blocked = os::SignalsBlocked::new();
        let mut st = self.lock();
        let t = st.timer_mut(id)?;
        if let Notify::Signal { signo } = t.notify {
            if t.outstanding && !os::signal_pending(signo) {
                // The signal has been delivered (or consumed): its overruns are final.
                t.overrun_last = clamp_overrun(t.overrun_acc);
                t.overrun_acc = 0;
                t.outstanding = false;
            }
        }
        Ok(t.overrun_last)
    }

    fn delete(&self, id: usize) -> Result<(), Errno> {
        let _blocked = os::SignalsBlocked::new();
        let mut st = self.lock();
        st.timer(id)?;
        let (index, generation) = decode(id).ok_or(Errno(libc::EINVAL))?;
        let slot = st.slots.get_mut(index).ok_or(Errno(libc::EINVAL))?;
        slot.timer = None;
        slot.generation = if slot.generation >= GEN_MAX {
            1
        } else {
            slot.generation + 1
        };
        st.free.push(index);
        st.live = st.live.saturating_sub(1);
        // Queued callbacks of this timer are dropped by the dispatcher (generation check);
        // a running one is waited for, unless we are that callback.
        let me = self as *const Shared as usize;
        if DISPATCHER_OF.with(Cell::get) != me {
            while st.running == Some((index, generation)) && !st.shutdown {
                st = self
                    .done_cv
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
        Ok(())
    }

    /// Handles `count` expirations of the timer at `index` (the service thread holds the
    /// lock).
    fn expire(&self, st: &mut State, index: usize, count: u64) {
        let Some(Slot {
            generation,
            timer: Some(t),
        }) = st.slots.get_mut(index)
        else {
            return;
        };
        let generation = *generation;
        match t.notify {
            Notify::None => {}
            Notify::Signal { signo } => {
                if t.outstanding && os::signal_pending(signo) {
                    // Still pending: Linux counts an overrun instead of queueing again.
                    t.overrun_acc = t.overrun_acc.saturating_add(count);
                } else {
                    if t.outstanding {
                        t.overrun_last = clamp_overrun(t.overrun_acc);
                    }
                    t.overrun_acc = count - 1;
                    t.outstanding = true;
                    os::send_signal(self.pid, signo);
                }
            }
            Notify::Thread { function, value } => {
                if t.outstanding {
                    t.overrun_acc = t.overrun_acc.saturating_add(count);
                } else {
                    t.overrun_acc = count - 1;
                    t.outstanding = true;
                    let arm_seq = t.arm_seq;
                    st.queue.push_back(Job {
                        index,
                        generation,
                        arm_seq,
                        function,
                        value,
                    });
                    self.dispatch_cv.notify_one();
                }
            }
        }
    }

    /// Fires every due timer; returns how long to sleep (None: until woken).
    fn run_due(&self, st: &mut State) -> Option<Duration> {
        let now_m = self.clock.now(ClockKind::Monotonic);
        let now_r = self.clock.now(ClockKind::Realtime);
        let mut next: Option<i128> = None;
        let mut realtime_armed = false;
        for index in 0..st.slots.len() {
            let Some(Slot { timer: Some(t), .. }) = st.slots.get_mut(index) else {
                continue;
            };
            if matches!(t.notify, Notify::None) {
                continue;
            }
            let Some(mut arm) = t.arm else { continue };
            let now = match arm.base {
                ClockKind::Monotonic => now_m,
                // Armed TAI deadlines are stored on the wall clock (see `settime`).
                ClockKind::Realtime | ClockKind::Tai => now_r,
            };
            if arm.deadline <= now {
                let count = if arm.interval > 0 {
                    let missed = (now - arm.deadline) / arm.interval;
                    arm.deadline += (missed + 1) * arm.interval;
                    t.arm = Some(arm);
                    u64::try_from(missed + 1).unwrap_or(u64::MAX)
                } else {
                    t.arm = None;
                    1
                };
                self.expire(st, index, count);
                if arm.interval == 0 {
                    continue;
                }
            }
            let left = arm.deadline - now;
            next = Some(next.map_or(left, |n| n.min(left)));
            realtime_armed |= arm.base == ClockKind::Realtime;
        }
        let wait = next.map(ns_to_duration);
        if realtime_armed {
            Some(wait.map_or(self.realtime_poll, |w| w.min(self.realtime_poll)))
        } else {
            wait
        }
    }

    fn service_loop(self: Arc<Self>) {
        let mut st = self.lock();
        while !st.shutdown {
            st = match self.run_due(&mut st) {
                None => self
                    .service_cv
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(wait) => {
                    let r = self.service_cv.wait_timeout(st, wait);
                    r.unwrap_or_else(PoisonError::into_inner).0
                }
            };
        }
    }

    fn dispatch_loop(self: Arc<Self>) {
        DISPATCHER_OF.with(|d| d.set(Arc::as_ptr(&self) as usize));
        let mut st = self.lock();
        while !st.shutdown {
            let Some(job) = st.queue.pop_front() else {
                st = self
                    .dispatch_cv
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            let Some(Slot {
                generation,
                timer: Some(t),
            }) = st.slots.get_mut(job.index)
            else {
                continue;
            };
            if *generation != job.generation || t.arm_seq != job.arm_seq || !t.outstanding {
                continue;
            }
            t.overrun_last = clamp_overrun(t.overrun_acc);
            t.overrun_acc = 0;
            t.outstanding = false;
            st.running = Some((job.index, job.generation));
            drop(st);
            let value = sigval {
                sival_ptr: job.value as *mut c_void,
            };
            // SAFETY: `function` came from a valid sigevent (see Notify::from_sigevent).
            unsafe { (job.function)(value) };
            st = self.lock();
            st.running = None;
            self.done_cv.notify_all();
        }
    }

    fn shutdown(&self) {
        let (service, dispatcher) = {
            let _blocked = os::SignalsBlocked::new();
            let mut st = self.lock();
            st.shutdown = true;
            (st.service.take(), st.dispatcher.take())
        };
        self.service_cv.notify_all();
        self.dispatch_cv.notify_all();
        self.done_cv.notify_all();
        for h in [service, dispatcher].into_iter().flatten() {
            let _ = h.join();
        }
    }
}

// ---------------------------------------------------------------------------------------
// The process-wide registry, and a private one for tests.

static GLOBAL: AtomicPtr<Shared> = AtomicPtr::new(core::ptr::null_mut());

/// The process's registry: created on first use, and afresh in a `fork()` child.
fn global() -> Arc<Shared> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    loop {
        let current = GLOBAL.load(Ordering::Acquire);
        if !current.is_null() {
            // SAFETY: GLOBAL only ever holds pointers from Arc::into_raw whose count is
            // never released (the registry lives as long as the process).
            let shared = unsafe { &*current };
            if shared.pid == pid {
                // SAFETY: as above; this clones the leaked Arc.
                unsafe { Arc::increment_strong_count(current) };
                // SAFETY: the strong count was just incremented for this Arc.
                return unsafe { Arc::from_raw(current) };
            }
        }
        let fresh = Arc::new(Shared::new(Arc::new(SystemClock), REALTIME_POLL));
        let raw = Arc::into_raw(Arc::clone(&fresh)).cast_mut();
        match GLOBAL.compare_exchange(current, raw, Ordering::AcqRel, Ordering::Acquire) {
            // The parent's registry (if any) is abandoned: its threads do not exist here.
            Ok(_) => return fresh,
            Err(_) => {
                // SAFETY: `raw` came from Arc::into_raw above and was not published.
                drop(unsafe { Arc::from_raw(raw) });
            }
        }
    }
}

/// A registry of timers with its own threads and clock: the safe core of the exported
/// functions, usable directly (tests give it a fake [`Clock`]). The exported functions use
/// one process-wide instance on [`SystemClock`]. Dropping it stops its threads.
#[derive(Debug)]
pub struct TimerService {
    shared: Arc<Shared>,
}

impl TimerService {
    /// A registry reading `clock`, polling at most every `realtime_poll` while an absolute
    /// `CLOCK_REALTIME` deadline is armed.
    pub fn new(clock: Arc<dyn Clock>, realtime_poll: Duration) -> TimerService {
        TimerService {
            shared: Arc::new(Shared::new(clock, realtime_poll)),
        }
    }

    /// `timer_create`: a new disarmed timer on `clock`; returns its id.
    pub fn create(&self, clock: ClockKind, notify: Notify) -> Result<usize, Errno> {
        self.shared.create(clock, notify)
    }

    /// `timer_settime`: returns the old setting.
    pub fn settime(
        &self,
        id: usize,
        flags: c_int,
        new: &slurm_shim_itimerspec,
    ) -> Result<slurm_shim_itimerspec, Errno> {
        self.shared.settime(id, flags, new)
    }

    /// `timer_gettime`.
    pub fn gettime(&self, id: usize) -> Result<slurm_shim_itimerspec, Errno> {
        self.shared.gettime(id)
    }

    /// `timer_getoverrun`.
    pub fn getoverrun(&self, id: usize) -> Result<c_int, Errno> {
        self.shared.getoverrun(id)
    }

    /// `timer_delete`.
    pub fn delete(&self, id: usize) -> Result<(), Errno> {
        self.shared.delete(id)
    }
}

impl Drop for TimerService {
    fn drop(&mut self) {
        self.shared.shutdown();
    }
}

// The C ABI: timer/abi.rs.
mod abi;
pub use abi::*;
