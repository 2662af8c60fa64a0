//! `connect`/`bind` of `AF_UNIX` sockets: macOS's 104-byte `sun_path`, and no `/run`.
//!
//! Linux behaviour: `struct sockaddr_un` has a 108-byte `sun_path`; a path of up to 107
//! bytes (plus its NUL) binds and connects.
//!
//! macOS behaviour: `sun_path` is 104 bytes (SDK sys/un.h, `struct sockaddr_un { u_char
//! sun_len; sa_family_t sun_family; char sun_path[104]; }`), so a path of 104 bytes or more
//! cannot be put into the structure at all; every Slurm site checks `sizeof(sun_path)`
//! first (net.c, sack_api.c, slurmstepd/req.c, slurmd/req.c, pmi2 setup.c, conmgr/con.c;
//! DARWIN-CATALOG D13) and fails there. Here Slurm is compiled with glibc's 108 bytes, so the
//! model refuses such a path at the call, with `ENAMETOOLONG`: the same sockets fail, at
//! nearly the same place. A path under a directory macOS does not have
//! ([`super::hidden_paths`], e.g. `/run/slurm/sack.socket`) gives `ENOENT`.
//!
//! Portability problems not fixed: the error is the call's, not Slurm's own message; abstract
//! (Linux-only, leading NUL) addresses are not refused.
//!
//! The two entry points below are the shim's only `connect`/`bind`: they also apply the
//! model of XNU's address lengths for IPv4/IPv6 ([`super::inet_addr_len`]).
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, sockaddr, sockaddr_un, socklen_t};

use super::{hidden_paths, inet_addr_len, report, scope};
use crate::errno;

/// Model name (for [`scope::OFF_ENV`]).
pub const NAME: &str = "sun-path-104";

/// macOS's `sizeof(((struct sockaddr_un *)0)->sun_path)`.
pub const MAC_SUN_PATH: usize = 104;

/// The path bytes of an `AF_UNIX` address (up to its NUL or the address length), or `None`
/// for another family.
///
/// # Safety
/// `addr` must be NULL or readable for `len` bytes.
pub unsafe fn unix_path(addr: *const sockaddr, len: socklen_t) -> Option<Vec<u8>> {
    let head = std::mem::offset_of!(sockaddr_un, sun_path);
    if addr.is_null() || (len as usize) <= head {
        return None;
    }
    // SAFETY: at least `head` (> sizeof(sa_family_t)) bytes are readable.
    if unsafe { (*addr).sa_family } != libc::AF_UNIX as libc::sa_family_t {
        return None;
    }
    let n = (len as usize - head).min(std::mem::size_of::<sockaddr_un>() - head);
    // SAFETY: `n` bytes after the header are inside the caller's `len` bytes.
    let raw = unsafe { std::slice::from_raw_parts(addr.cast::<u8>().add(head), n) };
    let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
    Some(raw[..end].to_vec())
}

/// The macOS answer for an `AF_UNIX` path: `Some(errno)` when the call must fail.
pub fn mac_refusal(path: &[u8]) -> Option<c_int> {
    if path.first() == Some(&0) || path.is_empty() {
        return None;
    }
    if path.len() >= MAC_SUN_PATH {
        return Some(libc::ENAMETOOLONG);
    }
    hidden_paths::is_hidden(path).then_some(libc::ENOENT)
}

fn check(addr: *const sockaddr, len: socklen_t, call: &'static str) -> Result<(), c_int> {
    // SAFETY: the caller's address is readable for `len` bytes, as the real call needs.
    let Some(path) = (unsafe { unix_path(addr, len) }) else {
        return Ok(());
    };
    match mac_refusal(&path) {
        Some(libc::ENAMETOOLONG) if scope::active(NAME) => {
            report::applied(if call == "bind" {
                "bind(AF_UNIX) path of 104+ bytes -> ENAMETOOLONG (macOS sun_path is 104 bytes)"
            } else {
                "connect(AF_UNIX) path of 104+ bytes -> ENAMETOOLONG (macOS sun_path is 104 bytes)"
            });
            Err(libc::ENAMETOOLONG)
        }
        Some(libc::ENOENT) if scope::active(hidden_paths::NAME) => {
            report::applied_to(
                if call == "bind" {
                    "bind(AF_UNIX) under /run, /proc, /sys -> ENOENT (not on macOS)"
                } else {
                    "connect(AF_UNIX) under /run, /proc, /sys -> ENOENT (not on macOS)"
                },
                &path,
            );
            Err(libc::ENOENT)
        }
        _ => Ok(()),
    }
}

/// `connect(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_connect(
    fd: c_int,
    addr: *const sockaddr,
    len: socklen_t,
) -> c_int {
    crate::counted!(slurm_shim_connect);
    if let Err(e) =
        inet_addr_len::check(addr, len, "connect").and_then(|()| check(addr, len, "connect"))
    {
        errno::set(e);
        return -1;
    }
    // SAFETY: the arguments go to the real call unchanged.
    unsafe { libc::connect(fd, addr, len) }
}

/// `bind(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_bind(
    fd: c_int,
    addr: *const sockaddr,
    len: socklen_t,
) -> c_int {
    crate::counted!(slurm_shim_bind);
    if let Err(e) = inet_addr_len::check(addr, len, "bind").and_then(|()| check(addr, len, "bind"))
    {
        errno::set(e);
        return -1;
    }
    // SAFETY: the arguments go to the real call unchanged.
    unsafe { libc::bind(fd, addr, len) }
}
