//! `slurm-shim`: C-ABI replacements for the Linux-only libc APIs that Slurm calls, so that
//! an unmodified Slurm compiles and runs on macOS.
//!
//! Every replacement is exported as `slurm_shim_<linux name>` on every OS and never under
//! the bare Linux name, so it can never interpose libSystem or glibc. The generated header
//! `include/slurm_shim.h` maps the Linux names onto these symbols; [`table`] is the single
//! list that drives both. One emulated API (or a tight family) per module; each module's
//! documentation states the Linux behaviour, the macOS mechanism and what is not fixed.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![allow(non_camel_case_types)]

pub mod errno;
pub mod table;

pub mod cloexec;
pub mod consts;
pub mod count;
#[cfg(target_os = "linux")]
pub mod emulate;

pub mod accept4;
pub mod cpuset;
pub mod cwd;
pub mod eventfd;
pub mod fexecve;
pub mod getgrouplist;
pub mod peercred;
pub mod pipe2;
pub mod qsort_r;
pub mod rwlock;
pub mod setresuid;
pub mod sigtimedwait;
pub mod socket;
pub mod timer;
pub mod uptime;
