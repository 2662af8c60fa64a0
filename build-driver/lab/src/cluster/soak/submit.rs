//! The soak's client: submits the plan's jobs one after the other (keeping at most a few jobs
//! per CPU queued, so the run measures the daemons, not a backlog) and retries what a fault
//! refused (a controller that is down or stopped answers nothing for a while). A second
//! thread cancels the cancel jobs when their time comes: the submitter itself may wait in an
//! `srun` for a CPU that only those cancels free.

use super::super::config::CLIENT_TIMEOUT;
use super::super::handle::Cluster;
use super::super::scenarios::client::{Ctx, parse_job_id};
use super::plan::{Job, Plan};
use super::verify::Expected;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::read_bounded;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long one submission (or cancel) is retried before the soak gives up.
const RETRY_BUDGET: Duration = Duration::from_secs(180);

/// Every soak job's time limit (2 minutes; the jobs take at most 3 s, a cancelled one is
/// cancelled within 3 s). A job whose launch a slurmd SIGKILL cut short stays RUNNING in
/// slurmctld: the restarted slurmd registered within seconds, too soon for slurmctld to call
/// the job missing, and nothing else ends it (seen in the fresh-machine CI run, 2026-12-01:
/// job 249 RUNNING for over 7 minutes after `SIGKILL slurmd of node2`). With the limit it
/// ends TIMEOUT, a final state, and the drain goes on.
const LIMIT: &str = "--time=2";

/// What was submitted.
#[derive(Debug, Clone, Default)]
pub struct Submitted {
    pub expected: Vec<Expected>,
    /// Attempts that failed and were retried.
    pub retries: usize,
    /// srun commands that printed a job id but ended non-zero (a fault hit their step).
    pub srun_failed: usize,
}

/// `f` until it succeeds, at most [`RETRY_BUDGET`]; counts the failures into `retries`.
fn retried<T>(what: &str, retries: &mut usize, mut f: impl FnMut() -> Result<T>) -> Result<T> {
    let start = Instant::now();
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(e) if start.elapsed() < RETRY_BUDGET => {
                *retries += 1;
                if *retries % 25 == 1 {
                    println!(
                        "soak: {what} failed, retrying: {}",
                        first_line(&e.to_string())
                    );
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            Err(e) => {
                return Err(e.context(format!("{what}: still failing after {RETRY_BUDGET:?}")));
            }
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn sleep_line(ms: u64) -> String {
    format!("sleep {}.{:03}", ms / 1000, ms % 1000)
}

/// Wait while more than `max` jobs are queued or running.
fn pace(ctx: &Ctx<'_>, max: usize, retries: &mut usize) -> Result<()> {
    let start = Instant::now();
    loop {
        let queued = retried("squeue", retries, || {
            ctx.read("squeue", &["-h", "-o", "%i"])
        })?
        .lines()
        .count();
        if queued <= max {
            return Ok(());
        }
        if start.elapsed() > Duration::from_secs(600) {
            return Err(Error::Scenario(format!(
                "soak: {queued} jobs still queued after 10 min (limit {max}): the cluster stopped running jobs"
            )));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Submit the plan. `submitted` counts the jobs done (the fault thread watches it).
pub fn run(
    ctx: &Ctx<'_>,
    plan: &Plan,
    max_inflight: usize,
    submitted: &AtomicUsize,
    abort: &AtomicBool,
) -> Result<Submitted> {
    let cancels: Mutex<Vec<(Instant, u32)>> = Mutex::new(Vec::new());
    let finished = AtomicBool::new(false);
    let view = ctx.cluster.clone();
    std::thread::scope(|s| {
        let canceller = s.spawn(|| cancel_when_due(&view, &cancels, &finished, abort));
        let out = submit_all(ctx, plan, max_inflight, submitted, abort, &cancels);
        finished.store(true, Ordering::SeqCst);
        let retries = canceller
            .join()
            .unwrap_or_else(|_| Err(Error::Scenario("the cancel thread panicked".into())));
        let mut out = out?;
        out.retries += retries?;
        Ok(out)
    })
}

fn submit_all(
    ctx: &Ctx<'_>,
    plan: &Plan,
    max_inflight: usize,
    submitted: &AtomicUsize,
    abort: &AtomicBool,
    cancels: &Mutex<Vec<(Instant, u32)>>,
) -> Result<Submitted> {
    let mut out = Submitted::default();
    let t = Instant::now();
    for (i, job) in plan.jobs.iter().enumerate() {
        if abort.load(Ordering::SeqCst) {
            return Err(Error::Scenario(
                "soak: stopped: another thread of the soak failed".into(),
            ));
        }
        if i % 10 == 0 {
            pace(ctx, max_inflight, &mut out.retries)?;
        }
        if let Some(due) = submit(ctx, *job, &mut out)? {
            if let Ok(mut c) = cancels.lock() {
                c.push(due);
            }
        }
        submitted.store(i + 1, Ordering::SeqCst);
        if (i + 1) % 500 == 0 {
            println!(
                "soak: {} jobs submitted in {:.0?} ({} retries so far)",
                i + 1,
                t.elapsed(),
                out.retries
            );
        }
    }
    Ok(out)
}

/// Cancel each job of `cancels` once its time has come, until `finished` and none is left.
/// Returns the retried failures.
fn cancel_when_due(
    cluster: &Cluster,
    cancels: &Mutex<Vec<(Instant, u32)>>,
    finished: &AtomicBool,
    abort: &AtomicBool,
) -> Result<usize> {
    let mut retries = 0;
    loop {
        let due: Vec<u32> = match cancels.lock() {
            Ok(mut c) => {
                let now = Instant::now();
                let (due, later): (Vec<_>, Vec<_>) = c.drain(..).partition(|(at, _)| *at <= now);
                *c = later;
                due.into_iter().map(|(_, id)| id).collect()
            }
            Err(_) => return Err(Error::Scenario("the cancel list's lock is poisoned".into())),
        };
        for id in due {
            let r = retried("scancel", &mut retries, || {
                let mut c = cluster.tool("scancel");
                c.arg(id.to_string());
                read_bounded(c, CLIENT_TIMEOUT)
            });
            if let Err(e) = r {
                abort.store(true, Ordering::SeqCst);
                return Err(e);
            }
        }
        let empty = cancels.lock().map(|c| c.is_empty()).unwrap_or(true);
        if finished.load(Ordering::SeqCst) && empty {
            return Ok(retries);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Submit one job; a cancel job returns when and what to cancel.
fn submit(ctx: &Ctx<'_>, job: Job, out: &mut Submitted) -> Result<Option<(Instant, u32)>> {
    let kind = job.kind();
    let mut expect = |key: String, cancelled: bool| {
        out.expected.push(Expected {
            key,
            kind,
            cancelled,
        })
    };
    let mut retries = 0;
    let mut cancel = None;
    match job {
        Job::Batch { ms } | Job::Gpu { ms } => {
            let args: &[&str] = match job {
                Job::Gpu { .. } => &["-n1", LIMIT, "--gres=gpu:1"],
                _ => &["-n1", LIMIT],
            };
            let id = retried("sbatch", &mut retries, || {
                ctx.sbatch_wrap(args, &sleep_line(ms))
            })?;
            expect(id.to_string(), false);
        }
        Job::Array { last, ms } => {
            let array = format!("--array=0-{last}");
            let id = retried("sbatch --array", &mut retries, || {
                ctx.sbatch_wrap(&["-n1", LIMIT, &array], &sleep_line(ms))
            })?;
            for k in 0..=last {
                expect(format!("{id}_{k}"), false);
            }
        }
        Job::Cancel { after_ms } => {
            let id = retried("sbatch", &mut retries, || {
                ctx.sbatch_wrap(&["-n1", LIMIT], "sleep 300")
            })?;
            expect(id.to_string(), true);
            cancel = Some((Instant::now() + Duration::from_millis(after_ms), id));
        }
        Job::Srun { ms } => {
            let line = format!("echo $SLURM_JOB_ID; {}", sleep_line(ms));
            let (id, ok) = retried("srun", &mut retries, || {
                let o = ctx.srun(&["-N1", "-n1", LIMIT, "/bin/sh", "-c", &line])?;
                let text = String::from_utf8_lossy(&o.stdout);
                match parse_job_id(text.lines().next().unwrap_or("")) {
                    Some(id) => Ok((id, o.status.success())),
                    None => Err(Error::Scenario(format!(
                        "srun printed no job id: {}: {}",
                        o.status,
                        String::from_utf8_lossy(&o.stderr).trim()
                    ))),
                }
            })?;
            if !ok {
                out.srun_failed += 1;
            }
            expect(id.to_string(), false);
        }
    }
    out.retries += retries;
    Ok(cancel)
}
