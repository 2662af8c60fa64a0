//! Prolog and epilog (generated scripts that log each run, fail while a flag file exists and
//! hang while another one does): they run for every job; a failing prolog or epilog drains
//! the node with a reason (SMD-121/122), so does one that runs into `PrologEpilogTimeout`
//! (killed with its process group); resuming the node makes it usable again.

use super::client::{Ctx, JOB_TIMEOUT};
use super::conf::ConfChange;
use driver_common::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `PrologEpilogTimeout` for the timeout scenarios (seconds).
const HOOK_TIMEOUT_S: u64 = 5;

fn hook_lines(ctx: &Ctx<'_>, id: u32) -> Vec<String> {
    let log = ctx.cluster.layout().hook_log();
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(id.to_string().as_str()))
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

/// Create the flag file `flag` (a hook fails or hangs while it exists): `flag`.
fn raise(flag: PathBuf) -> Result<PathBuf> {
    std::fs::write(&flag, "").map_err(|e| Error::io(&flag, e))?;
    Ok(flag)
}

/// A one-task job `stem` whose script only creates `marker` (the proof that it ran).
fn sbatch_touching(ctx: &mut Ctx<'_>, stem: &str, marker: &Path) -> Result<u32> {
    ctx.sbatch(
        stem,
        &["-n1"],
        &format!("touch {}\n", super::client::q(marker)),
    )
}

/// How both timeout scenarios start: `PrologEpilogTimeout` set in slurm.conf (the change,
/// for the caller to restore) and `hook`'s sleep flag raised (the flag).
fn hang(ctx: &Ctx<'_>, hook: &str) -> Result<(ConfChange, PathBuf)> {
    let change = ConfChange::apply(
        ctx.cluster,
        &[format!("PrologEpilogTimeout={HOOK_TIMEOUT_S}")],
    )?;
    let flag = raise(ctx.cluster.layout().sleep_flag(hook))?;
    Ok((change, flag))
}

/// After a prolog that `how` (failed, timed out): job `id`'s script must not have run (it
/// would have made `marker`); the job is cancelled.
fn cancel_unrun(ctx: &Ctx<'_>, id: u32, marker: &Path, how: &str) -> Result<()> {
    if marker.exists() {
        return Err(Error::Scenario(format!(
            "job {id}: its script ran although the prolog {how}"
        )));
    }
    ctx.run("scancel", &[&id.to_string()])?;
    Ok(())
}

/// The drained node is resumed and runs the next job (`stem`) to COMPLETED: that job's id.
fn resume_and_run_next(ctx: &mut Ctx<'_>, stem: &str) -> Result<u32> {
    ctx.resume_node(Duration::from_secs(30))?;
    let next = ctx.sbatch(stem, &["-n1"], "true\n")?;
    ctx.wait_state(next, &["COMPLETED"], JOB_TIMEOUT)?;
    Ok(next)
}

/// A job runs the prolog before and the epilog after it.
pub fn prolog_epilog(ctx: &mut Ctx<'_>) -> Result<String> {
    let id = ctx.sbatch("hooks", &["-n1"], "echo ran\n")?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let lines = driver_common::util::process::bounded::poll(
        "the epilog to run",
        JOB_TIMEOUT,
        super::client::POLL,
        || {
            let l = hook_lines(ctx, id);
            Ok((l.len() >= 2).then_some(l))
        },
    )?;
    if lines != ["prolog", "epilog"] {
        return Err(Error::Scenario(format!(
            "job {id}: hooks ran {lines:?}, expected prolog then epilog"
        )));
    }
    Ok(format!("job {id}: prolog, then epilog"))
}

/// A failing prolog: the node drains with a prolog reason and the job does not run its
/// script; after the flag is removed, the job is cancelled and the node resumed, the next job
/// runs.
pub fn prolog_failure(ctx: &mut Ctx<'_>) -> Result<String> {
    let flag = raise(ctx.cluster.layout().fail_flag("prolog"))?;
    let marker = ctx.path("script-ran");
    let id = sbatch_touching(ctx, "prolog-fail", &marker)?;
    let drained = ctx.wait_drained("rolog");
    std::fs::remove_file(&flag).map_err(|e| Error::io(&flag, e))?;
    let (state, reason) = drained?;
    let job_state = ctx.job_state(id)?;
    cancel_unrun(ctx, id, &marker, "failed")?;
    let next = resume_and_run_next(ctx, "after-prolog")?;
    Ok(format!(
        "node {state} Reason={reason}; job {id} {job_state}, script not run; resumed, job {next} COMPLETED"
    ))
}

/// A failing epilog: the job completes, the node drains with an epilog reason; resumed, it
/// runs the next job.
pub fn epilog_failure(ctx: &mut Ctx<'_>) -> Result<String> {
    let flag = raise(ctx.cluster.layout().fail_flag("epilog"))?;
    let id = ctx.sbatch("epilog-fail", &["-n1"], "true\n")?;
    let drained = ctx.wait_drained("pilog");
    std::fs::remove_file(&flag).map_err(|e| Error::io(&flag, e))?;
    let (state, reason) = drained?;
    let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
    // The epilog runs after the job ended: its failure drains the node, the job keeps the
    // state its script earned (`true`: COMPLETED 0:0), as upstream records it on Linux.
    if (acct.state.as_str(), acct.exit_code.as_str()) != ("COMPLETED", "0:0") {
        return Err(Error::Scenario(format!(
            "job {id} (script `true`) after its failing epilog: sacct {} {}, expected COMPLETED 0:0",
            acct.state, acct.exit_code
        )));
    }
    let next = resume_and_run_next(ctx, "after-epilog")?;
    Ok(format!(
        "job {id} {} {}; node {state} Reason={reason}; resumed, job {next} COMPLETED",
        acct.state, acct.exit_code
    ))
}

/// The `<name>-sleep <job> <pid> <pgid>` line the hanging hook wrote for job `id`.
fn sleeping_hook(ctx: &Ctx<'_>, name: &str, id: u32) -> Result<(u32, u32)> {
    let log = ctx.cluster.layout().hook_log();
    driver_common::util::process::bounded::poll(
        &format!("the hanging {name} of job {id} to start"),
        JOB_TIMEOUT,
        super::client::POLL,
        || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            Ok(text.lines().find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 4 && f[0] == format!("{name}-sleep") && f[1] == id.to_string())
                    .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
                    .flatten()
            }))
        },
    )
}

/// The hook `name` hangs for job `id` (with `PrologEpilogTimeout` set): it must be killed with
/// its whole process group (it leads one) and the node must drain with a reason holding
/// `needle`. Returns (pid, node state, reason).
fn timed_out(ctx: &Ctx<'_>, name: &str, id: u32, needle: &str) -> Result<(u32, String, String)> {
    let (pid, pgid) = sleeping_hook(ctx, name, id)?;
    if pid != pgid {
        return Err(Error::Scenario(format!(
            "the {name} of job {id} (pid {pid}) does not lead its process group ({pgid})"
        )));
    }
    let (state, reason) = ctx.wait_drained(needle)?;
    driver_common::util::process::bounded::poll(
        &format!("the {name}'s process group {pgid} to be gone"),
        Duration::from_secs(30),
        super::client::POLL,
        || {
            Ok(super::super::procs::processes_where(|_, _, _, g| g == pgid)
                .is_empty()
                .then_some(()))
        },
    )?;
    Ok((pid, state, reason))
}

/// SMD-121, timeout: with `PrologEpilogTimeout=5` a prolog that hangs is killed after 5 s
/// with its process group; the node drains with a prolog reason, the job's script never runs
/// (it is requeued and held, or ends); with the flag gone, the job cancelled and the node
/// resumed, the next job runs; `slurm.conf` is restored.
pub fn prolog_timeout(ctx: &mut Ctx<'_>) -> Result<String> {
    let (change, flag) = hang(ctx, "prolog")?;
    let marker = ctx.path("script-ran");
    let id = sbatch_touching(ctx, "prolog-hangs", &marker);
    let seen = id.and_then(|id| Ok((id, timed_out(ctx, "prolog", id, "rolog")?)));
    std::fs::remove_file(&flag).map_err(|e| Error::io(&flag, e))?;
    let (id, (pid, state, reason)) = seen?;
    let job_state = ctx.job_state(id)?;
    let held = ctx.job_field(id, "Reason")?.unwrap_or_default();
    cancel_unrun(ctx, id, &marker, "timed out")?;
    let next = resume_and_run_next(ctx, "after-prolog-timeout")?;
    change.restore()?;
    Ok(format!(
        "PrologEpilogTimeout={HOOK_TIMEOUT_S}: prolog {pid} of job {id} killed with its process group; node {state} Reason={reason}; job {job_state} ({held}), script not run; resumed, job {next} COMPLETED; slurm.conf restored"
    ))
}

/// SMD-122, timeout: with `PrologEpilogTimeout=5` an epilog that hangs is killed after 5 s
/// with its process group; the job still ends COMPLETED (its script ran), the node drains with
/// an epilog reason; resumed, it runs the next job; `slurm.conf` is restored.
pub fn epilog_timeout(ctx: &mut Ctx<'_>) -> Result<String> {
    let (change, flag) = hang(ctx, "epilog")?;
    let id = ctx.sbatch("epilog-hangs", &["-n1"], "echo ran\n");
    let seen = id.and_then(|id| Ok((id, timed_out(ctx, "epilog", id, "pilog")?)));
    std::fs::remove_file(&flag).map_err(|e| Error::io(&flag, e))?;
    let (id, (pid, state, reason)) = seen?;
    let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
    let out = ctx.wait_lines(&ctx.path("epilog-hangs.out"), 1, JOB_TIMEOUT)?;
    if acct.state != "COMPLETED" || out != ["ran"] {
        return Err(Error::Scenario(format!(
            "job {id} with a hanging epilog: sacct {} {}, output {out:?} (expected COMPLETED, \"ran\")",
            acct.state, acct.exit_code
        )));
    }
    let next = resume_and_run_next(ctx, "after-epilog-timeout")?;
    change.restore()?;
    Ok(format!(
        "PrologEpilogTimeout={HOOK_TIMEOUT_S}: epilog {pid} of job {id} killed with its process group; job {} {}; node {state} Reason={reason}; resumed, job {next} COMPLETED; slurm.conf restored",
        acct.state, acct.exit_code
    ))
}
