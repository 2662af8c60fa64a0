//! Constants that the macOS SDK lacks, with the values `slurm_shim.h` gives them under
//! `__APPLE__`. On Linux (including the darwin-emulation mode) glibc's own values are used
//! and the implementation reads them from the `libc` crate instead: see [`flags`].
//!
//! Header-only items (no Rust behind them), written by the header generator: `SOL_TCP`
//! (`IPPROTO_TCP`, catalog A10), `SIGRTMAX` (`NSIG`: Darwin has no real-time signals, A11),
//! `C_IN`/`T_SRV` (1/33, which the SDK hides behind `BIND_8_COMPAT`, A12), `eventfd_t`.
//!
//! The `<pty.h>` stand-in (A15) is a header only, `shim/include/compat/pty.h`: it includes
//! `<util.h>`, where macOS declares `openpty`/`login_tty`, so configure defines `HAVE_PTY_H`
//! and slurmstepd's `srun --pty` path is compiled. That path calls `setresuid` around
//! `openpty` only `#if HAVE_SETRESUID` (glibc's `grantpt` gives the terminal to the *real*
//! uid); macOS has no `setresuid` and needs none: its `grantpt` is the `TIOCPTYGRANT` ioctl,
//! and XNU gives the terminal to the caller's *effective* uid, which slurmstepd has already
//! set to the job's user (`drop_privileges` in `_setup_normal_io`). Read in Apple's Libc and
//! XNU sources; not observed on a Mac.
//!
//! The two socket-type flags use high bits that no Darwin socket type uses (types are small
//! integers); the eventfd flags reuse Darwin's `O_CLOEXEC`/`O_NONBLOCK`, as Linux does with
//! its own.

use libc::c_int;

/// `SOCK_CLOEXEC` on macOS: OR-ed into `socket()`'s type, stripped by the shim.
pub const SLURM_SHIM_SOCK_CLOEXEC: c_int = 0x1000_0000;
/// `SOCK_NONBLOCK` on macOS: OR-ed into `socket()`'s type, stripped by the shim.
pub const SLURM_SHIM_SOCK_NONBLOCK: c_int = 0x2000_0000;
/// `EFD_SEMAPHORE`, as on Linux.
pub const SLURM_SHIM_EFD_SEMAPHORE: c_int = 1;
/// `EFD_CLOEXEC` on macOS: Darwin's `O_CLOEXEC`.
pub const SLURM_SHIM_EFD_CLOEXEC: c_int = 0x0100_0000;
/// `EFD_NONBLOCK` on macOS: Darwin's `O_NONBLOCK`.
pub const SLURM_SHIM_EFD_NONBLOCK: c_int = 0x0004;
/// `TIMER_ABSTIME`, as on Linux.
pub const SLURM_SHIM_TIMER_ABSTIME: c_int = 1;
/// `CPU_SETSIZE`, as in glibc: 1024 CPUs.
pub const SLURM_SHIM_CPU_SETSIZE: c_int = 1024;
/// `SO_PEERCRED` on macOS: a socket option number no Darwin `SOL_SOCKET` option uses,
/// answered by [`crate::peercred`].
pub const SLURM_SHIM_SO_PEERCRED: c_int = 0x4000_1001;

/// The flag values the implementation must interpret on the OS it was compiled for.
pub mod flags {
    use libc::c_int;

    #[cfg(target_os = "linux")]
    mod os {
        use libc::c_int;
        pub const SOCK_CLOEXEC: c_int = libc::SOCK_CLOEXEC;
        pub const SOCK_NONBLOCK: c_int = libc::SOCK_NONBLOCK;
        pub const EFD_CLOEXEC: c_int = libc::EFD_CLOEXEC;
        pub const EFD_NONBLOCK: c_int = libc::EFD_NONBLOCK;
        pub const EFD_SEMAPHORE: c_int = libc::EFD_SEMAPHORE;
        pub const SO_PEERCRED: c_int = libc::SO_PEERCRED;
    }

    #[cfg(target_vendor = "apple")]
    mod os {
        use libc::c_int;
        pub const SOCK_CLOEXEC: c_int = super::super::SLURM_SHIM_SOCK_CLOEXEC;
        pub const SOCK_NONBLOCK: c_int = super::super::SLURM_SHIM_SOCK_NONBLOCK;
        pub const EFD_CLOEXEC: c_int = super::super::SLURM_SHIM_EFD_CLOEXEC;
        pub const EFD_NONBLOCK: c_int = super::super::SLURM_SHIM_EFD_NONBLOCK;
        pub const EFD_SEMAPHORE: c_int = super::super::SLURM_SHIM_EFD_SEMAPHORE;
        pub const SO_PEERCRED: c_int = super::super::SLURM_SHIM_SO_PEERCRED;
    }

    /// `SOCK_CLOEXEC` as callers on this OS pass it.
    pub const SOCK_CLOEXEC: c_int = os::SOCK_CLOEXEC;
    /// `SOCK_NONBLOCK` as callers on this OS pass it.
    pub const SOCK_NONBLOCK: c_int = os::SOCK_NONBLOCK;
    /// `EFD_CLOEXEC` as callers on this OS pass it.
    pub const EFD_CLOEXEC: c_int = os::EFD_CLOEXEC;
    /// `EFD_NONBLOCK` as callers on this OS pass it.
    pub const EFD_NONBLOCK: c_int = os::EFD_NONBLOCK;
    /// `EFD_SEMAPHORE` as callers on this OS pass it.
    pub const EFD_SEMAPHORE: c_int = os::EFD_SEMAPHORE;
    /// `SO_PEERCRED` as callers on this OS pass it.
    pub const SO_PEERCRED: c_int = os::SO_PEERCRED;
    /// `TIMER_ABSTIME` (1 on both).
    pub const TIMER_ABSTIME: c_int = 1;
}
