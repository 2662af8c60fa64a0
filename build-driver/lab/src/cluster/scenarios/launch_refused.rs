//! A task whose launch fails after slurmstepd forked it (issue 24, SMD-301; patch 0069): the
//! failure must reach the user, the job must end and the node must stay up, in about the
//! time the launch takes, not after `UnkillableStepTimeout`.
//!
//! The failure used is task/affinity's binding refused by the kernel: slurmd is moved into a
//! cpuset cgroup of the first CPU only (after its start, so it still reports and allocates
//! every CPU), and a one-task step of every CPU asks `--cpu-bind=map_cpu:<the last CPU>`.
//! slurmd accepts the binding (the CPU is in the step's allocation); slurmstepd, in slurmd's cgroup, forks the
//! task, and `task_g_pre_launch_priv()` gets `EINVAL` from `sched_setaffinity()` (a mask
//! outside the task's cpuset), in `_fork_all_tasks()` before the task may exec. Without 0069
//! the forked child is never reaped, its zombie keeps the step's process group alive, and
//! proctrack/pgid's `proctrack_g_wait()` spins on `killpg(pgid, 0)` until
//! `UnkillableStepTimeout`, when the step terminate monitor drains the node "Kill task
//! failed".
//!
//! Only a Linux node of a native build applies bindings with task/affinity (a darwin node runs
//! it as task/darwin, which says "not enforced" and runs the step: `smd-301-cpu-bind`).

mod cpuset;

use super::super::daemon::Daemon;
use super::client::{Ctx, JOB_TIMEOUT, is_terminal};
use super::reconf::{self, Change};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use std::time::{Duration, Instant};

/// `UnkillableStepTimeout` while the scenario runs (Slurm's default is 60 s).
const UNKILLABLE: u64 = 20;
/// How long the refused launch may take, end to end (srun's answer, the job's end, the node
/// idle): well under [`UNKILLABLE`].
const BOUND: Duration = Duration::from_secs(8);
/// The job's name, to find its id (srun prints none when the launch fails).
const NAME: &str = "launch-refused";

/// `srun --exclusive --cpu-bind=map_cpu:<a CPU outside slurmd's cpuset>`: refused,
/// reported, ended, node not drained, all within [`BOUND`].
pub fn no_drain(ctx: &mut Ctx<'_>) -> Result<String> {
    let cpus = ctx.cluster.nodes()[0].hw.cpus;
    if cpus < 2 {
        return ctx.not_run("the node has one CPU: none is left outside a one-CPU cpuset");
    }
    let change = Change {
        lines: vec![
            "TaskPlugin=task/affinity".into(),
            format!("UnkillableStepTimeout={UNKILLABLE}"),
        ],
        restart: Change::controller_and_nodes(ctx),
        ..Change::default()
    };
    let dir = format!("slurm-lab-{}-{NAME}", ctx.cluster.name());
    let result = reconf::with_change(ctx, &change, |ctx| refused_step(ctx, cpus, &dir));
    // slurmd was restarted outside the cgroup, and the step's processes are gone.
    cpuset::remove(&dir);
    result
}

/// What the refused step showed.
struct Seen {
    ok: bool,
    stderr: String,
    /// srun's line about the refusal.
    said: Option<String>,
    /// The node's drain reason, if it was drained (it is resumed).
    drained: Option<String>,
    idle: Result<()>,
    srun_took: Duration,
    /// From srun's start to the node idle.
    took: Duration,
}

/// slurmd confined to one CPU, the step bound to the last: what went wrong, if anything.
fn refused_step(ctx: &mut Ctx<'_>, cpus: u32, dir: &str) -> Result<String> {
    let node = ctx.first_node();
    let slurmd = ctx
        .cluster
        .record(Daemon::Slurmd(0))
        .map(|r| r.pid)
        .ok_or_else(|| Error::Scenario("no recorded slurmd".into()))?;
    let cpuset = cpuset::confine(dir, slurmd)?;
    let t = Instant::now();
    let bind = format!("--cpu-bind=verbose,map_cpu:{}", cpus - 1);
    // The step's allocation must hold the CPU (slurmd checks map_cpu against it).
    let per_task = format!("--cpus-per-task={cpus}");
    let out = ctx.srun(&[
        "-n1",
        &per_task,
        "--exclusive",
        "--mem=0",
        "-w",
        &node,
        "-J",
        NAME,
        &bind,
        "/bin/true",
    ])?;
    let srun_took = t.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let said = stderr
        .lines()
        .map(str::trim)
        .find(|l| {
            let low = l.to_ascii_lowercase();
            low.contains("affinity") || low.contains("launch failed")
        })
        .map(str::to_string);
    let id = job_id(ctx)?;
    let state = poll(
        &format!("job {id} to end"),
        JOB_TIMEOUT,
        Duration::from_millis(200),
        || Ok(Some(ctx.job_state(id)?).filter(|s| is_terminal(s))),
    )?;
    let idle = ctx.wait_node_idle(BOUND.saturating_sub(t.elapsed()));
    let took = t.elapsed();
    let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
    let drained = ctx.resume_if_drained(&node)?;
    let seen = Seen {
        ok: out.status.success(),
        stderr,
        said,
        drained,
        idle,
        srun_took,
        took,
    };
    let faults = faults(&bind, &seen);
    if !faults.is_empty() {
        return Err(Error::Scenario(faults.join("; ")));
    }
    ctx.srun_expect(
        &["-n1", "-w", &node, "/bin/echo", "still-usable"],
        "still-usable",
    )?;
    Ok(format!(
        "{bind} (slurmd in cpuset {cpuset}): srun exit {:?} in {:.1} s, {:?}; job {id} {state} (sacct {} {}), node idle after {:.1} s, not drained; next srun ran",
        out.status.code(),
        srun_took.as_secs_f64(),
        seen.said.unwrap_or_default(),
        acct.state,
        acct.exit_code,
        took.as_secs_f64()
    ))
}

/// Each way the step's outcome misses: succeeded, said nothing, drained, not idle, slow.
fn faults(bind: &str, s: &Seen) -> Vec<String> {
    let mut faults = Vec::new();
    let stderr = s.stderr.trim();
    if s.ok {
        faults.push(format!(
            "srun {bind} succeeded: the binding was applied or not tried (stderr {stderr:?})"
        ));
    }
    if s.said.is_none() {
        faults.push(format!(
            "srun's stderr names no refused binding or failed launch: {stderr:?}"
        ));
    }
    if let Some(r) = &s.drained {
        faults.push(format!("the node was drained ({r}; resumed)"));
    }
    if let Err(e) = &s.idle {
        faults.push(format!("the node was not idle within {BOUND:?}: {e}"));
    }
    if s.took > BOUND {
        faults.push(format!(
            "srun answered after {:.1} s, the node was idle after {:.1} s: over {BOUND:?} (UnkillableStepTimeout is {UNKILLABLE} s)",
            s.srun_took.as_secs_f64(),
            s.took.as_secs_f64()
        ));
    }
    faults
}

/// The id of the job named [`NAME`] (the newest, still known to slurmctld).
fn job_id(ctx: &Ctx<'_>) -> Result<u32> {
    let out = ctx.read(
        "squeue",
        &["-h", "--states=all", "--name", NAME, "-o", "%i"],
    )?;
    out.lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .max()
        .ok_or_else(|| Error::Scenario(format!("squeue knows no job named {NAME}: {out:?}")))
}
