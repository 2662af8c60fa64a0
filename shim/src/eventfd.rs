//! `eventfd()`, `eventfd_read()`, `eventfd_write()`: a 64-bit event counter behind one
//! pollable descriptor.
//!
//! # Linux behaviour emulated
//! `int eventfd(unsigned int initval, int flags)` (eventfd(2)) returns one descriptor holding
//! a counter that starts at `initval`. `flags` combines `EFD_CLOEXEC`, `EFD_NONBLOCK` and
//! `EFD_SEMAPHORE`; any other bit gives `EINVAL`. `eventfd_read(fd, &v)` (glibc) takes the
//! counter and resets it to zero, or in semaphore mode returns 1 and decrements it; when the
//! counter is zero it fails with `EAGAIN` if the descriptor is non-blocking and blocks
//! otherwise. `eventfd_write(fd, v)` adds `v`: `EINVAL` for `0xffffffffffffffff`; if the sum
//! would exceed `0xfffffffffffffffe` it fails with `EAGAIN` (non-blocking) or blocks until a
//! read makes room. `poll()` reports `POLLIN` exactly when the counter is non-zero, and the
//! descriptor is writable: a plain `write()` of an 8-byte native-endian integer adds it to
//! the counter. Slurm (srun, salloc, 26.11) creates it with `EFD_CLOEXEC|EFD_NONBLOCK`,
//! writes 8 bytes to it from a signal handler and only `poll()`s it elsewhere.
//!
//! # macOS mechanism used
//! macOS has no eventfd. The descriptor is an `AF_UNIX` `SOCK_DGRAM` socket *connected to
//! itself*: bound to a fresh name in the temporary directory (`$TMPDIR`), connected to that
//! name, and the name unlinked at once. A datagram written to it is queued on itself, so it
//! is both writable and readable, and `poll()` reports `POLLIN` while a datagram is queued.
//! The counter lives in the socket's queue: it is the sum of the 8-byte datagrams queued.
//! `eventfd_write()` and `eventfd_read()` drain the queue, compute the new counter and queue
//! it back as a single datagram (nothing when zero), under a process-wide lock; a plain
//! `write()` of 8 bytes (what Slurm's signal handler does) just queues one more datagram
//! that the next drain adds in. Semaphore mode is recorded in the socket's name (read back
//! with `getsockname()`), so no table keyed by descriptor number exists: `close()`, `dup()`
//! and `fork()` need no hook. `eventfd_read()`/`eventfd_write()` on a descriptor that is not
//! such a socket do what glibc does: `read()`/`write()` of 8 bytes. Blocking waits use
//! `poll()` (read) or 1 ms sleeps (write on overflow). Linux runs the same code; the tests
//! compare it with glibc's eventfd.
//!
//! # Portability problems not fixed
//! * `read()` on the descriptor returns one queued datagram, not the counter; `write()` of
//!   anything but 8 bytes is accepted (a real eventfd gives `EINVAL`) and later ignored;
//!   plain writes are summed only at the next `eventfd_read/write`, saturating at
//!   `0xfffffffffffffffe` instead of blocking, and a plain `write()` of 0 makes the
//!   descriptor readable. The socket's queue is bounded (`net.local.dgram.recvspace` on
//!   macOS, `net.unix.max_dgram_qlen` on Linux): more plain `write()`s than it holds without
//!   an `eventfd_read/write` in between fail with `EAGAIN` (non-blocking) instead of adding.
//! * Cost: creation is a `socket`, `bind`, `connect` and `unlink` in the temporary directory
//!   (tens of microseconds, against one system call); each `eventfd_read/write` is a
//!   `getsockname` plus a drain and a requeue (about 7x glibc on Linux). Slurm creates one
//!   per srun/salloc and never calls these two.
//! * `poll()` reports `POLLOUT` even when the counter is at its maximum; while another thread
//!   is inside `eventfd_read/write`, `POLLIN` may briefly be absent. Processes sharing the
//!   descriptor across `fork()` do not share the lock: concurrent updates from two processes
//!   can lose an addition.
//! * A blocking `eventfd_read()` returns `EINTR` for a caught signal even with `SA_RESTART`.
//! * A NULL value pointer gives `EFAULT` before anything else, without consuming the counter.
//! * Creation needs a writable temporary directory whose path fits `sun_path` (104 bytes on
//!   macOS) and costs a `bind`, `connect` and `unlink`. A process that can reach the name in
//!   the instant between `bind` and `unlink` could send a datagram to it.

use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use libc::{c_int, c_uint, sockaddr, sockaddr_un, socklen_t};

use crate::cloexec;
use crate::consts::flags::{EFD_CLOEXEC, EFD_NONBLOCK, EFD_SEMAPHORE};
use crate::errno::{self, Errno};

/// The largest value the counter can hold.
pub const COUNTER_MAX: u64 = u64::MAX - 1;
/// Start of the socket name that marks a shim eventfd.
const NAME_PREFIX: &[u8] = b"slurm-shim-efd.";
/// End of the socket name of an eventfd in semaphore mode.
const SEMAPHORE_SUFFIX: &[u8] = b".s";

/// Serialises the drain-and-requeue of every shim eventfd in the process. A spin lock
/// rather than a mutex so that a `fork()` child can reset it (the holder is not there).
static LOCK: AtomicBool = AtomicBool::new(false);
static REGISTER: Once = Once::new();
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

extern "C" fn reset_lock_in_child() {
    LOCK.store(false, Ordering::Release);
}

fn locked<T>(f: impl FnOnce() -> T) -> T {
    REGISTER.call_once(|| {
        // SAFETY: the handler is a plain function that only stores to a static atomic.
        let _ = unsafe { libc::pthread_atfork(None, None, Some(reset_lock_in_child)) };
    });
    let mut round = 0u32;
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        if round < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
        round = round.saturating_add(1);
    }
    let out = f();
    LOCK.store(false, Ordering::Release);
    out
}

/// What `getsockname()` says a descriptor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Not a shim eventfd: `eventfd_read/write` do glibc's plain `read/write`.
    Other,
    /// A shim eventfd.
    Counter { semaphore: bool },
}

fn empty_sockaddr_un() -> sockaddr_un {
    // SAFETY: sockaddr_un is plain old data; all-zero is a valid value.
    let mut a: sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    a
}

fn kind(fd: c_int) -> Result<Kind, Errno> {
    let mut addr = empty_sockaddr_un();
    let mut len = std::mem::size_of::<sockaddr_un>() as socklen_t;
    // A failure here (ENOTSOCK, ...) leads to the plain read/write, whose short count must
    // leave the caller's errno as it was, as glibc does: restore it.
    // SAFETY: `addr` is writable for `len` bytes.
    let r = errno::preserve(|| unsafe {
        libc::getsockname(fd, (&raw mut addr).cast::<sockaddr>(), &mut len)
    });
    if r == -1 {
        // SAFETY: F_GETFD takes no argument and touches no memory.
        let bad = unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1;
        return if bad {
            Err(Errno(libc::EBADF))
        } else {
            Ok(Kind::Other)
        };
    }
    if c_int::from(addr.sun_family) != libc::AF_UNIX {
        return Ok(Kind::Other);
    }
    let path: Vec<u8> = addr
        .sun_path
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    let base = path.rsplit(|&c| c == b'/').next().unwrap_or(&[]);
    if !base.starts_with(NAME_PREFIX) {
        return Ok(Kind::Other);
    }
    Ok(Kind::Counter {
        semaphore: base.ends_with(SEMAPHORE_SUFFIX),
    })
}

/// Binds `fd` to a fresh name in the temporary directory, connects it to itself and
/// unlinks the name.
fn connect_to_self(fd: BorrowedFd<'_>, semaphore: bool) -> Result<(), Errno> {
    let dir = std::env::temp_dir();
    // SAFETY: getpid() has no preconditions.
    let pid = unsafe { libc::getpid() };
    let mut last = Errno(libc::EADDRINUSE);
    for _ in 0..16 {
        let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "slurm-shim-efd.{pid}.{seq}{}",
            if semaphore { ".s" } else { "" }
        );
        let path = dir.join(OsStr::new(&name));
        let bytes = path.as_os_str().as_bytes();
        let mut addr = empty_sockaddr_un();
        if bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
            return Err(Errno(libc::ENAMETOOLONG));
        }
        for (d, &s) in addr.sun_path.iter_mut().zip(bytes) {
            *d = s as libc::c_char;
        }
        let len = std::mem::size_of::<sockaddr_un>() as socklen_t;
        #[cfg(target_vendor = "apple")]
        {
            addr.sun_len = len as u8;
        }
        let sa = (&raw const addr).cast::<sockaddr>();
        // SAFETY: `sa` points at a valid sockaddr_un of `len` bytes.
        if unsafe { libc::bind(fd.as_raw_fd(), sa, len) } == -1 {
            last = Errno::last();
            if last == Errno(libc::EADDRINUSE) {
                continue; // A stale name from an earlier process with this pid.
            }
            return Err(last);
        }
        // SAFETY: as for bind().
        let connected = Errno::result(unsafe { libc::connect(fd.as_raw_fd(), sa, len) });
        // SAFETY: `sun_path` is NUL-terminated (it is longer than `bytes` and was zeroed).
        unsafe { libc::unlink(addr.sun_path.as_ptr()) };
        return connected.map(drop);
    }
    Err(last)
}

fn send_value(fd: c_int, value: u64) -> Result<(), Errno> {
    let buf = value.to_ne_bytes();
    loop {
        // SAFETY: `buf` is readable for its length.
        let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        if n == buf.len() as isize {
            return Ok(());
        }
        match Errno::last() {
            Errno(libc::EINTR) if n == -1 => continue,
            e if n == -1 => return Err(e),
            _ => return Err(Errno(libc::EIO)),
        }
    }
}

/// Takes every queued datagram and returns the counter they add up to (saturating).
fn drain(fd: c_int) -> Result<u64, Errno> {
    let mut sum: u64 = 0;
    loop {
        let mut buf = [0u8; 16];
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        if n == 8 {
            let mut v = [0u8; 8];
            v.copy_from_slice(&buf[..8]);
            sum = sum.saturating_add(u64::from_ne_bytes(v)).min(COUNTER_MAX);
        } else if n == -1 {
            match Errno::last() {
                Errno(libc::EINTR) => continue,
                Errno(e) if e == libc::EAGAIN || e == libc::EWOULDBLOCK => return Ok(sum),
                e => {
                    // Put back what was taken before reporting the error.
                    if sum > 0 {
                        let _ = send_value(fd, sum);
                    }
                    return Err(e);
                }
            }
        }
        // Datagrams of another size are not counter updates: dropped.
    }
}

/// The safe core of `eventfd()`.
pub fn eventfd_impl(initval: c_uint, flags: c_int) -> Result<OwnedFd, Errno> {
    if flags & !(EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE) != 0 {
        return Err(Errno(libc::EINVAL));
    }
    let cloexec = flags & EFD_CLOEXEC != 0;
    let fd = cloexec::creating(cloexec, || {
        // SAFETY: socket() takes integers only.
        let raw = Errno::result(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM, 0) })?;
        // SAFETY: socket() succeeded, so `raw` is a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        cloexec::apply(fd.as_fd(), cloexec, false)?;
        Ok::<_, Errno>(fd)
    })?;
    connect_to_self(fd.as_fd(), flags & EFD_SEMAPHORE != 0)?;
    if initval > 0 {
        send_value(fd.as_raw_fd(), u64::from(initval))?;
    }
    if flags & EFD_NONBLOCK != 0 {
        cloexec::set_fresh_status_flags(fd.as_fd(), true)?;
    }
    Ok(fd)
}

/// glibc's `eventfd_read()` on a descriptor that is not a shim eventfd: `read()` 8 bytes;
/// a short read fails with errno unchanged.
fn plain_read(fd: c_int) -> Result<u64, Errno> {
    let mut buf = [0u8; 8];
    // SAFETY: `buf` is writable for its length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n == 8 {
        Ok(u64::from_ne_bytes(buf))
    } else {
        Err(Errno::last())
    }
}

/// glibc's `eventfd_write()` on a descriptor that is not a shim eventfd.
fn plain_write(fd: c_int, value: u64) -> Result<(), Errno> {
    let buf = value.to_ne_bytes();
    // SAFETY: `buf` is readable for its length.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n == 8 { Ok(()) } else { Err(Errno::last()) }
}

/// The safe core of `eventfd_read()`.
pub fn eventfd_read_impl(fd: c_int) -> Result<u64, Errno> {
    let Kind::Counter { semaphore } = kind(fd)? else {
        return plain_read(fd);
    };
    loop {
        let taken = locked(|| {
            let sum = drain(fd)?;
            if sum == 0 {
                return Ok(None);
            }
            let (out, rest) = if semaphore { (1, sum - 1) } else { (sum, 0) };
            if rest > 0 {
                send_value(fd, rest)?;
            }
            Ok::<_, Errno>(Some(out))
        })?;
        if let Some(v) = taken {
            return Ok(v);
        }
        if cloexec::is_nonblocking(fd)? {
            return Err(Errno(libc::EAGAIN));
        }
        cloexec::wait_readable(fd, -1)?;
    }
}

/// The safe core of `eventfd_write()`.
pub fn eventfd_write_impl(fd: c_int, value: u64) -> Result<(), Errno> {
    if kind(fd)? == Kind::Other {
        return plain_write(fd, value);
    }
    if value == u64::MAX {
        return Err(Errno(libc::EINVAL));
    }
    loop {
        let added = locked(|| {
            let sum = drain(fd)?;
            // Linux: the write succeeds when ULLONG_MAX - count > value.
            let room = u64::MAX - sum > value;
            let keep = if room { sum + value } else { sum };
            if keep > 0 {
                send_value(fd, keep)?;
            }
            Ok::<_, Errno>(room)
        })?;
        if added {
            return Ok(());
        }
        if cloexec::is_nonblocking(fd)? {
            return Err(Errno(libc::EAGAIN));
        }
        // Nothing signals "the counter went down": poll the counter every millisecond.
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `eventfd(2)` for C callers.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_eventfd(initval: c_uint, flags: c_int) -> c_int {
    crate::counted!(slurm_shim_eventfd);
    errno::to_c(errno::preserve(|| eventfd_impl(initval, flags)).map(IntoRawFd::into_raw_fd))
}

/// glibc's `eventfd_read(3)` for C callers.
///
/// # Safety
/// `value` must be NULL or point to a writable `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_eventfd_read(fd: c_int, value: *mut u64) -> c_int {
    crate::counted!(slurm_shim_eventfd_read);
    if value.is_null() {
        return errno::to_c(Err(Errno(libc::EFAULT)));
    }
    errno::to_c(errno::preserve(|| eventfd_read_impl(fd)).map(|v| {
        // SAFETY: `value` is non-NULL and, by the caller's contract, writable.
        unsafe { *value = v };
        0
    }))
}

/// glibc's `eventfd_write(3)` for C callers.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_eventfd_write(fd: c_int, value: u64) -> c_int {
    crate::counted!(slurm_shim_eventfd_write);
    errno::to_c(errno::preserve(|| eventfd_write_impl(fd, value)).map(|()| 0))
}
