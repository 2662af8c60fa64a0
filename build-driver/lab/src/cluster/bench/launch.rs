//! Step-launch mode of `cluster bench` (`--launch`): what a user of a node waits for when a
//! step starts, through slurmctld, slurmd and slurmstepd.
//!
//! For each round and build (one cluster at a time, the builds' order alternating by round),
//! three series, one after the other:
//!
//! * `srun -n1`: `--runs` times `srun -n1 -p bench /bin/true` (a job and its step each), the
//!   wall time of each call measured around the client;
//! * `srun -n4`: `--runs` times `srun -n4 -N1 -O -p bench /bin/true` (four tasks on the one
//!   node: one slurmstepd with four tasks, their I/O and PMI wiring; `-O` because the node has
//!   fewer CPUs than tasks);
//! * `salloc`: one `salloc -n1` whose shell runs `--steps` `srun /bin/true` steps, each timed
//!   by the shell (`date +%s%N` before and after).
//!
//! Per series: p50 and p99 of the wall times; the CPU time per step of slurmd, of its prolog
//! and epilog (the children it waits for; they hid the darwin build's closeall() loops, whose
//! fix is patch 0027's), and of slurmstepd ([`super::cpu`]); for a build linking the shim (darwin personality), the shim's calls
//! per step by API of the series' slurmstepd processes ([`super::shim_counts`]). slurmd
//! writes its counts when it exits, so its calls are per step over the whole run. The load
//! average is printed before and after each series. Then, over the rounds: medians per build,
//! ratios darwin/native (goal: at most 1.05 at p50 and p99, on a machine whose load is below 1).

use super::super::config::CLIENT_TIMEOUT;
use super::super::daemon::Daemon;
use super::super::lab::Lab;
use super::cpu::{self, Reaped, StepdReaper};
use super::shim_counts::{self, Calls};
use super::{
    BenchArgs, Build, PARTITION, conf_lines, loadavg, median, order, percentile, work_dir,
};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::read_bounded;
use std::path::Path;
use std::time::{Duration, Instant};
use xshell::{Shell, cmd};

/// The series of one round, in order.
pub const SERIES: [&str; 3] = ["srun -n1", "srun -n4", "salloc steps"];

/// One series' figures.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Wall time of each step, seconds.
    pub walls: Vec<f64>,
    /// slurmd's CPU time during the series.
    pub slurmd_cpu: Duration,
    /// The CPU time of the children slurmd waited for during the series: its prolog and
    /// epilog (script launcher and script).
    pub scripts_cpu: Duration,
    /// The slurmstepd processes reaped for the series and their CPU time.
    pub stepd: Reaped,
    /// The series' slurmstepd processes' shim calls.
    pub stepd_calls: Calls,
    pub load_before: String,
    pub load_after: String,
}

impl Series {
    pub fn steps(&self) -> usize {
        self.walls.len()
    }

    pub fn p(&self, p: f64) -> f64 {
        percentile(&mut self.walls.clone(), p)
    }

    /// slurmd's CPU per step, milliseconds.
    pub fn slurmd_ms(&self) -> f64 {
        ms(self.slurmd_cpu) / self.steps().max(1) as f64
    }

    /// slurmd's scripts' CPU per step, milliseconds.
    pub fn scripts_ms(&self) -> f64 {
        ms(self.scripts_cpu) / self.steps().max(1) as f64
    }

    /// slurmstepd's CPU (with its tasks') per reaped stepd, milliseconds.
    pub fn stepd_ms(&self) -> f64 {
        ms(self.stepd.cpu) / self.stepd.count.max(1) as f64
    }
}

/// One build's round: its three series and slurmd's shim calls over the whole run.
#[derive(Debug, Clone, Default)]
pub struct Round {
    pub series: Vec<Series>,
    pub slurmd_calls: Calls,
}

impl Round {
    pub fn steps(&self) -> usize {
        self.series.iter().map(Series::steps).sum()
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn run(sh: &Shell, builds: &[Build; 2], args: &BenchArgs) -> Result<()> {
    if args.runs == 0 || args.steps == 0 {
        return Err(Error::Usage("--runs and --steps must be at least 1".into()));
    }
    let work = work_dir()?;
    println!(
        "bench --launch: per build and round {} x srun -n1, {} x srun -n4, salloc -n1 with {} steps; {} round(s), one cluster at a time; directory {}",
        args.runs,
        args.runs,
        args.steps,
        args.rounds,
        work.display()
    );
    let reaper = StepdReaper::start()?;
    let mut rounds: [Vec<Round>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.rounds {
        for i in order(round) {
            let b = &builds[i];
            let dir = work.join(format!("{}-{round}", b.name));
            let r = launch_one(sh, &reaper, &b.prefix, &dir, args)?;
            print_round(round, b.name, &r);
            measured(b.name, &r)?;
            rounds[i].push(r);
        }
    }
    summary(&rounds);
    drop(reaper);
    std::fs::remove_dir_all(&work).map_err(|e| Error::io(&work, e))?;
    Ok(())
}

/// Every series must have had its slurmstepd processes reaped (or the CPU figures would be
/// silently missing), and the darwin build's must have written shim counts.
fn measured(build: &str, r: &Round) -> Result<()> {
    for (name, s) in SERIES.iter().zip(&r.series) {
        if s.stepd.count == 0 {
            return Err(Error::Scenario(format!(
                "{build} {name}: no slurmstepd was reaped, so its CPU time is unknown (is this process slurmd's ancestor?)"
            )));
        }
        if build == "darwin" && s.stepd_calls.processes == 0 {
            return Err(Error::Scenario(format!(
                "{build} {name}: no slurmstepd wrote shim call counts ({})",
                shim_counts::ENV
            )));
        }
    }
    Ok(())
}

fn launch_one(
    sh: &Shell,
    reaper: &StepdReaper,
    prefix: &Path,
    dir: &Path,
    args: &BenchArgs,
) -> Result<Round> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let counts = dir.join("shim-counts");
    let env = [
        (
            shim_counts::ENV.to_string(),
            counts.to_string_lossy().into_owned(),
        ),
        super::no_emulation_log(),
    ];
    let jobs = 2 * args.runs + 1;
    let lab = Lab::start(sh, prefix, dir, args.profile, 1, &conf_lines(jobs), &env)?;
    let result = series_all(sh, &lab, reaper, &counts, args);
    let stopped = lab.stop(sh);
    let mut round = result?;
    stopped?;
    // slurmd wrote its counts when it stopped.
    round.slurmd_calls = shim_counts::calls_of(&shim_counts::read_from(&counts, 0), "slurmd");
    Ok(round)
}

fn series_all(
    sh: &Shell,
    lab: &Lab,
    reaper: &StepdReaper,
    counts: &Path,
    args: &BenchArgs,
) -> Result<Round> {
    let slurmd = lab
        .pid_of(Daemon::Slurmd(0))
        .ok_or_else(|| Error::Scenario("the cluster has no slurmd record".into()))?;
    let _env = sh.push_env("SLURM_CONF", lab.conf());
    let (srun, salloc) = (lab.tool("srun"), lab.tool("salloc"));
    let mut round = Round::default();
    for name in SERIES {
        let load_before = loadavg();
        let cpu0 = cpu::process_cpu(slurmd).unwrap_or_default();
        let scripts0 = cpu::children_cpu(slurmd).unwrap_or_default();
        let reaped0 = reaper.totals();
        let from = shim_counts::length(counts);
        let walls = match name {
            "srun -n1" => timed(args.runs, || {
                read_bounded(
                    cmd!(sh, "{srun} -n1 -p {PARTITION} /bin/true").quiet(),
                    CLIENT_TIMEOUT,
                )
            })?,
            "srun -n4" => timed(args.runs, || {
                read_bounded(
                    cmd!(sh, "{srun} -n4 -N1 -O -p {PARTITION} /bin/true").quiet(),
                    CLIENT_TIMEOUT,
                )
            })?,
            _ => salloc_steps(sh, &salloc, &srun, args.steps)?,
        };
        let stepd = reaper.settle(reaped0, walls.len(), Duration::from_secs(10));
        let cpu1 = cpu::process_cpu(slurmd).unwrap_or_default();
        let scripts1 = cpu::children_cpu(slurmd).unwrap_or_default();
        round.series.push(Series {
            slurmd_cpu: cpu1.saturating_sub(cpu0),
            scripts_cpu: scripts1.saturating_sub(scripts0),
            stepd,
            stepd_calls: shim_counts::calls_of(&shim_counts::read_from(counts, from), "slurmstepd"),
            walls,
            load_before,
            load_after: loadavg(),
        });
    }
    Ok(round)
}

/// Runs `step` `n` times; the wall time of each, seconds.
fn timed(n: usize, mut step: impl FnMut() -> Result<String>) -> Result<Vec<f64>> {
    let mut walls = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        step()?;
        walls.push(t0.elapsed().as_secs_f64());
    }
    Ok(walls)
}

/// `salloc -n1` running `steps` timed `srun /bin/true` steps; their wall times, seconds.
fn salloc_steps(sh: &Shell, salloc: &Path, srun: &Path, steps: usize) -> Result<Vec<f64>> {
    let script = format!(
        "for i in $(seq {steps}); do s=$(date +%s%N); {} /bin/true || exit 1; e=$(date +%s%N); echo step $((e - s)); done",
        srun.display()
    );
    let out = read_bounded(
        cmd!(sh, "{salloc} -Q -n1 -p {PARTITION} bash -c {script}").quiet(),
        CLIENT_TIMEOUT + Duration::from_secs(steps as u64 * 5),
    )?;
    let walls = step_times(&out);
    if walls.len() != steps {
        return Err(Error::Scenario(format!(
            "salloc ran {} of {steps} steps: {out}",
            walls.len()
        )));
    }
    Ok(walls)
}

/// The `step <ns>` lines of the salloc script's output, in seconds.
pub fn step_times(out: &str) -> Vec<f64> {
    out.lines()
        .filter_map(|l| l.strip_prefix("step ")?.trim().parse::<u64>().ok())
        .map(|ns| ns as f64 / 1e9)
        .collect()
}

fn print_round(round: usize, build: &str, r: &Round) {
    for (name, s) in SERIES.iter().zip(&r.series) {
        println!(
            "  round {} {build:6} {name:12}: {} steps, p50 {:.1} ms, p99 {:.1} ms; CPU per step: slurmd {:.2} ms, its prolog and epilog {:.2} ms, slurmstepd (with its tasks) {:.2} ms ({} reaped); load {} -> {}",
            round + 1,
            s.steps(),
            s.p(50.0) * 1000.0,
            s.p(99.0) * 1000.0,
            s.slurmd_ms(),
            s.scripts_ms(),
            s.stepd_ms(),
            s.stepd.count,
            s.load_before,
            s.load_after,
        );
        if s.stepd_calls.processes > 0 {
            println!(
                "      shim calls per step, slurmstepd: {:.0} in all ({} processes); {}",
                s.stepd_calls.total() as f64 / s.steps().max(1) as f64,
                s.stepd_calls.processes,
                s.stepd_calls.top(8, s.steps())
            );
        }
    }
    if r.slurmd_calls.processes > 0 {
        println!(
            "      shim calls per step, slurmd (whole run, {} steps): {:.0} in all; {}",
            r.steps(),
            r.slurmd_calls.total() as f64 / r.steps().max(1) as f64,
            r.slurmd_calls.top(8, r.steps())
        );
    }
}

fn summary(rounds: &[Vec<Round>; 2]) {
    let n_rounds = rounds[0].len();
    println!(
        "bench --launch summary (median of {n_rounds} round(s); goal: darwin/native at most 1.05x at p50 and p99):"
    );
    let med = |b: usize, k: usize, f: &dyn Fn(&Series) -> f64| {
        median(rounds[b].iter().map(|r| f(&r.series[k])).collect())
    };
    for (k, name) in SERIES.iter().enumerate() {
        let figs: Vec<[f64; 5]> = (0..2)
            .map(|b| {
                [
                    med(b, k, &|s| s.p(50.0) * 1000.0),
                    med(b, k, &|s| s.p(99.0) * 1000.0),
                    med(b, k, &Series::slurmd_ms),
                    med(b, k, &Series::stepd_ms),
                    med(b, k, &Series::scripts_ms),
                ]
            })
            .collect();
        let [n, d] = [figs[0], figs[1]];
        println!(
            "  {name:12}: native p50 {:.1} ms p99 {:.1} ms, darwin p50 {:.1} ms p99 {:.1} ms: darwin/native p50 {:.3}x, p99 {:.3}x; CPU per step slurmd {:.2} vs {:.2} ms, its prolog and epilog {:.2} vs {:.2} ms, slurmstepd {:.2} vs {:.2} ms",
            n[0],
            n[1],
            d[0],
            d[1],
            d[0] / n[0],
            d[1] / n[1],
            n[2],
            d[2],
            n[4],
            d[4],
            n[3],
            d[3],
        );
    }
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn step_times__only_step_lines() {
        let out = "salloc: noise\nstep 1500000\nstep 2000000000\nstep x\n";
        assert_eq!(step_times(out), vec![0.0015, 2.0]);
    }

    #[test]
    fn series__per_step_cpu() {
        let s = Series {
            walls: vec![0.1; 4],
            slurmd_cpu: Duration::from_millis(8),
            scripts_cpu: Duration::from_millis(12),
            stepd: Reaped {
                count: 2,
                cpu: Duration::from_millis(10),
            },
            ..Default::default()
        };
        assert_eq!(s.slurmd_ms(), 2.0);
        assert_eq!(s.scripts_ms(), 3.0);
        assert_eq!(s.stepd_ms(), 5.0);
    }
}
