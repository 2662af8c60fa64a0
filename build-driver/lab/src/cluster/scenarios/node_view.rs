//! A node that sees some files differently from the controller for one scenario: its own
//! `/etc/passwd`, a tiny file system for its spool or logs. The first node's slurmd is
//! restarted with the mounts ([`super::super::handle::Cluster::set_node_mounts`]), the body
//! runs, and the node is put back (no mounts, slurmd restarted, node resumed if the body
//! left it drained) whatever the body returned.

use super::super::daemon::Daemon;
use super::super::handle::NodeMount;
use super::client::Ctx;
use driver_common::error::Result;
use std::time::Duration;

/// Run `body` while node 1's slurmd runs with `mounts`; then restore the node.
pub fn with_node_mounts<T>(
    ctx: &mut Ctx<'_>,
    mounts: &[NodeMount],
    body: impl FnOnce(&mut Ctx<'_>) -> Result<T>,
) -> Result<T> {
    let set = ctx
        .cluster
        .set_node_mounts(0, mounts)
        .and_then(|()| ctx.cluster.restart(ctx.sh, Daemon::Slurmd(0)));
    let result = set.and_then(|()| body(ctx));
    let restored = restore(ctx);
    let value = result?;
    restored?;
    Ok(value)
}

fn restore(ctx: &mut Ctx<'_>) -> Result<()> {
    ctx.cluster.set_node_mounts(0, &[])?;
    ctx.cancel_all()?;
    ctx.cluster.restart(ctx.sh, Daemon::Slurmd(0))?;
    let node = ctx.first_node();
    let (state, _) = ctx.state_of(&node)?;
    if state.contains("DRAIN") || state.contains("DOWN") {
        ctx.read(
            "scontrol",
            &["update", &format!("NodeName={node}"), "State=RESUME"],
        )?;
    }
    ctx.wait_node_idle(Duration::from_secs(60))
}
