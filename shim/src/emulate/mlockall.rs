//! `mlockall` is `ENOSYS` on macOS.
//!
//! Linux behaviour: locks the address space (`MCL_CURRENT`, `MCL_FUTURE`), subject to
//! `RLIMIT_MEMLOCK` and `CAP_IPC_LOCK`.
//!
//! macOS behaviour: libSystem exports `mlockall`, but XNU's system call is a stub that
//! returns `ENOSYS` (xnu-11417.101.15 bsd/kern/kern_mman.c `mlockall`; `munlockall` likewise).
//! Slurm calls it only with `LaunchParameters=slurmd_memlock[_all]` (src/slurmd/slurmd/
//! slurmd.c, src/slurmd/slurmstepd/slurmstepd.c) and logs the failure (DARWIN-CATALOG D10).
//!
//! Portability problems not fixed: none; `munlockall` is mapped to the same model.

use libc::c_int;

use super::{report, scope};
use crate::errno;

/// Model name (for [`scope::OFF_ENV`]).
pub const NAME: &str = "mlockall";

/// `mlockall(2)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_mlockall(flags: c_int) -> c_int {
    crate::counted!(slurm_shim_mlockall);
    if scope::active(NAME) {
        report::applied("mlockall -> ENOSYS (xnu kern_mman.c)");
        errno::set(libc::ENOSYS);
        return -1;
    }
    // SAFETY: mlockall has no memory-safety preconditions.
    unsafe { libc::mlockall(flags) }
}

/// `munlockall(2)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_munlockall() -> c_int {
    crate::counted!(slurm_shim_munlockall);
    if scope::active(NAME) {
        report::applied("munlockall -> ENOSYS (xnu kern_mman.c)");
        errno::set(libc::ENOSYS);
        return -1;
    }
    // SAFETY: munlockall has no memory-safety preconditions.
    unsafe { libc::munlockall() }
}
