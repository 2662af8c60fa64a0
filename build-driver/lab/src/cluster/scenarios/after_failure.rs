//! What the scenario runner does after a scenario failed, so the next one starts on a
//! working cluster.

use super::super::handle::Cluster;
use super::client::Ctx;
use std::time::Duration;
use xshell::Shell;

/// After a failure: restart dead daemons (a paused one is resumed first), cancel every job,
/// clear the hook flags, resume every node that is not idle. Best effort, each problem
/// printed.
pub fn recover(sh: &Shell, cluster: &mut Cluster) {
    cluster.ready_timeout = super::super::handle::READY_TIMEOUT;
    let mut dead_nodes = Vec::new();
    for d in cluster.daemons() {
        cluster.resume(d).ok();
        if cluster.record(d).is_none() || cluster.is_running(d) {
            continue;
        }
        match d.node() {
            Some(i) => dead_nodes.push(i),
            None => {
                println!("  recover: restarting {d}");
                if let Err(e) = cluster.start(sh, d) {
                    println!("  recover: {d}: {e}");
                }
            }
        }
    }
    if !dead_nodes.is_empty() {
        println!("  recover: restarting the slurmd of node(s) {dead_nodes:?} (0-based)");
        if let Err(e) = cluster.start_nodes(sh, &dead_nodes) {
            println!("  recover: {e}");
        }
    }
    let layout = cluster.layout();
    for f in ["prolog", "epilog"] {
        std::fs::remove_file(layout.fail_flag(f)).ok();
        std::fs::remove_file(layout.sleep_flag(f)).ok();
    }
    let ctx = match Ctx::new(sh, cluster, "recover") {
        Ok(c) => c,
        Err(e) => {
            println!("  recover: {e}");
            return;
        }
    };
    if let Err(e) = ctx.cancel_all() {
        println!("  recover: cancel: {e}");
    }
    for n in ctx.cluster.nodes() {
        let state = ctx.state_of(&n.name).map(|(s, _)| s).unwrap_or_default();
        if state != "IDLE" {
            println!("  recover: node {} is {state}; resuming it", n.name);
            let resume = format!("NodeName={}", n.name);
            ctx.run("scontrol", &["update", &resume, "State=RESUME"])
                .ok();
        }
    }
    if let Err(e) = ctx.wait_node_idle(Duration::from_secs(30)) {
        println!("  recover: {e}");
    }
}
