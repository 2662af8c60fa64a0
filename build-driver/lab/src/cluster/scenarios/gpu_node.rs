//! The PoC's GPU items on the node (SMD-204, 205, 206): a job without GRES beside a GPU job,
//! a node that reports fewer GPUs than slurmctld is configured for, and slurmd restarted
//! (and crashed) under a running GPU job.
//!
//! The GPU is whatever the node's `Gres=` says (`scontrol show node`): today gres.conf's
//! `Name=gpu Type=apple File=/dev/null` placeholder (`gpu:apple:1`); a gpu/apple AutoDetect
//! node reports its own type and count, and these scenarios read them from slurmctld rather
//! than naming them, so they run unchanged on it. What they check is Slurm's bookkeeping
//! (allocation, accounting, node state): the placeholder isolates nothing, and neither could
//! a Mac (any process may use Metal).

use super::super::daemon::Daemon;
use super::client::{Ctx, JOB_TIMEOUT, field, hold_until};
use super::reconf::{self, Change};
use driver_common::error::{Error, Result};
use std::time::Duration;

/// A node's GPUs as slurmctld knows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpus {
    /// `gpu:apple` (name and type, as `--gres` takes them).
    pub kind: String,
    pub count: u32,
}

impl Gpus {
    /// `--gres=<kind>:<n>`.
    pub fn request(&self, n: u32) -> String {
        format!("--gres={}:{n}", self.kind)
    }
}

/// The GPU part of a `Gres=`/`GresUsed=` value (`gpu:apple:1(S:0)`, `gpu:apple:0(IDX:N/A)`,
/// possibly among other GRES, comma-separated). None without a typed GPU.
pub fn parse_gpus(value: &str) -> Option<Gpus> {
    value.split(',').find_map(|g| {
        let g = g.split('(').next().unwrap_or(g);
        let mut parts: Vec<&str> = g.split(':').collect();
        if parts.first() != Some(&"gpu") || parts.len() < 3 {
            return None;
        }
        let count = parts.pop()?.parse().ok()?;
        Some(Gpus {
            kind: parts.join(":"),
            count,
        })
    })
}

/// Node `name`'s configured GPUs (`Gres=`) and the number allocated (`GresUsed=`).
fn gpus_of(ctx: &Ctx<'_>, name: &str) -> Result<(Gpus, u32)> {
    let f = ctx.node_fields(name)?;
    let conf = parse_gpus(field(&f, "Gres")).ok_or_else(|| {
        Error::Scenario(format!(
            "node {name} has no typed GPU (Gres={:?}); these scenarios need gres.conf's gpu",
            field(&f, "Gres")
        ))
    })?;
    let used = parse_gpus(field(&f, "GresUsed")).map_or(0, |g| g.count);
    Ok((conf, used))
}

/// Wait until node `name` has `want` GPUs allocated.
fn wait_gpus_used(ctx: &Ctx<'_>, name: &str, want: u32) -> Result<()> {
    let what = format!("{name}'s GresUsed to count {want} GPU(s)");
    ctx.wait_node_value(name, "GresUsed", &what, |v| {
        parse_gpus(v).map_or(0, |g| g.count) == want
    })?;
    Ok(())
}

/// A script that records its GPU environment and waits for `go`.
fn holder(go: &std::path::Path) -> String {
    format!(
        "echo \"gpus=${{SLURM_JOB_GPUS-unset}}\"\n{}",
        hold_until(go, "")
    )
}

fn first_line_of(ctx: &Ctx<'_>, stem: &str) -> Result<String> {
    Ok(ctx
        .wait_lines(&ctx.path(&format!("{stem}.out")), 1, JOB_TIMEOUT)?
        .remove(0))
}

/// SMD-204: a job without GRES runs beside a GPU job on the same node, at the same time;
/// only the GPU job has the GPU (its environment, GresUsed, sacct's AllocTRES).
pub fn beside_gpu_job(ctx: &mut Ctx<'_>) -> Result<String> {
    let node = ctx.first_node();
    let (gpus, used) = gpus_of(ctx, &node)?;
    if used != 0 {
        return Err(Error::Scenario(format!(
            "{node} has {used} GPU(s) allocated before the scenario"
        )));
    }
    let cpus = ctx.cluster.nodes()[0].hw.cpus;
    if cpus < 2 {
        return Err(Error::Scenario(format!(
            "{node} has {cpus} CPU: two jobs cannot run on it at once (needs 2 CPUs)"
        )));
    }
    let go = ctx.path("go");
    let body = holder(&go);
    let w = ["-w", node.as_str(), "-n1"];
    let gpu = ctx.sbatch(
        "with-gpu",
        &[&w[..], &[gpus.request(1).as_str()]].concat(),
        &body,
    )?;
    ctx.wait_state(gpu, &["RUNNING"], JOB_TIMEOUT)?;
    let plain = ctx.sbatch("no-gres", &w, &body)?;
    let started = ctx.wait_state(plain, &["RUNNING"], JOB_TIMEOUT);
    let gpu_state = ctx.job_state(gpu)?;
    std::fs::write(&go, "").map_err(|e| Error::io(&go, e))?;
    started.map_err(|e| {
        Error::Scenario(format!(
            "the job without GRES did not start beside GPU job {gpu}: {e}"
        ))
    })?;
    if gpu_state != "RUNNING" {
        return Err(Error::Scenario(format!(
            "GPU job {gpu} was {gpu_state} when job {plain} started: they did not run together"
        )));
    }
    let (gpu_env, plain_env) = (
        first_line_of(ctx, "with-gpu")?,
        first_line_of(ctx, "no-gres")?,
    );
    if gpu_env != "gpus=0" || plain_env != "gpus=unset" {
        return Err(Error::Scenario(format!(
            "job environments: GPU job {gpu} {gpu_env:?} (expected gpus=0), job {plain} {plain_env:?} (expected gpus=unset)"
        )));
    }
    for id in [gpu, plain] {
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    }
    let (a, b) = (
        ctx.acct_final(gpu, JOB_TIMEOUT)?,
        ctx.acct_final(plain, JOB_TIMEOUT)?,
    );
    let has_gpu = |t: &str| t.split(',').any(|x| x == "gres/gpu=1");
    if !has_gpu(&a.alloc_tres) || b.alloc_tres.contains("gres/gpu") {
        return Err(Error::Scenario(format!(
            "accounting does not differ as it must: GPU job {gpu} AllocTRES={:?} (needs gres/gpu=1), job {plain} AllocTRES={:?} (no gres/gpu)",
            a.alloc_tres, b.alloc_tres
        )));
    }
    // sacct's times are whole seconds: a start in the second the other ended is together.
    if b.start > a.end {
        return Err(Error::Scenario(format!(
            "sacct: job {plain} started {} after GPU job {gpu} ended {}",
            b.start, a.end
        )));
    }
    wait_gpus_used(ctx, &node, 0)?;
    Ok(format!(
        "GPU job {gpu} ({}) and job {plain} (no GRES) ran together on {node}; SLURM_JOB_GPUS 0 vs unset; AllocTRES {} vs {}",
        gpus.kind, a.alloc_tres, b.alloc_tres
    ))
}

/// SMD-205: slurmctld is configured for one GPU more than the node reports: the node is
/// set INVALID_REG and drained with the reason naming the count, a GPU job does not run
/// there; with the configuration corrected the node is usable again and a GPU job runs.
pub fn fewer_gpus(ctx: &mut Ctx<'_>) -> Result<String> {
    let node = ctx.first_node();
    let (gpus, _) = gpus_of(ctx, &node)?;
    let more = Gpus {
        kind: gpus.kind.clone(),
        count: gpus.count + 1,
    };
    // Only slurmctld takes the change: the node's slurmd keeps reporting what it has.
    let change = Change {
        node_params: vec![(node.clone(), format!("Gres={}:{}", more.kind, more.count))],
        restart: vec![Daemon::Slurmctld],
        ..Change::default()
    };
    let seen = reconf::with_change(ctx, &change, |ctx| {
        let reason = drained_for_count(ctx, &node, &gpus, &more)?;
        let id = ctx.sbatch(
            "gpu-on-invalid",
            &["-w", &node, "-n1", &gpus.request(1)],
            "true\n",
        )?;
        let pended = ctx.stays_pending(id, None, "while its node is drained for its GPU count");
        ctx.read("scancel", &[&id.to_string()])?;
        pended?;
        Ok(format!("{reason}; GPU job {id} pended"))
    })?;
    let (after, resumed) = usable_again(ctx, &node)?;
    let id = ctx.sbatch(
        "gpu-after-fix",
        &["-w", &node, "-n1", &gpus.request(1)],
        "true\n",
    )?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    Ok(format!(
        "configured {} GPUs, node reports {}: {seen}; corrected: {after}{}, GPU job {id} COMPLETED",
        more.count,
        gpus.count,
        if resumed { ", resumed by scontrol" } else { "" }
    ))
}

/// Wait for `node` to be INVALID_REG and drained; its reason must name both GPU counts.
fn drained_for_count(ctx: &Ctx<'_>, node: &str, has: &Gpus, conf: &Gpus) -> Result<String> {
    ctx.wait_node_value(
        node,
        "State",
        &format!("{node} to be drained for its GPU count"),
        |s| s.contains("INVALID_REG") && s.contains("DRAIN"),
    )?;
    // Reason= is one word of `scontrol -o` only up to its first space: read it whole.
    let reason = ctx.read("sinfo", &["-h", "-n", node, "-o", "%E"])?;
    let expect = format!(
        "gres/gpu count reported lower than configured ({} < {})",
        has.count, conf.count
    );
    if !reason.contains(&expect) {
        return Err(Error::Scenario(format!(
            "{node} is drained, but its reason {:?} does not say {expect:?}",
            reason.trim()
        )));
    }
    Ok(reason.trim().to_string())
}

/// slurmctld has the corrected configuration again (with_change restarted it). A node
/// drained by slurmctld for an invalid registration stays drained until an administrator
/// resumes it (node_mgr.c validate_node_specs only sets the flag): resume it if so, then
/// wait for it to be idle. Its state before, and whether it was resumed.
fn usable_again(ctx: &Ctx<'_>, node: &str) -> Result<(String, bool)> {
    // Until the node registers with the restarted slurmctld its state is UNKNOWN, which
    // RESUME refuses ("Invalid node state specified").
    let after = ctx.wait_node_value(node, "State", &format!("{node} to register again"), |s| {
        !s.starts_with("UNKNOWN") && !s.contains("NOT_RESPONDING")
    })?;
    let resumed = ctx.resume_if_drained(node)?.is_some();
    ctx.wait_node_idle(Duration::from_secs(60))?;
    Ok((after, resumed))
}

/// SMD-206: slurmd is restarted (SIGTERM) and then crashes (SIGKILL, started again) under a
/// running GPU job: the job keeps running, the node counts its GPU once (not twice, not
/// zero), a second GPU job keeps pending for it; once the first ends the GPU is free, the
/// second runs, and sacct has one GPU for each.
pub fn slurmd_restart(ctx: &mut Ctx<'_>) -> Result<String> {
    let node = ctx.first_node();
    let (gpus, _) = gpus_of(ctx, &node)?;
    if gpus.count != 1 {
        return Err(Error::Scenario(format!(
            "{node} has {} GPUs; this scenario holds the only one (configure one)",
            gpus.count
        )));
    }
    let go = ctx.path("go");
    let req = gpus.request(1);
    let first = ctx.sbatch("gpu-held", &["-w", &node, "-n1", &req], &holder(&go))?;
    ctx.wait_state(first, &["RUNNING"], JOB_TIMEOUT)?;
    wait_gpus_used(ctx, &node, 1)?;
    let second = ctx.sbatch("gpu-waiting", &["-w", &node, "-n1", &req], "echo ran\n")?;
    let held = (first, second);
    let result = ctx
        .stays_pending(second, Some("Resources"), "while the only GPU is held")
        .and_then(|()| {
            ["restart", "crash"]
                .into_iter()
                .map(|how| bounce_under_gpu_job(ctx, &node, held, how))
                .collect::<Result<Vec<String>>>()
        });
    std::fs::write(&go, "").map_err(|e| Error::io(&go, e))?;
    let seen = result.inspect_err(|_| {
        ctx.read("scancel", &[&second.to_string()]).ok();
    })?;
    for id in [first, second] {
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    }
    wait_gpus_used(ctx, &node, 0)?;
    let mut tres = Vec::new();
    for id in [first, second] {
        let a = ctx.acct_final(id, JOB_TIMEOUT)?;
        if !a.alloc_tres.split(',').any(|t| t == "gres/gpu=1") {
            return Err(Error::Scenario(format!(
                "job {id}: AllocTRES {:?}, expected gres/gpu=1",
                a.alloc_tres
            )));
        }
        tres.push(a.alloc_tres);
    }
    Ok(format!(
        "{}; job {first} COMPLETED, then {second} ran; GresUsed 0; AllocTRES {}",
        seen.join("; "),
        tres.join(" / ")
    ))
}

/// The first node's slurmd restarted (`restart`) or killed and started (`crash`) while job
/// `held.0` holds its GPU and `held.1` waits for it: the first keeps running, the node
/// counts one GPU in use, the second keeps pending.
fn bounce_under_gpu_job(
    ctx: &mut Ctx<'_>,
    node: &str,
    (first, second): (u32, u32),
    how: &str,
) -> Result<String> {
    let d = Daemon::Slurmd(0);
    let old = ctx.cluster.record(d).map(|r| r.pid);
    if how == "restart" {
        ctx.cluster.restart(ctx.sh, d)?;
    } else {
        ctx.cluster.kill(d, nix::sys::signal::Signal::SIGKILL)?;
        if let Some(rec) = ctx.cluster.record(d).cloned() {
            rec.wait_gone(Duration::from_secs(10));
        }
        ctx.cluster.start(ctx.sh, d)?;
    }
    let new = ctx.cluster.record(d).map(|r| r.pid);
    let state = ctx.job_state(first)?;
    if state != "RUNNING" {
        return Err(Error::Scenario(format!(
            "GPU job {first} is {state} after the slurmd {how}"
        )));
    }
    // Give the re-registration time to (wrongly) change the count.
    std::thread::sleep(Duration::from_secs(2));
    let used = gpus_of(ctx, node)?.1;
    if used != 1 {
        return Err(Error::Scenario(format!(
            "after the slurmd {how} {node} counts {used} GPU(s) in use under job {first}, expected 1"
        )));
    }
    let when = format!("while the GPU is still held by job {first} after the slurmd {how}");
    ctx.stays_pending(second, Some("Resources"), &when)?;
    Ok(format!(
        "{how} {old:?}->{new:?}: GresUsed 1, job {second} pending"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_gpus__typed_gpu_among_other_gres() {
        assert_eq!(
            parse_gpus("gpu:apple:1(S:0)"),
            Some(Gpus {
                kind: "gpu:apple".into(),
                count: 1
            })
        );
        assert_eq!(
            parse_gpus("mps:100,gpu:apple_m4:2(IDX:0-1)").map(|g| (g.kind, g.count)),
            Some(("gpu:apple_m4".into(), 2))
        );
        assert_eq!(parse_gpus("gpu:apple:0(IDX:N/A)").map(|g| g.count), Some(0));
        assert_eq!(parse_gpus("(null)"), None);
        assert_eq!(parse_gpus("gpu:1"), None);
        assert_eq!(
            parse_gpus("gpu:apple:1").unwrap().request(1),
            "--gres=gpu:apple:1"
        );
    }
}
