//! Injecting one fault of the plan into a running cluster, and the fault thread that fires
//! the plan's faults as the submissions pass their points.

use super::super::daemon::Daemon;
use super::super::handle::Cluster;
use super::plan::Fault;
use driver_common::error::Result;
use nix::sys::signal::Signal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use xshell::Shell;

/// Do `f`: the daemon is down (or stopped) for the fault's time, then back and serving.
pub fn inject(sh: &Shell, cluster: &mut Cluster, f: Fault) -> Result<()> {
    let kill = |cluster: &mut Cluster, d: Daemon| -> Result<()> {
        cluster.kill(d, Signal::SIGKILL)?;
        if let Some(rec) = cluster.record(d).cloned() {
            rec.wait_gone(Duration::from_secs(10));
        }
        Ok(())
    };
    match f {
        Fault::KillSlurmd { node, down } => {
            let d = Daemon::Slurmd(node.min(cluster.nodes().len().saturating_sub(1)));
            kill(cluster, d)?;
            std::thread::sleep(down);
            cluster.start(sh, d)
        }
        Fault::RestartSlurmctld { down } => {
            cluster.stop(Daemon::Slurmctld)?;
            std::thread::sleep(down);
            cluster.start(sh, Daemon::Slurmctld)
        }
        Fault::KillSlurmdbd { down } => {
            kill(cluster, Daemon::Slurmdbd)?;
            std::thread::sleep(down);
            cluster.start(sh, Daemon::Slurmdbd)
        }
        Fault::PauseSlurmctld { down } => {
            cluster.pause(Daemon::Slurmctld)?;
            std::thread::sleep(down);
            cluster.resume(Daemon::Slurmctld).map(|_| ())
        }
    }
}

/// One fault as it happened: when (seconds into the soak), after how many submissions, what,
/// how long it took until the daemon served again.
#[derive(Debug, Clone)]
pub struct Fired {
    pub t: f64,
    pub at_job: usize,
    pub fault: Fault,
    pub took: Duration,
}

/// Fire each of `faults` once `submitted` reaches its point; stops early when `abort` is set.
/// Returns what fired, or the first error (the soak then fails: a daemon that does not come
/// back is a finding).
pub fn run(
    cluster: &mut Cluster,
    faults: &[(usize, Fault)],
    submitted: &AtomicUsize,
    abort: &AtomicBool,
    start: Instant,
) -> Result<Vec<Fired>> {
    let sh = Shell::new().map_err(driver_common::error::Error::Shell)?;
    let mut fired = Vec::new();
    for &(at, fault) in faults {
        while submitted.load(Ordering::SeqCst) < at {
            if abort.load(Ordering::SeqCst) {
                return Ok(fired);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let t = start.elapsed().as_secs_f64();
        println!("soak: fault at job {at} (t={t:.0}s): {}", fault.describe());
        let began = Instant::now();
        inject(&sh, cluster, fault)?;
        fired.push(Fired {
            t,
            at_job: at,
            fault,
            took: began.elapsed(),
        });
    }
    Ok(fired)
}
