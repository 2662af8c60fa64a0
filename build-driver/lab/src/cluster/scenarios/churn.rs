//! Churn: short jobs one after another and in bursts with cancels mixed in. Every job must
//! reach a final state, the queue must drain, and slurmd's descriptor count and RSS must stay
//! flat (both printed).

use super::super::daemon::Daemon;
use super::client::{Ctx, is_terminal};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use std::time::{Duration, Instant};

/// Sequential `srun` jobs, then bursts of `sbatch` jobs.
const SEQUENTIAL: usize = 100;
const BURSTS: usize = 4;
const BURST: usize = 25;
/// Every CANCEL_EVERY-th burst job is cancelled right after submission.
const CANCEL_EVERY: usize = 5;
/// Allowed growth after the warm-up: descriptors, and RSS in kB.
const FD_SLACK: usize = 3;
const RSS_SLACK_KB: u64 = 8 * 1024;

pub fn churn(ctx: &mut Ctx<'_>) -> Result<String> {
    // Warm-up: the first jobs load plugins and fill caches.
    for _ in 0..5 {
        ctx.srun_expect(&["-N1", "true"], "")?;
    }
    ctx.wait_node_idle(Duration::from_secs(30))?;
    let base = probe(ctx)?;
    let t = Instant::now();
    sequential(ctx)?;
    let seq_time = t.elapsed();
    ctx.wait_node_idle(Duration::from_secs(30))?;
    let after_seq = probe(ctx)?;

    let t = Instant::now();
    let (ids, cancelled) = submit_bursts(ctx)?;
    let n_cancelled = wait_final(ctx, &ids)?;
    let burst_time = t.elapsed();
    poll(
        "the queue to drain",
        Duration::from_secs(60),
        Duration::from_millis(500),
        || {
            Ok(ctx
                .read("squeue", &["-h", "-o", "%i"])?
                .trim()
                .is_empty()
                .then_some(()))
        },
    )?;
    ctx.wait_node_idle(Duration::from_secs(30))?;
    let after_burst = probe(ctx)?;
    let figures = format!(
        "slurmd fds {} → {} → {}, RSS {} → {} → {} kB (warm-up, after {SEQUENTIAL} sequential, after {} burst jobs)",
        base.1,
        after_seq.1,
        after_burst.1,
        base.0,
        after_seq.0,
        after_burst.0,
        ids.len()
    );
    println!("  churn: {figures}");
    if after_burst.1 > base.1 + FD_SLACK || after_seq.1 > base.1 + FD_SLACK {
        return Err(Error::Scenario(format!(
            "slurmd leaks descriptors: {figures}"
        )));
    }
    if after_burst.0 > base.0 + RSS_SLACK_KB {
        return Err(Error::Scenario(format!(
            "slurmd RSS grew more than {RSS_SLACK_KB} kB: {figures}"
        )));
    }
    Ok(format!(
        "{SEQUENTIAL} sequential srun jobs in {:.1?}; {} burst jobs ({cancelled} cancelled at submit, {n_cancelled} ended CANCELLED) converged in {:.1?}; {figures}",
        seq_time,
        ids.len(),
        burst_time
    ))
}

/// slurmd's RSS (kB) and open descriptors.
fn probe(ctx: &Ctx<'_>) -> Result<(u64, usize)> {
    ctx.cluster
        .usage(Daemon::Slurmd(0))
        .map(|u| (u.rss_kb, u.fds))
        .ok_or_else(|| Error::Scenario("slurmd is not running".into()))
}

/// SEQUENTIAL `srun` jobs, one after another, each succeeding.
fn sequential(ctx: &mut Ctx<'_>) -> Result<()> {
    for i in 0..SEQUENTIAL {
        let out = ctx.srun(&["-N1", "true"])?;
        if !out.status.success() {
            return Err(Error::Scenario(format!(
                "sequential job {i}: srun {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    }
    Ok(())
}

/// BURSTS bursts of BURST `sbatch` jobs, every CANCEL_EVERY-th cancelled right away: the
/// job ids and how many were cancelled.
fn submit_bursts(ctx: &mut Ctx<'_>) -> Result<(Vec<u32>, usize)> {
    let mut ids = Vec::new();
    let mut cancelled = 0;
    for _ in 0..BURSTS {
        let mut burst = Vec::new();
        for j in 0..BURST {
            let id = ctx.sbatch_wrap(&["-n1"], "true")?;
            if j % CANCEL_EVERY == CANCEL_EVERY - 1 {
                ctx.read("scancel", &[&id.to_string()])?;
                cancelled += 1;
            }
            burst.push(id);
        }
        ids.extend(burst);
    }
    Ok((ids, cancelled))
}

/// Waits for every job of `ids` to reach a final state in sacct, each COMPLETED or
/// CANCELLED; returns how many ended CANCELLED.
fn wait_final(ctx: &mut Ctx<'_>, ids: &[u32]) -> Result<usize> {
    let id_list = ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    let states = poll(
        "every burst job to reach a final state in sacct",
        Duration::from_secs(180),
        Duration::from_millis(500),
        || {
            ctx.cluster.check_daemons()?;
            let out = ctx.read(
                "sacct",
                &["-n", "-X", "-P", "-j", &id_list, "-o", "JobID,State"],
            )?;
            let states: Vec<String> = out
                .lines()
                .filter_map(|l| l.split('|').nth(1))
                .map(|s| s.split_whitespace().next().unwrap_or("").to_string())
                .collect();
            Ok(
                (states.len() == ids.len() && states.iter().all(|s| is_terminal(s)))
                    .then_some(states),
            )
        },
    )?;
    let bad: Vec<&String> = states
        .iter()
        .filter(|s| *s != "COMPLETED" && *s != "CANCELLED")
        .collect();
    if !bad.is_empty() {
        return Err(Error::Scenario(format!("burst jobs ended in {bad:?}")));
    }
    Ok(states.iter().filter(|s| *s == "CANCELLED").count())
}
