//! `accept4()`: `accept()` with `SOCK_CLOEXEC` / `SOCK_NONBLOCK` for the new socket.
//!
//! # Linux behaviour emulated
//! `int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags)` (accept(2)):
//! `flags` may hold `SOCK_CLOEXEC` and `SOCK_NONBLOCK`, any other bit gives `EINVAL` (after
//! `EBADF` for a descriptor that is not open, before `ENOTSOCK`). The new socket's file status flags are exactly `O_NONBLOCK`
//! when `SOCK_NONBLOCK` was given and empty otherwise: on Linux an accepted socket never
//! inherits the listener's `O_NONBLOCK` (accept(2), NOTES). The peer address is copied
//! after the connection was taken: with `addr` non-NULL, a NULL `addrlen` gives `EFAULT`
//! and a negative `*addrlen` gives `EINVAL` (the connection is then lost, as on Linux);
//! otherwise at most `*addrlen` bytes are copied and `*addrlen` is set to the full length.
//! On failure `addr` and `addrlen` are left untouched.
//!
//! # macOS mechanism used
//! `accept()` into a local `sockaddr_storage`, then `fcntl(F_SETFD, FD_CLOEXEC)` and
//! `fcntl(F_SETFL, 0 or O_NONBLOCK)`. BSD `accept()` gives the new socket the listener's
//! `O_NONBLOCK` (and `O_ASYNC`): the shim always sets the status flags explicitly, so a
//! blocking caller of a non-blocking listener gets a blocking socket, as on Linux.
//! With `SOCK_CLOEXEC` the `accept()` and the `fcntl` run under
//! [`crate::cloexec::with_fork_lock`]; to avoid holding that lock (and so stalling every
//! `fork()` of the process) while a *blocking* listener waits for a client, the shim checks
//! for a pending client with `poll(POLLIN, 0)` under the lock and accepts it, or else
//! releases the lock, waits with `poll(POLLIN)` and tries again. Linux runs the same code, so the tests compare it with glibc's `accept4`.
//!
//! # Portability problems not fixed
//! * A blocking `accept4(SOCK_CLOEXEC)` interrupted by a caught signal returns `EINTR`
//!   even when the handler has `SA_RESTART` (the wait is a `poll()`, which never restarts).
//! * If another thread takes the pending connection between the readiness check and the
//!   `accept()` of a blocking listener, `accept()` blocks while holding the shared side of
//!   the fork lock, delaying `fork()` in other threads until a client arrives.
//! * Only a NULL `addrlen` is detected as `EFAULT`; another invalid pointer crashes.

use std::os::fd::{AsFd, FromRawFd, IntoRawFd, OwnedFd};

use libc::{c_int, sockaddr, sockaddr_storage, socklen_t};

use crate::cloexec;
use crate::consts::flags::{SOCK_CLOEXEC, SOCK_NONBLOCK};
use crate::errno::{self, Errno};

/// A connection taken by [`accept4_impl`] with its peer address.
#[derive(Debug)]
pub struct Accepted {
    /// The new socket, with the requested flags applied.
    pub fd: OwnedFd,
    /// The peer address, `len` bytes of it meaningful.
    pub addr: sockaddr_storage,
    /// The full length of the peer address.
    pub len: socklen_t,
}

#[derive(Clone, Copy, Debug)]
struct Flags {
    cloexec: bool,
    nonblock: bool,
}

fn parse_flags(flags: c_int) -> Result<Flags, Errno> {
    if flags & !(SOCK_CLOEXEC | SOCK_NONBLOCK) != 0 {
        return Err(Errno(libc::EINVAL));
    }
    Ok(Flags {
        cloexec: flags & SOCK_CLOEXEC != 0,
        nonblock: flags & SOCK_NONBLOCK != 0,
    })
}

/// `accept()` into a local address buffer.
fn plain_accept(fd: c_int) -> Result<(OwnedFd, sockaddr_storage, socklen_t), Errno> {
    // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
    let mut addr: sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<sockaddr_storage>() as socklen_t;
    // SAFETY: `addr` is writable for `len` bytes and `len` is a valid socklen_t.
    let raw =
        Errno::result(unsafe { libc::accept(fd, (&raw mut addr).cast::<sockaddr>(), &mut len) })?;
    // SAFETY: accept() succeeded, so `raw` is a new descriptor nothing else owns.
    Ok((unsafe { OwnedFd::from_raw_fd(raw) }, addr, len))
}

/// Whether `fd` is a socket in the listening state (`SO_ACCEPTCONN`); `false` on any error.
fn is_listening(fd: c_int) -> bool {
    let mut v: c_int = 0;
    let mut len = std::mem::size_of::<c_int>() as socklen_t;
    // SAFETY: `v` is writable for `len` bytes.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ACCEPTCONN,
            (&raw mut v).cast(),
            &mut len,
        )
    };
    r == 0 && v != 0
}

/// The safe core: takes one connection from the listener `fd` and applies `flags`.
pub fn accept4_impl(fd: c_int, flags: c_int) -> Result<Accepted, Errno> {
    let f = parse_flags(flags).map_err(|einval| {
        // Linux looks the descriptor up before it checks the flags: EBADF wins.
        // SAFETY: F_GETFD takes no argument and touches no memory.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            Errno(libc::EBADF)
        } else {
            einval
        }
    })?;
    // SAFETY: F_GETFL takes no argument and touches no memory. A bad descriptor gives
    // EBADF here, as accept() would.
    let listener = Errno::result(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // BSD accept() gives the new socket the listener's O_NONBLOCK and O_ASYNC; Linux gives
    // it nothing. Reset the status flags when something may have been inherited or
    // O_NONBLOCK is wanted (skipping a system call in the common blocking case).
    let reset_status = f.nonblock || listener & (libc::O_NONBLOCK | libc::O_ASYNC) != 0;
    let finish = |(new, addr, len): (OwnedFd, sockaddr_storage, socklen_t)| {
        cloexec::apply(new.as_fd(), f.cloexec, false)?;
        if reset_status {
            cloexec::set_fresh_status_flags(new.as_fd(), f.nonblock)?;
        }
        Ok(Accepted { fd: new, addr, len })
    };
    if !f.cloexec {
        return plain_accept(fd).and_then(finish);
    }
    if listener & libc::O_NONBLOCK != 0 {
        // accept() cannot block: do it all under the lock.
        return cloexec::with_fork_lock(|| plain_accept(fd).and_then(finish));
    }
    // A blocking listener: accept under the lock only once a client is pending, and wait
    // for one without holding the lock (holding it would stall every fork() meanwhile).
    loop {
        let taken = cloexec::with_fork_lock(|| {
            if !cloexec::wait_readable(fd, 0)? {
                return Ok(None);
            }
            // Pending client, or an error event (POLLHUP of a socket that does not listen,
            // a regular file): accept() takes it or reports the error at once.
            plain_accept(fd).and_then(finish).map(Some)
        })?;
        if let Some(accepted) = taken {
            return Ok(accepted);
        }
        if !is_listening(fd) {
            // Nothing to wait for (ENOTSOCK for an empty pipe, EINVAL for a socket that
            // does not listen): accept() fails at once and creates nothing.
            return cloexec::with_fork_lock(|| plain_accept(fd).and_then(finish));
        }
        cloexec::wait_readable(fd, -1)?;
    }
}

/// `accept4(2)` for C callers.
///
/// # Safety
/// `addr` must be NULL or writable for `*addrlen` bytes; `addrlen` must be NULL or point to
/// a readable and writable `socklen_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_accept4(
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
    flags: c_int,
) -> c_int {
    crate::counted!(slurm_shim_accept4);
    // The address pointers are only looked at after the connection was taken, as Linux
    // does (a bad descriptor gives EBADF whatever the pointers are).
    let accepted = match errno::preserve(|| accept4_impl(fd, flags)) {
        Ok(a) => a,
        Err(e) => return errno::to_c(Err(e)),
    };
    if !addr.is_null() {
        if len.is_null() {
            return errno::to_c(Err(Errno(libc::EFAULT)));
        }
        // SAFETY: `len` is non-NULL and, by the caller's contract, readable.
        let room = unsafe { *len };
        if (room as c_int) < 0 {
            return errno::to_c(Err(Errno(libc::EINVAL)));
        }
        let n = room.min(accepted.len) as usize;
        // SAFETY: `addr` is writable for `*len` >= `n` bytes by the caller's contract, and
        // `accepted.addr` holds at least `accepted.len` >= `n` bytes; they do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&raw const accepted.addr).cast::<u8>(),
                addr.cast::<u8>(),
                n,
            );
            *len = accepted.len;
        }
    }
    accepted.fd.into_raw_fd()
}
