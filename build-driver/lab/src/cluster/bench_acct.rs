//! `cargo xtask cluster bench-acct --prefix <darwin install> [--procs 1000] [--polls 20]
//! [--rounds 2]`: the cost of one accounting poll of a job with `--procs` processes,
//! `jobacct_gather/darwin` against `jobacct_gather/linux`. A benchmark that prints figures,
//! not a test.
//!
//! Both plugins' real polling code runs, in the real slurmstepd of the darwin-personality
//! install (it builds both): for each round and plugin (the order alternating between
//! rounds), a one-node cluster of profile `macos-native` (proctrack/darwin, a poll every
//! second) with `JobAcctGatherType` set to the plugin gets one batch job that starts a tree
//! of `--procs` sleeping processes (groups of 100: a subshell and its 99 `sleep`s).
//! jobacct_gather/darwin reads them through the shim's macOS calls, answered from procfs as in
//! the darwin personality; jobacct_gather/linux reads `/proc` itself, so for its run the
//! daemons get `SLURM_SHIM_EMULATION_OFF=hidden-paths` (otherwise the personality's "no
//! /proc" would let it find nothing, a poll that costs nothing).
//!
//! The cost of a poll is the CPU time of the thread that polls (slurmstepd's `_watch_tasks`
//! thread; unnamed in the darwin personality, which has no `prctl`: it is the step's thread
//! that used the most CPU, and the figures of every thread are printed): its
//! `/proc/<pid>/task/<tid>/schedstat` run time, sampled every 10 ms; a poll is a burst of
//! growth followed by at least 300 ms without. Each poll includes proctrack/darwin's
//! `get_pids` scan, the same for both plugins. The first burst after the tree is complete is
//! dropped (it may be cut by the window's start). Printed: min/median/max CPU ms per poll
//! per round, then over all rounds, and the ratio darwin/linux of the medians (target: at
//! most 1), with the load average: the figures are only as quiet as the machine.

use super::lab::Lab;
use super::private_ns::{self, Entered};
use super::profile::Profile;
use crate::cli::BenchAcctArgs;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::{poll, read_bounded};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use xshell::{Shell, cmd};

use super::bench::{loadavg, median, work_dir};
use super::config::CLIENT_TIMEOUT;

mod sample;
use sample::{Burst, ThreadSeries};

/// The two plugins and what their run changes in the daemons' environment.
const PLUGINS: [Plugin; 2] = [
    Plugin {
        name: "jobacct_gather/linux",
        off: Some("hidden-paths"),
    },
    Plugin {
        name: "jobacct_gather/darwin",
        off: None,
    },
];

#[derive(Debug, Clone, Copy)]
struct Plugin {
    name: &'static str,
    /// `SLURM_SHIM_EMULATION_OFF` for the daemons of its cluster.
    off: Option<&'static str>,
}

impl Plugin {
    fn short(self) -> &'static str {
        self.name.trim_start_matches("jobacct_gather/")
    }
}

pub fn run(sh: &Shell, args: BenchAcctArgs) -> Result<()> {
    let argv: Vec<_> = std::env::args_os().skip(1).collect();
    if private_ns::enter(sh, "cluster bench-acct", &argv)? == Entered::Done {
        return Ok(());
    }
    check_args(&args)?;
    let prefix = std::path::absolute(&args.prefix).map_err(|e| Error::io(&args.prefix, e))?;
    check_plugins(&prefix)?;
    let work = work_dir()?;
    println!(
        "bench-acct: {} processes, {} polls per plugin and round, {} round(s), prefix {}; directory {}",
        args.procs,
        args.polls,
        args.rounds,
        prefix.display(),
        work.display()
    );
    let mut all: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.rounds {
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let p = PLUGINS[i];
            let dir = work.join(format!("{}-{round}", p.short()));
            let load = loadavg();
            let polls = measure(sh, &prefix, &dir, p, &args)?;
            println!(
                "  round {} {:6}: {} polls, CPU per poll {}; load before {load}",
                round + 1,
                p.short(),
                polls.len(),
                spread(&polls)
            );
            all[i].extend(polls);
        }
    }
    summary(&all, args.rounds);
    std::fs::remove_dir_all(&work).map_err(|e| Error::io(&work, e))
}

fn check_args(args: &BenchAcctArgs) -> Result<()> {
    if args.procs == 0 || args.polls < 3 || args.rounds == 0 {
        return Err(Error::Usage(format!(
            "bench-acct: --procs must be at least 1, --polls at least 3 and --rounds at least 1 (got {}, {}, {})",
            args.procs, args.polls, args.rounds
        )));
    }
    Ok(())
}

/// The prefix must be a darwin-personality install with both plugins and proctrack/darwin.
fn check_plugins(prefix: &Path) -> Result<()> {
    super::host::check_prefix(prefix)?;
    for so in [
        "jobacct_gather_linux.so",
        "jobacct_gather_darwin.so",
        "proctrack_darwin.so",
    ] {
        let f = prefix.join("lib/slurm").join(so);
        if !f.is_file() {
            return Err(Error::Usage(format!(
                "bench-acct: {} is missing: give --prefix a darwin-personality install (`cargo xtask build-slurm --personality darwin`), which builds both jobacct_gather plugins and proctrack/darwin",
                f.display()
            )));
        }
    }
    Ok(())
}

/// `min / median / max` in milliseconds.
fn spread(ms: &[f64]) -> String {
    let min = ms.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ms.iter().copied().fold(0.0, f64::max);
    format!(
        "min {min:.1} ms, median {:.1} ms, max {max:.1} ms",
        median(ms.to_vec())
    )
}

fn summary(all: &[Vec<f64>; 2], rounds: usize) {
    println!("bench-acct summary (all polls of {rounds} round(s)):");
    for (p, ms) in PLUGINS.iter().zip(all) {
        println!("  {:6}: {} polls, {}", p.short(), ms.len(), spread(ms));
    }
    let [linux, darwin] = all;
    println!(
        "  darwin/linux median CPU per poll: {:.2}x (target: at most 1.00x)",
        median(darwin.clone()) / median(linux.clone())
    );
}

/// One plugin's cluster, job and polls (CPU ms each).
fn measure(
    sh: &Shell,
    prefix: &Path,
    dir: &Path,
    p: Plugin,
    args: &BenchAcctArgs,
) -> Result<Vec<f64>> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let extra = vec![
        format!("JobAcctGatherType={}", p.name),
        "JobAcctGatherFrequency=task=1".to_string(),
    ];
    let env: Vec<(String, String)> = p
        .off
        .map(|off| ("SLURM_SHIM_EMULATION_OFF".to_string(), off.to_string()))
        .into_iter()
        .collect();
    let lab = Lab::start(sh, prefix, dir, Profile::MacosNative, 1, &extra, &env)?;
    let result = poll_job(sh, &lab, dir, p, args);
    let stopped = lab.stop(sh);
    let polls = result?;
    stopped?;
    Ok(polls)
}

/// The job's script: its slurmstepd's pid to `stepd`, then groups of up to 100 processes
/// (a subshell and its `sleep`s), `procs` in all besides the script's shell.
fn tree_script(stepd: &Path, procs: usize) -> String {
    let mut groups = Vec::new();
    let mut left = procs;
    while left > 0 {
        let n = left.min(100);
        groups.push(n.to_string());
        left -= n;
    }
    format!(
        "#!/bin/sh\necho $PPID > {}\nfor n in {}; do ( i=1; while [ $i -lt $n ]; do sleep 900 & i=$((i+1)); done; wait ) & done\nwait\n",
        stepd.display(),
        groups.join(" ")
    )
}

/// Submits the tree, waits until it is complete, samples the polling thread, cancels.
fn poll_job(
    sh: &Shell,
    lab: &Lab,
    dir: &Path,
    p: Plugin,
    args: &BenchAcctArgs,
) -> Result<Vec<f64>> {
    let _env = sh.push_env("SLURM_CONF", lab.conf());
    let stepd_file = dir.join("stepd");
    let script = dir.join("tree.sh");
    std::fs::write(&script, tree_script(&stepd_file, args.procs))
        .map_err(|e| Error::io(&script, e))?;
    let sbatch = lab.tool("sbatch");
    let out = dir.join("job.out");
    let id = super::jobs::sbatch_id(
        cmd!(
            sh,
            "{sbatch} --parsable -J bench-acct --mem=8G -o {out} {script}"
        )
        .quiet(),
    )?;
    let measured = sample_job(sh, lab, &stepd_file, id, p, args);
    let cancelled = cancel_and_wait(sh, lab, id, read_pid(&stepd_file));
    let polls = measured?;
    cancelled?;
    Ok(polls)
}

/// `scancel` the job and wait until its slurmstepd (and so its tree) is gone.
fn cancel_and_wait(sh: &Shell, lab: &Lab, id: u32, stepd: Option<u32>) -> Result<()> {
    let (scancel, id) = (lab.tool("scancel"), id.to_string());
    read_bounded(cmd!(sh, "{scancel} {id}").quiet(), CLIENT_TIMEOUT)?;
    let Some(stepd) = stepd else {
        return Ok(());
    };
    poll(
        "the cancelled job's slurmstepd to exit",
        Duration::from_secs(60),
        Duration::from_millis(200),
        || Ok((!driver_common::util::signal::process_exists(stepd)).then_some(())),
    )
}

fn sample_job(
    sh: &Shell,
    lab: &Lab,
    stepd_file: &Path,
    id: u32,
    p: Plugin,
    args: &BenchAcctArgs,
) -> Result<Vec<f64>> {
    let stepd = poll(
        "the job's script to name its slurmstepd",
        Duration::from_secs(120),
        Duration::from_millis(200),
        || Ok(read_pid(stepd_file)),
    )?;
    let seen = poll(
        "the job's process tree to be complete",
        Duration::from_secs(120),
        Duration::from_millis(200),
        || Ok(Some(descendants(stepd)).filter(|&n| n > args.procs)),
    )?;
    // One poll interval for the plugin to see the whole tree once.
    std::thread::sleep(Duration::from_secs(2));
    let series = sample::until_bursts(stepd, args.polls + 1, args.polls as u64 * 3 + 30)?;
    let (busiest, bursts) = pick_polling_thread(&series)?;
    let rss = sstat_rss(sh, lab, id)?;
    println!(
        "    {}: slurmstepd {stepd}, {seen} processes below it; threads' CPU in the window: {}; polling thread {busiest}; sstat MaxRSS of the batch step {rss}",
        p.name,
        thread_totals(&series)
    );
    Ok(bursts
        .iter()
        .skip(1)
        .take(args.polls)
        .map(Burst::cpu_ms)
        .collect())
}

fn read_pid(f: &Path) -> Option<u32> {
    std::fs::read_to_string(f).ok()?.trim().parse().ok()
}

/// How many processes have `pid` as an ancestor.
fn descendants(pid: u32) -> usize {
    let mut parent: BTreeMap<u32, u32> = BTreeMap::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(pp) = super::procs::parent_of(p) {
            parent.insert(p, pp);
        }
    }
    parent
        .keys()
        .filter(|&&p| {
            let mut cur = p;
            for _ in 0..64 {
                match parent.get(&cur) {
                    Some(&pp) if pp == pid => return true,
                    Some(&pp) if pp > 1 => cur = pp,
                    _ => return false,
                }
            }
            false
        })
        .count()
}

/// The thread that used the most CPU in the window, and its bursts.
fn pick_polling_thread(series: &[ThreadSeries]) -> Result<(u32, Vec<Burst>)> {
    let busiest = series
        .iter()
        .max_by_key(|s| s.total_ns())
        .ok_or_else(|| Error::Scenario("slurmstepd had no thread to sample".into()))?;
    let bursts = busiest.bursts(Duration::from_millis(300));
    if bursts.len() < 2 {
        return Err(Error::Scenario(format!(
            "thread {} of slurmstepd polled {} time(s) in the window: is JobAcctGatherFrequency=task=1 in effect?",
            busiest.tid,
            bursts.len()
        )));
    }
    Ok((busiest.tid, bursts))
}

fn thread_totals(series: &[ThreadSeries]) -> String {
    series
        .iter()
        .map(|s| format!("{} {:.0} ms", s.tid, s.total_ns() as f64 / 1e6))
        .collect::<Vec<_>>()
        .join(", ")
}

/// sstat's MaxRSS of the batch step: that the plugin saw the whole tree.
fn sstat_rss(sh: &Shell, lab: &Lab, id: u32) -> Result<String> {
    let sstat = lab.tool("sstat");
    let step = format!("{id}.batch");
    let out = read_bounded(
        cmd!(sh, "{sstat} -n -P -j {step} -o MaxRSS").quiet(),
        CLIENT_TIMEOUT,
    )?;
    Ok(out.trim().to_string())
}
