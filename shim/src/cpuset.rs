//! PLACEHOLDER (being implemented).
#![allow(unused_variables, clippy::missing_safety_doc)]
use libc::*;
fn enosys() -> c_int { crate::errno::set(ENOSYS); -1 }
/// `cpu_set_t`: 1024 bits, as glibc.
#[repr(C)] #[derive(Clone, Copy, Debug)] pub struct slurm_shim_cpu_set_t { pub __bits: [c_ulong; 16] }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_sched_getaffinity(pid: pid_t, cpusetsize: size_t, mask: *mut slurm_shim_cpu_set_t) -> c_int { enosys() }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_sched_setaffinity(pid: pid_t, cpusetsize: size_t, mask: *const slurm_shim_cpu_set_t) -> c_int { enosys() }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_sched_cpucount(setsize: size_t, set: *const slurm_shim_cpu_set_t) -> c_int { 0 }
#[unsafe(no_mangle)] pub extern "C" fn slurm_shim_sched_cpualloc(count: size_t) -> *mut slurm_shim_cpu_set_t { core::ptr::null_mut() }
#[unsafe(no_mangle)] pub unsafe extern "C" fn slurm_shim_sched_cpufree(set: *mut slurm_shim_cpu_set_t) {}
