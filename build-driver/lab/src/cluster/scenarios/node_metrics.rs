//! slurmd's node metrics (patch 0052) on the darwin personality's modelled Mac (the
//! cluster's hardware file, the shim's default Mac: Apple M4 Pro, 10 performance + 4
//! efficiency cores): the node's Extra, as a stock slurmctld keeps it from the registration,
//! is that CPU; `slurmd -C` prints the same object on its own line while its `NodeName=` line
//! stays a slurm.conf line; and the README's recipe (Features from the Extra, set with
//! `scontrol update`) lets a `--constraint` job run while an absent feature is refused.

use super::super::config::parse_slurmd_c;
use super::apple_gpu::has_gpu_apple;
use super::client::{Ctx, JOB_TIMEOUT};
use driver_common::error::{Error, Result};
use slurm_mac::gres_conf::{self, Source};

/// What slurmd sends for the default Mac.
pub const DEFAULT_EXTRA: &str = r#"{"cpu_brand":"Apple M4 Pro","perf_levels":2,"perf_cores":10,"perf_cpus":10,"eff_cores":4,"eff_cpus":4}"#;

/// The keys slurmd -C's NodeName line may have: all slurm.conf node parameters.
const NODE_KEYS: &[&str] = &[
    "NodeName",
    "CPUs",
    "Boards",
    "SocketsPerBoard",
    "CoresPerSocket",
    "ThreadsPerCore",
    "RealMemory",
    "Gres",
];

/// The node's Extra (`scontrol show node` prints it on a line of its own; it has spaces).
fn node_extra(ctx: &Ctx<'_>) -> Result<String> {
    let text = ctx.read("scontrol", &["show", "node", &ctx.first_node()])?;
    Ok(text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Extra="))
        .unwrap_or_default()
        .to_string())
}

fn set_features(ctx: &Ctx<'_>, features: &str) -> Result<()> {
    ctx.read(
        "scontrol",
        &[
            "update",
            &format!("NodeName={}", ctx.first_node()),
            &format!("AvailableFeatures={features}"),
            &format!("ActiveFeatures={features}"),
        ],
    )
    .map(|_| ())
}

pub fn extra_and_features(ctx: &mut Ctx<'_>) -> Result<String> {
    if !has_gpu_apple(ctx) {
        return ctx.not_run(
            "node metrics are reported by macOS and darwin-personality builds only (patch 0052)",
        );
    }
    let extra = node_extra(ctx)?;
    if extra != DEFAULT_EXTRA {
        return Err(Error::Scenario(format!(
            "the node's Extra is {extra:?}; the default Mac's is {DEFAULT_EXTRA}"
        )));
    }
    let hw = ctx.cluster.layout().mac_hardware();
    let r = gres_conf::report(&ctx.cluster.state.prefix, &Source::Seam(Some(hw)))?;
    if r.extra.as_deref() != Some(DEFAULT_EXTRA) {
        return Err(Error::Scenario(format!(
            "slurmd -C printed Extra {:?}, the registration {DEFAULT_EXTRA}",
            r.extra
        )));
    }
    parse_slurmd_c(&r.node_line)?;
    if let Some(w) = r.node_line.split_whitespace().find(|w| {
        !w.split_once('=')
            .is_some_and(|(k, _)| NODE_KEYS.contains(&k))
    }) {
        return Err(Error::Scenario(format!(
            "slurmd -C's NodeName line has `{w}`, which is not a slurm.conf node parameter: {}",
            r.node_line
        )));
    }

    // The README's recipe: Features from the Extra.
    let features = gres_conf::features(&extra).join(",");
    if features != "apple_m4_pro,pcores_10,ecores_4" {
        return Err(Error::Scenario(format!(
            "features from {extra}: {features:?}"
        )));
    }
    set_features(ctx, &features)?;
    let result = constrained_jobs(ctx);
    let cleared = set_features(ctx, "");
    let detail = result?;
    cleared?;
    Ok(format!(
        "Extra={extra}; slurmd -C prints it after a slurm.conf NodeName line; Features={features}: {detail}"
    ))
}

fn constrained_jobs(ctx: &mut Ctx<'_>) -> Result<String> {
    let id = ctx.sbatch("pcores", &["-n1", "--constraint=pcores_10"], "true\n")?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let script = ctx.script("ecores-8", "true\n")?;
    let out = ctx.run(
        "sbatch",
        &[
            "-n1",
            "--constraint=ecores_8",
            &script.display().to_string(),
        ],
    )?;
    if out.status.success() {
        return Err(Error::Scenario(format!(
            "a job asking for ecores_8 was accepted on a node with ecores_4: {}",
            String::from_utf8_lossy(&out.stdout).trim()
        )));
    }
    Ok(format!(
        "job {id} --constraint=pcores_10 COMPLETED; --constraint=ecores_8 refused ({})",
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}
