//! Resource limits of the submitting shell in the job (SMD-110).
//!
//! sbatch/srun send the submitter's soft limits as `SLURM_RLIMIT_*` and slurmstepd sets them
//! in the task (src/slurmd/slurmstepd/ulimits.c `_set_limit`) when `PropagateResourceLimits`
//! says so (default: all) or the user asked with `--propagate`; the hard limits stay the
//! node's (slurmd's), and the variables are removed from the task's environment.

use super::client::{Ctx, JOB_TIMEOUT, q};
use driver_common::error::{Error, Result};
use nix::sys::resource::Resource;
use std::path::Path;

/// The four limits, with the soft value the submitter gets (each unlike a default).
const PROBES: [(&str, Resource, u64); 4] = [
    ("Max open files", Resource::RLIMIT_NOFILE, 777),
    ("Max core file size", Resource::RLIMIT_CORE, 4096 * 1024),
    ("Max stack size", Resource::RLIMIT_STACK, 12 * 1024 * 1024),
    ("Max cpu time", Resource::RLIMIT_CPU, 3333),
];

/// `/proc/<pid>/limits` parsed: name -> (soft, hard) as printed (`unlimited` or a number).
fn parse_limits(text: &str) -> Vec<(String, String, String)> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            // The name column is 26 characters wide, then soft, hard, units.
            let name = l.get(..26)?.trim().to_string();
            let mut rest = l.get(26..)?.split_whitespace();
            Some((name, rest.next()?.to_string(), rest.next()?.to_string()))
        })
        .collect()
}

fn limit<'a>(
    table: &'a [(String, String, String)],
    name: &str,
) -> Option<&'a (String, String, String)> {
    table.iter().find(|(n, _, _)| n == name)
}

/// One job with the probe limits, optionally `--propagate=...`: its soft limits must be the
/// submitter's, its hard ones slurmd's; no `SLURM_RLIMIT_*` in its environment.
fn check_job(
    ctx: &mut Ctx<'_>,
    stem: &str,
    extra: &[&str],
    slurmd: &[(String, String, String)],
) -> Result<String> {
    let (limits, env) = (
        ctx.path(&format!("{stem}.limits")),
        ctx.path(&format!("{stem}.env")),
    );
    let mut c = ctx.tool("sbatch");
    driver_common::util::process::spawn::soft_limits(
        &mut c,
        PROBES.iter().map(|&(_, r, v)| (r, v)).collect(),
    );
    let body = format!(
        "cat /proc/self/limits > {}\nenv > {}\n",
        q(&limits),
        q(&env)
    );
    let mut args = vec!["-n1"];
    args.extend_from_slice(extra);
    let id = ctx.sbatch_using(c, stem, &args, &body)?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let table = parse_limits(&read(&limits)?);
    let mut bad = Vec::new();
    for (name, _, want) in PROBES {
        let got = limit(&table, name);
        let node_hard = limit(slurmd, name).map(|(_, _, h)| h.as_str());
        match got {
            Some((_, soft, hard))
                if *soft == want.to_string() && Some(hard.as_str()) == node_hard => {}
            other => bad.push(format!(
                "{name}: {other:?}, expected soft {want} and slurmd's hard {node_hard:?}"
            )),
        }
    }
    if let Some(l) = read(&env)?.lines().find(|l| l.starts_with("SLURM_RLIMIT_")) {
        bad.push(format!("{l} reached the job's environment"));
    }
    if !bad.is_empty() {
        return Err(Error::Scenario(format!(
            "job {id} ({}): {}",
            if extra.is_empty() {
                "default propagation".to_string()
            } else {
                extra.join(" ")
            },
            bad.join("; ")
        )));
    }
    Ok(format!(
        "job {id} ({})",
        if extra.is_empty() {
            "PropagateResourceLimits default"
        } else {
            extra[0]
        }
    ))
}

fn read(p: &Path) -> Result<String> {
    std::fs::read_to_string(p).map_err(|e| Error::io(p, e))
}

/// SMD-110: the submitter's soft limits for open files, core size, stack and CPU time
/// (777, 4 MiB, 12 MiB, 3333 s) are the job's, once by the default propagation and once
/// with `--propagate=NOFILE,CORE,STACK,CPU`; the job's hard limits are slurmd's; no
/// `SLURM_RLIMIT_*` reaches the job; slurmd is still running.
pub fn ulimits(ctx: &mut Ctx<'_>) -> Result<String> {
    let pid = ctx.slurmd_record()?.pid;
    let slurmd = parse_limits(&read(Path::new(&format!("/proc/{pid}/limits")))?);
    let a = check_job(ctx, "limits-default", &[], &slurmd)?;
    let b = check_job(
        ctx,
        "limits-propagate",
        &["--propagate=NOFILE,CORE,STACK,CPU"],
        &slurmd,
    )?;
    ctx.cluster.check_daemons()?;
    let hard: Vec<String> = PROBES
        .iter()
        .map(|(n, _, _)| {
            limit(&slurmd, n)
                .map_or("?", |(_, _, h)| h.as_str())
                .to_string()
        })
        .collect();
    Ok(format!(
        "{a} and {b}: soft NOFILE 777, CORE 4194304, STACK 12582912, CPU 3333 as submitted; hard = slurmd's ({}); no SLURM_RLIMIT_* in the job; slurmd running",
        hard.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: &str = "Limit                     Soft Limit           Hard Limit           Units     \n\
Max cpu time              3333                 unlimited            seconds   \n\
Max open files            777                  1048576              files     \n";

    #[test]
    fn parse_limits__name_soft_hard() {
        let t = parse_limits(LIMITS);
        assert_eq!(
            limit(&t, "Max open files"),
            Some(&("Max open files".into(), "777".into(), "1048576".into()))
        );
        assert_eq!(
            limit(&t, "Max cpu time").map(|x| x.2.as_str()),
            Some("unlimited")
        );
        assert!(limit(&t, "Max stack size").is_none());
    }
}
