//! Batch mode of `cluster bench`: trivial batch jobs, time to drain, jobs/s, latency.
//!
//! For each round and build, one cluster gets `--jobs` trivial batch jobs (default 500),
//! submitted by `--clients` concurrent submitters (threads, each with its own shell), each
//! running one `sbatch` after the other as fast as it answers; with one client the rate
//! measured is one client's sequential rate (about 50 ms a submission here), which is the
//! ceiling of the figure, so `--clients 4` or more measures the controller and node at
//! saturation. Each job prints the time it started (`date +%s.%N`, the first thing its script
//! does).
//!
//! Printed per build and round: the time from the first submission until the queue is empty
//! (all jobs ended; polled every 100 ms), jobs per second, and the submit-to-start latency
//! (the wall-clock time just before its `sbatch` ran to the time its script started) at p50
//! and p99, then the medians over rounds and the ratios darwin/native (throughput ratio above
//! 1 means the darwin personality is faster; latency ratio below 1 means it starts jobs
//! sooner). Every job must have COMPLETED, or the run fails.

use super::super::config::CLIENT_TIMEOUT;
use super::super::lab::Lab;
use super::{
    BenchArgs, Build, PARTITION, conf_lines, loadavg, median, order, percentile, work_dir,
};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::{poll, read_bounded};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use xshell::{Shell, cmd};

/// One build's figures in one round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// First submission until the queue was empty.
    pub makespan: Duration,
    /// Time spent in the `sbatch` calls (until the last client was done).
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

pub fn run(sh: &Shell, builds: &[Build; 2], args: &BenchArgs) -> Result<()> {
    if args.jobs == 0 || args.clients == 0 || args.clients > args.jobs {
        return Err(Error::Usage(
            "--jobs and --clients must be at least 1, --clients at most --jobs".into(),
        ));
    }
    let work = work_dir()?;
    println!(
        "bench: {} trivial jobs per build from {} client(s), {} round(s), one cluster at a time; directory {}",
        args.jobs,
        args.clients,
        args.rounds,
        work.display()
    );
    let mut figures: [Vec<Figures>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.rounds {
        for i in order(round) {
            let b = &builds[i];
            let dir = work.join(format!("{}-{round}", b.name));
            let load = loadavg();
            let f = bench_one(sh, &b.prefix, &dir, args)?;
            println!(
                "  round {} {:6}: {} jobs in {:.2} s = {:.2} jobs/s; submit {:.2} s; latency p50 {:.3} s p99 {:.3} s; load before {load}, after {}",
                round + 1,
                b.name,
                f.jobs,
                f.makespan.as_secs_f64(),
                f.throughput(),
                f.submit.as_secs_f64(),
                f.p50.as_secs_f64(),
                f.p99.as_secs_f64(),
                loadavg(),
            );
            figures[i].push(f);
        }
    }
    let med = |v: &[Figures], k: fn(&Figures) -> f64| median(v.iter().map(k).collect());
    let tp = |f: &Figures| f.throughput();
    let p50 = |f: &Figures| f.p50.as_secs_f64();
    let p99 = |f: &Figures| f.p99.as_secs_f64();
    let [n, d] = &figures;
    println!(
        "bench summary (median of {} round(s), {} client(s)):",
        args.rounds, args.clients
    );
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

fn bench_one(sh: &Shell, prefix: &Path, dir: &Path, args: &BenchArgs) -> Result<Figures> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let lab = Lab::start(
        sh,
        prefix,
        dir,
        args.profile,
        1,
        &conf_lines(args.jobs),
        &[super::no_emulation_log()],
    )?;
    let result = submit_and_wait(sh, &lab, dir, args.jobs, args.clients);
    let stopped = lab.stop(sh);
    let f = result?;
    stopped?;
    Ok(f)
}

/// The shares of `jobs` among `clients` (the first ones get one more).
pub fn shares(jobs: usize, clients: usize) -> Vec<usize> {
    (0..clients)
        .map(|c| jobs / clients + usize::from(c < jobs % clients))
        .collect()
}

/// One client's submissions: (job id, time just before its `sbatch`), one after the other.
fn submit(conf: &Path, sbatch: &Path, pattern: &Path, count: usize) -> Result<Vec<(u32, f64)>> {
    let sh = Shell::new().map_err(|e| Error::Scenario(format!("a client's shell: {e}")))?;
    let _env = sh.push_env("SLURM_CONF", conf);
    let mut submitted = Vec::with_capacity(count);
    for _ in 0..count {
        let at = now();
        let id = super::super::jobs::sbatch_id(
            cmd!(
                sh,
                "{sbatch} --parsable -J bench -p {PARTITION} -o {pattern} --wrap 'date +%s.%N'"
            )
            .quiet(),
        )?;
        submitted.push((id, at));
    }
    Ok(submitted)
}

fn submit_and_wait(
    sh: &Shell,
    lab: &Lab,
    dir: &Path,
    jobs: usize,
    clients: usize,
) -> Result<Figures> {
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).map_err(|e| Error::io(&out_dir, e))?;
    let _env = sh.push_env("SLURM_CONF", lab.conf());
    let (sbatch, squeue, scontrol) = (lab.tool("sbatch"), lab.tool("squeue"), lab.tool("scontrol"));
    let conf = lab.conf();
    let pattern = out_dir.join("%j.out");
    let t0 = Instant::now();
    let per_client: Vec<Result<Vec<(u32, f64)>>> = std::thread::scope(|s| {
        let handles: Vec<_> = shares(jobs, clients)
            .into_iter()
            .map(|n| {
                let (conf, sbatch, pattern) = (&conf, &sbatch, &pattern);
                s.spawn(move || submit(conf, sbatch, pattern, n))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Scenario("a submitting client panicked".into())))
            })
            .collect()
    });
    let mut submitted = Vec::with_capacity(jobs);
    for c in per_client {
        submitted.extend(c?);
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
    let states = read_bounded(cmd!(sh, "{scontrol} show job -o").quiet(), CLIENT_TIMEOUT)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn shares__split_every_job_once() {
        assert_eq!(shares(10, 3), vec![4, 3, 3]);
        assert_eq!(shares(500, 1), vec![500]);
        assert_eq!(shares(8, 4).iter().sum::<usize>(), 8);
    }
}
