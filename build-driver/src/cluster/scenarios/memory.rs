//! Memory as the cluster's profile (profile.rs) says: memory is consumable in every profile
//! (cons_tres's `CR_Core_Memory`, explicit or Slurm's default). Under `default` a job without
//! `--mem` gets `DefMemPerCPU` per CPU (sacct's AllocTRES), so two one-CPU jobs share the node,
//! and two that each ask for 60 % of its memory run one after the other. Without
//! `DefMemPerCPU` (`poc`, `cpu`) a job without `--mem` is given the node's whole memory, so
//! such jobs run one at a time per node: under `poc` that is the real `RealMemory` (the
//! 131072 MB of POC-DEFECTS D8), under `cpu` Slurm's default of 1 MB, where a job asking for
//! memory is refused.

use super::super::profile::Profile;
use super::client::{Ctx, JOB_TIMEOUT, POLL, q};
use crate::error::{Error, Result};
use crate::util::process::bounded::poll;

/// The `mem=` of an AllocTRES string in MB (`mem=12052M`, `mem=23.54G`), 0 when absent.
pub fn alloc_mem_mb(tres: &str) -> Result<u64> {
    let Some(v) = tres.split(',').find_map(|t| t.strip_prefix("mem=")) else {
        return Ok(0);
    };
    let (num, unit) = v.split_at(v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len()));
    let n: f64 = num
        .parse()
        .map_err(|e| Error::parse(format!("AllocTRES mem={v}"), e))?;
    let factor = match unit {
        "" | "M" => 1.0,
        "G" => 1024.0,
        "T" => 1024.0 * 1024.0,
        "K" => 1.0 / 1024.0,
        other => {
            return Err(Error::Scenario(format!(
                "AllocTRES mem={v}: unknown unit {other:?}"
            )));
        }
    };
    Ok((n * factor).round() as u64)
}

pub fn allocation(ctx: &mut Ctx<'_>) -> Result<String> {
    let profile = ctx.cluster.profile();
    let hw = ctx
        .cluster
        .nodes()
        .first()
        .map(|n| n.hw.clone())
        .ok_or_else(|| Error::Scenario("the cluster has no node".into()))?;
    let (real, cpus) = (hw.real_memory, u64::from(hw.cpus.max(1)));
    // A job without --mem: what it is given. Without DefMemPerCPU Slurm gives it the node's
    // whole memory (RealMemory; Slurm's default is 1 MB).
    let (expected, share) = match profile {
        Profile::Default | Profile::MacosNative => (real / cpus, true),
        Profile::Poc => (real, false),
        Profile::Cpu => (1, false),
    };
    let id = ctx.sbatch("plain", &["-n1"], "true\n")?;
    let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
    let got = alloc_mem_mb(&acct.alloc_tres)?;
    // sacct rounds large values to two decimals of G.
    if got.abs_diff(expected) > expected / 100 + 1 {
        return Err(Error::Scenario(format!(
            "profile `{}`: job {id} without --mem got mem={got} MB (AllocTRES {}), expected {expected} MB",
            profile.name(),
            acct.alloc_tres
        )));
    }
    let plain = pair(ctx, "plain", &[], share)?;
    let asked = match profile {
        Profile::Default | Profile::Poc | Profile::MacosNative => {
            let mem = format!("--mem={}", real * 6 / 10);
            pair(ctx, "sixty", &[&mem], false)?
        }
        Profile::Cpu => refused(ctx)?,
    };
    Ok(format!(
        "profile `{}`: a job without --mem got {got} MB; {plain}; {asked}",
        profile.name()
    ))
}

/// Two one-CPU jobs with `args` while the node has a free CPU for each: with `together`
/// both run at once, else the second pends on Resources (memory) until the first ends.
fn pair(ctx: &mut Ctx<'_>, stem: &str, args: &[&str], together: bool) -> Result<String> {
    let go = ctx.path(&format!("{stem}-go"));
    let body = format!("while [ ! -e {go} ]; do sleep 0.1; done\n", go = q(&go));
    let mut all = vec!["-n1"];
    all.extend_from_slice(args);
    let a = ctx.sbatch(&format!("{stem}-a"), &all, &body)?;
    ctx.wait_state(a, &["RUNNING"], JOB_TIMEOUT)?;
    let b = ctx.sbatch(&format!("{stem}-b"), &all, &body)?;
    let what = if args.is_empty() {
        "without --mem".to_string()
    } else {
        format!("with {}", args.join(" "))
    };
    if together {
        ctx.wait_state(b, &["RUNNING"], JOB_TIMEOUT)?;
    } else {
        poll(
            &format!("job {b} to pend on Resources"),
            JOB_TIMEOUT,
            POLL,
            || {
                let state = ctx.job_state(b)?;
                if state != "PENDING" {
                    return Err(Error::Scenario(format!(
                        "job {b} ({what}) is {state} while job {a} holds the memory: memory is not consumable"
                    )));
                }
                Ok((ctx.job_field(b, "Reason")?.as_deref() == Some("Resources")).then_some(()))
            },
        )?;
    }
    std::fs::write(&go, "").map_err(|e| Error::io(&go, e))?;
    ctx.wait_state(a, &["COMPLETED"], JOB_TIMEOUT)?;
    ctx.wait_state(b, &["COMPLETED"], JOB_TIMEOUT)?;
    Ok(if together {
        format!("two jobs {what} ran side by side")
    } else {
        format!("two jobs {what} ran one after the other (job {b} pended on Resources)")
    })
}

/// A job asking for memory on a node without RealMemory (1 MB) is refused at submission.
fn refused(ctx: &mut Ctx<'_>) -> Result<String> {
    let out = ctx.run("sbatch", &["--mem=100", "--wrap=true", "-o", "/dev/null"])?;
    if out.status.success() {
        return Err(Error::Scenario(
            "profile `cpu`: a job with --mem=100 was accepted on a node without RealMemory".into(),
        ));
    }
    Ok(format!(
        "--mem=100 refused: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

#[cfg(test)]
mod tests {
    #![allow(non_snake_case)]
    use super::*;

    #[test]
    fn alloc_mem_mb__units_and_absence() {
        assert_eq!(
            alloc_mem_mb("billing=1,cpu=1,mem=12052M,node=1").unwrap(),
            12052
        );
        assert_eq!(alloc_mem_mb("cpu=2,mem=23.54G,node=1").unwrap(), 24105);
        assert_eq!(alloc_mem_mb("cpu=1,node=1").unwrap(), 0);
        assert!(alloc_mem_mb("mem=12Q").is_err());
    }
}
