//! An upgrade within Slurm's compatibility window (SMD-410; `cluster test --prefix P1
//! --upgrade-to P2`, checked by cluster/upgrade.rs): the cluster runs P1 with one finished
//! (accounted) job and one running; slurmdbd and slurmctld are stopped and started from P2
//! (the database and StateSaveLocation converted by the newer release); the nodes' P1
//! slurmd keep running jobs for the P2 controller; then each slurmd is stopped and started
//! from P2 with the same spool, and the job that ran through both steps completes. Every
//! job, old and new, is in sacct; each node reports P2's version. The cluster stays on P2
//! afterwards (Slurm has no downgrade), so this scenario runs last.

use super::super::daemon::Daemon;
use super::client::{Ctx, JOB_TIMEOUT, POLL, hold_until};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::{poll, read_bounded};
use std::path::Path;
use std::time::Duration;

/// How long the new slurmdbd may take to convert the database.
const DBD_CONVERT: Duration = Duration::from_secs(300);

/// `<prefix>/bin/sinfo --version` (`slurm 25.11.7`) -> `25.11.7`, with the cluster's
/// `SLURM_CONF`: since 25.11 `--version` loads the configuration first, and without one it
/// falls back to a DNS SRV lookup and fails.
fn version_of(ctx: &Ctx<'_>, prefix: &Path) -> Result<String> {
    let c = ctx.cluster.wrap(std::process::Command::from(xshell::cmd!(
        ctx.sh,
        "{prefix}/bin/sinfo --version"
    )));
    let out = read_bounded(c, super::client::CLIENT_TIMEOUT)?;
    out.split_whitespace()
        .nth(1)
        .map(str::to_string)
        .ok_or_else(|| Error::Scenario(format!("sinfo --version printed {out:?}")))
}

/// Each node's `Version=` as slurmctld has it.
fn node_versions(ctx: &Ctx<'_>) -> Result<Vec<(String, String)>> {
    ctx.cluster
        .nodes()
        .iter()
        .map(|n| Ok((n.name.clone(), ctx.node_value(&n.name, "Version")?)))
        .collect()
}

/// Every node reports `version`. A restarted slurmctld knows a node's version only once the
/// node has registered with it (`Version=` is empty until then): wait up to a minute for
/// every node to have one, then compare.
fn all_at(ctx: &Ctx<'_>, version: &str, when: &str) -> Result<()> {
    let mut last = Vec::new();
    let known = poll(
        &format!("{when}: every node's Version"),
        Duration::from_secs(60),
        POLL,
        || {
            last = node_versions(ctx)?;
            Ok(last
                .iter()
                .all(|(_, v)| !v.is_empty())
                .then(|| last.clone()))
        },
    );
    let vs = match known {
        Ok(vs) => vs,
        Err(Error::TimedOut { .. }) => last,
        Err(e) => return Err(e),
    };
    if vs.iter().any(|(_, v)| v != version) {
        return Err(Error::Scenario(format!(
            "{when}: node versions {vs:?}, expected {version} on every node"
        )));
    }
    Ok(())
}

pub fn controller_then_nodes(ctx: &mut Ctx<'_>) -> Result<String> {
    let to = ctx
        .cluster
        .state
        .upgrade_to
        .clone()
        .ok_or_else(|| Error::Usage("smd-410 needs `cluster test --upgrade-to P2`".into()))?;
    let from = ctx.cluster.state.prefix.clone();
    let (old, new) = (version_of(ctx, &from)?, version_of(ctx, &to)?);
    all_at(ctx, &old, "before the upgrade")?;
    let done = ctx.sbatch("before-upgrade", &["-n1"], "echo before\n")?;
    ctx.acct_final(done, JOB_TIMEOUT)?;
    let go = ctx.path("go");
    let body = hold_until(&go, "echo across-the-upgrade\n");
    let running = ctx.sbatch("across-upgrade", &["-n1"], &body)?;
    ctx.wait_state(running, &["RUNNING"], JOB_TIMEOUT)?;

    // 1. The controller: slurmdbd (converts the database), then slurmctld.
    ctx.cluster.stop(Daemon::Slurmctld)?;
    ctx.cluster.stop(Daemon::Slurmdbd)?;
    ctx.cluster.state.prefix = to.clone();
    ctx.cluster.state.save()?;
    ctx.cluster.ready_timeout = DBD_CONVERT;
    let started = ctx.cluster.start(ctx.sh, Daemon::Slurmdbd);
    ctx.cluster.ready_timeout = super::super::handle::READY_TIMEOUT;
    started?;
    ctx.cluster.start(ctx.sh, Daemon::Slurmctld)?;
    all_at(ctx, &old, "new controller, old nodes")?;
    ctx.expect_state(
        running,
        "RUNNING",
        &format!("after the controller's upgrade to {new}"),
    )?;
    let mixed = ctx.sbatch("old-node-new-ctld", &["-n1"], "echo mixed\n")?;
    ctx.wait_state(mixed, &["COMPLETED"], JOB_TIMEOUT)?;

    // 2. Each slurmd, with its spool.
    for i in 0..ctx.cluster.nodes().len() {
        ctx.cluster.stop(Daemon::Slurmd(i))?;
        ctx.cluster.state.nodes[i].prefix = to.clone();
        ctx.cluster.state.save()?;
        ctx.cluster.start(ctx.sh, Daemon::Slurmd(i))?;
    }
    all_at(ctx, &new, "after the slurmd upgrade")?;
    ctx.expect_state(
        running,
        "RUNNING",
        &format!("after the slurmd upgrade (its slurmstepd is {old}'s)"),
    )?;
    std::fs::write(&go, "").map_err(|e| Error::io(&go, e))?;
    ctx.wait_state(running, &["COMPLETED"], JOB_TIMEOUT)?;
    let out = ctx.wait_lines(&ctx.path("across-upgrade.out"), 1, JOB_TIMEOUT)?;
    if out != ["across-the-upgrade"] {
        return Err(Error::Scenario(format!("job {running} wrote {out:?}")));
    }
    let after = ctx.sbatch("after-upgrade", &["-n1"], "echo after\n")?;
    ctx.wait_state(after, &["COMPLETED"], JOB_TIMEOUT)?;
    for id in [done, running, mixed, after] {
        ctx.expect_acct(id, "COMPLETED")?;
    }
    Ok(format!(
        "{old} -> {new}: slurmdbd and slurmctld first (job {mixed} ran on {old} nodes), then each slurmd with its spool; job {running} ran through both and COMPLETED; jobs {done}, {running}, {mixed}, {after} in sacct"
    ))
}
