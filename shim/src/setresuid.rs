//! PLACEHOLDER (being implemented).
#![allow(unused_variables, clippy::missing_safety_doc)]
use libc::*;
fn enosys() -> c_int { crate::errno::set(ENOSYS); -1 }
#[unsafe(no_mangle)] pub extern "C" fn slurm_shim_setresuid(ruid: uid_t, euid: uid_t, suid: uid_t) -> c_int { enosys() }
#[unsafe(no_mangle)] pub extern "C" fn slurm_shim_setresgid(rgid: gid_t, egid: gid_t, sgid: gid_t) -> c_int { enosys() }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_getresuid(ruid: *mut uid_t, euid: *mut uid_t, suid: *mut uid_t) -> c_int { enosys() }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_getresgid(rgid: *mut gid_t, egid: *mut gid_t, sgid: *mut gid_t) -> c_int { enosys() }
