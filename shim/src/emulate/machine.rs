//! Facts about the modelled Mac (Apple Silicon, macOS 13 or later) that several models share,
//! and the Linux readings they are derived from.
//!
//! * **Virtual size.** XNU compares a new `RLIMIT_AS`/`RLIMIT_DATA` with the whole size of the
//!   task's VM map (`map->size`, osfmk/vm/vm_map.c `vm_map_set_size_limit` /
//!   `vm_map_set_data_limit`, xnu-11417.101.15), reserved ranges included. On Apple Silicon
//!   even a trivial process maps hundreds of GiB: `ps -o vsz` / psutil report 389.4 GiB for
//!   a fresh Python on an M1 (macOS 11, giampaolo/psutil issue 1908), 410800144 KiB for Notes
//!   (macOS 12.4, andrewdavidmackenzie/libproc-rs issue 68), 411105984 KiB for a Ruby server
//!   (socketry/process-metrics issue 3); the proof of concept's slurmstepd had more than
//!   128 GiB (`_prlimit(RLIMIT_RSS, 131072 MB): Invalid argument`, ../shared/docs/POC-DEFECTS.md).
//!   The dyld shared region alone is 6 GiB (`SHARED_REGION_SIZE_ARM64` 0x180000000,
//!   osfmk/mach/shared_region.h); the rest is reserved address space (allocator and GPU
//!   reservations) that the observations show but no source file states. The model takes
//!   [`BASELINE_VSIZE`] (the smallest figure observed, 389 GiB) plus the process's real Linux
//!   virtual size.
//! * **Open files.** `kern.maxfilesperproc` is `maxfiles / 2` with `maxfiles = 3 * OPEN_MAX *
//!   scale` once `scale > 2` (bsd/dev/unix_startup.c `bsd_scale_setup`, bsd/conf/param.c),
//!   where `scale = min(16, memory / 4 GiB)` for 8 GiB or more, 2 for 3-8 GiB
//!   (osfmk/kern/startup.c), `OPEN_MAX = 10240` (bsd/sys/syslimits.h); 16 GiB gives 61440.
//!   [`maxfilesperproc`] applies that rule to this machine's memory.
//! * **Groups.** `NGROUPS_MAX` is 16 (bsd/sys/syslimits.h).
//! * **`RLIM_INFINITY`** is `(1 << 63) - 1` on macOS (sys/resource.h), not glibc's `~0`.
//!
//! Portability problems not fixed: the baseline is one constant; a Mac's real figure varies
//! by model and macOS release (the observations span 389-392 GiB), and x86_64 Macs map far
//! less (their shared region is 1 GiB). Server performance mode's scaling is not modelled.

/// macOS's `RLIM_INFINITY` (also `RLIM_SAVED_MAX`/`RLIM_SAVED_CUR`).
pub const MAC_RLIM_INFINITY: u64 = (1 << 63) - 1;

/// The address space an Apple Silicon process maps before it does anything (389 GiB).
pub const BASELINE_VSIZE: u64 = 389 << 30;

/// macOS's `NGROUPS_MAX`.
pub const NGROUPS_MAX: usize = 16;

/// macOS's `OPEN_MAX` (bsd/sys/syslimits.h).
pub const OPEN_MAX: u64 = 10240;

/// This process's virtual size on Linux (`/proc/self/statm`, first field, in pages).
pub fn linux_vsize() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = text.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages.checked_mul(u64::try_from(page).ok()?)
}

/// The modelled Mac's virtual size of this process: the Apple Silicon baseline plus the
/// process's own Linux mappings.
pub fn mac_vsize() -> u64 {
    BASELINE_VSIZE.saturating_add(linux_vsize().unwrap_or(0))
}

/// `kern.maxfilesperproc` for a Mac with `memory` bytes (not in server performance mode).
pub fn maxfilesperproc_for(memory: u64) -> u64 {
    const GIB: u64 = 1 << 30;
    let scale = if memory >= 8 * GIB {
        (memory / (4 * GIB)).min(16)
    } else if memory >= 3 * GIB {
        2
    } else {
        1
    };
    if scale > 2 {
        3 * OPEN_MAX * scale / 2
    } else {
        OPEN_MAX
    }
}

/// `kern.maxfilesperproc` for a Mac with this machine's memory.
pub fn maxfilesperproc() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let memory = u64::try_from(pages)
        .unwrap_or(0)
        .saturating_mul(u64::try_from(size).unwrap_or(0));
    maxfilesperproc_for(memory)
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn machine__maxfilesperproc_follows_bsd_scale_setup() {
        const GIB: u64 = 1 << 30;
        assert_eq!(maxfilesperproc_for(2 * GIB), 10240);
        assert_eq!(maxfilesperproc_for(4 * GIB), 10240);
        assert_eq!(maxfilesperproc_for(16 * GIB), 61440);
        assert_eq!(maxfilesperproc_for(36 * GIB), 138240);
        assert_eq!(maxfilesperproc_for(128 * GIB), 245760);
    }

    #[test]
    fn machine__mac_vsize_exceeds_the_baseline_and_a_typical_mem_request() {
        let v = mac_vsize();
        assert!(v > BASELINE_VSIZE);
        assert!(
            v > 131072 << 20,
            "the PoC's 131072 MB limit must be below it"
        );
        assert!(linux_vsize().is_some_and(|l| l < v));
    }
}
