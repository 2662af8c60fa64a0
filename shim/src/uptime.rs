//! `sysinfo`: uptime, load averages and total memory.
//!
//! Linux behaviour emulated (sysinfo(2)): fills `struct sysinfo`; `uptime` is the time since
//! boot in whole seconds (the kernel rounds a partial second up), `loads` are the 1, 5 and
//! 15 minute load averages scaled by `1 << SI_LOAD_SHIFT` (16), `totalram * mem_unit` is
//! the physical memory in bytes. Returns 0, or -1 with `EFAULT` for a NULL pointer.
//!
//! macOS mechanism: Slurm's Darwin branch uses `times()`, which on macOS counts from the
//! Epoch, so slurmd reported ~56 years of uptime (DARWIN-CATALOG B3). The shim computes
//! `now - kern.boottime` (sysctl `{CTL_KERN, KERN_BOOTTIME}` → `struct timeval`, see
//! sysctl(3)), rejecting a boot time that is not positive, has `tv_usec` out of
//! `[0, 1000000)` or lies in the future (`EINVAL`: no honest uptime exists then; XNU keeps
//! `kern.boottime` consistent when the wall clock is set, so this is not expected).
//! `getloadavg(3)` gives the loads, `hw.memsize` the memory and `vm.page_free_count` times the
//! page size the free memory (the kernel's free-page queue, which is what `vm_stat` reports
//! as "Pages free" and what Linux's `freeram` counts: neither includes reclaimable caches),
//! with `mem_unit = 1`. On Linux the same logic runs through the [`UptimeOs`] seam, with the
//! boot time derived from `CLOCK_REALTIME - CLOCK_BOOTTIME` and memory from `sysconf`
//! (`_SC_AVPHYS_PAGES` is glibc's `freeram`).
//!
//! `struct sysinfo` is [`slurm_shim_sysinfo`], laid out exactly like glibc's on LP64
//! (112 bytes); the header must map `struct sysinfo` onto it.
//!
//! Portability problems not fixed: `sharedram`, `bufferram`, `totalswap`, `freeswap`,
//! `procs`, `totalhigh` and `freehigh` are 0 (Slurm reads `uptime`, `loads[1]`, `freeram`
//! and `mem_unit`: src/slurmd/slurmd/get_mach_stat.c). Load averages that `getloadavg`
//! cannot provide are 0; a free-memory query that fails gives `freeram = 0` rather than
//! failing the call (uptime matters more to Slurm).
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, c_long, c_uint, c_ulong, c_ushort, timeval};

use crate::errno::{self, Errno};

/// glibc's `struct sysinfo` on LP64.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct slurm_shim_sysinfo {
    /// Seconds since boot.
    pub uptime: c_long,
    /// 1, 5 and 15 minute load averages, scaled by 65536.
    pub loads: [c_ulong; 3],
    /// Total usable main memory, in `mem_unit`s.
    pub totalram: c_ulong,
    /// Available memory (0: not provided).
    pub freeram: c_ulong,
    /// Shared memory (0: not provided).
    pub sharedram: c_ulong,
    /// Buffer memory (0: not provided).
    pub bufferram: c_ulong,
    /// Total swap (0: not provided).
    pub totalswap: c_ulong,
    /// Free swap (0: not provided).
    pub freeswap: c_ulong,
    /// Number of processes (0: not provided).
    pub procs: c_ushort,
    /// Explicit padding, as glibc's `pad`.
    pub pad: c_ushort,
    /// High memory (0).
    pub totalhigh: c_ulong,
    /// Free high memory (0).
    pub freehigh: c_ulong,
    /// Unit of the memory fields, in bytes. (glibc's trailing
    /// `_f[20 - 2 * sizeof(long) - sizeof(int)]` is empty on LP64 and omitted: ISO C has no
    /// zero-length arrays.)
    pub mem_unit: c_uint,
}

/// The OS mechanism under the emulation.
pub trait UptimeOs {
    /// The wall-clock time now.
    fn now(&self) -> Result<timeval, Errno>;
    /// The wall-clock time of the boot (`kern.boottime`).
    fn boot_time(&self) -> Result<timeval, Errno>;
    /// `getloadavg`: up to three load averages; fewer if the OS gives fewer.
    fn loadavg(&self) -> ([f64; 3], usize);
    /// Physical memory in bytes.
    fn total_ram(&self) -> Result<u64, Errno>;
    /// Free (unused) physical memory in bytes.
    fn free_ram(&self) -> Result<u64, Errno>;
}

/// The real OS.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealUptimeOs;

fn clock(id: libc::clockid_t) -> Result<libc::timespec, Errno> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write.
    Errno::result(unsafe { libc::clock_gettime(id, &mut ts) })?;
    Ok(ts)
}

impl UptimeOs for RealUptimeOs {
    fn now(&self) -> Result<timeval, Errno> {
        let ts = clock(libc::CLOCK_REALTIME)?;
        Ok(timeval {
            tv_sec: ts.tv_sec,
            tv_usec: (ts.tv_nsec / 1000) as _,
        })
    }

    #[cfg(target_vendor = "apple")]
    fn boot_time(&self) -> Result<timeval, Errno> {
        let mut mib = [libc::CTL_KERN, libc::KERN_BOOTTIME];
        let mut tv = timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        let mut len = core::mem::size_of::<timeval>();
        // SAFETY: the mib has 2 entries; `tv`/`len` are writable with the sizes given.
        Errno::result(unsafe {
            libc::sysctl(
                mib.as_mut_ptr(),
                2,
                (&raw mut tv).cast::<libc::c_void>(),
                &mut len,
                core::ptr::null_mut(),
                0,
            )
        })?;
        if len != core::mem::size_of::<timeval>() {
            return Err(Errno(libc::EINVAL));
        }
        Ok(tv)
    }

    #[cfg(target_os = "linux")]
    fn boot_time(&self) -> Result<timeval, Errno> {
        let rt = clock(libc::CLOCK_REALTIME)?;
        let up = clock(libc::CLOCK_BOOTTIME)?;
        let ns = (rt.tv_sec as i128 * 1_000_000_000 + rt.tv_nsec as i128)
            - (up.tv_sec as i128 * 1_000_000_000 + up.tv_nsec as i128);
        let us = ns.div_euclid(1000);
        Ok(timeval {
            tv_sec: us.div_euclid(1_000_000) as libc::time_t,
            tv_usec: us.rem_euclid(1_000_000) as _,
        })
    }

    fn loadavg(&self) -> ([f64; 3], usize) {
        let mut l = [0f64; 3];
        // SAFETY: `l` has room for the 3 values requested.
        let n = unsafe { libc::getloadavg(l.as_mut_ptr(), 3) };
        (l, n.clamp(0, 3) as usize)
    }

    #[cfg(target_vendor = "apple")]
    fn total_ram(&self) -> Result<u64, Errno> {
        let mut v: u64 = 0;
        let mut len = core::mem::size_of::<u64>();
        // SAFETY: NUL-terminated name; `v`/`len` writable with the sizes given.
        Errno::result(unsafe {
            libc::sysctlbyname(
                c"hw.memsize".as_ptr(),
                (&raw mut v).cast::<libc::c_void>(),
                &mut len,
                core::ptr::null_mut(),
                0,
            )
        })?;
        Ok(v)
    }

    #[cfg(target_vendor = "apple")]
    fn free_ram(&self) -> Result<u64, Errno> {
        // An unsigned int sysctl: the kernel writes 4 bytes (little-endian) into the u64.
        let mut pages: u64 = 0;
        let mut len = core::mem::size_of::<u64>();
        // SAFETY: NUL-terminated name; `pages`/`len` writable with the sizes given.
        Errno::result(unsafe {
            libc::sysctlbyname(
                c"vm.page_free_count".as_ptr(),
                (&raw mut pages).cast::<libc::c_void>(),
                &mut len,
                core::ptr::null_mut(),
                0,
            )
        })?;
        if len != 4 && len != 8 {
            return Err(Errno(libc::EINVAL));
        }
        pages_to_bytes(pages as libc::c_long)
    }

    #[cfg(target_os = "linux")]
    fn free_ram(&self) -> Result<u64, Errno> {
        // SAFETY: sysconf has no memory-safety preconditions.
        pages_to_bytes(unsafe { libc::sysconf(libc::_SC_AVPHYS_PAGES) })
    }

    #[cfg(target_os = "linux")]
    fn total_ram(&self) -> Result<u64, Errno> {
        // SAFETY: sysconf has no memory-safety preconditions.
        let (pages, size) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages <= 0 || size <= 0 {
            return Err(Errno(libc::EINVAL));
        }
        (pages as u64)
            .checked_mul(size as u64)
            .ok_or(Errno(libc::EOVERFLOW))
    }
}

/// `pages` pages of `sysconf(_SC_PAGESIZE)` bytes, in bytes.
fn pages_to_bytes(pages: libc::c_long) -> Result<u64, Errno> {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if pages < 0 || size <= 0 {
        return Err(Errno(libc::EINVAL));
    }
    (pages as u64)
        .checked_mul(size as u64)
        .ok_or(Errno(libc::EOVERFLOW))
}

/// Whole seconds from `boot` to `now`, rounded up like Linux; `EINVAL` for an invalid or
/// future boot time.
// suseconds_t is i64 on Linux, i32 on Darwin: the conversion is needed there.
#[allow(clippy::useless_conversion)]
pub fn uptime_seconds(now: timeval, boot: timeval) -> Result<c_long, Errno> {
    let valid_usec = |t: &timeval| (0..1_000_000).contains(&i64::from(t.tv_usec));
    if boot.tv_sec <= 0 || !valid_usec(&boot) || !valid_usec(&now) {
        return Err(Errno(libc::EINVAL));
    }
    let us = (now.tv_sec as i128 - boot.tv_sec as i128) * 1_000_000
        + (now.tv_usec as i128 - boot.tv_usec as i128);
    if us < 0 {
        return Err(Errno(libc::EINVAL));
    }
    let secs = (us + 999_999) / 1_000_000;
    c_long::try_from(secs).map_err(|_| Errno(libc::EINVAL))
}

/// The safe core of `sysinfo`.
pub fn sysinfo_impl(os: &impl UptimeOs) -> Result<slurm_shim_sysinfo, Errno> {
    let boot = os.boot_time()?;
    let now = os.now()?;
    let uptime = uptime_seconds(now, boot)?;
    let (l, n) = os.loadavg();
    let mut loads = [0 as c_ulong; 3];
    for (dst, src) in loads.iter_mut().zip(l.iter()).take(n) {
        if src.is_finite() && *src >= 0.0 {
            *dst = (*src * 65536.0) as c_ulong;
        }
    }
    let total = os.total_ram()?;
    let free = os
        .free_ram()
        .ok()
        .and_then(|v| c_ulong::try_from(v).ok())
        .unwrap_or(0);
    Ok(slurm_shim_sysinfo {
        uptime,
        loads,
        totalram: c_ulong::try_from(total).map_err(|_| Errno(libc::EOVERFLOW))?,
        freeram: free,
        mem_unit: 1,
        ..Default::default()
    })
}

/// `sysinfo(2)` for `struct sysinfo` (mapped to [`slurm_shim_sysinfo`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_sysinfo(info: *mut slurm_shim_sysinfo) -> c_int {
    crate::counted!(slurm_shim_sysinfo);
    // Darwin personality (the only Linux user of the shim): name the call site, so the
    // scenarios show which macOS branch (patch 0012, get_mach_stat.c) ran.
    #[cfg(target_os = "linux")]
    crate::emulate::report::applied("sysinfo() on macOS is the shim's (patch 0012's macOS branch)");
    if info.is_null() {
        return errno::to_c(Err(Errno(libc::EFAULT)));
    }
    errno::to_c(errno::preserve(|| sysinfo_impl(&RealUptimeOs)).map(|v| {
        // SAFETY: `info` is non-NULL and points at a writable struct sysinfo.
        unsafe { info.write(v) };
        0
    }))
}
