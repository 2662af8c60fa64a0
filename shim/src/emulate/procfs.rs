//! The Linux seam under the darwin personality's macOS process APIs (`sysctl(KERN_PROC)`,
//! `proc_pidpath`, `proc_pidinfo`, `F_GETPATH`): what Linux's `/proc` says about a process.
//!
//! The shim reads the real `/proc` with glibc's calls (not the re-targeted ones Slurm's code
//! gets, see [`super::hidden_paths`]).
//!
//! The accounting models (`proc_pid_rusage`, `proc_pidinfo`'s BSD and task flavors,
//! `proc_listpids`) read `/proc/<pid>/stat`, `status` and `io` through [`read_into`]: one
//! `open`/`read`/`close` into a stack buffer, the path built on the stack too, because an
//! accounting poll of a large job makes thousands of them.
//!
//! A process's identity on Linux is its pid plus its start time (clock ticks after boot,
//! `/proc/<pid>/stat` field 22): [`unique_id`] and [`pid_version`] derive macOS's
//! `p_uniqueid`/`p_idversion` stand-ins from it.
//!
//! Portability problems not fixed: a process that exits between listing and reading is
//! skipped; a command name with `)` in it is parsed from the last `)`.

use std::path::PathBuf;

/// What `/proc/<pid>/stat` and `/proc/<pid>/status` say about a process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// Process id.
    pub pid: i32,
    /// Command name (at most 15 bytes on Linux).
    pub comm: Vec<u8>,
    /// Linux state letter (`R`, `S`, `D`, `Z`, `T`, `t`, `X`, `I`, ...).
    pub state: u8,
    /// Parent process id.
    pub ppid: i32,
    /// Process group id.
    pub pgrp: i32,
    /// Controlling terminal (Linux's encoding of the device).
    pub tty_nr: i32,
    /// Foreground process group of the terminal.
    pub tpgid: i32,
    /// Nice value.
    pub nice: i32,
    /// Start time, clock ticks after boot.
    pub start_ticks: u64,
    /// Session id.
    pub session: i32,
    /// Minor and major page faults.
    pub minflt: u64,
    /// Major page faults.
    pub majflt: u64,
    /// User and system CPU time, clock ticks.
    pub utime: u64,
    /// System CPU time, clock ticks.
    pub stime: u64,
    /// CPU time of waited-for children, clock ticks.
    pub cutime: u64,
    /// System CPU time of waited-for children, clock ticks.
    pub cstime: u64,
    /// Kernel priority value.
    pub priority: i64,
    /// Number of threads.
    pub num_threads: u64,
    /// Virtual size, bytes.
    pub vsize: u64,
    /// Resident set size, pages.
    pub rss_pages: u64,
    /// Scheduling policy (`SCHED_*`; field 41).
    pub policy: u32,
    /// Real, effective, saved user ids.
    pub uids: [u32; 3],
    /// Real, effective, saved group ids.
    pub gids: [u32; 3],
}

/// Parses the text of `/proc/<pid>/stat` (no allocation but the command name).
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.as_bytes().to_vec();
    // rest[0] is field 3 (state); field N is rest[N - 3]. Fields past 41 are not needed.
    let mut rest = [""; 39];
    let mut have = 0;
    for (slot, v) in rest
        .iter_mut()
        .zip(text.get(close + 1..)?.split_ascii_whitespace())
    {
        *slot = v;
        have += 1;
    }
    let f = |n: usize| (n - 3 < have).then(|| rest[n - 3]);
    Some(ProcStat {
        pid,
        comm,
        state: f(3)?.bytes().next()?,
        ppid: f(4)?.parse().ok()?,
        pgrp: f(5)?.parse().ok()?,
        session: f(6)?.parse().ok()?,
        tty_nr: f(7)?.parse().ok()?,
        tpgid: f(8)?.parse().ok()?,
        minflt: f(10)?.parse().ok()?,
        majflt: f(12)?.parse().ok()?,
        utime: f(14)?.parse().ok()?,
        stime: f(15)?.parse().ok()?,
        cutime: f(16)?.parse().ok()?,
        cstime: f(17)?.parse().ok()?,
        priority: f(18)?.parse().ok()?,
        nice: f(19)?.parse().ok()?,
        num_threads: f(20)?.parse().ok()?,
        start_ticks: f(22)?.parse().ok()?,
        vsize: f(23)?.parse().ok()?,
        rss_pages: f(24)?.parse::<i64>().ok()?.max(0) as u64,
        // Field 41 exists since Linux 2.5.19; older kernels leave it 0 (SCHED_OTHER).
        policy: f(41).and_then(|v| v.parse().ok()).unwrap_or(0),
        ..Default::default()
    })
}

/// What `/proc/<pid>/status` says about memory, ids and the parent (the fields the macOS
/// models need; sizes in bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcStatus {
    /// Real, effective, saved user ids.
    pub uids: [u32; 3],
    /// Real, effective, saved group ids.
    pub gids: [u32; 3],
    /// Parent process id.
    pub ppid: i32,
    /// Process group id as this procfs sees it (first `NSpgid` value), if the kernel says.
    pub pgid: Option<i32>,
    /// Session id as this procfs sees it (first `NSsid` value), if the kernel says.
    pub sid: Option<i32>,
    /// Linux state letter.
    pub state: u8,
    /// Command name.
    pub name: Vec<u8>,
    /// `VmRSS`.
    pub vm_rss: u64,
    /// `RssAnon`.
    pub rss_anon: u64,
    /// `VmSwap`.
    pub vm_swap: u64,
    /// `VmHWM`: peak resident set size.
    pub vm_hwm: u64,
    /// `VmSize`.
    pub vm_size: u64,
    /// Voluntary plus involuntary context switches.
    pub ctxt_switches: u64,
}

/// Parses the text of `/proc/<pid>/status` (a zombie has no `Vm*` lines: they stay 0).
pub fn parse_status(text: &str) -> ProcStatus {
    let mut s = ProcStatus::default();
    let kib = |v: &str| {
        v.split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .map_or(0, |n| n.saturating_mul(1024))
    };
    let ids = |v: &str| {
        let mut it = v.split_whitespace().filter_map(|x| x.parse::<u32>().ok());
        [
            it.next().unwrap_or(0),
            it.next().unwrap_or(0),
            it.next().unwrap_or(0),
        ]
    };
    let first = |v: &str| {
        v.split_whitespace()
            .next()
            .and_then(|x| x.parse::<i32>().ok())
    };
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key {
            "Name" => s.name = value.trim().as_bytes().to_vec(),
            "State" => s.state = value.trim().bytes().next().unwrap_or(b'?'),
            "PPid" => s.ppid = first(value).unwrap_or(0),
            "NSpgid" => s.pgid = first(value),
            "NSsid" => s.sid = first(value),
            "Uid" => s.uids = ids(value),
            "Gid" => s.gids = ids(value),
            "VmRSS" => s.vm_rss = kib(value),
            "RssAnon" => s.rss_anon = kib(value),
            "VmSwap" => s.vm_swap = kib(value),
            "VmHWM" => s.vm_hwm = kib(value),
            "VmSize" => s.vm_size = kib(value),
            "voluntary_ctxt_switches" | "nonvoluntary_ctxt_switches" => {
                s.ctxt_switches += first(value).map_or(0, |n| n.max(0) as u64)
            }
            _ => {}
        }
    }
    s
}

/// What `/proc/<pid>/io` says (bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcIo {
    /// Characters read by `read(2)` and friends (`rchar`), page cache included.
    pub rchar: u64,
    /// Characters written (`wchar`), page cache included.
    pub wchar: u64,
    /// Bytes this process caused to be fetched from storage (`read_bytes`).
    pub read_bytes: u64,
    /// Bytes this process caused to be sent to storage (`write_bytes`, counted when a page
    /// is dirtied).
    pub write_bytes: u64,
    /// Dirtied bytes that never reached storage (truncated files, `cancelled_write_bytes`).
    pub cancelled_write_bytes: u64,
}

/// Parses the text of `/proc/<pid>/io`.
pub fn parse_io(text: &str) -> ProcIo {
    let mut io = ProcIo::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let v = value.trim().parse::<u64>().unwrap_or(0);
        match key {
            "rchar" => io.rchar = v,
            "wchar" => io.wchar = v,
            "read_bytes" => io.read_bytes = v,
            "write_bytes" => io.write_bytes = v,
            "cancelled_write_bytes" => io.cancelled_write_bytes = v,
            _ => {}
        }
    }
    io
}

/// Reads the small `/proc` file `path` into `buf` with one `open`/`read`/`close` (glibc's,
/// not the re-targeted ones) and returns its text, or `None` if it cannot be read (the
/// process is gone, or the file is not readable). Longer files are cut at the buffer's size.
/// A read shorter than asked is the end: procfs's files of one record (`stat`, `status`,
/// `statm`, `io`) give their whole text to one read that has room for it, so no second
/// `read` is made to see end-of-file.
pub fn read_into<'b>(path: &std::ffi::CStr, buf: &'b mut [u8]) -> Option<&'b str> {
    // SAFETY: `path` is NUL-terminated; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut len = 0;
    while len < buf.len() {
        let room = buf.len() - len;
        // SAFETY: `buf[len..]` is writable for `room` bytes.
        let n = unsafe { libc::read(fd, buf[len..].as_mut_ptr().cast::<libc::c_void>(), room) };
        if n < 0 && crate::errno::get() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            break;
        }
        len += n as usize;
        if (n as usize) < room {
            break;
        }
    }
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
    if len == 0 {
        return None;
    }
    std::str::from_utf8(&buf[..len]).ok()
}

/// Room for `/proc/<pid>/<file>` of the files read here.
pub type ProcPathBuf = [u8; 64];

/// `/proc/<pid>/<file>` as a C string written into `buf` (no allocation: an accounting poll
/// builds thousands); `None` if it does not fit or `file` holds a NUL.
pub fn proc_path<'b>(pid: i32, file: &str, buf: &'b mut ProcPathBuf) -> Option<&'b std::ffi::CStr> {
    use std::io::Write;
    let mut w = &mut buf[..];
    write!(w, "/proc/{pid}/{file}\0").ok()?;
    std::ffi::CStr::from_bytes_until_nul(buf).ok()
}

/// `/proc/<pid>/stat`, parsed, read without allocating the text.
pub fn stat_of(pid: i32) -> Option<ProcStat> {
    if pid <= 0 {
        return None;
    }
    let (mut path, mut buf) = ([0u8; 64], [0u8; 1024]);
    parse_stat(read_into(proc_path(pid, "stat", &mut path)?, &mut buf)?)
}

/// `/proc/<pid>/status`, parsed.
pub fn status_of(pid: i32) -> Option<ProcStatus> {
    if pid <= 0 {
        return None;
    }
    let (mut path, mut buf) = ([0u8; 64], [0u8; 4096]);
    Some(parse_status(read_into(
        proc_path(pid, "status", &mut path)?,
        &mut buf,
    )?))
}

/// `/proc/<pid>/io`, parsed (`None` when not readable: another user's process without
/// `CAP_SYS_PTRACE`, or gone).
pub fn io_of(pid: i32) -> Option<ProcIo> {
    if pid <= 0 {
        return None;
    }
    let (mut path, mut buf) = ([0u8; 64], [0u8; 512]);
    Some(parse_io(read_into(
        proc_path(pid, "io", &mut path)?,
        &mut buf,
    )?))
}

/// The machine's page size in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64
}

/// Clock ticks per second of `/proc`'s times (`_SC_CLK_TCK`).
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64
}

/// Nanoseconds in `ticks` clock ticks.
pub fn ticks_to_ns(ticks: u64) -> u64 {
    let hz = clock_ticks();
    ((ticks as u128) * 1_000_000_000 / hz as u128).min(u64::MAX as u128) as u64
}

/// The stand-in for macOS's `p_uniqueid` (a 64-bit id the kernel never reuses): the start
/// time in clock ticks after boot above the pid's 22 bits (`pid_max` is at most 2^22). Two
/// processes get the same value only if the same pid is handed out twice within one clock
/// tick, which needs the whole pid space to wrap in 10 ms.
pub fn unique_id(pid: i32, start_ticks: u64) -> u64 {
    (start_ticks << 22) | (pid as u64 & 0x3f_ffff)
}

/// The stand-in for macOS's `p_idversion` (the pid's generation): the start time in clock
/// ticks, 31 bits.
pub fn pid_version(start_ticks: u64) -> i32 {
    (start_ticks & 0x7fff_ffff) as i32
}

/// The ids of a `Uid:`/`Gid:` line of `/proc/<pid>/status`.
pub fn parse_ids(status: &str, key: &str) -> Option<[u32; 3]> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    let v: Vec<u32> = line[key.len()..]
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect();
    Some([*v.first()?, *v.get(1)?, *v.get(2)?])
}

/// One process, or `None` if it does not exist (any more).
pub fn process(pid: i32) -> Option<ProcStat> {
    process_if(pid, |_| true)
}

/// One process whose `stat` passes `keep`, with its ids from `status`; `None` if it does not
/// exist or is not kept. `status` (the costlier file: the kernel formats some fifty lines) is
/// read only for a kept process, and both reads go to stack buffers ([`stat_of`],
/// [`status_of`]): a process group's listing tests every process of the machine.
pub fn process_if(pid: i32, keep: impl Fn(&ProcStat) -> bool) -> Option<ProcStat> {
    let mut st = stat_of(pid)?;
    if !keep(&st) {
        return None;
    }
    if let Some(status) = status_of(pid) {
        st.uids = status.uids;
        st.gids = status.gids;
    }
    Some(st)
}

/// Every process id, ascending.
pub fn pids() -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// The executable of a process.
pub fn exe(pid: i32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// The path of descriptor `fd` of process `pid`.
pub fn fd_path(pid: i32, fd: i32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok()
}

/// The open descriptors of a process, ascending.
pub fn fds(pid: i32) -> Option<Vec<i32>> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable();
    Some(v)
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn procfs__stat_line_with_spaces_and_parens_in_comm() {
        let line =
            "4242 (a b) c) S 1 4242 4242 34816 4300 4194560 1 0 0 0 2 3 0 0 20 5 1 0 12345 1000 10";
        let s = parse_stat(line).expect("parse");
        assert_eq!(s.pid, 4242);
        assert_eq!(s.comm, b"a b) c");
        assert_eq!(
            (s.state, s.ppid, s.pgrp, s.tty_nr, s.tpgid),
            (b'S', 1, 4242, 34816, 4300)
        );
        assert_eq!((s.nice, s.start_ticks), (5, 12345));
    }

    #[test]
    fn procfs__process_if_reads_ids_of_kept_processes_only() {
        // SAFETY: getpid, getpgrp and getuid cannot fail.
        let (me, group, uid) = unsafe { (libc::getpid(), libc::getpgrp(), libc::getuid()) };
        let kept = process_if(me, |p| p.pgrp == group).expect("own group");
        assert_eq!((kept.pid, kept.pgrp, kept.uids[0]), (me, group, uid));
        assert_eq!(process_if(me, |p| p.pgrp != group), None);
        assert_eq!(process(me).map(|p| p.uids), Some(kept.uids));
    }

    #[test]
    fn procfs__this_process_is_found() {
        // SAFETY: getpid cannot fail.
        let me = unsafe { libc::getpid() };
        let p = process(me).expect("own /proc entry");
        assert_eq!(p.pid, me);
        assert!(pids().contains(&me));
        assert!(exe(me).is_some());
        assert!(fds(me).is_some_and(|f| f.contains(&0) || f.contains(&1) || f.contains(&2)));
    }
}
