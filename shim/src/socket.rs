//! PLACEHOLDER (being implemented).
#![allow(unused_variables, clippy::missing_safety_doc)]
use libc::*;
fn enosys() -> c_int { crate::errno::set(ENOSYS); -1 }
#[unsafe(no_mangle)] pub extern "C" fn slurm_shim_socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int { enosys() }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_socketpair(domain: c_int, ty: c_int, protocol: c_int, sv: *mut c_int) -> c_int { enosys() }
