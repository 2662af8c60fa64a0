//! PLACEHOLDER (being implemented).
#![allow(unused_variables, clippy::missing_safety_doc)]
use libc::*;
fn enosys() -> c_int { crate::errno::set(ENOSYS); -1 }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_fexecve(fd: c_int, argv: *const *const c_char, envp: *const *const c_char) -> c_int { enosys() }
