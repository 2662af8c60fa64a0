//! `proc_pidinfo`'s process flavors: `PROC_PIDTBSDINFO`, `PROC_PIDT_SHORTBSDINFO`,
//! `PROC_PIDTASKINFO`, `PROC_PIDUNIQIDENTIFIERINFO` and `PROC_PIDT_BSDINFOWITHUNIQID`,
//! answered from Linux's `/proc` (darwin personality only; dispatched by
//! [`super::libproc::slurm_shim_proc_pidinfo`]).
//!
//! macOS behaviour emulated (xnu-11417.101.15 bsd/kern/proc_info.c `proc_pidinfo_internal`,
//! `proc_pidbsdinfo`, `proc_pidshortbsdinfo`, `proc_pidtaskinfo`,
//! `proc_piduniqidentifierinfo`, `proc_security_policy`; layouts from the SDK's
//! sys/proc_info.h and, for the two unique-id flavors, which the SDK does not declare,
//! bsd/sys/proc_info_private.h, where `struct proc_uniqidentifierinfo` is asserted to be 56
//! bytes and marked "This structure is API"):
//!
//! * The buffer must hold the flavor's structure, or the call fails with `ENOMEM`; the
//!   result is the number of bytes written. Failures return 0 with `errno` set (libproc).
//! * No such process: `ESRCH`. A zombie is found only when `arg` is non-zero (for the four
//!   BSD/unique-id flavors; `PROC_PIDTASKINFO` never finds one): `ESRCH` otherwise.
//! * `PROC_PIDTBSDINFO`, `PROC_PIDT_BSDINFOWITHUNIQID` and `PROC_PIDTASKINFO` need the
//!   caller's effective uid to be the target's, or root (`PRIV_GLOBAL_PROC_INFO`): `EPERM`
//!   otherwise; the short and unique-id flavors need no privilege.
//! * `p_uniqueid` is a 64-bit id never reused while the machine runs, `p_puniqueid` the
//!   parent's; XNU sets `p_puniqueid` at fork and leaves it alone when the process is
//!   re-parented to launchd, which is how a process tree is followed across a parent's
//!   exit (bsd/sys/proc_internal.h). `p_idversion` is the pid's generation, which an
//!   `audit_token_t` carries (see [`super::proc_signal`]).
//! * `pbi_flags` carries `PROC_FLAG_DARWINBG` when the process asked to run in the
//!   background (`setpriority(PRIO_DARWIN_PROCESS, 0, PRIO_DARWIN_BG)`,
//!   `proc_get_darwinbgstate`).
//! * `PROC_PIDTASKINFO`'s CPU times (`pti_total_user`, `pti_total_system`) are in Mach
//!   absolute time units, like `proc_pid_rusage`'s ([`super::timebase`]).
//!
//! Linux mechanism: `/proc/<pid>/stat` (ppid, pgid, session, state, tty, nice, start time,
//! times, threads, policy, and for `PROC_PIDTASKINFO` the sizes: `vsize`, `rss`), `status`
//! (uids, gids), read with [`procfs::read_into`]; `PROC_PIDTASKINFO`'s owner check is a
//! `stat` of `/proc/<pid>`. The unique id is pid plus start time ([`procfs::unique_id`]);
//! `p_puniqueid` is the *current* parent's.
//!
//! Portability problems not fixed: Linux cannot say who a re-parented process's original
//! parent was, so after re-parenting `p_puniqueid` (and `p_orig_ppidversion`) name the new
//! parent (init or a subreaper), where macOS keeps the original: code following trees
//! across a parent's exit by `p_puniqueid` is tested with a fake seam instead. `p_uuid`
//! (the executable's LC_UUID) is zero; `pbi_nfiles`, `pbi_pjobc`, `pbi_xstatus` and the
//! task info's message and system call counters are 0; `pti_threads_user/system` are the
//! process totals; `pti_resident_size` is `stat`'s `rss`, which Linux 6.2+ reads from the
//! per-CPU counters without summing them, off by up to one batch (max(32, 2 x CPUs) pages)
//! per CPU from `statm`'s and `status`'s summed figure (27 pages short for a `sleep` on
//! Linux 6.18), where macOS's is exact (nothing in Slurm or the plugins reads it);
//! `PROC_FLAG_DARWINBG` stands for the Linux process being `SCHED_IDLE`.
#![allow(clippy::missing_safety_doc)]

use libc::{c_char, c_int};

use super::procfs::{self, ProcStat, ProcStatus};
use super::sysctl::{SZOMB, mac_state};
use super::timebase;
use crate::errno::Errno;
use crate::uptime::{RealUptimeOs, UptimeOs};

/// `PROC_PIDTBSDINFO`.
pub const PROC_PIDTBSDINFO: c_int = 3;
/// `PROC_PIDTASKINFO`.
pub const PROC_PIDTASKINFO: c_int = 4;
/// `PROC_PIDT_SHORTBSDINFO`.
pub const PROC_PIDT_SHORTBSDINFO: c_int = 13;
/// `PROC_PIDUNIQIDENTIFIERINFO` (proc_info_private.h).
pub const PROC_PIDUNIQIDENTIFIERINFO: c_int = 17;
/// `PROC_PIDT_BSDINFOWITHUNIQID` (proc_info_private.h).
pub const PROC_PIDT_BSDINFOWITHUNIQID: c_int = 18;

/// `PROC_FLAG_LP64`.
pub const PROC_FLAG_LP64: u32 = 0x10;
/// `PROC_FLAG_SLEADER`.
pub const PROC_FLAG_SLEADER: u32 = 0x20;
/// `PROC_FLAG_CTTY`.
pub const PROC_FLAG_CTTY: u32 = 0x40;
/// `PROC_FLAG_CONTROLT`.
pub const PROC_FLAG_CONTROLT: u32 = 0x80;
/// `PROC_FLAG_DARWINBG`.
pub const PROC_FLAG_DARWINBG: u32 = 0x8000;

/// `MAXCOMLEN`.
pub const MAXCOMLEN: usize = 16;

/// `struct proc_bsdinfo` (136 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct proc_bsdinfo {
    pub pbi_flags: u32,
    pub pbi_status: u32,
    pub pbi_xstatus: u32,
    pub pbi_pid: u32,
    pub pbi_ppid: u32,
    pub pbi_uid: u32,
    pub pbi_gid: u32,
    pub pbi_ruid: u32,
    pub pbi_rgid: u32,
    pub pbi_svuid: u32,
    pub pbi_svgid: u32,
    pub rfu_1: u32,
    pub pbi_comm: [c_char; MAXCOMLEN],
    pub pbi_name: [c_char; 2 * MAXCOMLEN],
    pub pbi_nfiles: u32,
    pub pbi_pgid: u32,
    pub pbi_pjobc: u32,
    pub e_tdev: u32,
    pub e_tpgid: u32,
    pub pbi_nice: i32,
    pub pbi_start_tvsec: u64,
    pub pbi_start_tvusec: u64,
}

/// `struct proc_bsdshortinfo` (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct proc_bsdshortinfo {
    pub pbsi_pid: u32,
    pub pbsi_ppid: u32,
    pub pbsi_pgid: u32,
    pub pbsi_status: u32,
    pub pbsi_comm: [c_char; MAXCOMLEN],
    pub pbsi_flags: u32,
    pub pbsi_uid: u32,
    pub pbsi_gid: u32,
    pub pbsi_ruid: u32,
    pub pbsi_rgid: u32,
    pub pbsi_svuid: u32,
    pub pbsi_svgid: u32,
    pub pbsi_rfu: u32,
}

/// `struct proc_uniqidentifierinfo` (56 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct proc_uniqidentifierinfo {
    pub p_uuid: [u8; 16],
    pub p_uniqueid: u64,
    pub p_puniqueid: u64,
    pub p_idversion: i32,
    pub p_orig_ppidversion: i32,
    pub p_reserve2: u64,
    pub p_reserve3: u64,
}

/// `struct proc_bsdinfowithuniqid` (192 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct proc_bsdinfowithuniqid {
    pub pbsd: proc_bsdinfo,
    pub p_uniqidentifier: proc_uniqidentifierinfo,
}

/// `struct proc_taskinfo` (96 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct proc_taskinfo {
    pub pti_virtual_size: u64,
    pub pti_resident_size: u64,
    pub pti_total_user: u64,
    pub pti_total_system: u64,
    pub pti_threads_user: u64,
    pub pti_threads_system: u64,
    pub pti_policy: i32,
    pub pti_faults: i32,
    pub pti_pageins: i32,
    pub pti_cow_faults: i32,
    pub pti_messages_sent: i32,
    pub pti_messages_received: i32,
    pub pti_syscalls_mach: i32,
    pub pti_syscalls_unix: i32,
    pub pti_csw: i32,
    pub pti_threadnum: i32,
    pub pti_numrunning: i32,
    pub pti_priority: i32,
}

/// All-zero plain data.
fn zeroed<T: Copy>() -> T {
    // SAFETY: only instantiated with the `#[repr(C)]` integer/array structures above, for
    // which all-zero bytes are valid.
    unsafe { std::mem::zeroed() }
}

fn copy_name(dst: &mut [c_char], src: &[u8]) {
    let room = dst.len() - 1;
    for (d, s) in dst.iter_mut().zip(src.iter().take(room)) {
        *d = *s as c_char;
    }
}

/// XNU's `proc_security_policy(..., CHECK_SAME_USER)`: the caller's effective uid must be
/// the target's, or the caller root.
pub fn check_same_user(target_euid: u32) -> Result<(), Errno> {
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if me == 0 || me == target_euid {
        Ok(())
    } else {
        Err(Errno(libc::EPERM))
    }
}

/// A process as one read of `stat` and, when asked, `status` sees it; `ESRCH` when there is
/// no such process, or it is a zombie and `zombies` is false.
pub fn lookup(pid: i32, zombies: bool) -> Result<ProcStat, Errno> {
    let st = procfs::stat_of(pid).ok_or(Errno(libc::ESRCH))?;
    if mac_state(st.state) == SZOMB && !zombies {
        return Err(Errno(libc::ESRCH));
    }
    Ok(st)
}

/// The unique-id information of a process (its parent read for `p_puniqueid`).
pub fn uniqid_of(st: &ProcStat) -> proc_uniqidentifierinfo {
    let parent = (st.ppid > 0)
        .then(|| procfs::stat_of(st.ppid))
        .flatten()
        .filter(|p| p.start_ticks <= st.start_ticks);
    proc_uniqidentifierinfo {
        p_uuid: [0; 16],
        p_uniqueid: procfs::unique_id(st.pid, st.start_ticks),
        p_puniqueid: parent
            .as_ref()
            .map_or(0, |p| procfs::unique_id(p.pid, p.start_ticks)),
        p_idversion: procfs::pid_version(st.start_ticks),
        p_orig_ppidversion: parent
            .as_ref()
            .map_or(0, |p| procfs::pid_version(p.start_ticks)),
        p_reserve2: 0,
        p_reserve3: 0,
    }
}

fn flags_of(st: &ProcStat) -> u32 {
    let mut f = PROC_FLAG_LP64;
    if st.session == st.pid {
        f |= PROC_FLAG_SLEADER;
    }
    if st.tty_nr != 0 {
        f |= PROC_FLAG_CTTY | PROC_FLAG_CONTROLT;
    }
    if st.policy == libc::SCHED_IDLE as u32 {
        f |= PROC_FLAG_DARWINBG;
    }
    f
}

/// `PROC_PIDTBSDINFO` of a process (`status` supplies the ids).
pub fn bsdinfo_of(st: &ProcStat, status: &ProcStatus) -> proc_bsdinfo {
    let mut b: proc_bsdinfo = zeroed();
    b.pbi_flags = flags_of(st);
    b.pbi_status = mac_state(st.state) as u32;
    b.pbi_pid = st.pid as u32;
    b.pbi_ppid = st.ppid as u32;
    [b.pbi_ruid, b.pbi_uid, b.pbi_svuid] = status.uids;
    [b.pbi_rgid, b.pbi_gid, b.pbi_svgid] = status.gids;
    copy_name(&mut b.pbi_comm, &st.comm);
    copy_name(&mut b.pbi_name, &st.comm);
    b.pbi_pgid = st.pgrp as u32;
    b.e_tdev = if st.tty_nr != 0 {
        st.tty_nr as u32
    } else {
        u32::MAX // NODEV
    };
    b.e_tpgid = if st.tty_nr != 0 { st.tpgid as u32 } else { 0 };
    b.pbi_nice = st.nice;
    let boot = RealUptimeOs.boot_time().unwrap_or(libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    });
    let start_us = (boot.tv_sec.max(0) as u64) * 1_000_000
        + boot.tv_usec.max(0) as u64
        + procfs::ticks_to_ns(st.start_ticks) / 1000;
    b.pbi_start_tvsec = start_us / 1_000_000;
    b.pbi_start_tvusec = start_us % 1_000_000;
    b
}

/// `PROC_PIDT_SHORTBSDINFO` of a process.
pub fn shortinfo_of(st: &ProcStat, status: &ProcStatus) -> proc_bsdshortinfo {
    let mut s: proc_bsdshortinfo = zeroed();
    s.pbsi_pid = st.pid as u32;
    s.pbsi_ppid = st.ppid as u32;
    s.pbsi_pgid = st.pgrp as u32;
    s.pbsi_status = mac_state(st.state) as u32;
    copy_name(&mut s.pbsi_comm, &st.comm);
    s.pbsi_flags = flags_of(st);
    [s.pbsi_ruid, s.pbsi_uid, s.pbsi_svuid] = status.uids;
    [s.pbsi_rgid, s.pbsi_gid, s.pbsi_svgid] = status.gids;
    s
}

/// `PROC_PIDTASKINFO` of a process, from its `stat` alone (times in Mach units). Its
/// `vsize` and `rss` are the counters `statm` shows as size and resident (the mm's
/// `total_vm` and its file, anonymous and shmem pages), so no second file is read.
pub fn taskinfo_of(st: &ProcStat) -> proc_taskinfo {
    let tb = timebase::current_or_default();
    let user = tb.from_ns(procfs::ticks_to_ns(st.utime));
    let system = tb.from_ns(procfs::ticks_to_ns(st.stime));
    let (vsize, resident) = (st.vsize, st.rss_pages.saturating_mul(procfs::page_size()));
    let clamp = |v: u64| v.min(i32::MAX as u64) as i32;
    proc_taskinfo {
        pti_virtual_size: vsize.saturating_add(super::machine::BASELINE_VSIZE),
        pti_resident_size: resident,
        pti_total_user: user,
        pti_total_system: system,
        pti_threads_user: user,
        pti_threads_system: system,
        pti_policy: 0,
        pti_faults: clamp(st.minflt + st.majflt),
        pti_pageins: clamp(st.majflt),
        pti_threadnum: clamp(st.num_threads),
        pti_numrunning: i32::from(st.state == b'R'),
        pti_priority: st.priority.clamp(0, 127) as i32,
        ..Default::default()
    }
}

/// The bytes `proc_pidinfo(pid, flavor, arg, ...)` answers for one of this module's
/// flavors, or the errno.
pub fn answer(pid: i32, flavor: c_int, arg: u64) -> Result<Vec<u8>, Errno> {
    let zombies = arg != 0 && flavor != PROC_PIDTASKINFO;
    let st = lookup(pid, zombies)?;
    Ok(match flavor {
        PROC_PIDUNIQIDENTIFIERINFO => bytes_of(&uniqid_of(&st)),
        PROC_PIDT_SHORTBSDINFO => {
            let status = procfs::status_of(pid).ok_or(Errno(libc::ESRCH))?;
            bytes_of(&shortinfo_of(&st, &status))
        }
        PROC_PIDTBSDINFO | PROC_PIDT_BSDINFOWITHUNIQID => {
            let status = procfs::status_of(pid).ok_or(Errno(libc::ESRCH))?;
            check_same_user(status.uids[1])?;
            let pbsd = bsdinfo_of(&st, &status);
            if flavor == PROC_PIDTBSDINFO {
                bytes_of(&pbsd)
            } else {
                bytes_of(&proc_bsdinfowithuniqid {
                    pbsd,
                    p_uniqidentifier: uniqid_of(&st),
                })
            }
        }
        PROC_PIDTASKINFO => {
            check_same_user(owner_of(pid)?)?;
            bytes_of(&taskinfo_of(&st))
        }
        _ => return Err(Errno(libc::ENOTSUP)),
    })
}

/// The effective uid of a process, from the owner of `/proc/<pid>` (Linux gives a dumpable
/// process's directory its effective ids; a non-dumpable one's is root's, which only makes
/// the check stricter).
fn owner_of(pid: i32) -> Result<u32, Errno> {
    let mut buf = [0u8; 64];
    let path = procfs::proc_path(pid, "", &mut buf).ok_or(Errno(libc::ESRCH))?;
    // SAFETY: an all-zero stat is valid to overwrite.
    let mut sb: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated; `sb` is writable.
    if unsafe { libc::stat(path.as_ptr(), &mut sb) } != 0 {
        return Err(Errno(libc::ESRCH));
    }
    Ok(sb.st_uid)
}

/// The size `proc_pidinfo` requires for one of this module's flavors.
pub fn size_of_flavor(flavor: c_int) -> Option<usize> {
    Some(match flavor {
        PROC_PIDTBSDINFO => std::mem::size_of::<proc_bsdinfo>(),
        PROC_PIDTASKINFO => std::mem::size_of::<proc_taskinfo>(),
        PROC_PIDT_SHORTBSDINFO => std::mem::size_of::<proc_bsdshortinfo>(),
        PROC_PIDUNIQIDENTIFIERINFO => std::mem::size_of::<proc_uniqidentifierinfo>(),
        PROC_PIDT_BSDINFOWITHUNIQID => std::mem::size_of::<proc_bsdinfowithuniqid>(),
        _ => return None,
    })
}

/// The bytes of a plain `#[repr(C)]` value.
pub fn bytes_of<T: Copy>(v: &T) -> Vec<u8> {
    // SAFETY: `v` is a plain-data value of `size_of::<T>()` bytes; they are only read.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
        .to_vec()
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn proc_bsdinfo__sizes_are_the_sdk_sizes() {
        assert_eq!(std::mem::size_of::<proc_bsdinfo>(), 136);
        assert_eq!(std::mem::size_of::<proc_bsdshortinfo>(), 64);
        assert_eq!(std::mem::size_of::<proc_taskinfo>(), 96);
        assert_eq!(std::mem::size_of::<proc_uniqidentifierinfo>(), 56);
        assert_eq!(std::mem::size_of::<proc_bsdinfowithuniqid>(), 192);
    }

    #[test]
    fn proc_bsdinfo__child_points_at_its_parent_by_unique_id() {
        // SAFETY: getpid/getppid cannot fail.
        let (me, parent) = unsafe { (libc::getpid(), libc::getppid()) };
        let mine = uniqid_of(&lookup(me, false).unwrap());
        let theirs = uniqid_of(&lookup(parent, false).unwrap());
        assert_eq!(mine.p_puniqueid, theirs.p_uniqueid);
        assert_ne!(mine.p_uniqueid, theirs.p_uniqueid);
    }
}
