//! Prolog and epilog (generated scripts that log each run and fail while a flag file exists):
//! they run for every job; a failing prolog or epilog drains the node with a reason, and
//! resuming it makes it usable again.

use super::client::{Ctx, JOB_TIMEOUT};
use crate::error::{Error, Result};
use std::time::Duration;

fn hook_lines(ctx: &Ctx<'_>, id: u32) -> Vec<String> {
    let log = ctx.cluster.layout().hook_log();
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(id.to_string().as_str()))
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

/// A job runs the prolog before and the epilog after it.
pub fn prolog_epilog(ctx: &mut Ctx<'_>) -> Result<String> {
    let id = ctx.sbatch("hooks", &["-n1"], "echo ran\n")?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let lines = crate::util::process::bounded::poll(
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

/// Wait for the node to be drained (or draining) with a reason containing `needle`.
fn wait_drained(ctx: &Ctx<'_>, needle: &str) -> Result<(String, String)> {
    crate::util::process::bounded::poll(
        &format!("node {} to drain ({needle})", ctx.first_node()),
        JOB_TIMEOUT,
        super::client::POLL,
        || {
            let f = ctx.node()?;
            let get = |k: &str| {
                f.iter()
                    .find(|(x, _)| x == k)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            };
            let (state, reason) = (get("State"), get("Reason"));
            Ok((state.contains("DRAIN") && reason.contains(needle)).then_some((state, reason)))
        },
    )
}

fn resume(ctx: &Ctx<'_>) -> Result<()> {
    ctx.read(
        "scontrol",
        &[
            "update",
            &format!("NodeName={}", ctx.first_node()),
            "State=RESUME",
        ],
    )?;
    ctx.wait_node_idle(Duration::from_secs(30))
}

/// A failing prolog: the node drains with a prolog reason and the job does not run its
/// script; after the flag is removed, the job is cancelled and the node resumed, the next job
/// runs.
pub fn prolog_failure(ctx: &mut Ctx<'_>) -> Result<String> {
    let flag = ctx.cluster.layout().fail_flag("prolog");
    std::fs::write(&flag, "").map_err(|e| Error::io(&flag, e))?;
    let marker = ctx.path("script-ran");
    let id = ctx.sbatch(
        "prolog-fail",
        &["-n1"],
        &format!("touch {}\n", super::client::q(&marker)),
    )?;
    let drained = wait_drained(ctx, "rolog");
    std::fs::remove_file(&flag).map_err(|e| Error::io(&flag, e))?;
    let (state, reason) = drained?;
    let job_state = ctx.job_state(id)?;
    if marker.exists() {
        return Err(Error::Scenario(format!(
            "job {id}: its script ran although the prolog failed"
        )));
    }
    ctx.run("scancel", &[&id.to_string()])?;
    resume(ctx)?;
    let next = ctx.sbatch("after-prolog", &["-n1"], "true\n")?;
    ctx.wait_state(next, &["COMPLETED"], JOB_TIMEOUT)?;
    Ok(format!(
        "node {state} Reason={reason}; job {id} {job_state}, script not run; resumed, job {next} COMPLETED"
    ))
}

/// A failing epilog: the job completes, the node drains with an epilog reason; resumed, it
/// runs the next job.
pub fn epilog_failure(ctx: &mut Ctx<'_>) -> Result<String> {
    let flag = ctx.cluster.layout().fail_flag("epilog");
    std::fs::write(&flag, "").map_err(|e| Error::io(&flag, e))?;
    let id = ctx.sbatch("epilog-fail", &["-n1"], "true\n")?;
    let drained = wait_drained(ctx, "pilog");
    std::fs::remove_file(&flag).map_err(|e| Error::io(&flag, e))?;
    let (state, reason) = drained?;
    let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
    resume(ctx)?;
    let next = ctx.sbatch("after-epilog", &["-n1"], "true\n")?;
    ctx.wait_state(next, &["COMPLETED"], JOB_TIMEOUT)?;
    Ok(format!(
        "job {id} {} {}; node {state} Reason={reason}; resumed, job {next} COMPLETED",
        acct.state, acct.exit_code
    ))
}
