//! Processes the harness starts and must be able to stop later, from another command, even
//! after the harness crashed: detached daemons recorded by PID **and start time**, stopped
//! through a pidfd only after the start time matched (so a reused PID is never signalled).
//!
//! Isolation: Slurm 24.11's auth/slurm puts its SACK sockets at fixed paths under `/run`
//! (DARWIN-CATALOG B2) and every client (not only the daemons) asks the socket for its
//! credential. To run two clusters side by side, each daemon and each client command of a
//! cluster gets a private mount namespace (`unshare(CLONE_NEWNS)`, propagation private) in which
//! the cluster's own `run/` directory is bind-mounted onto `/run`. All namespaces of one
//! cluster see the same directory, so the daemons and clients of a cluster meet, and never
//! those of another. Needs root; without root there is no isolation (one cluster at a time).
//!
//! Linux reads `/proc` and uses pidfds and mount namespaces. Elsewhere (macOS, the real-Mac
//! lane; not run by this project) the start time comes from `ps -o lstart=`, signals go
//! through kill(2) right after the start-time check, and there is no isolation.

use driver_common::error::{Error, Result};
use driver_common::util::process::spawn::ExtraMount;
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One process started by the harness.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcRecord {
    pub name: String,
    pub pid: u32,
    /// Field 22 of `/proc/<pid>/stat` (clock ticks after boot): with the PID it names one
    /// process for the lifetime of the machine.
    pub start_ticks: u64,
    /// The inode of its mount namespace, when it runs in a private one: every process left in
    /// that namespace after the daemon stopped is one of its descendants (job steps).
    #[serde(default)]
    pub mnt_ns: Option<u64>,
}

/// Where the cluster's private `/run` comes from (see the module doc), and for a node, its
/// own host name (a private UTS namespace) and any mounts of its own (a scenario's: its user
/// database, a tiny spool file system).
#[derive(Debug, Clone)]
pub struct Isolation {
    run_dir: CString,
    hostname: Option<CString>,
    extra: Vec<ExtraMount>,
}

/// A mount a node's namespace gets on top of the cluster's (see [`Isolation::with_mounts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeMount {
    /// This file or directory appears at `target` (e.g. the node's own `/etc/passwd`).
    Bind { source: PathBuf, target: PathBuf },
    /// A new, empty tmpfs of `size_kb` kB appears on the directory `target`.
    Tmpfs { target: PathBuf, size_kb: u64 },
}

fn c_path(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Error::file(p, "a NUL byte in the path"))
}

impl NodeMount {
    fn to_extra(&self) -> Result<ExtraMount> {
        Ok(match self {
            NodeMount::Bind { source, target } => ExtraMount::Bind {
                source: c_path(source)?,
                target: c_path(target)?,
            },
            NodeMount::Tmpfs { target, size_kb } => ExtraMount::Tmpfs {
                target: c_path(target)?,
                options: CString::new(format!("size={size_kb}k,mode=0755"))
                    .map_err(|_| Error::file(target, "tmpfs options"))?,
            },
        })
    }
}

impl Isolation {
    pub fn new(run_dir: &Path) -> Result<Isolation> {
        Ok(Isolation {
            run_dir: c_path(run_dir)?,
            hostname: None,
            extra: Vec::new(),
        })
    }

    /// The same isolation with `mounts` made after `/run`, in order (replacing earlier
    /// ones). Each process started with it gets its own namespace, so a tmpfs is its own:
    /// another process sees a daemon's through procfs, the root link of its pid.
    pub fn with_mounts(&self, mounts: &[NodeMount]) -> Result<Isolation> {
        Ok(Isolation {
            extra: mounts
                .iter()
                .map(NodeMount::to_extra)
                .collect::<Result<_>>()?,
            ..self.clone()
        })
    }

    /// Also bind-mount `ours` onto `target` (e.g. an `/etc/hosts` that names a second
    /// controller's loopback address).
    pub fn with_bind(mut self, ours: &Path, target: &Path) -> Result<Isolation> {
        self.extra.push(
            NodeMount::Bind {
                source: ours.to_path_buf(),
                target: target.to_path_buf(),
            }
            .to_extra()?,
        );
        Ok(self)
    }

    /// A node's: its own `/run` and host name.
    pub fn node(run_dir: &Path, hostname: &str) -> Result<Isolation> {
        let mut iso = Isolation::new(run_dir)?;
        iso.hostname = Some(
            CString::new(hostname)
                .map_err(|_| Error::Usage(format!("host name {hostname:?} holds a NUL byte")))?,
        );
        Ok(iso)
    }

    /// Make `cmd` enter a new mount namespace with our directory on `/run` (and a new UTS
    /// namespace with the node's host name) before it execs.
    pub fn apply(&self, cmd: &mut Command) {
        driver_common::util::process::spawn::private_run(
            cmd,
            self.run_dir.clone(),
            self.hostname.clone(),
            self.extra.clone(),
        );
    }
}

/// Start `cmd` detached: own session (it outlives the harness and no terminal signal reaches
/// it), stdin from /dev/null, stdout and stderr appended to `output`. Returns its record.
pub fn spawn_detached(
    name: &str,
    mut cmd: Command,
    isolation: Option<&Isolation>,
    output: &Path,
) -> Result<ProcRecord> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(output)
        .map_err(|e| Error::io(output, e))?;
    let err = out.try_clone().map_err(|e| Error::io(output, e))?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    driver_common::util::process::spawn::new_session(&mut cmd);
    if let Some(iso) = isolation {
        iso.apply(&mut cmd);
    }
    // std's spawn returns once exec succeeded (or reports why it failed), so the pre-exec
    // steps are done and the namespace can be read.
    let child = cmd.spawn().map_err(|source| Error::Spawn {
        program: name.to_string(),
        source,
    })?;
    let pid = child.id();
    let start_ticks = start_ticks(pid).ok_or_else(|| Error::ExitedAtOnce {
        name: name.to_string(),
        pid,
        output: output.to_path_buf(),
    })?;
    let mnt_ns = isolation.and_then(|_| mount_namespace(pid));
    // The Child handle is dropped without waiting: the process is detached on purpose.
    drop(child);
    Ok(ProcRecord {
        name: name.to_string(),
        pid,
        start_ticks,
        mnt_ns,
    })
}

/// The process's start time (Linux: field 22 of `/proc/<pid>/stat`, clock ticks after
/// boot), or None if there is no such process.
pub fn start_ticks(pid: u32) -> Option<u64> {
    proc_info(pid).map(|(_, t)| t)
}

/// (state letter, start time) of a process.
#[cfg(target_os = "linux")]
fn proc_info(pid: u32) -> Option<(String, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f = parse_stat_after_comm(&text)?;
    Some((f.first()?.clone(), f.get(19)?.parse().ok()?))
}

/// (state letter, start time) from `ps -o stat=,lstart=` (one-second resolution, hashed).
#[cfg(not(target_os = "linux"))]
fn proc_info(pid: u32) -> Option<(String, u64)> {
    let sh = xshell::Shell::new().ok()?;
    let pid = pid.to_string();
    let out = xshell::cmd!(sh, "ps -o stat=,lstart= -p {pid}")
        .quiet()
        .ignore_status()
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next()?.trim();
    let (stat, lstart) = line.split_once(char::is_whitespace)?;
    let hash = lstart
        .trim()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    Some((stat.chars().next()?.to_string(), hash))
}

/// How many threads of `pid` other than the leader still exist (Linux: `/proc/<pid>/task`);
/// 0 elsewhere.
fn other_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_str() != Some(&pid.to_string()))
                .count()
        })
        .unwrap_or(0)
}

/// A process's state letter, parent and process group (Linux: `/proc/<pid>/stat`), None
/// once it is gone.
pub fn state_parent_group(pid: u32) -> Option<(char, u32, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f = parse_stat_after_comm(&text)?;
    Some((
        f.first()?.chars().next()?,
        f.get(1)?.parse().ok()?,
        f.get(2)?.parse().ok()?,
    ))
}

/// Every process (Linux: of `/proc`) for which `keep(pid, state, parent, group)` holds.
pub fn processes_where(keep: impl Fn(u32, char, u32, u32) -> bool) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .filter(|&pid| {
                    state_parent_group(pid).is_some_and(|(s, pp, g)| keep(pid, s, pp, g))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `comm` may hold spaces and parentheses: the fields start after the last `)`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(super) fn parse_stat_after_comm(text: &str) -> Option<Vec<String>> {
    let rest = &text[text.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// The mount-namespace inode of a process (`/proc/<pid>/ns/mnt` → `mnt:[4026531841]`);
/// None where there is no `/proc`.
pub fn mount_namespace(pid: u32) -> Option<u64> {
    let link = std::fs::read_link(format!("/proc/{pid}/ns/mnt")).ok()?;
    let s = link.to_string_lossy();
    s.strip_prefix("mnt:[")?.strip_suffix(']')?.parse().ok()
}

/// What became of a recorded process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Running,
    /// No process with that PID, or it is a zombie.
    Gone,
    /// The PID now belongs to another process (it was reused): never touch it.
    Reused,
}

impl ProcRecord {
    pub fn liveness(&self) -> Liveness {
        let Some((state, start)) = proc_info(self.pid) else {
            return Liveness::Gone;
        };
        if start != self.start_ticks {
            return Liveness::Reused;
        }
        // A dead group leader shows `Z` while its other threads are still exiting and hold
        // the process's descriptors (a daemon's listening port): only gone once it is the
        // last thread.
        if state == "Z" && other_threads(self.pid) == 0 {
            reap(self.pid);
            return Liveness::Gone;
        }
        Liveness::Running
    }

    /// The process's resident set, open descriptors and threads, if it runs (Linux only).
    pub fn usage(&self) -> Option<Usage> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        if self.liveness() != Liveness::Running {
            return None;
        }
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let field = |name: &str| -> Option<u64> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        };
        let fds = std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .ok()?
            .count();
        Some(Usage {
            rss_kb: field("VmRSS:")?,
            fds,
            threads: field("Threads:")?,
        })
    }

    /// Send `signal` if (and only if) this is still the recorded process. Returns whether it
    /// was sent.
    pub fn signal(&self, signal: Signal) -> Result<bool> {
        let Some(fd) = PidFd::open(self.pid) else {
            return Ok(false);
        };
        // The pidfd now pins whatever process has this PID; check it is ours.
        if self.liveness() != Liveness::Running {
            return Ok(false);
        }
        fd.send(signal).map_err(|source| Error::Signal {
            name: self.name.clone(),
            pid: self.pid,
            source,
        })?;
        Ok(true)
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL and wait again. Never touches a reused PID.
    pub fn stop(&self, grace: Duration) -> Result<Stopped> {
        match self.liveness() {
            Liveness::Gone => return Ok(Stopped::AlreadyGone),
            Liveness::Reused => return Ok(Stopped::PidReused),
            Liveness::Running => {}
        }
        if !self.signal(Signal::SIGTERM)? {
            return Ok(Stopped::AlreadyGone);
        }
        if self.wait_gone(grace) {
            return Ok(Stopped::Terminated);
        }
        self.signal(Signal::SIGKILL)?;
        if self.wait_gone(Duration::from_secs(10)) {
            Ok(Stopped::Killed)
        } else {
            Err(Error::Unkillable {
                name: self.name.clone(),
                pid: self.pid,
            })
        }
    }

    /// Poll until the process is gone (or reused), up to `timeout`.
    pub fn wait_gone(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.liveness() != Liveness::Running {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// What a running process holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub rss_kb: u64,
    pub fds: usize,
    pub threads: u64,
}

/// How a recorded process ended when stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    AlreadyGone,
    PidReused,
    Terminated,
    Killed,
}

/// Exit statuses of our own children that were reaped.
static REAPED: std::sync::Mutex<Vec<WaitStatus>> = std::sync::Mutex::new(Vec::new());

/// Reap `pid` if it is our own exited child (the `test` command starts the daemons itself)
/// and remember how it ended; harmless otherwise (ECHILD).
fn reap(pid: u32) {
    let Ok(raw) = i32::try_from(pid) else {
        return;
    };
    match waitpid(Pid::from_raw(raw), Some(WaitPidFlag::WNOHANG)) {
        Ok(WaitStatus::StillAlive) | Err(_) => {}
        Ok(status) => {
            if let Ok(mut r) = REAPED.lock() {
                r.push(status);
            }
        }
    }
}

/// How a daemon we started and reaped ended (`exit status 1`, `killed by signal 11 (core
/// dumped)`), if it was our child.
pub fn how_it_ended(pid: u32) -> Option<String> {
    let status = *REAPED.lock().ok()?.iter().rev().find(|s| {
        s.pid()
            .is_some_and(|p| i64::from(p.as_raw()) == i64::from(pid))
    })?;
    Some(describe_status(status))
}

fn describe_status(status: WaitStatus) -> String {
    match status {
        WaitStatus::Exited(_, code) => format!("exit status {code}"),
        WaitStatus::Signaled(_, sig, core) => format!(
            "killed by signal {}{}",
            sig as i32,
            if core { " (core dumped)" } else { "" }
        ),
        other => format!("wait status {other:?}"),
    }
}

/// A pidfd (Linux 5.3+, rustix: nix has no pidfd calls): signals through it reach the
/// process it was opened on, or nothing.
#[cfg(target_os = "linux")]
struct PidFd(std::os::fd::OwnedFd);

/// Without pidfds: the PID itself, signalled with kill(2) right after the start-time check.
#[cfg(not(target_os = "linux"))]
struct PidFd(u32);

#[cfg(not(target_os = "linux"))]
impl PidFd {
    fn open(pid: u32) -> Option<PidFd> {
        Some(PidFd(pid))
    }

    fn send(&self, signal: Signal) -> std::io::Result<()> {
        let pid = Pid::from_raw(i32::try_from(self.0).map_err(std::io::Error::other)?);
        match nix::sys::signal::kill(pid, signal) {
            // ESRCH: it exited meanwhile; that is what we wanted.
            Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(target_os = "linux")]
impl PidFd {
    fn open(pid: u32) -> Option<PidFd> {
        let pid = rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)?;
        rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
            .ok()
            .map(PidFd)
    }

    fn send(&self, signal: Signal) -> std::io::Result<()> {
        let sig = rustix::process::Signal::from_named_raw(signal as i32)
            .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        match rustix::process::pidfd_send_signal(&self.0, sig) {
            // ESRCH: it exited meanwhile; that is what we wanted.
            Ok(()) | Err(rustix::io::Errno::SRCH) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// Every process in mount namespace `ns` (inode) whose `/run` is one of `run_dirs`
/// (bind-mounted: the head's or a node's), except PID 1's and our own namespace.
///
/// The inode alone proves nothing: once every process of a namespace has exited, the kernel
/// hands its number to the next namespace created (seen here: a sweep by a recorded number
/// killed another harness's processes). A namespace of ours is recognised by what it mounts
/// on `/run`: the cluster's own `run/` directory, the same device and the same path.
pub fn processes_in_namespace(ns: u64, run_dirs: &[std::path::PathBuf]) -> Vec<ProcRecord> {
    if mount_namespace(1) == Some(ns) || mount_namespace(std::process::id()) == Some(ns) {
        return Vec::new();
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let members: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| mount_namespace(pid) == Some(ns))
        .collect();
    // Every member sees the same mounts; the first readable one decides for the namespace.
    let ours = members
        .iter()
        .find_map(|&pid| std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).ok())
        .is_some_and(|info| run_dirs.iter().any(|d| run_mount_is(&info, d)))
        || members
            .iter()
            .any(|&pid| run_dirs.iter().any(|d| root_run_is(pid, d)));
    if !ours {
        return Vec::new();
    }
    members
        .into_iter()
        .filter_map(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            Some(ProcRecord {
                name: comm.trim().to_string(),
                pid,
                start_ticks: start_ticks(pid)?,
                mnt_ns: Some(ns),
            })
        })
        .collect()
}

/// Process `pid`'s root directory as procfs links it (`root` of its `/proc` entry): paths
/// under it resolve in that process's mount namespace.
pub fn root_of(pid: u32) -> PathBuf {
    Path::new("/proc").join(pid.to_string()).join("root")
}

/// Whether `/run` as process `pid` sees it (`run` under the `root` link of its `/proc`
/// entry, resolved in its mount namespace) is the directory `run_dir` (same device and
/// inode). The mountinfo check below
/// cannot see this from a reader in a chroot: the kernel lists only the mounts reachable
/// from the reader's root, and a new namespace's copies are not (found by the fresh-machine
/// CI in a chroot).
#[cfg(target_os = "linux")]
fn root_run_is(pid: u32, run_dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(seen), Ok(ours)) = (
        std::fs::metadata(root_of(pid).join("run")),
        std::fs::metadata(run_dir),
    ) else {
        return false;
    };
    seen.dev() == ours.dev() && seen.ino() == ours.ino()
}

/// Whether `mountinfo` (the text of `/proc/<pid>/mountinfo`) mounts `run_dir` on `/run`: the
/// line whose mount point (field 5) is `/run` has `run_dir`'s device (field 3, major:minor)
/// and a root (field 4, the path inside that device's file system) that `run_dir` ends with.
#[cfg(target_os = "linux")]
pub fn run_mount_is(mountinfo: &str, run_dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(meta), Ok(run_dir)) = (std::fs::metadata(run_dir), std::fs::canonicalize(run_dir))
    else {
        return false;
    };
    let dev = format!("{}:{}", libc::major(meta.dev()), libc::minor(meta.dev()));
    // The last mount on /run is the one the namespace sees.
    mountinfo
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() > 4 && f[4] == "/run").then(|| (f[2].to_string(), f[3].to_string()))
        })
        .next_back()
        .is_some_and(|(d, root)| {
            let root = root.trim_start_matches('/');
            d == dev && !root.is_empty() && run_dir.ends_with(root)
        })
}

/// `/proc` is Linux's: elsewhere nothing is ours.
#[cfg(not(target_os = "linux"))]
fn root_run_is(_pid: u32, _run_dir: &Path) -> bool {
    false
}

/// Mount namespaces (and `/proc/<pid>/mountinfo`) are Linux's: elsewhere nothing is ours.
#[cfg(not(target_os = "linux"))]
pub fn run_mount_is(_mountinfo: &str, _run_dir: &Path) -> bool {
    false
}

/// The parent of a process (Linux: field 4 of `/proc/<pid>/stat`), None if it is gone.
pub fn parent_of(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_after_comm(&text)?.get(1)?.parse().ok()
}

/// Whether we can create mount namespaces (Linux, root).
pub fn can_isolate() -> bool {
    cfg!(target_os = "linux") && nix::unistd::geteuid().is_root()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `program`, to run with a private `/run` of `run_dir`; `None` when mount namespaces
    /// cannot be made here (it says why the calling test is skipped).
    #[cfg(target_os = "linux")]
    fn isolated(run_dir: &Path, program: &str) -> Option<Command> {
        if !can_isolate() {
            eprintln!("skipped: mount namespaces need root");
            return None;
        }
        let mut cmd = Command::new(program);
        Isolation::new(run_dir).unwrap().apply(&mut cmd);
        Some(cmd)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn run_mount_is__only_our_directory_on_our_device() {
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir().unwrap();
        let run = t.path().join("slurm-cluster-x").join("run");
        std::fs::create_dir_all(&run).unwrap();
        let real = std::fs::canonicalize(&run).unwrap();
        let dev = std::fs::metadata(&run).unwrap().dev();
        let dev = format!("{}:{}", libc::major(dev), libc::minor(dev));
        let line = |dev: &str, root: &str| {
            format!("700 600 {dev} {root} /run rw,relatime shared:1 - ext4 /dev/vda1 rw\n")
        };
        let system = "25 1 0:23 / /run rw,nosuid - tmpfs tmpfs rw\n";
        let ours = format!("{system}{}", line(&dev, &real.to_string_lossy()));
        assert!(run_mount_is(&ours, &run));
        // The same directory seen from a file system mounted below it (root is relative).
        let tail = real
            .strip_prefix(real.parent().unwrap().parent().unwrap())
            .unwrap();
        assert!(run_mount_is(
            &format!("{system}{}", line(&dev, &format!("/{}", tail.display()))),
            &run
        ));
        // Another harness's directory, another device, or the system's /run: not ours.
        let other = format!("{system}{}", line(&dev, "/tmp/xtask-peer-1/native/c/run"));
        assert!(!run_mount_is(&other, &run));
        assert!(!run_mount_is(
            &format!("{system}{}", line("254:99", &real.to_string_lossy())),
            &run
        ));
        assert!(!run_mount_is(system, &run));
        assert!(!run_mount_is("", &run));
    }

    #[test]
    fn parse_stat_after_comm__comm_with_spaces_and_parens() {
        let text =
            "123 (a b) c)) S 1 123 123 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 98765 1000 10";
        let f = parse_stat_after_comm(text).unwrap();
        assert_eq!(f[0], "S");
        assert_eq!(f[19], "98765");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn parent_of__our_parent() {
        assert_eq!(
            parent_of(std::process::id()),
            Some(std::os::unix::process::parent_id())
        );
        assert_eq!(parent_of(u32::MAX / 2), None);
    }

    #[test]
    fn start_ticks__of_self_is_stable_and_absent_pid_is_none() {
        let me = std::process::id();
        assert_eq!(start_ticks(me), start_ticks(me));
        assert!(start_ticks(me).is_some());
        assert_eq!(start_ticks(u32::MAX / 2), None);
    }

    #[test]
    fn spawn_detached__outlives_the_handle_and_stops_by_record() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sleep");
        cmd.arg("60");
        let rec = spawn_detached("sleeper", cmd, None, &dir.path().join("out")).unwrap();
        assert_eq!(rec.liveness(), Liveness::Running);
        let u = rec.usage().unwrap();
        assert!(u.rss_kb > 0 && u.fds >= 3 && u.threads == 1, "{u:?}");
        assert_eq!(
            rec.stop(Duration::from_secs(10)).unwrap(),
            Stopped::Terminated
        );
        assert_eq!(rec.liveness(), Liveness::Gone);
        assert_eq!(
            rec.stop(Duration::from_secs(1)).unwrap(),
            Stopped::AlreadyGone
        );
    }

    #[test]
    fn stop__never_signals_a_reused_pid() {
        // Our own PID with a wrong start time stands for a reused PID.
        let me = std::process::id();
        let rec = ProcRecord {
            name: "impostor".into(),
            pid: me,
            start_ticks: start_ticks(me).unwrap() + 1,
            mnt_ns: None,
        };
        assert_eq!(rec.liveness(), Liveness::Reused);
        assert!(!rec.signal(Signal::SIGTERM).unwrap());
        assert_eq!(
            rec.stop(Duration::from_secs(1)).unwrap(),
            Stopped::PidReused
        );
    }

    #[test]
    fn stop__kills_what_ignores_sigterm() {
        let (dir, ready) = driver_common::testing::scratch("ready");
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("trap '' TERM; touch \"$1\"; while :; do sleep 1; done")
            .arg("sh")
            .arg(&ready);
        let rec = spawn_detached("stubborn", cmd, None, &dir.path().join("out")).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ready.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            rec.stop(Duration::from_millis(300)).unwrap(),
            Stopped::Killed
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn isolation__binds_our_directory_on_run() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("marker"), "ours").unwrap();
        let Some(mut cmd) = isolated(dir.path(), "cat") else {
            return;
        };
        let out = cmd.arg("/run/marker").output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(out.stdout, b"ours");
        assert!(
            !Path::new("/run/marker").exists(),
            "the host /run is untouched"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn processes_in_namespace__finds_ours_and_ignores_a_namespace_with_another_run() {
        let ours = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let Some(mut cmd) = isolated(ours.path(), "sleep") else {
            return;
        };
        let mut child = cmd.arg("30").spawn().unwrap();
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(5);
        let ns = loop {
            // After exec (comm is `sleep`) the namespace and its bind mount are complete.
            let exec_done = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "sleep");
            match mount_namespace(pid) {
                Some(ns) if exec_done && Some(ns) != mount_namespace(std::process::id()) => {
                    break ns;
                }
                _ if Instant::now() > deadline => panic!("sleep never entered its namespace"),
                _ => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        let found = processes_in_namespace(ns, &[other.path().into(), ours.path().into()]);
        let other_found = processes_in_namespace(ns, &[other.path().into()]);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(found.iter().any(|p| p.pid == pid), "{found:?}");
        assert!(other_found.is_empty(), "{other_found:?}");
    }
}
