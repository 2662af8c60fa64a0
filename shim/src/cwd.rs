//! PLACEHOLDER (being implemented).
#![allow(unused_variables, clippy::missing_safety_doc)]
use libc::*;
fn enosys() -> c_int { crate::errno::set(ENOSYS); -1 }
#[unsafe(no_mangle)] pub extern "C" fn slurm_shim_get_current_dir_name() -> *mut c_char { enosys(); core::ptr::null_mut() }
