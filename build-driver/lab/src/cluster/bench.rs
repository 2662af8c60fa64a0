//! `cargo xtask cluster bench --native P1 --darwin P2`: a throughput benchmark, not a test.
//!
//! For each round and build (native then darwin, the order alternating between rounds so
//! neither always runs on a warmer machine), one cluster at a time (lab.rs, in the private
//! mount namespace) gets `--jobs` trivial batch jobs (default 500), submitted one `sbatch`
//! after the other as fast as it answers. Each job prints the time it started
//! (`date +%s.%N`, the first thing its script does).
//!
//! The jobs go to a partition `bench` with `OverSubscribe=FORCE:16` (16 jobs per CPU), and
//! `SchedulerParameters=batch_sched_delay=0,sched_min_interval=0`: with the defaults a
//! one-node cluster on 2 CPUs starts 2 trivial jobs every 3 s (measured), a timer that would
//! hide any cost of the darwin personality; with these settings the daemons' own work is
//! what limits the rate.
//!
//! Printed per build and round: the time from the first submission until the queue is empty
//! (all jobs ended; polled every 100 ms), jobs per second, and the submit-to-start latency
//! (the wall-clock time just before its `sbatch` ran to the time its script started) at p50
//! and p99, then the medians over rounds and the ratios darwin/native (throughput ratio above
//! 1 means the darwin personality is faster; latency ratio below 1 means it starts jobs
//! sooner). The load average is printed with each run: the figures are only as quiet as the
//! machine. Every job must have COMPLETED, or the run fails.

use super::lab::Lab;
use super::private_ns::{self, Entered};
use crate::cli::BenchArgs;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::{poll, read_bounded};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use xshell::{Shell, cmd};

use super::config::CLIENT_TIMEOUT;
const PARTITION: &str = "bench";

/// One build's figures in one round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// First submission until the queue was empty.
    pub makespan: Duration,
    /// Time spent in the `sbatch` calls.
    pub submit: Duration,
    pub jobs: usize,
    pub p50: Duration,
    pub p99: Duration,
}

impl Figures {
    pub fn throughput(&self) -> f64 {
        self.jobs as f64 / self.makespan.as_secs_f64()
    }
}

pub fn run(sh: &Shell, _root: &Path, args: BenchArgs) -> Result<()> {
    if private_ns::enter(
        sh,
        "cluster bench",
        &std::env::args_os().skip(1).collect::<Vec<_>>(),
    )? == Entered::Done
    {
        return Ok(());
    }
    if args.jobs == 0 || args.rounds == 0 {
        return Err(Error::Usage(
            "--jobs and --rounds must be at least 1".into(),
        ));
    }
    let builds = [
        ("native", absolute(&args.native)?),
        ("darwin", absolute(&args.darwin)?),
    ];
    for (_, p) in &builds {
        super::host::check_prefix(p)?;
    }
    let work = work_dir()?;
    println!(
        "bench: {} trivial jobs per build, {} round(s), one cluster at a time; directory {}",
        args.jobs,
        args.rounds,
        work.display()
    );
    let mut figures: [Vec<Figures>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.rounds {
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let (name, prefix) = &builds[i];
            let dir = work.join(format!("{name}-{round}"));
            let load = loadavg();
            let f = bench_one(sh, prefix, &dir, args.profile.profile, args.jobs)?;
            println!(
                "  round {} {name:6}: {} jobs in {:.2} s = {:.2} jobs/s; submit {:.2} s; latency p50 {:.3} s p99 {:.3} s; load before {load}",
                round + 1,
                f.jobs,
                f.makespan.as_secs_f64(),
                f.throughput(),
                f.submit.as_secs_f64(),
                f.p50.as_secs_f64(),
                f.p99.as_secs_f64(),
            );
            figures[i].push(f);
        }
    }
    let med = |v: &[Figures], k: fn(&Figures) -> f64| median(v.iter().map(k).collect());
    let tp = |f: &Figures| f.throughput();
    let p50 = |f: &Figures| f.p50.as_secs_f64();
    let p99 = |f: &Figures| f.p99.as_secs_f64();
    let [n, d] = &figures;
    println!("bench summary (median of {} round(s)):", args.rounds);
    for (name, v) in [("native", n), ("darwin", d)] {
        println!(
            "  {name:6}: {:.2} jobs/s, latency p50 {:.3} s, p99 {:.3} s",
            med(v, tp),
            med(v, p50),
            med(v, p99)
        );
    }
    println!(
        "  darwin/native: throughput {:.3}x, latency p50 {:.3}x, p99 {:.3}x (target: throughput >= 0.95x)",
        med(d, tp) / med(n, tp),
        med(d, p50) / med(n, p50),
        med(d, p99) / med(n, p99)
    );
    std::fs::remove_dir_all(&work).map_err(|e| Error::io(&work, e))?;
    Ok(())
}

fn bench_one(
    sh: &Shell,
    prefix: &Path,
    dir: &Path,
    profile: super::profile::Profile,
    jobs: usize,
) -> Result<Figures> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    // MinJobAge (300 s, config.rs) keeps every finished job visible to `scontrol` for the
    // COMPLETED check; MaxJobCount makes room for them.
    let extra = vec![
        "SelectTypeParameters=CR_CPU".to_string(),
        "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0".to_string(),
        format!("MaxJobCount={}", jobs * 2 + 100),
        format!(
            "PartitionName={PARTITION} Nodes={} OverSubscribe=FORCE:16 MaxTime=INFINITE State=UP",
            super::nodes::node_name(0)
        ),
    ];
    let lab = Lab::start(sh, prefix, dir, profile, 1, &extra, &[])?;
    let result = submit_and_wait(sh, &lab, dir, jobs);
    let stopped = lab.stop(sh);
    let f = result?;
    stopped?;
    Ok(f)
}

fn submit_and_wait(sh: &Shell, lab: &Lab, dir: &Path, jobs: usize) -> Result<Figures> {
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).map_err(|e| Error::io(&out_dir, e))?;
    let _env = sh.push_env("SLURM_CONF", lab.conf());
    let (sbatch, squeue, sacct_like) =
        (lab.tool("sbatch"), lab.tool("squeue"), lab.tool("scontrol"));
    let pattern = out_dir.join("%j.out");
    let t0 = Instant::now();
    let mut submitted = Vec::with_capacity(jobs);
    for _ in 0..jobs {
        let at = now();
        let id = super::jobs::sbatch_id(
            cmd!(
                sh,
                "{sbatch} --parsable -J bench -p {PARTITION} -o {pattern} --wrap 'date +%s.%N'"
            )
            .quiet(),
        )?;
        submitted.push((id, at));
    }
    let submit = t0.elapsed();
    poll(
        "the queue to drain",
        Duration::from_secs(60 + jobs as u64 * 5),
        Duration::from_millis(100),
        || {
            let q = read_bounded(cmd!(sh, "{squeue} -h -o %i").quiet(), CLIENT_TIMEOUT)?;
            Ok(q.trim().is_empty().then_some(()))
        },
    )?;
    let makespan = t0.elapsed();
    // Every job must have completed: the states of all jobs still known to slurmctld.
    let states = read_bounded(cmd!(sh, "{sacct_like} show job -o").quiet(), CLIENT_TIMEOUT)?;
    let completed = states
        .lines()
        .filter(|l| l.split_whitespace().any(|w| w == "JobState=COMPLETED"))
        .count();
    if completed != jobs {
        return Err(Error::Scenario(format!(
            "{completed} of {jobs} jobs COMPLETED; the others: {}",
            states
                .lines()
                .filter(|l| !l.contains("JobState=COMPLETED"))
                .take(5)
                .collect::<Vec<_>>()
                .join("\n")
        )));
    }
    let mut latencies = Vec::with_capacity(jobs);
    for (id, at) in &submitted {
        let f = out_dir.join(format!("{id}.out"));
        let text = std::fs::read_to_string(&f).map_err(|e| Error::io(&f, e))?;
        let started: f64 = text
            .trim()
            .parse()
            .map_err(|e| Error::parse(format!("{}: a time stamp", f.display()), e))?;
        latencies.push((started - at).max(0.0));
    }
    Ok(Figures {
        makespan,
        submit,
        jobs,
        p50: Duration::from_secs_f64(percentile(&mut latencies, 50.0)),
        p99: Duration::from_secs_f64(percentile(&mut latencies, 99.0)),
    })
}

/// Seconds since the epoch, as `date +%s.%N` prints them.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Nearest-rank percentile (`p` in 0..=100) of a non-empty sample.
pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// The median (the mean of the middle two for an even count); `v` must not be empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub(super) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::io(p, e))
}

pub(super) fn work_dir() -> Result<PathBuf> {
    driver_common::util::fs::new_work_dir("xtask-bench", 0o755)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile__nearest_rank() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        v.reverse();
        assert_eq!(percentile(&mut v, 50.0), 50.0);
        assert_eq!(percentile(&mut v, 99.0), 99.0);
        assert_eq!(percentile(&mut v, 100.0), 100.0);
        assert_eq!(percentile(&mut [7.0], 99.0), 7.0);
        assert_eq!(percentile(&mut [1.0, 2.0, 3.0], 0.0), 1.0);
    }

    #[test]
    fn median__odd_and_even() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn throughput__jobs_per_second() {
        let f = Figures {
            makespan: Duration::from_secs(50),
            submit: Duration::from_secs(10),
            jobs: 500,
            p50: Duration::ZERO,
            p99: Duration::ZERO,
        };
        assert_eq!(f.throughput(), 10.0);
    }
}
