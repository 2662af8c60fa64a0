//! PLACEHOLDER (being implemented).
#![allow(unused_variables, clippy::missing_safety_doc)]
use libc::*;
fn enosys() -> c_int { crate::errno::set(ENOSYS); -1 }
/// `timer_t`. 
pub type slurm_shim_timer_t = *mut c_void;
/// `struct itimerspec`.
#[repr(C)] #[derive(Clone, Copy, Debug)] pub struct slurm_shim_itimerspec { pub it_interval: timespec, pub it_value: timespec }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_timer_create(clockid: clockid_t, sevp: *mut sigevent, timerid: *mut slurm_shim_timer_t) -> c_int { enosys() }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_timer_settime(timerid: slurm_shim_timer_t, flags: c_int, new_value: *const slurm_shim_itimerspec, old_value: *mut slurm_shim_itimerspec) -> c_int { enosys() }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_timer_gettime(timerid: slurm_shim_timer_t, curr_value: *mut slurm_shim_itimerspec) -> c_int { enosys() }
#[unsafe(no_mangle)] pub extern "C" fn slurm_shim_timer_getoverrun(timerid: slurm_shim_timer_t) -> c_int { enosys() }
#[unsafe(no_mangle)] pub extern "C" fn slurm_shim_timer_delete(timerid: slurm_shim_timer_t) -> c_int { enosys() }
