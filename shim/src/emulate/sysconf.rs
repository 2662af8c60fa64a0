//! `sysconf` and `getdtablesize` as macOS's Libc answers them for what Slurm asks.
//!
//! Linux behaviour (glibc): `sysconf(_SC_OPEN_MAX)` is the soft `RLIMIT_NOFILE`;
//! `_SC_NGROUPS_MAX` is the kernel's 65536; `getdtablesize()` is the soft limit.
//!
//! macOS behaviour (Libc-1725.0.11 gen/FreeBSD/sysconf.c; xnu-11417.101.15
//! bsd/kern/kern_descrip.c `sys_getdtablesize`): `_SC_OPEN_MAX` is the soft `RLIMIT_NOFILE`
//! as `getrlimit` gives it; an infinite limit (`RLIM_INFINITY`, `LONG_MAX` on LP64) is
//! returned as `LONG_MAX`, so code that sizes a loop or a table by it runs away.
//! `_SC_NGROUPS_MAX` is `kern.ngroups`, 16 (`NGROUPS_MAX`). `getdtablesize()` is the soft
//! limit capped at `kern.maxfilesperproc` ([`machine::maxfilesperproc`]). The soft limit is
//! the one the [`super::rlimit`] model reports.
//!
//! Portability problems not fixed: every other name is glibc's answer (Slurm asks for
//! `_SC_PAGESIZE`, `_SC_PHYS_PAGES`, `_SC_NPROCESSORS_ONLN`, `_SC_CLK_TCK`, whose meaning is
//! the same).
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, c_long};

use super::machine::{self, MAC_RLIM_INFINITY};
use super::rlimit;
use super::{report, scope};

/// Model name (for [`scope::OFF_ENV`]).
pub const NAME: &str = "sysconf";

fn soft_nofile() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a writable struct rlimit.
    let rc = unsafe { rlimit::slurm_shim_getrlimit(libc::RLIMIT_NOFILE as c_int, &mut r) };
    (rc == 0).then_some(r.rlim_cur)
}

/// `_SC_OPEN_MAX` for a soft limit in macOS's representation.
pub fn open_max_for(soft: u64) -> c_long {
    if soft >= MAC_RLIM_INFINITY {
        c_long::MAX
    } else {
        c_long::try_from(soft).unwrap_or(c_long::MAX)
    }
}

/// `sysconf(3)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_sysconf(name: c_int) -> c_long {
    crate::counted!(slurm_shim_sysconf);
    if scope::active(NAME) {
        if name == libc::_SC_OPEN_MAX {
            if let Some(soft) = soft_nofile() {
                if soft >= MAC_RLIM_INFINITY {
                    report::applied(
                        "sysconf(_SC_OPEN_MAX) with an infinite RLIMIT_NOFILE -> LONG_MAX (Libc gen/FreeBSD/sysconf.c)",
                    );
                }
                return open_max_for(soft);
            }
            return -1;
        }
        if name == libc::_SC_NGROUPS_MAX {
            report::applied("sysconf(_SC_NGROUPS_MAX) -> 16 (macOS NGROUPS_MAX)");
            return machine::NGROUPS_MAX as c_long;
        }
    }
    // SAFETY: sysconf has no memory-safety preconditions.
    unsafe { libc::sysconf(name) }
}

/// `getdtablesize(3)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_getdtablesize() -> c_int {
    crate::counted!(slurm_shim_getdtablesize);
    if scope::active(NAME) {
        if let Some(soft) = soft_nofile() {
            let cap = machine::maxfilesperproc();
            return c_int::try_from(soft.min(cap)).unwrap_or(c_int::MAX);
        }
    }
    // SAFETY: getdtablesize has no preconditions.
    unsafe { libc::getdtablesize() }
}
