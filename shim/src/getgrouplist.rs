//! `getgrouplist` with the GNU size protocol.
//!
//! Linux behaviour emulated: glibc's `getgrouplist(user, group, groups, ngroups)`
//! (getgrouplist(3), `grp/initgroups.c`): the list is `group` followed by every other group
//! that lists `user`, without duplicates. The first `min(*ngroups, total)` entries are
//! copied to `groups`, `*ngroups` is **always** set to `total`, and the return value is
//! `total`, or -1 when `total` exceeded the caller's `*ngroups`. Callers grow their buffer
//! to `*ngroups` and retry.
//!
//! macOS mechanism: Darwin's `getgrouplist(const char *, int, int *, int *)` returns -1
//! when the buffer is too small but does not report the size needed (CPython bpo-40014,
//! Go #21067), so Slurm's `group_cache.c` loop never ends for users in more than 64 groups
//! (DARWIN-CATALOG A16). The shim calls it with an internal buffer, doubling from
//! `max(*ngroups, 64)` up to [`MAX_GROUPS`] entries until it fits, then removes duplicates
//! keeping the first occurrence, puts `group` first, and applies the GNU protocol. On Linux
//! the same logic runs through the [`GroupListOs`] seam over glibc's function made to
//! behave like Darwin's (its size report is discarded).
//!
//! Portability problems not fixed:
//! * More than [`MAX_GROUPS`] groups: -1 with `errno = ENOMEM` and `*ngroups` unchanged.
//! * Darwin resolves groups through opendirectoryd; the order of the other groups is the
//!   directory service's, as in glibc it is NSS's.
#![allow(clippy::missing_safety_doc)]

use core::ffi::CStr;

use libc::{c_char, c_int, gid_t};

use crate::errno::{self, Errno};

/// Largest group list the shim asks the OS for.
pub const MAX_GROUPS: usize = 1 << 16;

/// The OS's Darwin-style `getgrouplist`.
pub trait GroupListOs {
    /// Fills `buf` and returns `Some(count)`, or `None` if `buf` was too small (Darwin
    /// does not say how large it must be).
    fn getgrouplist(&self, user: &CStr, group: gid_t, buf: &mut [c_int]) -> Option<usize>;
}

/// The real OS.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealGroupListOs;

impl GroupListOs for RealGroupListOs {
    fn getgrouplist(&self, user: &CStr, group: gid_t, buf: &mut [c_int]) -> Option<usize> {
        let mut n = c_int::try_from(buf.len()).unwrap_or(c_int::MAX);
        #[cfg(target_vendor = "apple")]
        // SAFETY: `user` is NUL-terminated; `buf` has room for `n` ints.
        let rc =
            unsafe { libc::getgrouplist(user.as_ptr(), group as c_int, buf.as_mut_ptr(), &mut n) };
        #[cfg(target_os = "linux")]
        // SAFETY: as above; gid_t and c_int have the same size and alignment.
        let rc = unsafe {
            libc::getgrouplist(
                user.as_ptr(),
                group,
                buf.as_mut_ptr().cast::<gid_t>(),
                &mut n,
            )
        };
        if rc == -1 {
            // Darwin leaves `n` meaningless here: ignore it on every OS.
            return None;
        }
        usize::try_from(n).ok().filter(|&n| n <= buf.len())
    }
}

/// The complete, deduplicated group list of `user`, `group` first.
pub fn getgrouplist_impl(
    os: &impl GroupListOs,
    user: &CStr,
    group: gid_t,
    hint: usize,
) -> Result<Vec<gid_t>, Errno> {
    let mut size = hint.max(64);
    let raw = loop {
        let mut buf: Vec<c_int> = Vec::new();
        buf.try_reserve_exact(size)
            .map_err(|_| Errno(libc::ENOMEM))?;
        buf.resize(size, 0);
        if let Some(n) = errno::preserve(|| os.getgrouplist(user, group, &mut buf)) {
            buf.truncate(n);
            break buf;
        }
        if size >= MAX_GROUPS {
            return Err(Errno(libc::ENOMEM));
        }
        size = (size * 2).min(MAX_GROUPS);
    };
    let mut out: Vec<gid_t> = Vec::with_capacity(raw.len() + 1);
    out.push(group);
    for g in raw.into_iter().map(|g| g as gid_t) {
        if !out.contains(&g) {
            out.push(g);
        }
    }
    Ok(out)
}

/// Applies the GNU protocol: copies what fits, returns (return value, new `*ngroups`).
pub fn gnu_protocol(list: &[gid_t], out: &mut [gid_t]) -> (c_int, c_int) {
    let total = c_int::try_from(list.len()).unwrap_or(c_int::MAX);
    let n = list.len().min(out.len());
    out[..n].copy_from_slice(&list[..n]);
    let rv = if list.len() > out.len() { -1 } else { total };
    (rv, total)
}

/// `getgrouplist(3)` with GNU semantics.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_getgrouplist(
    user: *const c_char,
    group: gid_t,
    groups: *mut gid_t,
    ngroups: *mut c_int,
) -> c_int {
    crate::counted!(slurm_shim_getgrouplist);
    // Darwin personality: name the call site (group_cache.c's and mcs/group's macOS branches).
    #[cfg(target_os = "linux")]
    crate::emulate::report::applied(
        "getgrouplist() on macOS is the shim's (Darwin's never reports the size)",
    );
    if user.is_null() || ngroups.is_null() {
        return errno::to_c(Err(Errno(libc::EFAULT)));
    }
    // SAFETY: `ngroups` is non-NULL and points at the caller's int.
    let cap = usize::try_from(unsafe { *ngroups }).unwrap_or(0);
    if groups.is_null() && cap > 0 {
        return errno::to_c(Err(Errno(libc::EFAULT)));
    }
    // SAFETY: `user` is a non-NULL NUL-terminated string per the caller's contract.
    let user = unsafe { CStr::from_ptr(user) };
    let list = match getgrouplist_impl(&RealGroupListOs, user, group, cap) {
        Ok(l) => l,
        Err(e) => return errno::to_c(Err(e)),
    };
    let out: &mut [gid_t] = if cap == 0 {
        &mut []
    } else {
        // SAFETY: the caller provides room for `*ngroups` gids at the non-NULL `groups`.
        unsafe { core::slice::from_raw_parts_mut(groups, cap) }
    };
    let (rv, total) = gnu_protocol(&list, out);
    // SAFETY: as above.
    unsafe { *ngroups = total };
    rv
}
