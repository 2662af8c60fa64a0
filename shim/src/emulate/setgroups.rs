//! `setgroups` with macOS's limit of 16 groups.
//!
//! Linux behaviour: up to `NGROUPS_MAX` (65536) supplementary groups.
//!
//! macOS behaviour (xnu-11417.101.15 bsd/kern/kern_prot.c `setgroups1`: `if (ngrp > NGROUPS)
//! return EINVAL`; `NGROUPS` = `NGROUPS_MAX` = 16, bsd/sys/syslimits.h): more than 16 groups
//! is `EINVAL`, nothing changed. Slurm's `slurmstepd` sets the job user's groups from the
//! credential with `setgroups(ngids, gids)` (src/common/uid.c, src/slurmd/common/
//! privileges.c); on a Mac a user in more than 16 groups cannot launch a job
//! (DARWIN-CATALOG D7). macOS's own answer for such users is `initgroups(3)`, which registers
//! the user for the kernel's dynamic group resolution (memberd) instead of a fixed list.
//!
//! Portability problems not fixed: dynamic group membership (what `initgroups` gives on a
//! Mac) has no Linux equivalent; `getgroups` is glibc's.
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, gid_t, size_t};

use super::machine::NGROUPS_MAX;
use super::{report, scope};
use crate::errno;

/// Model name (for [`scope::OFF_ENV`]).
pub const NAME: &str = "setgroups-16";

/// Whether macOS refuses a list of `n` groups.
pub fn mac_refuses(n: size_t) -> bool {
    n > NGROUPS_MAX
}

/// `setgroups(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_setgroups(n: size_t, list: *const gid_t) -> c_int {
    crate::counted!(slurm_shim_setgroups);
    if mac_refuses(n) && scope::active(NAME) {
        report::applied(
            "setgroups() of more than 16 groups -> EINVAL (xnu kern_prot.c setgroups1, NGROUPS 16)",
        );
        errno::set(libc::EINVAL);
        return -1;
    }
    // SAFETY: the arguments go to the real call unchanged.
    unsafe { libc::setgroups(n, list) }
}
