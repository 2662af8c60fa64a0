//! PLACEHOLDER (being implemented).
#![allow(unused_variables, clippy::missing_safety_doc)]
use libc::*;
fn enosys() -> c_int { crate::errno::set(ENOSYS); -1 }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_sysinfo(info: *mut c_void) -> c_int { enosys() }
