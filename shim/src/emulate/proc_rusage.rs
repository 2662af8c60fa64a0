//! `proc_pid_rusage`: macOS's per-process resource usage (CPU time, memory footprint and its
//! peak, disk I/O), answered from Linux's `/proc` (darwin personality only).
//!
//! macOS behaviour emulated (SDK `libproc.h`, `sys/resource.h`; xnu-11417.101.15
//! bsd/kern/proc_info.c `proc_pid_rusage`, bsd/kern/kern_resource.c `gather_rusage_info`,
//! osfmk/kern/bsd_kern.c `fill_task_rusage`/`fill_task_io_rusage`):
//!
//! * `proc_pid_rusage(pid, flavor, buffer)` fills `struct rusage_info_v<flavor>` (V0 96
//!   bytes, V1 144, V2 160, V3 232, V4 296, V5 304, V6 464) and returns 0, or -1 with
//!   `errno`: `ESRCH` (no such process), `EINVAL` (flavor above V6), `EPERM` (another
//!   user's process and the caller not root: `CHECK_SAME_USER`), `EFAULT` (NULL buffer).
//!   A zombie is answered, with footprint 0 (its task is gone: kern_exit.c). One call
//!   reads one record: all of it, or `ESRCH` for a process that is gone.
//! * `ri_user_time`, `ri_system_time`, `ri_child_*_time`, `ri_proc_start_abstime` are in
//!   Mach absolute time units, **not** nanoseconds (`task_power_info`'s `total_user`):
//!   multiply by `mach_timebase_info`'s `numer/denom` ([`super::timebase`]).
//! * `ri_phys_footprint`: the memory macOS charges to the process (anonymous and
//!   compressed memory, IOKit and GPU buffers; Activity Monitor's "Memory");
//!   `ri_resident_size`: resident pages; `ri_lifetime_max_phys_footprint` (V4+): the peak
//!   footprint over the process's life.
//! * `ri_diskio_bytesread` / `ri_diskio_byteswritten` (V2+): bytes read from and written to
//!   storage (`task_io_stats`: `disk_reads`, and `total_io - disk_reads`), not bytes passed
//!   to `read(2)`/`write(2)`; `ri_logical_writes` (V4+): bytes written through the file
//!   system, cached or not.
//!
//! Linux mechanism: `/proc/<pid>/stat` (times in clock ticks, start time, major faults),
//! `status` (`VmRSS`, `RssAnon`, `VmSwap`, `VmHWM`) and `io`, one read each
//! ([`procfs::read_into`]). A process reaped between these reads would leave `status` or
//! `io` unread and its disk figures 0 (an exiting process's last record, which
//! `jobacct_gather/darwin` keeps for its task): when either is missing, `stat` is read again,
//! and a process gone (or replaced: another start time) is `ESRCH`, as on macOS:
//!
//! | macOS field | Linux reading |
//! |---|---|
//! | `ri_user_time`, `ri_system_time` | `utime`, `stime` → ns → Mach units |
//! | `ri_child_user_time`, `ri_child_system_time` | `cutime`, `cstime` (waited-for children) |
//! | `ri_proc_start_abstime` | `starttime` → ns since boot → Mach units |
//! | `ri_phys_footprint` | `RssAnon + VmSwap` (anonymous memory, resident or swapped) |
//! | `ri_resident_size` | `VmRSS` |
//! | `ri_lifetime_max_phys_footprint` | max(`VmHWM`, the footprint) |
//! | `ri_diskio_bytesread` | `read_bytes` |
//! | `ri_diskio_byteswritten` | `write_bytes - cancelled_write_bytes` |
//! | `ri_logical_writes` | `wchar` |
//! | `ri_pageins` | `majflt` |
//!
//! So the emulated disk figures are physical I/O as on macOS: `jobacct_gather/linux` reports
//! `rchar`/`wchar` instead (every byte through `read`/`write`, page cache hits included).
//!
//! Portability problems not fixed: Linux's peak (`VmHWM`) is of the resident set, file-backed
//! pages included, not of the anonymous footprint, so the emulated peak can exceed the
//! footprint's real peak by the process's resident file pages (its libraries, a few MiB);
//! GPU memory is not in the footprint (Linux has no unified-memory ledger); `write_bytes`
//! is charged to the process that dirtied a page, at dirtying time, where macOS charges
//! the write when it is issued; wakeups, QoS times, energy, instructions and cycles are 0;
//! `ri_uuid` is zero; `/proc/<pid>/io` of another user's process needs `CAP_SYS_PTRACE`, so
//! a root caller sees it and the same-user rule above covers the rest.
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, c_void};

use super::proc_bsdinfo::{check_same_user, lookup};
use super::procfs::{self, ProcIo, ProcStat, ProcStatus};
use super::{report, timebase};
use crate::errno::{self, Errno};

/// `RUSAGE_INFO_V6`, the newest flavor (`RUSAGE_INFO_CURRENT`).
pub const RUSAGE_INFO_V6: c_int = 6;
/// `RUSAGE_INFO_V4`.
pub const RUSAGE_INFO_V4: c_int = 4;

/// The size of `struct rusage_info_v<flavor>` (SDK sys/resource.h, LP64).
pub const SIZES: [usize; 7] = [96, 144, 160, 232, 296, 304, 464];

/// `struct rusage_info_v6`; every older flavor is a prefix of it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rusage_info_v6 {
    pub ri_uuid: [u8; 16],
    pub ri_user_time: u64,
    pub ri_system_time: u64,
    pub ri_pkg_idle_wkups: u64,
    pub ri_interrupt_wkups: u64,
    pub ri_pageins: u64,
    pub ri_wired_size: u64,
    pub ri_resident_size: u64,
    pub ri_phys_footprint: u64,
    pub ri_proc_start_abstime: u64,
    pub ri_proc_exit_abstime: u64,
    // V1
    pub ri_child_user_time: u64,
    pub ri_child_system_time: u64,
    pub ri_child_pkg_idle_wkups: u64,
    pub ri_child_interrupt_wkups: u64,
    pub ri_child_pageins: u64,
    pub ri_child_elapsed_abstime: u64,
    // V2
    pub ri_diskio_bytesread: u64,
    pub ri_diskio_byteswritten: u64,
    // V3
    pub ri_cpu_time_qos_default: u64,
    pub ri_cpu_time_qos_maintenance: u64,
    pub ri_cpu_time_qos_background: u64,
    pub ri_cpu_time_qos_utility: u64,
    pub ri_cpu_time_qos_legacy: u64,
    pub ri_cpu_time_qos_user_initiated: u64,
    pub ri_cpu_time_qos_user_interactive: u64,
    pub ri_billed_system_time: u64,
    pub ri_serviced_system_time: u64,
    // V4
    pub ri_logical_writes: u64,
    pub ri_lifetime_max_phys_footprint: u64,
    pub ri_instructions: u64,
    pub ri_cycles: u64,
    pub ri_billed_energy: u64,
    pub ri_serviced_energy: u64,
    pub ri_interval_max_phys_footprint: u64,
    pub ri_runnable_time: u64,
    // V5
    pub ri_flags: u64,
    // V6
    pub ri_user_ptime: u64,
    pub ri_system_ptime: u64,
    pub ri_pinstructions: u64,
    pub ri_pcycles: u64,
    pub ri_energy_nj: u64,
    pub ri_penergy_nj: u64,
    pub ri_secure_time_in_system: u64,
    pub ri_secure_ptime_in_system: u64,
    pub ri_neural_footprint: u64,
    pub ri_lifetime_max_neural_footprint: u64,
    pub ri_interval_max_neural_footprint: u64,
    pub ri_conclave_footprint: u64,
    pub ri_page_wait_time_mach: u64,
    pub ri_page_cache_hits: u64,
    pub ri_reserved: [u64; 6],
}

/// The usage record of a process from its three Linux readings (`status`/`io` absent for a
/// zombie or an unreadable file: those fields stay 0).
pub fn usage_of(
    st: &ProcStat,
    status: Option<&ProcStatus>,
    io: Option<&ProcIo>,
    tb: timebase::Timebase,
) -> rusage_info_v6 {
    let units = |ticks: u64| tb.from_ns(procfs::ticks_to_ns(ticks));
    let mut ri = rusage_info_v6 {
        ri_user_time: units(st.utime),
        ri_system_time: units(st.stime),
        ri_child_user_time: units(st.cutime),
        ri_child_system_time: units(st.cstime),
        ri_proc_start_abstime: units(st.start_ticks),
        ri_pageins: st.majflt,
        ..Default::default()
    };
    if let Some(s) = status {
        ri.ri_resident_size = s.vm_rss;
        ri.ri_phys_footprint = s.rss_anon.saturating_add(s.vm_swap);
        ri.ri_lifetime_max_phys_footprint = s.vm_hwm.max(ri.ri_phys_footprint);
        ri.ri_interval_max_phys_footprint = ri.ri_lifetime_max_phys_footprint;
    }
    if let Some(io) = io {
        ri.ri_diskio_bytesread = io.read_bytes;
        ri.ri_diskio_byteswritten = io.write_bytes.saturating_sub(io.cancelled_write_bytes);
        ri.ri_logical_writes = io.wchar;
    }
    ri
}

/// `Ok` when `again` (`stat` read after a missing `status` or `io`) is still the process
/// `first` read; `ESRCH` when it is gone or another process has its pid.
fn still_there(first: &ProcStat, again: Option<ProcStat>) -> Result<(), Errno> {
    match again {
        Some(st) if st.start_ticks == first.start_ticks => Ok(()),
        _ => Err(Errno(libc::ESRCH)),
    }
}

/// The usage record `proc_pid_rusage(pid, flavor, ...)` gives, as the flavor's bytes.
pub fn rusage_bytes(pid: i32, flavor: c_int) -> Result<Vec<u8>, Errno> {
    let size = usize::try_from(flavor)
        .ok()
        .and_then(|f| SIZES.get(f))
        .copied()
        .ok_or(Errno(libc::EINVAL))?;
    let st = lookup(pid, true)?;
    let status = procfs::status_of(pid);
    if let Some(s) = &status {
        check_same_user(s.uids[1])?;
    }
    let io = procfs::io_of(pid);
    if status.is_none() || io.is_none() {
        still_there(&st, lookup(pid, true).ok())?;
    }
    let tb = timebase::current_or_default();
    let ri = usage_of(&st, status.as_ref(), io.as_ref(), tb);
    let mut bytes = super::proc_bsdinfo::bytes_of(&ri);
    bytes.truncate(size);
    Ok(bytes)
}

/// `proc_pid_rusage(3)` (macOS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_proc_pid_rusage(
    pid: c_int,
    flavor: c_int,
    buffer: *mut c_void,
) -> c_int {
    crate::counted!(slurm_shim_proc_pid_rusage);
    report::applied(
        "proc_pid_rusage (macOS libproc) answered from /proc/<pid>/stat, status and io; times in Mach units (darwin personality)",
    );
    if buffer.is_null() {
        errno::set(libc::EFAULT);
        return -1;
    }
    match errno::preserve(|| rusage_bytes(pid, flavor)) {
        Ok(bytes) => {
            // SAFETY: the caller's buffer holds the flavor's structure, `bytes.len()` bytes
            // (proc_pid_rusage(3)'s contract).
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.cast::<u8>(), bytes.len())
            };
            0
        }
        Err(Errno(e)) => {
            errno::set(e);
            -1
        }
    }
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn proc_rusage__sizes_match_the_sdk() {
        assert_eq!(std::mem::size_of::<rusage_info_v6>(), SIZES[6]);
        assert_eq!(
            std::mem::offset_of!(rusage_info_v6, ri_diskio_byteswritten),
            152
        );
        assert_eq!(
            std::mem::offset_of!(rusage_info_v6, ri_lifetime_max_phys_footprint),
            240
        );
        assert_eq!(std::mem::offset_of!(rusage_info_v6, ri_flags), 296);
    }

    #[test]
    fn proc_rusage__times_are_mach_units_of_the_timebase() {
        let st = ProcStat {
            utime: procfs::clock_ticks() * 2, // two seconds
            ..Default::default()
        };
        let apple = usage_of(&st, None, None, timebase::APPLE_SILICON);
        assert_eq!(apple.ri_user_time, 48_000_000);
        let intel = usage_of(&st, None, None, timebase::Timebase { numer: 1, denom: 1 });
        assert_eq!(intel.ri_user_time, 2_000_000_000);
    }

    #[test]
    fn proc_rusage__a_process_gone_between_the_reads_is_esrch() {
        let first = ProcStat {
            start_ticks: 4242,
            ..Default::default()
        };
        assert_eq!(still_there(&first, None), Err(Errno(libc::ESRCH)));
        let reused = ProcStat {
            start_ticks: 4343,
            ..Default::default()
        };
        assert_eq!(still_there(&first, Some(reused)), Err(Errno(libc::ESRCH)));
        assert_eq!(still_there(&first, Some(first.clone())), Ok(()));
    }

    #[test]
    fn proc_rusage__footprint_is_anonymous_memory_and_peak_at_least_it() {
        let status = ProcStatus {
            vm_rss: 300 << 20,
            rss_anon: 280 << 20,
            vm_swap: 10 << 20,
            vm_hwm: 100 << 20,
            ..Default::default()
        };
        let io = ProcIo {
            write_bytes: 64 << 20,
            cancelled_write_bytes: 1 << 20,
            wchar: 70 << 20,
            ..Default::default()
        };
        let ri = usage_of(
            &ProcStat::default(),
            Some(&status),
            Some(&io),
            timebase::APPLE_SILICON,
        );
        assert_eq!(ri.ri_phys_footprint, 290 << 20);
        assert_eq!(ri.ri_lifetime_max_phys_footprint, 290 << 20);
        assert_eq!(ri.ri_diskio_byteswritten, 63 << 20);
        assert_eq!(ri.ri_logical_writes, 70 << 20);
    }
}
