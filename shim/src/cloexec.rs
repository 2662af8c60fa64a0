//! Fork-safe close-on-exec emulation: the lock that serialises descriptor creation against
//! `fork()`, and the `fcntl` helpers every descriptor family of the shim shares.
//!
//! # Linux behaviour emulated
//! `pipe2(O_CLOEXEC)`, `socket(SOCK_CLOEXEC)`, `accept4(SOCK_CLOEXEC)` and
//! `eventfd(EFD_CLOEXEC)` create the descriptor with `FD_CLOEXEC` already set, atomically:
//! no child that another thread forks and execs can ever inherit it (open(2) `O_CLOEXEC`,
//! pipe(2), socket(2), accept(2), eventfd(2)).
//!
//! # macOS mechanism used
//! macOS has `O_CLOEXEC` for `open()` only; the shim creates the descriptor and then calls
//! `fcntl(F_SETFD, FD_CLOEXEC)`. To close the window between the two calls, creation plus
//! `fcntl` run under the shared side of a process-wide reader/writer lock
//! ([`with_fork_lock`]), and a `pthread_atfork(3)` *prepare* handler takes the exclusive
//! side, so `fork()` waits until every in-flight creation has set its flag, and no creation
//! starts until the fork is done (*parent* handler releases; *child* handler resets the lock,
//! the child having only the forking thread). Creations that did not ask for close-on-exec
//! do not take the lock.
//!
//! The lock is a small atomic word rather than a `pthread_rwlock_t` for two reasons:
//! glibc's default rwlock prefers readers, so a stream of creators in several threads can
//! starve `fork()`; and a write-locked `pthread_rwlock_t` has an owner, which a child process
//! may not be able to unlock (its thread id changed). The atomic lock prefers waiting
//! writers and has no owner. Waiters spin briefly, then yield, then sleep for short periods:
//! both sides hold it for a few system calls or for one `fork()`.
//!
//! # Portability problems not fixed
//! * `vfork()` and `posix_spawn()` do not run `pthread_atfork` handlers, so a child created
//!   with them can still inherit a descriptor in the window (macOS callers can pass
//!   `POSIX_SPAWN_CLOEXEC_DEFAULT`). Slurm forks with `fork()`.
//! * A descriptor created by a signal handler that interrupted `fork()`'s prepare handler in
//!   the same thread would wait for ever; Slurm creates no descriptors in signal handlers.
//! * If `pthread_atfork()` itself fails (ENOMEM at first use), creation still works but is
//!   not serialised against `fork()`.
//! * Only the shim's own creators are serialised: a descriptor made by a plain `open()` +
//!   `fcntl()` elsewhere is as racy as it is without the shim.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use libc::c_int;

use crate::errno::Errno;

/// Bits 0..32 count the readers (creators) holding the lock.
const READER_MASK: u64 = 0xffff_ffff;
/// Bit 32: a `fork()` holds the lock exclusively.
const WRITER: u64 = 1 << 32;
/// Bits 33..: the number of forks waiting for the exclusive side.
const WAITING_WRITER: u64 = 1 << 33;

static STATE: AtomicU64 = AtomicU64::new(0);
static REGISTER: Once = Once::new();

/// Waits a little longer each round: spin, then yield, then sleep 20 µs.
fn backoff(round: &mut u32) {
    if *round < 64 {
        std::hint::spin_loop();
    } else if *round < 128 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(20));
    }
    *round = round.saturating_add(1);
}

fn read_lock() {
    let mut round = 0;
    loop {
        let s = STATE.load(Ordering::Relaxed);
        // A fork holding or waiting for the lock goes first (writer preference).
        if s & !READER_MASK == 0
            && s & READER_MASK != READER_MASK
            && STATE
                .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return;
        }
        backoff(&mut round);
    }
}

fn read_unlock() {
    STATE.fetch_sub(1, Ordering::Release);
}

extern "C" fn prepare() {
    STATE.fetch_add(WAITING_WRITER, Ordering::Relaxed);
    let mut round = 0;
    loop {
        let s = STATE.load(Ordering::Relaxed);
        if s & (READER_MASK | WRITER) == 0
            && STATE
                .compare_exchange_weak(
                    s,
                    s - WAITING_WRITER + WRITER,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            return;
        }
        backoff(&mut round);
    }
}

extern "C" fn parent() {
    STATE.fetch_sub(WRITER, Ordering::Release);
}

extern "C" fn child() {
    // The child has one thread: nobody else holds or waits for the lock there.
    STATE.store(0, Ordering::Release);
}

fn register_atfork() {
    REGISTER.call_once(|| {
        // SAFETY: the three handlers are plain functions with no preconditions; they only
        // touch the static atomic word.
        let _ = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    });
}

struct ReadGuard;

impl Drop for ReadGuard {
    fn drop(&mut self) {
        read_unlock();
    }
}

/// Runs `f` while holding the descriptor-creation (shared) side of the fork lock: no
/// `fork()` can happen in the process while `f` runs. `f` must not block for long nor fork.
pub fn with_fork_lock<T>(f: impl FnOnce() -> T) -> T {
    register_atfork();
    read_lock();
    let _guard = ReadGuard;
    f()
}

/// Runs `f` under [`with_fork_lock`] when `cloexec` is set, directly otherwise.
pub fn creating<T>(cloexec: bool, f: impl FnOnce() -> T) -> T {
    if cloexec { with_fork_lock(f) } else { f() }
}

/// Sets `FD_CLOEXEC` on a descriptor the caller has just created (its descriptor flags are
/// known to be empty, so no `F_GETFD` is needed).
pub fn set_cloexec(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    // SAFETY: F_SETFD takes an int argument and touches no memory.
    Errno::result(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) }).map(drop)
}

/// Sets the file status flags of a freshly created descriptor to exactly `O_NONBLOCK` or to
/// nothing, as Linux gives a new descriptor (this also drops what BSD `accept()` inherits
/// from the listener: `O_NONBLOCK`, `O_ASYNC`). Access-mode bits are ignored by `F_SETFL`.
pub fn set_fresh_status_flags(fd: BorrowedFd<'_>, nonblock: bool) -> Result<(), Errno> {
    let flags: c_int = if nonblock { libc::O_NONBLOCK } else { 0 };
    // SAFETY: F_SETFL takes an int argument and touches no memory.
    Errno::result(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags) }).map(drop)
}

/// Applies what the caller asked for to a descriptor it has just created: `FD_CLOEXEC`
/// (call this inside [`creating`]) and `O_NONBLOCK`.
pub fn apply(fd: BorrowedFd<'_>, cloexec: bool, nonblock: bool) -> Result<(), Errno> {
    if cloexec {
        set_cloexec(fd)?;
    }
    if nonblock {
        set_fresh_status_flags(fd, true)?;
    }
    Ok(())
}

/// Whether `fd`'s open file description has `O_NONBLOCK` (`EBADF` for a bad descriptor).
pub fn is_nonblocking(fd: c_int) -> Result<bool, Errno> {
    // SAFETY: F_GETFL takes no argument and touches no memory.
    let fl = Errno::result(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    Ok(fl & libc::O_NONBLOCK != 0)
}

/// `poll()`s one descriptor for `POLLIN` for up to `timeout_ms` (-1: no limit); `Ok(true)`
/// when any event (readable, error, hang-up, invalid) is reported. `EINTR` is returned.
pub fn wait_readable(fd: c_int, timeout_ms: c_int) -> Result<bool, Errno> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `p` is one valid, writable pollfd.
    let n = Errno::result(unsafe { libc::poll(&mut p, 1, timeout_ms) })?;
    Ok(n > 0)
}
