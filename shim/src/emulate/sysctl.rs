//! `sysctl` and `sysctlbyname`, the macOS calls behind Slurm's `__APPLE__` process and
//! machine queries, answered from Linux (darwin personality only).
//!
//! macOS behaviour emulated (sysctl(3); names and values from the SDK's sys/sysctl.h, see
//! shim/include/emulate/sys/sysctl.h):
//!
//! * `{CTL_KERN, KERN_PROC, KERN_PROC_PID, pid}`: one `struct kinfo_proc`, or success with
//!   `*oldlenp = 0` when there is no such process (bsd/kern/kern_sysctl.c
//!   `sysctl_prochandle` walks the matching processes; none match). `KERN_PROC_PGRP`: every
//!   member of a process group (patch 0013's proctrack/pgid); `KERN_PROC_ALL`: every
//!   process. With `oldp == NULL` the size needed is returned; a buffer too small is
//!   `ENOMEM` with as many entries as fit.
//! * `{CTL_KERN, KERN_BOOTTIME}`: `struct timeval`; `{CTL_KERN, KERN_MAXFILESPERPROC}`:
//!   `int` ([`machine::maxfilesperproc`]); `{CTL_HW, HW_NCPU}`: `int`; `{CTL_HW,
//!   HW_MEMSIZE}`: `uint64_t`; `{CTL_HW, HW_PHYSMEM}`: `int` (saturated, as macOS does for the
//!   legacy 32-bit name).
//! * `sysctlbyname`: `hw.ncpu`, `hw.activecpu`, `hw.logicalcpu`, `hw.logicalcpu_max`,
//!   `hw.physicalcpu`, `hw.physicalcpu_max` (`int`), `hw.memsize` (`uint64_t`),
//!   `hw.physmem` (`int`), `hw.pagesize` (`int`, 16384: Apple Silicon's page), `kern.ngroups`
//!   (16), `kern.maxfilesperproc`, `kern.maxfiles`, `kern.boottime`. Apple Silicon has no
//!   `hw.cpufrequency`: `ENOENT`, as any unknown name.
//! * The machine's CPU as slurmd's node metrics read it (patch 0052):
//!   `machdep.cpu.brand_string` (a string, NUL included), `hw.nperflevels` (`int`) and
//!   `hw.perflevel{0,1}.{physicalcpu,physicalcpu_max,logicalcpu,logicalcpu_max}` (`int`),
//!   `.name` (a string); a level at or above `hw.nperflevels` is `ENOENT`
//!   (xnu-11417.101.15 bsd/kern/kern_mib.c `sysctl_hw_generic`).
//! * Setting a value (`newp`) is `EPERM`.
//!
//! Linux mechanism: `/proc/<pid>/stat` and `status` ([`super::procfs`]), `sysconf`, the
//! boot time of the `sysinfo` seam (`CLOCK_REALTIME - CLOCK_BOOTTIME`), and for the CPU
//! names the modelled Mac of [`super::mac_hardware`] (default "Apple M4 Pro", 10
//! performance + 4 efficiency cores; a hardware file that cannot be used gives `EIO`). `p_stat` maps Linux's
//! letters: `R` SRUN, `T`/`t` SSTOP, `Z`/`X` SZOMB, others SSLEEP.
//!
//! Portability problems not fixed: only the members Slurm or ps(1) read are filled
//! (`p_pid`, `p_stat`, `p_comm`, `p_nice`, `p_starttime`, `e_ppid`, `e_pgid`, `e_tpgid`,
//! `e_tdev` (Linux's encoding), `e_ucred.cr_uid`, `e_pcred.p_ruid/p_rgid/p_svuid/p_svgid`);
//! physical and logical CPUs are both the online CPUs.
#![allow(clippy::missing_safety_doc)]

use libc::{c_char, c_int, c_uint, c_void, size_t, timeval};
use std::ffi::CStr;

use super::mac_hardware;
use super::machine;
use super::procfs::{self, ProcStat};
use crate::errno::{self, Errno};
use crate::uptime::{RealUptimeOs, UptimeOs};

/// macOS MIB names (SDK sys/sysctl.h).
pub mod mib {
    /// `CTL_KERN`.
    pub const CTL_KERN: i32 = 1;
    /// `CTL_HW`.
    pub const CTL_HW: i32 = 6;
    /// `KERN_PROC`.
    pub const KERN_PROC: i32 = 14;
    /// `KERN_BOOTTIME`.
    pub const KERN_BOOTTIME: i32 = 21;
    /// `KERN_MAXFILESPERPROC`.
    pub const KERN_MAXFILESPERPROC: i32 = 29;
    /// `KERN_PROC_ALL`.
    pub const KERN_PROC_ALL: i32 = 0;
    /// `KERN_PROC_PID`.
    pub const KERN_PROC_PID: i32 = 1;
    /// `KERN_PROC_PGRP`.
    pub const KERN_PROC_PGRP: i32 = 2;
    /// `HW_NCPU`.
    pub const HW_NCPU: i32 = 3;
    /// `HW_PHYSMEM`.
    pub const HW_PHYSMEM: i32 = 5;
    /// `HW_MEMSIZE`.
    pub const HW_MEMSIZE: i32 = 24;
}

/// Process states (SDK sys/proc.h).
pub const SRUN: c_char = 2;
/// Sleeping.
pub const SSLEEP: c_char = 3;
/// Stopped.
pub const SSTOP: c_char = 4;
/// Zombie.
pub const SZOMB: c_char = 5;

/// `struct extern_proc` (shim/include/emulate/sys/sysctl.h).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct extern_proc {
    /// `p_un`: the start time (the run-queue links overlay it).
    pub p_starttime: timeval,
    pub p_vmspace: *mut c_void,
    pub p_sigacts: *mut c_void,
    pub p_flag: c_int,
    pub p_stat: c_char,
    pub p_pid: i32,
    pub p_oppid: i32,
    pub p_dupfd: c_int,
    pub user_stack: *mut c_char,
    pub exit_thread: *mut c_void,
    pub p_debugger: c_int,
    pub sigwait: c_int,
    pub p_estcpu: c_uint,
    pub p_cpticks: c_int,
    pub p_pctcpu: u32,
    pub p_wchan: *mut c_void,
    pub p_wmesg: *mut c_char,
    pub p_swtime: c_uint,
    pub p_slptime: c_uint,
    pub p_realtimer: [timeval; 2],
    pub p_rtime: timeval,
    pub p_uticks: u64,
    pub p_sticks: u64,
    pub p_iticks: u64,
    pub p_traceflag: c_int,
    pub p_tracep: *mut c_void,
    pub p_siglist: c_int,
    pub p_textvp: *mut c_void,
    pub p_holdcnt: c_int,
    pub p_sigmask: u32,
    pub p_sigignore: u32,
    pub p_sigcatch: u32,
    pub p_priority: u8,
    pub p_usrpri: u8,
    pub p_nice: c_char,
    pub p_comm: [c_char; 17],
    pub p_pgrp: *mut c_void,
    pub p_addr: *mut c_void,
    pub p_xstat: u16,
    pub p_acflag: u16,
    pub p_ru: *mut c_void,
}

/// `struct _pcred`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pcred {
    pub pc_lock: [c_char; 72],
    pub pc_ucred: *mut c_void,
    pub p_ruid: u32,
    pub p_svuid: u32,
    pub p_rgid: u32,
    pub p_svgid: u32,
    pub p_refcnt: c_int,
}

/// `struct _ucred`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ucred {
    pub cr_ref: i32,
    pub cr_uid: u32,
    pub cr_ngroups: i16,
    pub cr_groups: [u32; 16],
}

/// `struct vmspace` (opaque in user space).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vmspace {
    pub dummy: i32,
    pub dummy2: *mut c_char,
    pub dummy3: [i32; 5],
    pub dummy4: [*mut c_char; 3],
}

/// `struct eproc`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct eproc {
    pub e_paddr: *mut c_void,
    pub e_sess: *mut c_void,
    pub e_pcred: pcred,
    pub e_ucred: ucred,
    pub e_vm: vmspace,
    pub e_ppid: i32,
    pub e_pgid: i32,
    pub e_jobc: i16,
    pub e_tdev: i32,
    pub e_tpgid: i32,
    pub e_tsess: *mut c_void,
    pub e_wmesg: [c_char; 8],
    pub e_xsize: i32,
    pub e_xrssize: i16,
    pub e_xccount: i16,
    pub e_xswrss: i16,
    pub e_flag: i32,
    pub e_login: [c_char; 12],
    pub e_spare: [i32; 4],
}

/// `struct kinfo_proc`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kinfo_proc {
    pub kp_proc: extern_proc,
    pub kp_eproc: eproc,
}

/// The SDK's `sizeof(struct kinfo_proc)` on LP64 (648).
pub const KINFO_PROC_SIZE: usize = 648;

/// An all-zero `kinfo_proc`.
pub fn zeroed_kinfo() -> kinfo_proc {
    // SAFETY: every member is an integer, array of integers or raw pointer: zero is valid.
    unsafe { std::mem::zeroed() }
}

/// `p_stat` for a Linux state letter.
pub fn mac_state(linux: u8) -> c_char {
    match linux {
        b'R' => SRUN,
        b'T' | b't' => SSTOP,
        b'Z' | b'X' => SZOMB,
        _ => SSLEEP,
    }
}

/// The `kinfo_proc` of a Linux process (`boot`: the boot time, `hz`: clock ticks per second).
pub fn kinfo_of(p: &ProcStat, boot: timeval, hz: u64) -> kinfo_proc {
    let mut k = zeroed_kinfo();
    k.kp_proc.p_pid = p.pid;
    k.kp_proc.p_stat = mac_state(p.state);
    k.kp_proc.p_nice = p.nice.clamp(-128, 127) as c_char;
    for (d, s) in k.kp_proc.p_comm.iter_mut().zip(p.comm.iter().take(16)) {
        *d = *s as c_char;
    }
    let hz = hz.max(1);
    let start_us = (boot.tv_sec as i128) * 1_000_000
        + boot.tv_usec as i128
        + (p.start_ticks as i128) * 1_000_000 / hz as i128;
    k.kp_proc.p_starttime = timeval {
        tv_sec: (start_us / 1_000_000) as libc::time_t,
        tv_usec: (start_us % 1_000_000) as libc::suseconds_t,
    };
    k.kp_eproc.e_ppid = p.ppid;
    k.kp_eproc.e_pgid = p.pgrp;
    k.kp_eproc.e_tpgid = p.tpgid;
    k.kp_eproc.e_tdev = p.tty_nr;
    k.kp_eproc.e_ucred.cr_uid = p.uids[1];
    k.kp_eproc.e_pcred.p_ruid = p.uids[0];
    k.kp_eproc.e_pcred.p_svuid = p.uids[2];
    k.kp_eproc.e_pcred.p_rgid = p.gids[0];
    k.kp_eproc.e_pcred.p_svgid = p.gids[2];
    k
}

/// What a MIB asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// Processes: `KERN_PROC_PID`, `_PGRP` (with the argument) or `_ALL`.
    Procs(i32, i32),
    /// A fixed value, already encoded.
    Value(Vec<u8>),
}

fn int_value(v: i64) -> Vec<u8> {
    (v.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
        .to_ne_bytes()
        .to_vec()
}

fn timeval_bytes(tv: timeval) -> Vec<u8> {
    // SAFETY: timeval is plain data; its bytes are read.
    unsafe {
        std::slice::from_raw_parts((&raw const tv).cast::<u8>(), std::mem::size_of::<timeval>())
    }
    .to_vec()
}

fn ncpu() -> i64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1)
}

fn memsize() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages.max(0) as u64).saturating_mul(size.max(0) as u64)
}

fn boottime() -> Result<timeval, Errno> {
    RealUptimeOs.boot_time()
}

/// The query a numeric MIB names.
pub fn query_of_mib(name: &[c_int]) -> Result<Query, Errno> {
    use mib::*;
    Ok(match name {
        [CTL_KERN, KERN_PROC, KERN_PROC_ALL, ..] => Query::Procs(KERN_PROC_ALL, 0),
        [
            CTL_KERN,
            KERN_PROC,
            which @ (KERN_PROC_PID | KERN_PROC_PGRP),
            arg,
        ] => Query::Procs(*which, *arg),
        [CTL_KERN, KERN_BOOTTIME] => Query::Value(timeval_bytes(boottime()?)),
        [CTL_KERN, KERN_MAXFILESPERPROC] => {
            Query::Value(int_value(machine::maxfilesperproc() as i64))
        }
        [CTL_HW, HW_NCPU] => Query::Value(int_value(ncpu())),
        [CTL_HW, HW_MEMSIZE] => Query::Value(memsize().to_ne_bytes().to_vec()),
        [CTL_HW, HW_PHYSMEM] => Query::Value(int_value(memsize().min(i32::MAX as u64) as i64)),
        _ => return Err(Errno(libc::ENOENT)),
    })
}

/// The query a name names.
pub fn query_of_name(name: &[u8]) -> Result<Query, Errno> {
    use mib::*;
    Ok(match name {
        b"hw.ncpu"
        | b"hw.activecpu"
        | b"hw.logicalcpu"
        | b"hw.logicalcpu_max"
        | b"hw.physicalcpu"
        | b"hw.physicalcpu_max" => Query::Value(int_value(ncpu())),
        b"hw.memsize" => Query::Value(memsize().to_ne_bytes().to_vec()),
        b"hw.physmem" => Query::Value(int_value(memsize().min(i32::MAX as u64) as i64)),
        b"hw.pagesize" => Query::Value(int_value(16384)),
        b"kern.ngroups" => Query::Value(int_value(machine::NGROUPS_MAX as i64)),
        b"kern.maxfilesperproc" => return query_of_mib(&[CTL_KERN, KERN_MAXFILESPERPROC]),
        b"kern.maxfiles" => Query::Value(int_value(2 * machine::maxfilesperproc() as i64)),
        b"kern.boottime" => return query_of_mib(&[CTL_KERN, KERN_BOOTTIME]),
        other => return hardware_value(other),
    })
}

/// A name answered by the modelled Mac (`machdep.cpu.brand_string`, `hw.nperflevels`,
/// `hw.perflevelN.*`), else `ENOENT`.
fn hardware_value(name: &[u8]) -> Result<Query, Errno> {
    let enoent = Errno(libc::ENOENT);
    let name = std::str::from_utf8(name).map_err(|_| enoent)?;
    // Only the modelled names read the hardware file.
    if mac_hardware::Hardware::default().sysctl(name).is_none() {
        return Err(enoent);
    }
    let hw = mac_hardware::load().map_err(|_| {
        super::report::applied(
            "sysctlbyname: SLURM_SHIM_MAC_HARDWARE names a file that cannot be read or parsed -> EIO",
        );
        Errno(libc::EIO)
    })?;
    match hw.sysctl(name) {
        Some(Some(mac_hardware::Value::Int(n))) => Ok(Query::Value(int_value(n))),
        Some(Some(mac_hardware::Value::Str(s))) => {
            let mut b = s.into_bytes();
            b.push(0);
            Ok(Query::Value(b))
        }
        _ => Err(enoent),
    }
}

/// The processes a `KERN_PROC` query selects.
pub fn select(which: i32, arg: i32, all: impl Iterator<Item = ProcStat>) -> Vec<ProcStat> {
    all.filter(|p| selects(which, arg, p)).collect()
}

/// Whether the `KERN_PROC` query (`which`, `arg`) selects the process `p`.
pub fn selects(which: i32, arg: i32, p: &ProcStat) -> bool {
    match which {
        mib::KERN_PROC_PID => p.pid == arg,
        mib::KERN_PROC_PGRP => p.pgrp == arg,
        _ => true,
    }
}

fn encode_procs(which: i32, arg: i32) -> Result<Vec<u8>, Errno> {
    let boot = boottime()?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    // XNU (bsd/kern/kern_sysctl.c, sysctl_doproc) walks its process list in the kernel and
    // fills a kinfo_proc for the matching processes only; so here a process's files are read
    // only once it matches. A PGRP listing (twice per proctrack/pgid listing: the size query
    // and the read) used to read `stat` and `status` of every process of the machine: the
    // members are found with `getpgid(2)`, one system call a process (Linux answers it for
    // any process, getpgid(2)), and `stat` decides again after (a pid reused in between).
    let procs: Box<dyn Iterator<Item = ProcStat>> = if which == mib::KERN_PROC_PID {
        Box::new(procfs::process(arg).into_iter())
    } else if which == mib::KERN_PROC_PGRP {
        Box::new(
            procfs::pids()
                .into_iter()
                // SAFETY: getpgid has no memory-safety preconditions.
                .filter(move |&pid| unsafe { libc::getpgid(pid) } == arg)
                .filter_map(move |pid| procfs::process_if(pid, |p| selects(which, arg, p))),
        )
    } else {
        Box::new(
            procfs::pids()
                .into_iter()
                .filter_map(move |pid| procfs::process_if(pid, |p| selects(which, arg, p))),
        )
    };
    let mut out = Vec::new();
    for p in select(which, arg, procs) {
        let k = kinfo_of(&p, boot, hz);
        // SAFETY: kinfo_proc is plain data; its bytes are read.
        out.extend_from_slice(unsafe {
            std::slice::from_raw_parts((&raw const k).cast::<u8>(), KINFO_PROC_SIZE)
        });
    }
    Ok(out)
}

/// Copies `value` out as sysctl(3) does: the size when `oldp` is NULL, `ENOMEM` when the
/// buffer is too small (process lists: as many whole entries as fit are copied).
///
/// # Safety
/// `oldlenp` must be NULL or valid; `oldp` must be NULL or writable for `*oldlenp` bytes.
pub unsafe fn copy_out(
    value: &[u8],
    entry: usize,
    oldp: *mut c_void,
    oldlenp: *mut size_t,
) -> Result<(), Errno> {
    if oldlenp.is_null() {
        return if oldp.is_null() {
            Ok(())
        } else {
            Err(Errno(libc::EFAULT))
        };
    }
    // SAFETY: non-NULL, valid per the contract.
    let have = unsafe { *oldlenp };
    if oldp.is_null() {
        // Room for a few more processes, as XNU's estimate has.
        let slack = if entry > 1 { 8 * entry } else { 0 };
        // SAFETY: as above.
        unsafe { *oldlenp = value.len() + slack };
        return Ok(());
    }
    let fit = if value.len() <= have {
        value.len()
    } else {
        have - have % entry.max(1)
    };
    // SAFETY: `oldp` is writable for `have >= fit` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(value.as_ptr(), oldp.cast::<u8>(), fit);
        *oldlenp = fit;
    }
    if fit < value.len() {
        return Err(Errno(libc::ENOMEM));
    }
    Ok(())
}

fn run(
    query: Query,
    oldp: *mut c_void,
    oldlenp: *mut size_t,
    newp: *mut c_void,
) -> Result<c_int, Errno> {
    if !newp.is_null() {
        return Err(Errno(libc::EPERM));
    }
    let (bytes, entry) = match query {
        Query::Procs(which, arg) => (encode_procs(which, arg)?, KINFO_PROC_SIZE),
        Query::Value(v) => (v, 1),
    };
    // SAFETY: the C caller's pointers, as sysctl(3) requires them.
    unsafe { copy_out(&bytes, entry, oldp, oldlenp) }?;
    Ok(0)
}

/// `sysctl(3)` (macOS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_sysctl(
    name: *mut c_int,
    namelen: c_uint,
    oldp: *mut c_void,
    oldlenp: *mut size_t,
    newp: *mut c_void,
    _newlen: size_t,
) -> c_int {
    crate::counted!(slurm_shim_sysctl);
    if name.is_null() || namelen == 0 || namelen > 12 {
        return errno::to_c(Err(Errno(libc::EINVAL)));
    }
    // SAFETY: the caller's MIB has `namelen` entries.
    let mib = unsafe { std::slice::from_raw_parts(name, namelen as usize) };
    super::report::applied(
        "sysctl (macOS) answered from Linux /proc and sysconf (darwin personality)",
    );
    errno::to_c(
        errno::preserve(|| query_of_mib(mib))
            .and_then(|q| errno::preserve(|| run(q, oldp, oldlenp, newp))),
    )
}

/// `sysctlbyname(3)` (macOS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_sysctlbyname(
    name: *const c_char,
    oldp: *mut c_void,
    oldlenp: *mut size_t,
    newp: *mut c_void,
    _newlen: size_t,
) -> c_int {
    crate::counted!(slurm_shim_sysctlbyname);
    if name.is_null() {
        return errno::to_c(Err(Errno(libc::EINVAL)));
    }
    // SAFETY: the caller passes a NUL-terminated name.
    let n = unsafe { CStr::from_ptr(name) }.to_bytes();
    super::report::applied("sysctlbyname (macOS) answered from Linux sysconf (darwin personality)");
    errno::to_c(query_of_name(n).and_then(|q| errno::preserve(|| run(q, oldp, oldlenp, newp))))
}
