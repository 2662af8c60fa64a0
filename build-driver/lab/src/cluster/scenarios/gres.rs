//! GRES `gpu:apple:1` (gres.conf `File=/dev/null`, a placeholder that isolates nothing): two
//! GPU jobs serialise, SLURM_JOB_GPUS is set, the GPU comes back after a normal end, a cancel
//! and a crash (TIMEOUT: see `processes::time_limit`), and sacct's AllocTRES has gres/gpu.

use super::client::{Ctx, JOB_TIMEOUT, q};
use driver_common::error::{Error, Result};
use std::time::Duration;

const GPU: &str = "--gres=gpu:apple:1";

/// Two GPU jobs on a node with free CPUs: the second waits (Reason=Resources) until the first
/// ends; both see SLURM_JOB_GPUS=0.
pub fn serialise(ctx: &mut Ctx<'_>) -> Result<String> {
    let go = ctx.path("go");
    let body = format!(
        "echo \"gpus=$SLURM_JOB_GPUS\"\nwhile [ ! -e {go} ]; do sleep 0.1; done\n",
        go = q(&go)
    );
    let a = ctx.sbatch("gpu-a", &["-n1", GPU], &body)?;
    ctx.wait_state(a, &["RUNNING"], JOB_TIMEOUT)?;
    let b = ctx.sbatch("gpu-b", &["-n1", GPU], &body)?;
    // b must stay pending for the GPU while a holds it.
    let when = format!("while job {a} holds the only GPU (GRES does not serialise)");
    ctx.stays_pending(b, Some("Resources"), &when)?;
    std::fs::write(&go, "").map_err(|e| Error::io(&go, e))?;
    ctx.wait_state(a, &["COMPLETED"], JOB_TIMEOUT)?;
    ctx.wait_state(b, &["COMPLETED"], JOB_TIMEOUT)?;
    let (acct_a, acct_b) = (
        ctx.acct_final(a, JOB_TIMEOUT)?,
        ctx.acct_final(b, JOB_TIMEOUT)?,
    );
    if acct_b.start < acct_a.end {
        return Err(Error::Scenario(format!(
            "job {b} started {} before job {a} ended {}",
            acct_b.start, acct_a.end
        )));
    }
    for (id, stem) in [(a, "gpu-a"), (b, "gpu-b")] {
        let out = ctx.wait_lines(&ctx.path(&format!("{stem}.out")), 1, JOB_TIMEOUT)?;
        if out[0] != "gpus=0" {
            return Err(Error::Scenario(format!(
                "job {id}: {:?}, expected SLURM_JOB_GPUS=0",
                out[0]
            )));
        }
    }
    Ok(format!(
        "job {b} pended (Resources) while {a} held gpu:apple:1; {a} ended {}, {b} started {}; both SLURM_JOB_GPUS=0",
        acct_a.end, acct_b.start
    ))
}

/// The GPU is released after a normal end, a cancel and a crash (the batch shell killed by
/// SIGSEGV): each time the node's GresUsed is back to 0 and the next GPU job starts.
pub fn release(ctx: &mut Ctx<'_>) -> Result<String> {
    let mut seen = Vec::new();
    let cases: [(&str, &str, &[&str]); 3] = [
        ("normal end", "true\n", &["COMPLETED"]),
        ("cancel", "sleep 300\n", &["CANCELLED"]),
        ("crash", "kill -SEGV $$\nsleep 5\n", &["FAILED"]),
    ];
    for (what, body, wanted) in cases {
        let id = ctx.sbatch("gpu-release", &["-n1", GPU], body)?;
        if what == "cancel" {
            ctx.wait_state(id, &["RUNNING"], JOB_TIMEOUT)?;
            ctx.read("scancel", &[&id.to_string()])?;
        }
        let state = ctx.wait_state(id, wanted, JOB_TIMEOUT)?;
        let used = driver_common::util::process::bounded::poll(
            "GresUsed back to gpu:apple:0",
            Duration::from_secs(30),
            super::client::POLL,
            || {
                let u = ctx.node_field("GresUsed")?;
                Ok(u.starts_with("gpu:apple:0").then_some(u))
            },
        )?;
        let next = ctx.sbatch("gpu-next", &["-n1", GPU], "true\n")?;
        ctx.wait_state(next, &["COMPLETED"], JOB_TIMEOUT)?;
        seen.push(format!(
            "{what}: job {id} {state}, GresUsed={used}, next GPU job {next} ran"
        ));
    }
    Ok(seen.join("; "))
}

/// sacct's AllocTRES of a GPU job has gres/gpu=1 (AccountingStorageTRES=gres/gpu); a job
/// without GRES has none.
pub fn accounting(ctx: &mut Ctx<'_>) -> Result<String> {
    let gpu = ctx.sbatch("acct-gpu", &["-n1", GPU], "true\n")?;
    let plain = ctx.sbatch("acct-plain", &["-n1"], "true\n")?;
    let (a, b) = (
        ctx.acct_final(gpu, JOB_TIMEOUT)?,
        ctx.acct_final(plain, JOB_TIMEOUT)?,
    );
    let has = |t: &str| t.split(',').any(|x| x == "gres/gpu=1");
    if !has(&a.alloc_tres) {
        return Err(Error::Scenario(format!(
            "job {gpu}: AllocTRES {:?} lacks gres/gpu=1",
            a.alloc_tres
        )));
    }
    if b.alloc_tres.contains("gres/gpu") {
        return Err(Error::Scenario(format!(
            "job {plain} (no GRES): AllocTRES {:?} has gres/gpu",
            b.alloc_tres
        )));
    }
    Ok(format!(
        "job {gpu} AllocTRES={}; job {plain} (no GRES) AllocTRES={}",
        a.alloc_tres, b.alloc_tres
    ))
}
