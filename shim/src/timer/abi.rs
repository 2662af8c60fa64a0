//! The C ABI of the POSIX per-process timers (timer.rs): `timer_create(2)` and its
//! siblings, each counted (count.rs).

use super::*;

fn c_result(f: impl FnOnce() -> Result<c_int, Errno>) -> c_int {
    let saved = errno::get();
    let r = f();
    errno::set(saved);
    errno::to_c(r)
}

/// `timer_create(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_timer_create(
    clockid: clockid_t,
    sevp: *mut sigevent,
    timerid: *mut slurm_shim_timer_t,
) -> c_int {
    crate::counted!(slurm_shim_timer_create);
    c_result(|| {
        let clock = ClockKind::from_clockid(clockid)?;
        // SAFETY: `sevp` is NULL or the caller's readable sigevent (timer_create's contract).
        let notify = unsafe { Notify::from_sigevent(sevp) }?;
        if timerid.is_null() {
            return Err(Errno(libc::EFAULT));
        }
        let id = global().create(clock, notify)?;
        // SAFETY: `timerid` is non-null and, by contract, writable.
        unsafe { *timerid = id as slurm_shim_timer_t };
        Ok(0)
    })
}

/// `timer_settime(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_timer_settime(
    timerid: slurm_shim_timer_t,
    flags: c_int,
    new_value: *const slurm_shim_itimerspec,
    old_value: *mut slurm_shim_itimerspec,
) -> c_int {
    crate::counted!(slurm_shim_timer_settime);
    c_result(|| {
        if new_value.is_null() {
            return Err(Errno(libc::EINVAL));
        }
        // SAFETY: `new_value` is non-null and, by contract, readable.
        let new = unsafe { *new_value };
        let old = global().settime(timerid as usize, flags, &new)?;
        if !old_value.is_null() {
            // SAFETY: `old_value` is non-null and, by contract, writable.
            unsafe { *old_value = old };
        }
        Ok(0)
    })
}

/// `timer_gettime(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_timer_gettime(
    timerid: slurm_shim_timer_t,
    curr_value: *mut slurm_shim_itimerspec,
) -> c_int {
    crate::counted!(slurm_shim_timer_gettime);
    c_result(|| {
        let value = global().gettime(timerid as usize)?;
        if curr_value.is_null() {
            return Err(Errno(libc::EFAULT));
        }
        // SAFETY: `curr_value` is non-null and, by contract, writable.
        unsafe { *curr_value = value };
        Ok(0)
    })
}

/// `timer_getoverrun(2)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_timer_getoverrun(timerid: slurm_shim_timer_t) -> c_int {
    crate::counted!(slurm_shim_timer_getoverrun);
    c_result(|| global().getoverrun(timerid as usize))
}

/// `timer_delete(2)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_timer_delete(timerid: slurm_shim_timer_t) -> c_int {
    crate::counted!(slurm_shim_timer_delete);
    c_result(|| global().delete(timerid as usize).map(|()| 0))
}
