//! `getgrouplist` with GNU semantics: against glibc for existing users, and the growth
//! logic through the seam with a Darwin-like fake (which never reports the size needed).
//!
//! glibc is the oracle, so this file runs on Linux only (for macOS targets the shim is
//! compiled, and linked into a Mach-O program by tests/header.rs).
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

use std::cell::Cell;
use std::ffi::CStr;

use libc::{c_int, gid_t};
use slurm_shim::getgrouplist::*;

fn glibc(user: &CStr, group: gid_t, cap: c_int) -> (c_int, c_int, Vec<gid_t>) {
    let mut buf = vec![0xdead as gid_t; cap.max(0) as usize];
    let mut n = cap;
    // SAFETY: `buf` has room for `n` gids.
    let rc = unsafe { libc::getgrouplist(user.as_ptr(), group, buf.as_mut_ptr(), &mut n) };
    (rc, n, buf)
}

fn shim(user: &CStr, group: gid_t, cap: c_int) -> (c_int, c_int, Vec<gid_t>) {
    let mut buf = vec![0xdead as gid_t; cap.max(0) as usize];
    let mut n = cap;
    // SAFETY: as above.
    let rc = unsafe { slurm_shim_getgrouplist(user.as_ptr(), group, buf.as_mut_ptr(), &mut n) };
    (rc, n, buf)
}

#[test]
fn getgrouplist__same_as_glibc_for_existing_users() {
    let users: &[(&CStr, gid_t)] = &[
        (c"root", 0),
        (c"daemon", 1),
        (c"nobody", 65534),
        (c"no-such-user-xyz", 4242),
        (c"root", 777),
    ];
    for &(u, g) in users {
        let (_, total, _) = glibc(u, g, 0);
        assert!(total >= 1);
        for cap in [0, 1, total - 1, total, total + 5, 64] {
            if cap < 0 {
                continue;
            }
            assert_eq!(
                shim(u, g, cap),
                glibc(u, g, cap),
                "user {u:?} group {g} cap {cap}"
            );
        }
    }
}

#[test]
fn getgrouplist__null_arguments() {
    let mut n: c_int = 4;
    slurm_shim::errno::set(0);
    // SAFETY: NULL groups with a non-zero count is checked.
    let rc = unsafe { slurm_shim_getgrouplist(c"root".as_ptr(), 0, core::ptr::null_mut(), &mut n) };
    assert_eq!((rc, slurm_shim::errno::get(), n), (-1, libc::EFAULT, 4));
    let mut n0: c_int = 0;
    // SAFETY: NULL groups with count 0 is allowed (size query).
    let rc =
        unsafe { slurm_shim_getgrouplist(c"root".as_ptr(), 0, core::ptr::null_mut(), &mut n0) };
    assert_eq!(rc, -1);
    assert!(n0 >= 1);
}

/// Behaves like Darwin's getgrouplist for a user in `groups`: fills what fits, returns -1
/// when too small and reports nothing useful about the size needed.
struct Darwin {
    groups: Vec<c_int>,
    calls: Cell<usize>,
}
impl GroupListOs for Darwin {
    fn getgrouplist(&self, _user: &CStr, group: gid_t, buf: &mut [c_int]) -> Option<usize> {
        self.calls.set(self.calls.get() + 1);
        let mut list = vec![group as c_int];
        list.extend(self.groups.iter().copied());
        for (d, s) in buf.iter_mut().zip(list.iter()) {
            *d = *s;
        }
        (list.len() <= buf.len()).then_some(list.len())
    }
}

#[test]
fn getgrouplist__seam_user_in_100_groups_grows_and_reports_count() {
    // 100 distinct groups plus duplicates and the base group repeated, as directory
    // services may return them.
    let mut groups: Vec<c_int> = (1000..1100).collect();
    groups.extend([1000, 1050, 20]);
    let os = Darwin {
        groups,
        calls: Cell::new(0),
    };
    let list = getgrouplist_impl(&os, c"many", 20, 64).expect("ok");
    assert_eq!(list.len(), 101);
    assert_eq!(list[0], 20, "base group first");
    assert_eq!(&list[1..4], &[1000, 1001, 1002]);
    assert_eq!(os.calls.get(), 2, "64 too small, 128 fits");

    // The GNU protocol on top: Slurm's loop starts at 64 and grows to *ngroups.
    let mut out = vec![0 as gid_t; 64];
    let (rv, n) = gnu_protocol(&list, &mut out);
    assert_eq!((rv, n), (-1, 101));
    assert_eq!(&out[..], &list[..64], "fills what fits");
    let mut out = vec![0 as gid_t; n as usize];
    assert_eq!(gnu_protocol(&list, &mut out), (101, 101));
    assert_eq!(out, list);
}

#[test]
fn getgrouplist__seam_gives_up_at_the_cap_with_enomem() {
    struct Never;
    impl GroupListOs for Never {
        fn getgrouplist(&self, _: &CStr, _: gid_t, _: &mut [c_int]) -> Option<usize> {
            None
        }
    }
    assert_eq!(
        getgrouplist_impl(&Never, c"x", 0, 0),
        Err(slurm_shim::errno::Errno(libc::ENOMEM))
    );
}
