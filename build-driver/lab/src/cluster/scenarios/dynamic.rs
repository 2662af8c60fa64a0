//! A dynamic node (SMD-408): slurmctld gets `MaxNodeCount` and a partition of the nodes with
//! feature `dyn` (a `Nodeset`, doc/html/dynamic_nodes.shtml), and a node that is not in
//! `slurm.conf` starts `slurmd -Z --conf "Port=<p> Feature=dyn"` in namespaces of its own
//! (host name and `/run`, as every node here). It must register (slurmctld creates it),
//! run a job, be deleted (`scontrol delete nodename=`, slurmd stopped first: Slurm deletes
//! only a node without jobs) so that slurmctld no longer knows it, and register again as a
//! new node that runs a job.

use super::super::daemon::Daemon;
use super::super::handle::SlurmdLaunch;
use super::super::nodes::{Node, node_addr, node_name};
use super::client::{Ctx, JOB_TIMEOUT, field};
use super::reconf::{self, Change};
use driver_common::error::{Error, Result};

const FEATURE: &str = "dyn";
const PARTITION: &str = "dyn";

pub fn register_delete_register(ctx: &mut Ctx<'_>) -> Result<String> {
    let n = ctx.cluster.nodes().len();
    let change = Change {
        lines: vec![
            format!("MaxNodeCount={}", n + 1),
            format!("Nodeset=dynset Feature={FEATURE}"),
            format!("PartitionName={PARTITION} Nodes=dynset MaxTime=INFINITE State=UP"),
        ],
        restart: vec![Daemon::Slurmctld],
        ..Change::default()
    };
    reconf::with_change(ctx, &change, |ctx| {
        let port = super::super::config::free_ports(1)?[0];
        let first = &ctx.cluster.nodes()[0];
        let node = Node {
            name: node_name(n),
            build: first.build.clone(),
            prefix: first.prefix.clone(),
            hostname: if ctx.cluster.state.node_namespaces {
                node_name(n)
            } else {
                first.hostname.clone()
            },
            addr: node_addr(n, ctx.cluster.state.node_namespaces),
            port,
            hw: first.hw.clone(),
        };
        let i = ctx.cluster.add_node(node)?;
        ctx.cluster.slurmd_launch.insert(
            i,
            SlurmdLaunch {
                args: vec![
                    "-Z".into(),
                    "--conf".into(),
                    format!("Port={port} Feature={FEATURE}"),
                    "-f".into(),
                    ctx.cluster.layout().conf().display().to_string(),
                ],
                slurm_conf: None,
            },
        );
        let result = cycle(ctx, i);
        // Whatever happened: the node stopped, deleted from slurmctld, forgotten.
        let name = ctx.cluster.nodes()[i].name.clone();
        let cleanup = ctx
            .cluster
            .stop(Daemon::Slurmd(i))
            .and_then(|_| delete(ctx, &name).map(|_| ()))
            .and_then(|()| ctx.cluster.remove_node(i));
        let detail = result?;
        cleanup?;
        Ok(detail)
    })
}

/// `scontrol delete nodename=NAME`; a node slurmctld does not know is fine.
fn delete(ctx: &Ctx<'_>, name: &str) -> Result<bool> {
    let out = ctx.run("scontrol", &["delete", &format!("nodename={name}")])?;
    Ok(out.status.success())
}

/// Whether slurmctld knows node `name`.
fn known(ctx: &Ctx<'_>, name: &str) -> Result<bool> {
    Ok(ctx
        .run("scontrol", &["show", "node", "-o", name])?
        .status
        .success())
}

/// Register, run a job, delete, register again, run a job.
fn cycle(ctx: &mut Ctx<'_>, i: usize) -> Result<String> {
    let name = ctx.cluster.nodes()[i].name.clone();
    if known(ctx, &name)? {
        return Err(Error::Scenario(format!(
            "slurmctld knows {name} before its dynamic slurmd started"
        )));
    }
    let mut seen = Vec::new();
    for round in ["registered", "registered again"] {
        ctx.cluster.start(ctx.sh, Daemon::Slurmd(i))?;
        let fields = ctx.node_fields(&name)?;
        let get = |k: &str| field(&fields, k);
        if !get("AvailableFeatures").split(',').any(|f| f == FEATURE) {
            return Err(Error::Scenario(format!(
                "dynamic node {name}: features {:?}, expected {FEATURE} (from --conf)",
                get("AvailableFeatures")
            )));
        }
        let out = ctx.srun(&[
            "-p",
            PARTITION,
            "-N1",
            "/bin/sh",
            "-c",
            "echo $SLURMD_NODENAME",
        ])?;
        let ran_on = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || ran_on != name {
            return Err(Error::Scenario(format!(
                "srun -p {PARTITION} ({round}): {}, ran on {ran_on:?} (expected {name}), stderr {:?}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let id = ctx.sbatch(
            &format!("dyn-{}", seen.len()),
            &["-p", PARTITION, "-N1"],
            "true\n",
        )?;
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
        seen.push(format!(
            "{round} (NodeAddr={}, Port={}), srun and job {id} ran there",
            get("NodeAddr"),
            get("Port")
        ));
        if seen.len() == 1 {
            ctx.cluster.stop(Daemon::Slurmd(i))?;
            if !delete(ctx, &name)? {
                return Err(Error::Scenario(format!(
                    "scontrol delete nodename={name} failed for a stopped dynamic node"
                )));
            }
            if known(ctx, &name)? {
                return Err(Error::Scenario(format!(
                    "slurmctld still knows {name} after scontrol delete"
                )));
            }
            seen.push("deleted (unknown to slurmctld)".into());
        }
    }
    Ok(format!("dynamic node {name}: {}", seen.join("; ")))
}
