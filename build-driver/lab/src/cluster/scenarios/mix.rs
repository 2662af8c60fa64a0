//! Nodes of two builds in one cluster (`--mix native=P1,darwin=P2`, the PoC's SMD-402: a job
//! across a Linux node and a Mac node): a job spans every node and each node's tasks are
//! started by that node's own build (the task's parent is its slurmstepd, whose executable
//! is read from `/proc`); a batch job on a node of the second build launches its own step
//! there; and the second build's clients, run as on its node (its namespaces, its slurmd's
//! SACK socket), submit, watch, cancel and account jobs of the first build's controller.

use super::client::{Ctx, JOB_TIMEOUT, q, sh_quote};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::{read_bounded, run_bounded};
use std::collections::BTreeMap;

/// `node stepd-path` per task.
const STEPD: &str = "echo $SLURMD_NODENAME $(readlink /proc/$PPID/exe)";

/// Each node's tasks were started by its own build's slurmstepd.
fn check_own_build(ctx: &Ctx<'_>, what: &str, out: &str) -> Result<String> {
    let mut seen = BTreeMap::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let text = line.split_once(": ").map_or(line, |(_, t)| t);
        if let Some((node, exe)) = text.trim().split_once(' ') {
            seen.insert(node.to_string(), exe.to_string());
        }
    }
    let mut summary = Vec::new();
    for n in ctx.cluster.nodes() {
        let want = n.prefix.join("sbin/slurmstepd");
        match seen.get(&n.name) {
            Some(exe) if std::path::Path::new(exe) == want => {
                summary.push(format!("{} [{}]", n.name, n.build));
            }
            Some(exe) => {
                return Err(Error::Scenario(format!(
                    "{what}: the task on {} was started by {exe}, expected {} ({} build)",
                    n.name,
                    want.display(),
                    n.build
                )));
            }
            None => {
                return Err(Error::Scenario(format!(
                    "{what}: no task on {}: {out:?}",
                    n.name
                )));
            }
        }
    }
    Ok(format!(
        "{what}: each node's task started by its own build's slurmstepd ({})",
        summary.join(", ")
    ))
}

/// The first node of the second build (its index).
fn second_build_node(ctx: &Ctx<'_>) -> Result<usize> {
    let first = &ctx.cluster.nodes()[0].prefix;
    ctx.cluster
        .nodes()
        .iter()
        .position(|n| &n.prefix != first)
        .ok_or_else(|| Error::Scenario("the cluster has nodes of one build only".into()))
}

/// `srun` arguments for one task on each of `n` nodes printing its node and slurmstepd.
fn every_node(n: &str) -> [&str; 7] {
    ["-N", n, "--ntasks-per-node=1", "-l", "/bin/sh", "-c", STEPD]
}

pub fn span(ctx: &mut Ctx<'_>) -> Result<String> {
    let n = ctx.cluster.nodes().len().to_string();
    let out = ctx.srun(&every_node(&n))?;
    if !out.status.success() {
        return Err(Error::Scenario(format!(
            "srun -N{n} across the builds: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let across = check_own_build(
        ctx,
        "srun across the builds",
        &String::from_utf8_lossy(&out.stdout),
    )?;
    // A batch job whose batch host is a node of the second build: its srun (that build's)
    // launches a step there.
    let i = second_build_node(ctx)?;
    let node = ctx.cluster.nodes()[i].clone();
    let body = format!(
        "{} -l /bin/sh -c {}\n",
        q(&node.prefix.join("bin/srun")),
        sh_quote(STEPD)
    );
    let id = ctx.sbatch("second", &["-N1", "-w", &node.name], &body)?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let lines = ctx.wait_lines(&ctx.path("second.out"), 1, JOB_TIMEOUT)?;
    let want = node.prefix.join("sbin/slurmstepd");
    let line = lines[0]
        .split_once(": ")
        .map_or(lines[0].as_str(), |(_, t)| t);
    if line != format!("{} {}", node.name, want.display()) {
        return Err(Error::Scenario(format!(
            "batch job {id} on {} [{}]: its step printed {line:?}, expected {} {}",
            node.name,
            node.build,
            node.name,
            want.display()
        )));
    }
    Ok(format!(
        "{across}; batch job {id} on {} [{}] ran its step with its own build",
        node.name, node.build
    ))
}

pub fn clients(ctx: &mut Ctx<'_>) -> Result<String> {
    let i = second_build_node(ctx)?;
    let node = ctx.cluster.nodes()[i].clone();
    let n = ctx.cluster.nodes().len().to_string();
    let on = |tool: &str| -> Result<std::process::Command> {
        let mut c = ctx.cluster.tool_on(i, tool)?;
        c.current_dir(&ctx.dir);
        Ok(c)
    };
    // srun of the second build, from its node, across every node.
    let mut c = on("srun")?;
    c.args(every_node(&n));
    let out = run_bounded(c, super::client::CLIENT_TIMEOUT)?;
    if !out.status.success() {
        return Err(Error::Scenario(format!(
            "{} [{}]'s srun -N{n}: {}: {}",
            node.name,
            node.build,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let across = check_own_build(
        ctx,
        &format!("{}'s srun", node.build),
        &String::from_utf8_lossy(&out.stdout),
    )?;
    // sbatch (as the unprivileged test user), squeue, scancel and sacct of the second build.
    let user = super::super::user::ensure_test_user()?;
    let mut c = ctx.cluster.tool_on_as(i, &user.name, "sbatch")?;
    c.current_dir(&ctx.dir)
        .args(["--parsable", "-o", "/dev/null", "--wrap=sleep 300"]);
    let id = super::client::parse_job_id(&read_bounded(c, super::client::CLIENT_TIMEOUT)?)
        .ok_or_else(|| Error::Scenario(format!("{}'s sbatch printed no job id", node.build)))?;
    ctx.wait_state(id, &["RUNNING"], JOB_TIMEOUT)?;
    let mut c = on("squeue")?;
    c.args(["-h", "-j", &id.to_string(), "-o", "%i %T %u"]);
    let q = read_bounded(c, super::client::CLIENT_TIMEOUT)?;
    if q.trim() != format!("{id} RUNNING {}", user.name) {
        return Err(Error::Scenario(format!(
            "{}'s squeue -j {id}: {q:?}, expected \"{id} RUNNING {}\"",
            node.build, user.name
        )));
    }
    let mut c = on("scancel")?;
    c.arg(id.to_string());
    read_bounded(c, super::client::CLIENT_TIMEOUT)?;
    ctx.wait_state(id, &["CANCELLED"], JOB_TIMEOUT)?;
    ctx.acct_final(id, JOB_TIMEOUT)?;
    let mut c = on("sacct")?;
    c.args(["-n", "-X", "-P", "-j", &id.to_string(), "-o", "State"]);
    let state = read_bounded(c, super::client::CLIENT_TIMEOUT)?;
    if !state.trim().starts_with("CANCELLED") {
        return Err(Error::Scenario(format!(
            "{}'s sacct -j {id}: {state:?}, expected CANCELLED",
            node.build
        )));
    }
    Ok(format!(
        "{across}; {}'s sbatch (as {})/squeue/scancel/sacct on job {id}: RUNNING, CANCELLED, accounted",
        node.build, user.name
    ))
}
