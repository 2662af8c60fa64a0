//! Several nodes on loopback (nodes.rs): a job spans every node (each task on its own node,
//! whose host name it sees), a batch job's own `srun` reaches every node from the batch host
//! (its credential from that node's SACK socket), a multi-node job survives one node's slurmd
//! crash, and a slurmd that cannot register is named with its log tail.

use super::super::daemon::Daemon;
use super::client::{Ctx, JOB_TIMEOUT, q};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use std::collections::BTreeMap;
use std::time::Duration;

/// `node host id` lines (`srun -l` labels dropped), one per task, parsed by node name.
fn per_node(out: &str) -> Result<BTreeMap<String, (String, String)>> {
    let mut map = BTreeMap::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let text = line.split_once(": ").map_or(line, |(_, t)| t);
        let f: Vec<&str> = text.split_whitespace().collect();
        let [node, host, id] = f[..] else {
            return Err(Error::Scenario(format!("unexpected task line {line:?}")));
        };
        if map
            .insert(node.to_string(), (host.to_string(), id.to_string()))
            .is_some()
        {
            return Err(Error::Scenario(format!(
                "two tasks on node {node}: {out:?}"
            )));
        }
    }
    Ok(map)
}

/// What every task must print: its node, its host name, its node index.
const WHO: &str = "echo $SLURMD_NODENAME $(hostname) $SLURM_NODEID";

/// Each node ran one task, saw its own host name (the node's UTS namespace) and a distinct
/// node index.
fn check_every_node(ctx: &Ctx<'_>, what: &str, out: &str) -> Result<String> {
    let seen = per_node(out)?;
    let mut ids = Vec::new();
    for n in ctx.cluster.nodes() {
        let Some((host, id)) = seen.get(&n.name) else {
            return Err(Error::Scenario(format!(
                "{what}: no task ran on {}; output {out:?}",
                n.name
            )));
        };
        if *host != n.hostname {
            return Err(Error::Scenario(format!(
                "{what}: the task on {} sees host name {host:?}, expected {:?}",
                n.name, n.hostname
            )));
        }
        ids.push(id.clone());
    }
    ids.sort();
    ids.dedup();
    if ids.len() != ctx.cluster.nodes().len() || seen.len() != ids.len() {
        return Err(Error::Scenario(format!(
            "{what}: node ids {ids:?} for {} nodes: {out:?}",
            ctx.cluster.nodes().len()
        )));
    }
    Ok(format!(
        "{what}: one task per node, each on its own host name ({})",
        seen.keys().cloned().collect::<Vec<_>>().join(",")
    ))
}

pub fn span(ctx: &mut Ctx<'_>) -> Result<String> {
    let n = ctx.cluster.nodes().len().to_string();
    let out = ctx.srun(&["-N", &n, "--ntasks-per-node=1", "-l", "/bin/sh", "-c", WHO])?;
    if !out.status.success() {
        return Err(Error::Scenario(format!(
            "srun -N{n}: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let direct = check_every_node(ctx, "srun", &String::from_utf8_lossy(&out.stdout))?;
    // The batch step runs on the first node and launches its own step on every node: its
    // srun is the first node's build, its credential from that node's slurmd.
    let srun = ctx.cluster.nodes()[0].prefix.join("bin/srun");
    let body = format!(
        "echo nodes=$SLURM_JOB_NUM_NODES\n{} --ntasks-per-node=1 -l /bin/sh -c {}\n",
        q(&srun),
        super::client::sh_quote(WHO)
    );
    let id = ctx.sbatch("span", &["-N", &n, "--ntasks-per-node=1"], &body)?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let lines = ctx.wait_lines(
        &ctx.path("span.out"),
        1 + ctx.cluster.nodes().len(),
        JOB_TIMEOUT,
    )?;
    if lines[0] != format!("nodes={n}") {
        return Err(Error::Scenario(format!(
            "batch job {id}: {:?}, expected nodes={n}",
            lines[0]
        )));
    }
    let batch = check_every_node(ctx, "srun inside batch job", &lines[1..].join("\n"))?;
    let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
    if !acct.alloc_tres.split(',').any(|t| t == format!("node={n}")) {
        return Err(Error::Scenario(format!(
            "job {id}: AllocTRES {} lacks node={n}",
            acct.alloc_tres
        )));
    }
    Ok(format!(
        "{direct}; {batch} (job {id}, AllocTRES {})",
        acct.alloc_tres
    ))
}

/// A job on every node; the last node's slurmd is killed (SIGKILL) while it runs and started
/// again: the job's processes there live on (slurmstepd is its own process), the node comes
/// back, and the job completes.
pub fn one_down(ctx: &mut Ctx<'_>) -> Result<String> {
    let nodes = ctx.cluster.nodes().len();
    let last = Daemon::Slurmd(nodes - 1);
    let last_name = ctx.cluster.nodes()[nodes - 1].name.clone();
    let last_addr = ctx.cluster.node(&last_name)?.addr;
    let (go, pids) = (ctx.path("go"), ctx.path("pids"));
    let srun = ctx.cluster.nodes()[0].prefix.join("bin/srun");
    let task = format!(
        "echo $SLURMD_NODENAME $$ >> {pids}; while [ ! -e {go} ]; do sleep 0.1; done",
        pids = q(&pids),
        go = q(&go)
    );
    let body = format!(
        "{} --ntasks-per-node=1 /bin/sh -c {}\n",
        q(&srun),
        super::client::sh_quote(&task)
    );
    let n = nodes.to_string();
    let id = ctx.sbatch("down", &["-N", &n, "--ntasks-per-node=1"], &body)?;
    ctx.wait_state(id, &["RUNNING"], JOB_TIMEOUT)?;
    let started = ctx.wait_lines(&pids, nodes, JOB_TIMEOUT)?;
    let on_last: u32 = started
        .iter()
        .find_map(|l| l.strip_prefix(&format!("{last_name} ")))
        .and_then(|p| p.trim().parse().ok())
        .ok_or_else(|| {
            Error::Scenario(format!("no task of job {id} on {last_name}: {started:?}"))
        })?;
    let old = ctx.cluster.record(last).map(|r| r.pid);
    ctx.cluster.kill(last, nix::sys::signal::Signal::SIGKILL)?;
    if let Some(rec) = ctx.cluster.record(last).cloned() {
        rec.wait_gone(Duration::from_secs(10));
    }
    std::thread::sleep(Duration::from_secs(1));
    if !driver_common::util::signal::process_exists(on_last) {
        return Err(Error::Scenario(format!(
            "job {id}'s task {on_last} on {last_name} died with its slurmd"
        )));
    }
    let state = ctx.job_state(id)?;
    if state != "RUNNING" {
        return Err(Error::Scenario(format!(
            "job {id} is {state} after {last_name}'s slurmd crashed"
        )));
    }
    ctx.cluster.start(ctx.sh, last)?;
    std::fs::write(&go, "").map_err(|e| Error::io(&go, e))?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    ctx.wait_node_idle(Duration::from_secs(60))?;
    Ok(format!(
        "job {id} on {nodes} nodes kept running while {last_name}'s ({last_addr}) slurmd {old:?} was killed (its task {on_last} lived on); slurmd started again, job COMPLETED"
    ))
}

/// The last node's slurmd restarted while slurmctld hangs (SIGSTOP): it cannot register, and
/// the start fails naming the node, with its log tail. Once slurmctld goes on, the node
/// registers.
pub fn never_registers(ctx: &mut Ctx<'_>) -> Result<String> {
    let nodes = ctx.cluster.nodes().len();
    let last = Daemon::Slurmd(nodes - 1);
    let name = ctx.cluster.nodes()[nodes - 1].name.clone();
    ctx.cluster.stop(last)?;
    ctx.cluster.pause(Daemon::Slurmctld)?;
    ctx.cluster.ready_timeout = Duration::from_secs(15);
    let result = ctx.cluster.start(ctx.sh, last);
    ctx.cluster.ready_timeout = super::super::handle::READY_TIMEOUT;
    ctx.cluster.resume(Daemon::Slurmctld)?;
    let err = match result {
        Ok(()) => {
            return Err(Error::Scenario(format!(
                "{name}'s slurmd registered while slurmctld was stopped"
            )));
        }
        Err(e @ Error::NodeNeverRegistered { .. }) => e.to_string(),
        Err(other) => {
            return Err(Error::Scenario(format!(
                "expected `node {name} never registered`, got: {other}"
            )));
        }
    };
    let log = ctx.cluster.log(last).display().to_string();
    if !(err.contains(&format!("node {name} never registered")) && err.contains(&log)) {
        return Err(Error::Scenario(format!(
            "unclear message for a node that never registers: {err}"
        )));
    }
    let i = nodes - 1;
    poll(
        &format!("{name} to register once slurmctld runs again"),
        Duration::from_secs(60),
        super::client::POLL,
        || {
            Ok(ctx
                .cluster
                .node_state(i)?
                .is_some_and(|s| s == "idle")
                .then_some(()))
        },
    )?;
    ctx.wait_node_idle(Duration::from_secs(30))?;
    Ok(format!(
        "reported: {:?}; registered after slurmctld went on",
        err.lines().next().unwrap_or("")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_node__labels_dropped_and_doubles_refused() {
        let m = per_node("0: node1 node1 0\n1: node2 node2 1\n").unwrap();
        assert_eq!(m["node2"], ("node2".to_string(), "1".to_string()));
        assert!(per_node("0: node1 a 0\n1: node1 a 1\n").is_err());
        assert!(per_node("0: garbage\n").is_err());
    }
}
