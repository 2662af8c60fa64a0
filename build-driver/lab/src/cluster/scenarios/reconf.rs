//! A scenario's own configuration of the running cluster: `slurm.conf` lines (a key replaced,
//! others appended: [`render::edit_lines`]), keys removed, parameters of one node's
//! `NodeName=` line, and the whole text of `gres.conf` or `cgroup.conf`; taken by restarting
//! the daemons the scenario names. [`with_change`] runs the scenario's body in between and
//! puts every file back, and every recorded daemon back up with it, also when the body
//! failed, so the next scenario finds the cluster as `up` made it.
//!
//! The daemons are restarted, not reconfigured (conf.rs's `ConfChange` does
//! `scontrol reconfigure`): these changes touch what only a start reads (addresses, ports,
//! `SlurmctldHost`, a node's plugins and GRES, slurmdbd.conf), and some are meant to make a
//! daemon refuse to start.

use super::super::daemon::Daemon;
use super::super::render;
use super::client::Ctx;
use driver_common::error::{Error, Result};
use driver_common::util::fs::write_atomic;
use std::path::PathBuf;

/// What a scenario changes.
#[derive(Debug, Clone, Default)]
pub struct Change {
    /// Keys whose `slurm.conf` lines are removed first (every line of the key).
    pub remove: Vec<&'static str>,
    /// `slurm.conf` lines, applied after `remove`.
    pub lines: Vec<String>,
    /// `(node, Key=Value)`: a parameter of that node's `NodeName=` line.
    pub node_params: Vec<(String, String)>,
    /// `slurmdbd.conf` lines (as `lines`).
    pub dbd_lines: Vec<String>,
    /// The whole of `gres.conf`.
    pub gres_conf: Option<String>,
    /// The whole of `cgroup.conf`.
    pub cgroup_conf: Option<String>,
    /// The daemons restarted to take the change (and again to take the original back).
    pub restart: Vec<Daemon>,
}

impl Change {
    /// The head's slurmctld and every node's slurmd: a change of `slurm.conf` every daemon
    /// must agree on.
    pub fn controller_and_nodes(ctx: &Ctx<'_>) -> Vec<Daemon> {
        std::iter::once(Daemon::Slurmctld)
            .chain((0..ctx.cluster.nodes().len()).map(Daemon::Slurmd))
            .collect()
    }
}

/// The configuration files as they were, with their modes.
struct Saved(Vec<(PathBuf, Option<String>, u32)>);

impl Saved {
    fn take(ctx: &Ctx<'_>) -> Result<Saved> {
        let l = ctx.cluster.layout();
        let files = [
            (l.conf(), 0o644),
            (l.gres_conf(), 0o644),
            (l.cgroup_conf(), 0o644),
            (l.dbd_conf(), 0o600),
        ];
        let mut saved = Vec::new();
        for (path, mode) in files {
            let text = driver_common::util::fs::read_optional(&path)?;
            saved.push((path, text, mode));
        }
        Ok(Saved(saved))
    }

    fn text(&self, i: usize) -> &str {
        self.0[i].1.as_deref().unwrap_or("")
    }

    fn put_back(&self) -> Result<()> {
        for (path, text, mode) in &self.0 {
            match text {
                Some(t) => write_atomic(path, t.as_bytes(), *mode)?,
                None => driver_common::util::fs::remove_optional(path)?,
            }
        }
        Ok(())
    }
}

/// The files `change` makes of the saved ones, written in place.
fn write_changed(ctx: &Ctx<'_>, saved: &Saved, change: &Change) -> Result<()> {
    let l = ctx.cluster.layout();
    let mut conf = render::remove_keys(saved.text(0), &change.remove);
    conf = render::edit_lines(&conf, &change.lines);
    for (node, param) in &change.node_params {
        conf = render::set_node_param(&conf, node, param)?;
    }
    write_atomic(&l.conf(), conf.as_bytes(), 0o644)?;
    if let Some(g) = &change.gres_conf {
        write_atomic(&l.gres_conf(), g.as_bytes(), 0o644)?;
    }
    if let Some(c) = &change.cgroup_conf {
        write_atomic(&l.cgroup_conf(), c.as_bytes(), 0o644)?;
    }
    if !change.dbd_lines.is_empty() {
        let dbd = render::edit_lines(saved.text(3), &change.dbd_lines);
        write_atomic(&l.dbd_conf(), dbd.as_bytes(), 0o600)?;
    }
    Ok(())
}

/// Stop `daemons` (nodes first), then start them in start order; the nodes' slurmd together.
pub fn restart(ctx: &mut Ctx<'_>, daemons: &[Daemon]) -> Result<()> {
    let mut ds = daemons.to_vec();
    ds.sort();
    ds.dedup();
    for &d in ds.iter().rev() {
        ctx.cluster.stop(d)?;
    }
    let mut nodes = Vec::new();
    for &d in &ds {
        match d.node() {
            Some(i) => nodes.push(i),
            None => ctx.cluster.start(ctx.sh, d)?,
        }
    }
    if !nodes.is_empty() {
        ctx.cluster.start_nodes(ctx.sh, &nodes)?;
    }
    Ok(())
}

/// Apply `change`, run `body`, then put the files back and restart what `change` restarted
/// plus any recorded daemon that no longer runs. The body's error wins; a failure to put
/// the cluster back is returned when the body passed, and printed when it did not.
pub fn with_change<T>(
    ctx: &mut Ctx<'_>,
    change: &Change,
    body: impl FnOnce(&mut Ctx<'_>) -> Result<T>,
) -> Result<T> {
    let saved = Saved::take(ctx)?;
    let result = write_changed(ctx, &saved, change)
        .and_then(|()| restart(ctx, &change.restart))
        .and_then(|()| body(ctx));
    let restored = put_back(ctx, &saved, &change.restart);
    match (result, restored) {
        (Ok(v), Ok(())) => Ok(v),
        (Ok(_), Err(e)) => Err(Error::Scenario(format!(
            "the scenario passed, but putting the cluster's configuration back failed: {e}"
        ))),
        (Err(e), Ok(())) => Err(e),
        (Err(e), Err(r)) => {
            println!("  reconf: putting the configuration back failed too: {r}");
            Err(e)
        }
    }
}

fn put_back(ctx: &mut Ctx<'_>, saved: &Saved, restarted: &[Daemon]) -> Result<()> {
    saved.put_back()?;
    ctx.cluster.ready_timeout = super::super::handle::READY_TIMEOUT;
    let dead = ctx
        .cluster
        .daemons()
        .into_iter()
        .filter(|&d| ctx.cluster.record(d).is_some() && !ctx.cluster.is_running(d));
    let again: Vec<Daemon> = restarted.iter().copied().chain(dead).collect();
    restart(ctx, &again)
}
