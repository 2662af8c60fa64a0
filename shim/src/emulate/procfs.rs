//! The Linux seam under the darwin personality's macOS process APIs (`sysctl(KERN_PROC)`,
//! `proc_pidpath`, `proc_pidinfo`, `F_GETPATH`): what Linux's `/proc` says about a process.
//!
//! The shim reads the real `/proc` with glibc's calls (not the re-targeted ones Slurm's code
//! gets, see [`super::hidden_paths`]).
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
    /// Real, effective, saved user ids.
    pub uids: [u32; 3],
    /// Real, effective, saved group ids.
    pub gids: [u32; 3],
}

/// Parses the text of `/proc/<pid>/stat`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.as_bytes().to_vec();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    let f = |n: usize| rest.get(n - 3).copied();
    Some(ProcStat {
        pid,
        comm,
        state: f(3)?.bytes().next()?,
        ppid: f(4)?.parse().ok()?,
        pgrp: f(5)?.parse().ok()?,
        tty_nr: f(7)?.parse().ok()?,
        tpgid: f(8)?.parse().ok()?,
        nice: f(19)?.parse().ok()?,
        start_ticks: f(22)?.parse().ok()?,
        ..Default::default()
    })
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
    let mut st = parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
    if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
        st.uids = parse_ids(&status, "Uid:").unwrap_or_default();
        st.gids = parse_ids(&status, "Gid:").unwrap_or_default();
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
