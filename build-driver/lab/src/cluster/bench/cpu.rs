//! CPU time of the node's daemons, for the launch benchmark's "where the time goes".
//!
//! * slurmd: user plus system time of the process (`/proc/<pid>/stat` fields 14 and 15: every
//!   thread, the ended ones included), read before and after a series; clock ticks (10 ms),
//!   fine over a series of hundreds of steps.
//! * slurmstepd: short-lived, and not slurmd's child (slurmd forks a child that forks
//!   slurmstepd and exits, so a stepd is reparented). The benchmark makes itself a child
//!   subreaper (`PR_SET_CHILD_SUBREAPER`, prctl(2)): it is slurmd's ancestor, so every
//!   slurmstepd becomes its child once the intermediate process exits. [`StepdReaper`]'s
//!   thread looks at the process's children (`/proc/self/task/*/children`) every 10 ms and
//!   reaps each one that is a zombie named `slurmstepd` with `wait4`, whose `rusage` (in
//!   microseconds) is the stepd's user plus system time together with the children it waited
//!   for: its tasks (`/bin/true` here, the same program for both builds). Other children
//!   (the benchmark's clients, the daemons) are left to whoever waits for them.

#[cfg(target_os = "linux")]
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use driver_common::error::{Error, Result};

/// User plus system time of process `pid` so far (`None` if it is gone).
pub fn process_cpu(pid: u32) -> Option<Duration> {
    stat_cpu(pid, Own::Process)
}

/// User plus system time of the children process `pid` waited for (`None` if it is gone):
/// for slurmd, its prolog and epilog (the script launcher and the script, which
/// `run_command()` waits for); not slurmstepd, which is not slurmd's child.
pub fn children_cpu(pid: u32) -> Option<Duration> {
    stat_cpu(pid, Own::Children)
}

/// Whose time a `stat` line's fields give.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Own {
    /// utime and stime, fields 14 and 15 of stat(5).
    Process,
    /// cutime and cstime, fields 16 and 17: the waited-for children's.
    Children,
}

fn stat_cpu(pid: u32, own: Own) -> Option<Duration> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(Duration::from_nanos(
        stat_ticks(&text, own)? * 1_000_000_000 / hz,
    ))
}

/// The clock ticks of `own` in a `/proc/<pid>/stat` line.
pub fn stat_ticks(text: &str, own: Own) -> Option<u64> {
    let f = super::super::procs::parse_stat_after_comm(text)?;
    // The list starts at field 3.
    let at = match own {
        Own::Process => 11,
        Own::Children => 13,
    };
    Some(f.get(at)?.parse::<u64>().ok()? + f.get(at + 1)?.parse::<u64>().ok()?)
}

/// The slurmstepd processes reaped so far and their CPU time (with their tasks').
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reaped {
    pub count: usize,
    pub cpu: Duration,
}

impl Reaped {
    /// What was reaped since `before`.
    pub fn since(self, before: Reaped) -> Reaped {
        Reaped {
            count: self.count - before.count,
            cpu: self.cpu.saturating_sub(before.cpu),
        }
    }
}

/// Makes this process a child subreaper (Linux's `prctl(PR_SET_CHILD_SUBREAPER)`; the lab's
/// clusters run on Linux only).
#[cfg(target_os = "linux")]
fn become_subreaper() -> Result<()> {
    // SAFETY: prctl with an integer argument; no memory is passed.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(Error::io(
            Path::new("prctl(PR_SET_CHILD_SUBREAPER)"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn become_subreaper() -> Result<()> {
    Err(Error::Unsupported(
        "cluster bench reaps slurmstepd as a child subreaper, which needs Linux".into(),
    ))
}

/// Reaps the slurmstepd processes that come to this process (see the module doc).
pub struct StepdReaper {
    stop: Arc<AtomicBool>,
    totals: Arc<Mutex<Reaped>>,
    thread: Option<JoinHandle<()>>,
}

impl StepdReaper {
    /// Make this process a child subreaper and start reaping.
    pub fn start() -> Result<StepdReaper> {
        become_subreaper()?;
        let stop = Arc::new(AtomicBool::new(false));
        let totals = Arc::new(Mutex::new(Reaped::default()));
        let thread = {
            let (stop, totals) = (stop.clone(), totals.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    for pid in children() {
                        if let Some(cpu) = reap_stepd(pid) {
                            if let Ok(mut t) = totals.lock() {
                                t.count += 1;
                                t.cpu += cpu;
                            }
                        }
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        };
        Ok(StepdReaper {
            stop,
            totals,
            thread: Some(thread),
        })
    }

    pub fn totals(&self) -> Reaped {
        self.totals.lock().map(|t| *t).unwrap_or_default()
    }

    /// The totals once at least `count` stepds were reaped since `before`, or after `timeout`.
    pub fn settle(&self, before: Reaped, count: usize, timeout: Duration) -> Reaped {
        let t0 = Instant::now();
        loop {
            let now = self.totals().since(before);
            if now.count >= count || t0.elapsed() > timeout {
                return now;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for StepdReaper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// This process's children (every thread's: a reparented process goes to one of them).
fn children() -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Whether a `/proc/<pid>/stat` text is a zombie slurmstepd's.
pub fn is_zombie_stepd(stat: &str) -> bool {
    let comm = stat
        .find('(')
        .zip(stat.rfind(')'))
        .and_then(|(a, b)| stat.get(a + 1..b));
    let state = stat
        .rfind(')')
        .and_then(|b| stat[b + 1..].split_whitespace().next());
    comm == Some("slurmstepd") && state == Some("Z")
}

/// Reaps `pid` if it is a zombie slurmstepd: its CPU time with its waited-for children's.
fn reap_stepd(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    if !is_zombie_stepd(&stat) {
        return None;
    }
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to a status int and a rusage.
    let got = unsafe { libc::wait4(pid as i32, &mut status, libc::WNOHANG, &mut ru) };
    if got != pid as i32 {
        return None;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Some(tv(ru.ru_utime) + tv(ru.ru_stime))
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn stat_ticks__own_and_waited_for_children() {
        // fields 14-17 (utime, stime, cutime, cstime) are 11, 12, 13 and 14
        let line = "4242 (slurm d) S 1 4242 4242 0 -1 4194560 5 6 7 8 11 12 13 14 20 0 1 0 99";
        assert_eq!(stat_ticks(line, Own::Process), Some(23));
        assert_eq!(stat_ticks(line, Own::Children), Some(27));
        assert_eq!(stat_ticks("4242 (x) S 1", Own::Children), None);
    }

    #[test]
    fn is_zombie_stepd__name_and_state() {
        assert!(is_zombie_stepd("4242 (slurmstepd) Z 1 4242 4242 0"));
        assert!(!is_zombie_stepd("4242 (slurmstepd) S 1 4242 4242 0"));
        assert!(!is_zombie_stepd("4242 (srun) Z 1 4242 4242 0"));
        assert!(!is_zombie_stepd("4242 (slurmstepd x) Z 1"));
    }

    #[test]
    fn process_cpu__grows_with_work() {
        let me = std::process::id();
        let before = process_cpu(me).unwrap();
        // Spin (at most 5 s of wall time on a loaded machine) until 50 ms of CPU show.
        let t0 = Instant::now();
        let mut x = 0u64;
        let mut grew = false;
        while !grew && t0.elapsed() < Duration::from_secs(5) {
            for _ in 0..100_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            grew = process_cpu(me).unwrap() >= before + Duration::from_millis(50);
        }
        std::hint::black_box(x);
        assert!(grew, "no 50 ms of CPU seen in 5 s of spinning");
    }

    #[test]
    fn reaped__since() {
        let a = Reaped {
            count: 3,
            cpu: Duration::from_millis(30),
        };
        let b = Reaped {
            count: 5,
            cpu: Duration::from_millis(52),
        };
        assert_eq!(
            b.since(a),
            Reaped {
                count: 2,
                cpu: Duration::from_millis(22)
            }
        );
    }
}
