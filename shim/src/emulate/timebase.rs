//! `mach_timebase_info` and `mach_absolute_time`: macOS's clock of CPU-time accounting,
//! answered from Linux (darwin personality only).
//!
//! macOS behaviour emulated (SDK `mach/mach_time.h`; xnu-11417.101.15
//! libsyscall/wrappers/mach_timebase_info.c, and osfmk/arm/rtclock.c, which reduces
//! 10^9 / timer frequency to `numer/denom`): times kept in
//! "Mach absolute time" units, such as `proc_pid_rusage`'s `ri_user_time`/`ri_system_time`
//! and `ri_proc_start_abstime`, are converted to nanoseconds by `ns = t * numer / denom`.
//! Intel Macs answer 1/1 (units are nanoseconds); Apple Silicon answers **125/3**: one unit
//! is 125/3 ns (the 24 MHz timer, `hw.tbfrequency` 24000000; psutil pull request 2728). Code
//! that takes the units for nanoseconds (HTCondor does, for `proc_pid_rusage`) reports 3/125
//! of the real time on Apple Silicon. `mach_absolute_time()` does not advance while the machine sleeps.
//!
//! Linux mechanism: the timebase is 125/3 (the modelled Mac is Apple Silicon, as the
//! personality's 16 KiB `hw.pagesize` is), or what `SLURM_SHIM_MACH_TIMEBASE=<numer>/<denom>`
//! says (`1/1` models an Intel Mac or a Rosetta 2 process); the variable is read once per
//! process. A value that is not two integers 1..2^32-1 makes `mach_timebase_info` fail with
//! `KERN_INVALID_ARGUMENT` and writes one report line naming the variable and the fix: a
//! typo never silently changes every CPU time. `mach_absolute_time()` is
//! `CLOCK_MONOTONIC_RAW` (which does not count suspend either) in those units.
//!
//! Portability problems not fixed: the real Apple Silicon counter ticks at 24 MHz, so real
//! values are multiples of one unit; here nanosecond values are scaled, and rounding
//! down makes a converted duration up to one unit (42 ns) short.
#![allow(clippy::missing_safety_doc)]

use libc::c_int;
use std::sync::OnceLock;

use super::report;

/// The variable that chooses the timebase.
pub const ENV: &str = "SLURM_SHIM_MACH_TIMEBASE";

/// Apple Silicon's timebase.
pub const APPLE_SILICON: Timebase = Timebase {
    numer: 125,
    denom: 3,
};

/// `kern_return_t` values (SDK `mach/kern_return.h`).
pub const KERN_SUCCESS: c_int = 0;
/// `KERN_INVALID_ARGUMENT`.
pub const KERN_INVALID_ARGUMENT: c_int = 4;

/// `struct mach_timebase_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timebase {
    /// Numerator of the units-to-nanoseconds ratio.
    pub numer: u32,
    /// Denominator.
    pub denom: u32,
}

impl Timebase {
    /// Mach absolute time units in `ns` nanoseconds (rounded down).
    pub fn from_ns(self, ns: u64) -> u64 {
        ((ns as u128) * self.denom as u128 / self.numer as u128).min(u64::MAX as u128) as u64
    }

    /// Nanoseconds in `units` Mach absolute time units (rounded down).
    pub fn to_ns(self, units: u64) -> u64 {
        ((units as u128) * self.numer as u128 / self.denom as u128).min(u64::MAX as u128) as u64
    }
}

/// Parses a `SLURM_SHIM_MACH_TIMEBASE` value (`<numer>/<denom>`, both 1..2^32-1).
pub fn parse(value: &str) -> Option<Timebase> {
    let (n, d) = value.trim().split_once('/')?;
    let numer: u32 = n.trim().parse().ok()?;
    let denom: u32 = d.trim().parse().ok()?;
    (numer > 0 && denom > 0).then_some(Timebase { numer, denom })
}

/// The timebase for a value of the variable (`None`: unset), or `None` if it is malformed.
pub fn choose(value: Option<&str>) -> Option<Timebase> {
    match value {
        None => Some(APPLE_SILICON),
        Some(v) => parse(v),
    }
}

/// This process's timebase, or `None` if `SLURM_SHIM_MACH_TIMEBASE` is malformed.
pub fn current() -> Option<Timebase> {
    static TB: OnceLock<Option<Timebase>> = OnceLock::new();
    *TB.get_or_init(|| {
        let raw = std::env::var(ENV).ok();
        let tb = choose(raw.as_deref());
        if tb.is_none() {
            report::applied(
                "mach_timebase_info -> KERN_INVALID_ARGUMENT: SLURM_SHIM_MACH_TIMEBASE is not <numer>/<denom> with both 1..4294967295 (use 125/3 for Apple Silicon, 1/1 for Intel; unset means 125/3)",
            );
        }
        tb
    })
}

/// This process's timebase for conversions that cannot fail (a malformed variable was
/// reported by [`current`]; the conversions then use Apple Silicon's).
pub fn current_or_default() -> Timebase {
    current().unwrap_or(APPLE_SILICON)
}

/// `mach_timebase_info(3)` (macOS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_mach_timebase_info(info: *mut Timebase) -> c_int {
    crate::counted!(slurm_shim_mach_timebase_info);
    report::applied(
        "mach_timebase_info (macOS) answered with the modelled Mac's timebase (Apple Silicon 125/3 unless SLURM_SHIM_MACH_TIMEBASE) (darwin personality)",
    );
    if info.is_null() {
        return KERN_INVALID_ARGUMENT;
    }
    match current() {
        Some(tb) => {
            // SAFETY: `info` is non-NULL and points at the caller's struct.
            unsafe { info.write(tb) };
            KERN_SUCCESS
        }
        None => KERN_INVALID_ARGUMENT,
    }
}

/// `mach_absolute_time(3)` (macOS): `CLOCK_MONOTONIC_RAW` in Mach units.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_mach_absolute_time() -> u64 {
    crate::counted!(slurm_shim_mach_absolute_time);
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    let ns = (ts.tv_sec.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec.max(0) as u64);
    current_or_default().from_ns(ns)
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn timebase__apple_silicon_units_are_125_thirds_of_a_nanosecond() {
        // 24 MHz: one second is 24,000,000 units.
        assert_eq!(APPLE_SILICON.from_ns(1_000_000_000), 24_000_000);
        assert_eq!(APPLE_SILICON.to_ns(24_000_000), 1_000_000_000);
    }

    #[test]
    fn timebase__unset_is_apple_silicon_and_values_are_checked() {
        assert_eq!(choose(None), Some(APPLE_SILICON));
        assert_eq!(choose(Some("1/1")), Some(Timebase { numer: 1, denom: 1 }));
        assert_eq!(choose(Some(" 125 / 3 ")), Some(APPLE_SILICON));
        for bad in ["", "125", "0/1", "1/0", "a/b", "1/4294967296", "-1/3"] {
            assert_eq!(choose(Some(bad)), None, "{bad:?}");
        }
    }
}
