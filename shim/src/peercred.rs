//! PLACEHOLDER (being implemented).
#![allow(unused_variables, clippy::missing_safety_doc)]
use libc::*;
fn enosys() -> c_int { crate::errno::set(ENOSYS); -1 }
/// `struct ucred` (Linux layout), filled for `SO_PEERCRED`.
#[repr(C)] #[derive(Clone, Copy, Debug)] pub struct slurm_shim_ucred { pub pid: pid_t, pub uid: uid_t, pub gid: gid_t }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_getsockopt(fd: c_int, level: c_int, name: c_int, value: *mut c_void, len: *mut socklen_t) -> c_int { enosys() }
