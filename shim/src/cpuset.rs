//! CPU affinity masks: `cpu_set_t`, `sched_getaffinity`, `sched_setaffinity` and the helpers
//! behind the header's `CPU_COUNT_S`, `CPU_ALLOC` and `CPU_FREE` macros.
//!
//! Linux behaviour emulated (sched_setaffinity(2), CPU_SET(3), glibc `sysdeps/unix/sysv/
//! linux/sched_getaffinity.c`, `posix/sched_cpucount.c`, `posix/sched_cpualloc.c`):
//! * `cpu_set_t` is 1024 bits stored as an array of `unsigned long` (`__bits`), CPU `i` is
//!   bit `i % 64` of word `i / 64`.
//! * `sched_getaffinity(pid, size, mask)`: `EINVAL` when `size * 8` is smaller than the
//!   number of CPUs or `size` is not a multiple of `sizeof(unsigned long)`; `ESRCH` for a
//!   negative or unknown pid; `EFAULT` for a NULL mask; otherwise the whole `size` bytes are
//!   written (glibc zero-fills what the kernel does not write) and 0 is returned.
//! * `__sched_cpucount(size, set)`: popcount over `size / sizeof(unsigned long)` words.
//! * `__sched_cpualloc(count)`: `malloc(CPU_ALLOC_SIZE(count))` with
//!   `CPU_ALLOC_SIZE(count) = ((count + 63) / 64) * 8`; freed with `free`.
//!
//! macOS mechanism: macOS has no hard CPU affinity (thread affinity tags are hints only),
//! so every thread of every process may run on every online CPU. `sched_getaffinity`
//! therefore reports all online CPUs, `sysctlbyname("hw.logicalcpu")` (falling back to
//! `sysconf(_SC_NPROCESSORS_ONLN)`); Slurm sizes its worker pool from this count
//! (DARWIN-CATALOG A6), so it must not fail. Another process's pid is checked for existence
//! with `kill(pid, 0)` (`EPERM` means it exists). On Linux the same logic runs with the CPU
//! count from `sysconf(_SC_NPROCESSORS_ONLN)` through the [`CpuOs`] seam.
//!
//! `sched_setaffinity` validates like Linux (`EFAULT` for a NULL mask with a non-zero size,
//! `ESRCH`, `EINVAL` when the mask names no online CPU), then succeeds only when the mask
//! contains every online CPU (that is exactly the state macOS provides); any real pinning
//! request fails with `ENOTSUP`. It never reports a pinning it did not do.
//!
//! Portability problems not fixed:
//! * CPU pinning itself (task/affinity, `--cpu-bind`): `sched_setaffinity` with a partial
//!   mask returns `ENOTSUP` on macOS.
//! * The `EINVAL` size check uses the online CPU count, where Linux uses the number of
//!   possible CPUs (`nr_cpu_ids`); they differ only on systems with offline CPUs.
//! * Online CPUs are assumed to be numbered `0..n-1` (true on macOS).
//! * The mask words are read and written as native-endian `unsigned long`s, as glibc does.
#![allow(clippy::missing_safety_doc)]

use core::mem::size_of;

use libc::{c_int, c_ulong, c_void, pid_t, size_t};

use crate::errno::{self, Errno};

/// Bits per mask word (`__NCPUBITS`).
const WORD_BITS: usize = c_ulong::BITS as usize;

/// `cpu_set_t`: 1024 bits, the same layout as glibc's.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct slurm_shim_cpu_set_t {
    /// The mask words (`__bits` in glibc).
    pub __bits: [c_ulong; 16],
}

// 16 words of 64 bits: CPU_SETSIZE (1024) on every LP64 target the shim is built for.
const _: () = assert!(16 * WORD_BITS == 1024);

/// The OS mechanism under the emulation: how many CPUs are online, whether a pid exists.
pub trait CpuOs {
    /// Number of online CPUs (numbered `0..n-1`).
    fn online_cpus(&self) -> Result<usize, Errno>;
    /// This process's pid.
    fn own_pid(&self) -> pid_t;
    /// Whether process `pid > 0` exists (`Err(ESRCH)` if not).
    fn check_pid(&self, pid: pid_t) -> Result<(), Errno>;
}

/// The real OS.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealCpuOs;

impl CpuOs for RealCpuOs {
    fn online_cpus(&self) -> Result<usize, Errno> {
        #[cfg(target_vendor = "apple")]
        {
            let mut n: c_int = 0;
            let mut len: size_t = size_of::<c_int>();
            // SAFETY: the name is NUL-terminated, `n`/`len` are valid for writes of the
            // sizes given, no new value is passed.
            let rc = unsafe {
                libc::sysctlbyname(
                    c"hw.logicalcpu".as_ptr(),
                    (&raw mut n).cast::<c_void>(),
                    &mut len,
                    core::ptr::null_mut(),
                    0,
                )
            };
            if rc == 0 && len == size_of::<c_int>() && n > 0 {
                return Ok(n as usize);
            }
        }
        // SAFETY: sysconf has no memory-safety preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        if n > 0 {
            Ok(n as usize)
        } else {
            Err(Errno(libc::EINVAL))
        }
    }

    fn own_pid(&self) -> pid_t {
        // SAFETY: getpid has no preconditions.
        unsafe { libc::getpid() }
    }

    fn check_pid(&self, pid: pid_t) -> Result<(), Errno> {
        if pid <= 0 {
            return Err(Errno(libc::ESRCH));
        }
        // SAFETY: signal 0 only checks existence and permission; pid > 0 names one process.
        let rc = unsafe { libc::kill(pid, 0) };
        if rc == 0 {
            return Ok(());
        }
        match Errno::last() {
            Errno(libc::EPERM) => Ok(()),
            e => Err(e),
        }
    }
}

fn check_target(os: &impl CpuOs, pid: pid_t) -> Result<(), Errno> {
    if pid < 0 {
        return Err(Errno(libc::ESRCH));
    }
    if pid == 0 || pid == os.own_pid() {
        return Ok(());
    }
    errno::preserve(|| os.check_pid(pid))
}

/// Validates a `sched_getaffinity` request; returns the number of CPUs to report.
/// The caller checks the mask pointer afterwards (Linux reports `EFAULT` last).
pub fn getaffinity_impl(os: &impl CpuOs, pid: pid_t, cpusetsize: usize) -> Result<usize, Errno> {
    let ncpus = errno::preserve(|| os.online_cpus())?;
    if cpusetsize % size_of::<c_ulong>() != 0 || cpusetsize.saturating_mul(8) < ncpus {
        return Err(Errno(libc::EINVAL));
    }
    check_target(os, pid)?;
    Ok(ncpus)
}

/// Fills `words` with the mask of CPUs `0..ncpus` (zero elsewhere).
pub fn fill_mask(words: &mut [c_ulong], ncpus: usize) {
    for (i, w) in words.iter_mut().enumerate() {
        let lo = i * WORD_BITS;
        *w = if ncpus >= lo + WORD_BITS {
            c_ulong::MAX
        } else if ncpus > lo {
            (1 << (ncpus - lo)) - 1
        } else {
            0
        };
    }
}

/// `sched_setaffinity` on a mask given as native-endian bytes (`None`: NULL pointer).
/// `Ok(())` only when the mask contains every online CPU; a pinning request is `ENOTSUP`.
pub fn setaffinity_impl(os: &impl CpuOs, pid: pid_t, mask: Option<&[u8]>) -> Result<(), Errno> {
    let Some(bytes) = mask else {
        return Err(Errno(libc::EFAULT));
    };
    check_target(os, pid)?;
    let ncpus = errno::preserve(|| os.online_cpus())?;
    let is_set = |cpu: usize| {
        bytes
            .get(cpu / 8)
            .is_some_and(|b| b & (1 << (cpu % 8)) != 0)
    };
    let mut any = false;
    let mut all = true;
    for cpu in 0..ncpus {
        if is_set(cpu) {
            any = true;
        } else {
            all = false;
        }
    }
    if !any {
        return Err(Errno(libc::EINVAL));
    }
    if all {
        Ok(())
    } else {
        Err(Errno(libc::ENOTSUP))
    }
}

/// Counts the set bits of the first `setsize / sizeof(unsigned long)` words.
pub fn cpucount_impl(words: &[c_ulong]) -> c_int {
    words.iter().map(|w| w.count_ones() as c_int).sum()
}

/// `CPU_ALLOC_SIZE(count)`, or `None` on overflow.
pub fn alloc_size(count: usize) -> Option<usize> {
    Some(count.checked_add(WORD_BITS - 1)? / WORD_BITS * size_of::<c_ulong>())
}

/// `sched_getaffinity(2)`: every online CPU, see the module documentation.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_sched_getaffinity(
    pid: pid_t,
    cpusetsize: size_t,
    mask: *mut slurm_shim_cpu_set_t,
) -> c_int {
    crate::counted!(slurm_shim_sched_getaffinity);
    errno::to_c(
        getaffinity_impl(&RealCpuOs, pid, cpusetsize).and_then(|ncpus| {
            if mask.is_null() {
                return Err(Errno(libc::EFAULT));
            }
            // SAFETY: the caller provides `cpusetsize` writable bytes at `mask`, aligned for
            // `unsigned long` like every cpu_set_t (CPU_ALLOC and the type guarantee it);
            // cpusetsize is a multiple of the word size (checked above).
            let words = unsafe {
                core::slice::from_raw_parts_mut(
                    mask.cast::<c_ulong>(),
                    cpusetsize / size_of::<c_ulong>(),
                )
            };
            fill_mask(words, ncpus);
            Ok(0)
        }),
    )
}

/// `sched_setaffinity(2)`: validates, then `ENOTSUP` unless the mask allows every CPU.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_sched_setaffinity(
    pid: pid_t,
    cpusetsize: size_t,
    mask: *const slurm_shim_cpu_set_t,
) -> c_int {
    crate::counted!(slurm_shim_sched_setaffinity);
    let bytes = if cpusetsize == 0 {
        Some(&[][..])
    } else if mask.is_null() {
        None
    } else {
        // SAFETY: the caller provides `cpusetsize` readable bytes at `mask`.
        Some(unsafe { core::slice::from_raw_parts(mask.cast::<u8>(), cpusetsize) })
    };
    errno::to_c(setaffinity_impl(&RealCpuOs, pid, bytes).map(|()| 0))
}

/// glibc's `__sched_cpucount`, behind `CPU_COUNT_S` / `CPU_COUNT`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_sched_cpucount(
    setsize: size_t,
    set: *const slurm_shim_cpu_set_t,
) -> c_int {
    crate::counted!(slurm_shim_sched_cpucount);
    let n = setsize / size_of::<c_ulong>();
    if set.is_null() || n == 0 {
        return 0;
    }
    // SAFETY: the caller provides `setsize` readable, word-aligned bytes at `set`.
    let words = unsafe { core::slice::from_raw_parts(set.cast::<c_ulong>(), n) };
    cpucount_impl(words)
}

/// glibc's `__sched_cpualloc`, behind `CPU_ALLOC`: zeroed memory of
/// `CPU_ALLOC_SIZE(count)` bytes from `calloc`, or NULL with `errno = ENOMEM`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_sched_cpualloc(count: size_t) -> *mut slurm_shim_cpu_set_t {
    crate::counted!(slurm_shim_sched_cpualloc);
    let Some(size) = alloc_size(count) else {
        errno::set(libc::ENOMEM);
        return core::ptr::null_mut();
    };
    // SAFETY: calloc has no preconditions; the result is NULL or `size` zeroed bytes
    // aligned for any fundamental type.
    unsafe { libc::calloc(1, size) }.cast::<slurm_shim_cpu_set_t>()
}

/// glibc's `__sched_cpufree`, behind `CPU_FREE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_sched_cpufree(set: *mut slurm_shim_cpu_set_t) {
    crate::counted!(slurm_shim_sched_cpufree);
    // SAFETY: the caller passes NULL or a pointer from slurm_shim_sched_cpualloc (malloc).
    unsafe { libc::free(set.cast::<c_void>()) }
}
