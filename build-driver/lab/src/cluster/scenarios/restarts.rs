//! Daemon restarts: slurmd idle and with a job running (the job survives and completes),
//! slurmctld (running and held jobs survive, new jobs run).

use super::super::daemon::Daemon;
use super::client::{Ctx, JOB_TIMEOUT, q};
use driver_common::error::{Error, Result};
use driver_common::util::signal::process_exists;

/// slurmd stopped and started again while idle: the node comes back and runs a step.
pub fn slurmd_idle(ctx: &mut Ctx<'_>) -> Result<String> {
    let old = ctx.cluster.record(Daemon::Slurmd(0)).map(|d| d.pid);
    ctx.cluster.restart(ctx.sh, Daemon::Slurmd(0))?;
    let new = ctx.cluster.record(Daemon::Slurmd(0)).map(|d| d.pid);
    ctx.srun_expect(&["-N1", "/bin/echo", "after-restart"], "after-restart")?;
    Ok(format!("slurmd {old:?} → {new:?}; srun ran"))
}

/// A running batch job survives a slurmd restart (slurmstepd keeps it) and completes.
pub fn slurmd_running(ctx: &mut Ctx<'_>) -> Result<String> {
    let (pid, go) = (ctx.path("pid"), ctx.path("go"));
    let body = format!(
        "echo $$ > {pid}\nwhile [ ! -e {go} ]; do sleep 0.1; done\necho finished\n",
        pid = q(&pid),
        go = q(&go)
    );
    let id = ctx.sbatch("survivor", &["-n1"], &body)?;
    ctx.wait_state(id, &["RUNNING"], JOB_TIMEOUT)?;
    let pids = ctx.wait_pids(&pid, 1)?;
    ctx.cluster.restart(ctx.sh, Daemon::Slurmd(0))?;
    if !process_exists(pids[0]) {
        return Err(Error::Scenario(format!(
            "job {id}: its shell {} died with slurmd",
            pids[0]
        )));
    }
    let state = ctx.job_state(id)?;
    if state != "RUNNING" {
        return Err(Error::Scenario(format!(
            "job {id} is {state} after the slurmd restart"
        )));
    }
    std::fs::write(&go, "").map_err(|e| Error::io(&go, e))?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let out = ctx.wait_lines(&ctx.path("survivor.out"), 1, JOB_TIMEOUT)?;
    if out != ["finished"] {
        return Err(Error::Scenario(format!("job {id} wrote {out:?}")));
    }
    Ok(format!(
        "job {id} kept running through the slurmd restart and COMPLETED"
    ))
}

/// slurmctld restarted with one job running and one held: both are still there afterwards,
/// the running one completes, the held one runs when released, and a new srun works.
pub fn slurmctld(ctx: &mut Ctx<'_>) -> Result<String> {
    let go = ctx.path("go");
    let body = format!("while [ ! -e {go} ]; do sleep 0.1; done\n", go = q(&go));
    let running = ctx.sbatch("ctld-running", &["-n1"], &body)?;
    ctx.wait_state(running, &["RUNNING"], JOB_TIMEOUT)?;
    let held = ctx.sbatch("ctld-held", &["-n1", "--hold"], "true\n")?;
    ctx.cluster.restart(ctx.sh, Daemon::Slurmctld)?;
    let (s1, s2) = (ctx.job_state(running)?, ctx.job_state(held)?);
    if s1 != "RUNNING" || s2 != "PENDING" {
        return Err(Error::Scenario(format!(
            "after the slurmctld restart: job {running} {s1} (expected RUNNING), job {held} {s2} (expected PENDING)"
        )));
    }
    std::fs::write(&go, "").map_err(|e| Error::io(&go, e))?;
    ctx.wait_state(running, &["COMPLETED"], JOB_TIMEOUT)?;
    ctx.read("scontrol", &["release", &held.to_string()])?;
    ctx.wait_state(held, &["COMPLETED"], JOB_TIMEOUT)?;
    ctx.srun_expect(&["-N1", "/bin/echo", "ctld-back"], "ctld-back")?;
    Ok(format!(
        "job {running} RUNNING and {held} held survived the restart; both COMPLETED; srun ran"
    ))
}
