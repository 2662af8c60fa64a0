//! PLACEHOLDER (being implemented).
#![allow(unused_variables, clippy::missing_safety_doc)]
use libc::*;
fn enosys() -> c_int { crate::errno::set(ENOSYS); -1 }
#[unsafe(no_mangle)] pub extern "C" fn slurm_shim_eventfd(initval: c_uint, flags: c_int) -> c_int { enosys() }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_eventfd_read(fd: c_int, value: *mut u64) -> c_int { enosys() }
#[unsafe(no_mangle)] pub extern "C" fn slurm_shim_eventfd_write(fd: c_int, value: u64) -> c_int { enosys() }
