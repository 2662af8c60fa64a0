//! `cargo xtask cluster soak --jobs N [--faults] [--seed S]`: a long run, not a timed test.
//!
//! A cluster (`--prefix` or `--mix`, default 2 nodes, profile `default`) gets N jobs of a
//! seeded mix (soak/plan.rs: batch, srun, arrays, cancels, a GPU GRES job), submitted one
//! after the other with at most three jobs per CPU queued (soak/submit.rs). With `--faults`,
//! faults fire as the submissions pass seeded points (soak/faults.rs): slurmd of a random
//! node killed (SIGKILL) and started again, slurmctld restarted, slurmdbd killed and started
//! again, slurmctld stopped (SIGSTOP) for a few seconds and continued. Meanwhile slurmctld's
//! and every slurmd's descriptors, threads and RSS are sampled (soak/series.rs).
//!
//! At the end, once the queue is empty and slurmdbd's queue has drained (sdiag's `DBD Agent
//! queue size: 0`), the run fails unless: every job it submitted has exactly one final record
//! in sacct (soak/verify.rs), no process of a finished job is left in the cluster's
//! namespaces, and each slurmctld and slurmd process that lived long enough to judge is flat.
//! The figures are printed either way; the seed is printed first, so a failing run can be
//! repeated with `--seed S`.

mod faults;
mod plan;
mod series;
mod submit;
mod verify;

use super::daemon::Daemon;
use super::handle::Cluster;
use super::scenarios::client::Ctx;
use super::state::State;
use crate::cli::SoakArgs;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use xshell::Shell;

pub fn run(sh: &Shell, args: SoakArgs) -> Result<()> {
    if args.jobs == 0 {
        return Err(Error::Usage("--jobs must be at least 1".into()));
    }
    let seed = args.seed.unwrap_or_else(plan::clock_seed);
    let (name, dir) = args.target.resolve("soak")?;
    let mut up = args.shape.up_options(name, dir.clone())?;
    up.nodes = Some(up.nodes.unwrap_or(2.max(up.builds.len())));
    up.profile = args.profile.profile;
    up.daemon_env = series::ALLOCATOR_ENV
        .iter()
        .map(|&(k, v)| (k.into(), v.into()))
        .collect();
    let judged = judged_daemons(&args.judge)?;
    let faults = match (args.faults, args.fault_count) {
        (false, _) => 0,
        (true, Some(k)) => k,
        (true, None) => (args.jobs / 250).max(2),
    };
    let plan = plan::Plan::new(seed, args.jobs, faults, up.nodes.unwrap_or(1));
    println!(
        "soak: seed {seed} (repeat with --seed {seed}); {} jobs: {}; {} fault(s):",
        args.jobs,
        plan.counts()
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        plan.faults.len()
    );
    for (at, f) in &plan.faults {
        println!("  after job {at}: {}", f.describe());
    }
    let (_lock, mut cluster) = super::fresh_up(sh, &up)?;
    let result = soak(&mut cluster, &plan, args.sample_every, &judged);
    let down = super::down_unless_kept(&dir, args.keep);
    match &result {
        Ok(()) => println!("soak: PASSED (seed {seed})"),
        Err(e) => println!("soak: FAILED (seed {seed}; repeat with --seed {seed}): {e}"),
    }
    result?;
    down?;
    if !args.keep {
        std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    Ok(())
}

/// The run itself on a cluster that is up.
fn soak(
    cluster: &mut Cluster,
    plan: &plan::Plan,
    sample_every: u64,
    judged: &[&str],
) -> Result<()> {
    let start = Instant::now();
    let cpus: usize = cluster.nodes().iter().map(|n| n.hw.cpus as usize).sum();
    let submitted = AtomicUsize::new(0);
    let (abort, done) = (AtomicBool::new(false), AtomicBool::new(false));
    let samples = Mutex::new(Vec::new());
    let dir = cluster.layout().root;
    let mut view = cluster.clone();
    let sh = Shell::new().map_err(Error::Shell)?;
    let (subs, fired) = std::thread::scope(|s| {
        let sampler = s.spawn(|| sample(&dir, start, sample_every, &done, &samples));
        let faults = s.spawn(|| {
            let r = faults::run(cluster, &plan.faults, &submitted, &abort, start);
            if r.is_err() {
                abort.store(true, Ordering::SeqCst);
            }
            r
        });
        let subs = Ctx::new(&sh, &mut view, "soak").and_then(|ctx| {
            let r = submit::run(&ctx, plan, 3 * cpus.max(1), &submitted, &abort);
            if r.is_err() {
                abort.store(true, Ordering::SeqCst);
            }
            r
        });
        let fired = faults
            .join()
            .unwrap_or_else(|_| Err(Error::Scenario("the fault thread panicked".into())));
        // The fault thread restarted daemons: read their records afresh.
        let subs = subs.and_then(|s| {
            drain(&Cluster::load(&dir)?, start)?;
            Ok(s)
        });
        done.store(true, Ordering::SeqCst);
        sampler.join().ok();
        (subs, fired)
    });
    let fired = fired?;
    let subs = subs?;
    print_run(plan, &subs, &fired, start.elapsed());
    let findings = account(cluster, &subs.expected)?;
    let left = leftovers(cluster)?;
    let series = samples.into_inner().unwrap_or_default();
    let flat = report_series(&series, judged);
    let mut problems = Vec::new();
    if !findings.ok() {
        problems.push(findings.problems());
    }
    if !left.is_empty() {
        problems.push(format!(
            "processes of finished jobs left: {}",
            left.join(", ")
        ));
    }
    if !flat.is_empty() {
        problems.push(format!("not flat: {}", flat.join("; ")));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Scenario(format!("soak: {}", problems.join("; "))))
    }
}

/// What ran: the jobs, their rate, the retries, and each fault with its recovery time.
fn print_run(
    plan: &plan::Plan,
    subs: &submit::Submitted,
    fired: &[faults::Fired],
    elapsed: Duration,
) {
    println!(
        "soak: {} jobs ({} sacct records expected) submitted and drained in {:.0?} = {:.2} jobs/s; {} failed attempts retried; {} srun ended non-zero",
        plan.jobs.len(),
        subs.expected.len(),
        elapsed,
        subs.expected.len() as f64 / elapsed.as_secs_f64(),
        subs.retries,
        subs.srun_failed
    );
    for f in fired {
        println!(
            "  fault at t={:.0}s after job {}: {}; back in {:.1?}",
            f.t,
            f.at_job,
            f.fault.describe(),
            f.took
        );
    }
}

/// After the submissions: every daemon runs, the queue empties, slurmdbd's queue drains.
fn drain(cluster: &Cluster, start: Instant) -> Result<()> {
    cluster.check_daemons()?;
    let view = cluster.clone();
    let read = |tool: &str, args: &[&str]| -> Result<String> {
        let mut c = view.tool(tool);
        c.args(args);
        driver_common::util::process::bounded::read_bounded(c, super::config::CLIENT_TIMEOUT)
    };
    poll(
        "the queue to empty",
        Duration::from_secs(1200),
        Duration::from_secs(1),
        || {
            Ok(read("squeue", &["-h", "-o", "%i %T %R"])?
                .trim()
                .is_empty()
                .then_some(()))
        },
    )
    .map_err(|e| {
        let q = read("squeue", &["-h", "-o", "%i %T %R"]).unwrap_or_default();
        e.context(format!(
            "jobs still queued: {}",
            q.lines().take(10).collect::<Vec<_>>().join("; ")
        ))
    })?;
    poll(
        "slurmdbd's queue to drain (sdiag: DBD Agent queue size: 0)",
        Duration::from_secs(600),
        Duration::from_secs(1),
        || Ok((dbd_queue(&read("sdiag", &[])?) == Some(0)).then_some(())),
    )?;
    println!(
        "soak: queue empty and slurmdbd's queue drained at t={:.0}s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `DBD Agent queue size: N` of sdiag's output.
fn dbd_queue(sdiag: &str) -> Option<u64> {
    sdiag
        .lines()
        .find_map(|l| l.trim().strip_prefix("DBD Agent queue size:"))
        .and_then(|v| v.trim().parse().ok())
}

/// sacct's records of the run against what was submitted.
fn account(cluster: &Cluster, expected: &[verify::Expected]) -> Result<verify::Findings> {
    let sacct = |dups: bool| -> Result<String> {
        let mut c = cluster.tool("sacct");
        c.args([
            "-X",
            "-n",
            "-P",
            "-a",
            "-S",
            "2000-01-01",
            "-E",
            "now",
            "-o",
            "JobID,State",
        ]);
        if dups {
            c.arg("-D");
        }
        driver_common::util::process::bounded::read_bounded(c, Duration::from_secs(300))
    };
    let f = verify::check(expected, &sacct(false)?);
    let requeued = verify::requeued(&sacct(true)?);
    println!(
        "soak: sacct: {} expected, {} missing, {} with several records, {} not final, {} cancels not CANCELLED; {} records the soak did not submit (answers lost to faults); {requeued} earlier runs of requeued jobs",
        expected.len(),
        f.missing.len(),
        f.doubled.len(),
        f.unfinished.len(),
        f.not_cancelled.len(),
        f.unknown
    );
    let states: Vec<String> = f
        .states
        .iter()
        .map(|((kind, state), n)| format!("{kind} {state} {n}"))
        .collect();
    println!("soak: final states: {}", states.join(", "));
    Ok(f)
}

/// Processes left in the cluster's namespaces that are no daemon, after a grace period.
fn leftovers(cluster: &Cluster) -> Result<Vec<String>> {
    let found = poll(
        "job processes to exit",
        Duration::from_secs(30),
        Duration::from_secs(1),
        || Ok(cluster.leftovers().is_empty().then_some(())),
    );
    Ok(match found {
        Ok(()) => {
            println!("soak: no process of a finished job left");
            Vec::new()
        }
        Err(_) => cluster
            .leftovers()
            .iter()
            .map(|p| format!("{} (pid {})", p.name, p.pid))
            .collect(),
    })
}

/// Every `every` seconds until `done`: each slurmctld and slurmd of the record on disk.
fn sample(
    dir: &std::path::Path,
    start: Instant,
    every: u64,
    done: &AtomicBool,
    out: &Mutex<Vec<series::Series>>,
) {
    while !done.load(Ordering::SeqCst) {
        if let Ok(Some(state)) = State::load(dir) {
            for rec in state
                .daemons
                .iter()
                .filter(|r| r.name == Daemon::Slurmctld.name() || r.name.starts_with("slurmd-"))
            {
                if let (Some(u), Ok(mut all)) = (rec.usage(), out.lock()) {
                    series::push(
                        &mut all,
                        &rec.name,
                        rec.pid,
                        series::Sample {
                            t: start.elapsed().as_secs_f64(),
                            fds: u.fds as u64,
                            threads: u.threads,
                            rss_kb: u.rss_kb,
                        },
                    );
                }
            }
        }
        // Sleep in small steps so the end is noticed at once.
        let until = Instant::now() + Duration::from_secs(every.max(1));
        while Instant::now() < until && !done.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The daemon kinds whose flatness decides (`--judge slurmctld,slurmd`).
fn judged_daemons(list: &str) -> Result<Vec<&'static str>> {
    list.split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| match d {
            "slurmctld" => Ok("slurmctld"),
            "slurmd" => Ok("slurmd"),
            other => Err(Error::Usage(format!(
                "--judge {list:?}: unknown daemon `{other}`; give slurmctld, slurmd or both (comma-separated)"
            ))),
        })
        .collect()
}

/// Print every series; returns the processes of the `judged` kinds that are not flat.
fn report_series(all: &[series::Series], judged: &[&str]) -> Vec<String> {
    println!(
        "soak: descriptors, threads and RSS (sampled; daemons run with {}; flat = after the warm-up (slurmd {:.0} s, slurmctld {:.0} s), last tenth's median at most 5 % above the first tenth's, descriptors at most 2 above):",
        series::allocator_env_shown(),
        series::warmup_s("slurmd"),
        series::warmup_s("slurmctld")
    );
    let mut not_flat = Vec::new();
    for s in all {
        print!("{}", s.report(40));
        let kind = s.daemon.split('-').next().unwrap_or("");
        if !judged.contains(&kind) {
            println!("    (printed, not judged: --judge {})", judged.join(","));
            continue;
        }
        if s.verdict().is_some_and(|v| !v.flat()) {
            not_flat.push(format!("{} pid {}", s.daemon, s.pid));
        }
    }
    not_flat
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judged_daemons__known_kinds_only() {
        assert_eq!(
            judged_daemons("slurmctld, slurmd").unwrap(),
            ["slurmctld", "slurmd"]
        );
        assert_eq!(judged_daemons("slurmd").unwrap(), ["slurmd"]);
        let e = judged_daemons("slurmd,sackd").unwrap_err().to_string();
        assert!(e.contains("unknown daemon `sackd`"), "{e}");
    }

    #[test]
    fn dbd_queue__from_sdiag() {
        let text = "*******\nsdiag output at ...\nServer thread count:  3\nAgent queue size:     0\nDBD Agent queue size: 17\n";
        assert_eq!(dbd_queue(text), Some(17));
        assert_eq!(dbd_queue("Agent queue size: 0\n"), None);
    }
}
