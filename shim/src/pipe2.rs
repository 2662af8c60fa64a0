//! PLACEHOLDER (being implemented).
#![allow(unused_variables, clippy::missing_safety_doc)]
use libc::*;
fn enosys() -> c_int { crate::errno::set(ENOSYS); -1 }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_pipe2(fds: *mut c_int, flags: c_int) -> c_int { enosys() }
