//! What the cluster looks like from outside: each node's state as sinfo reports it, and the
//! processes left in the cluster's namespaces that are no daemon (job processes).

use super::super::config::CLIENT_TIMEOUT;
use super::super::daemon::Daemon;
use super::super::procs::{self, ProcRecord};
use super::Cluster;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::run_bounded;
use std::time::Duration;

impl Cluster {
    /// `sinfo`'s state of node `i` (`idle`, `mixed`, `drained`, ...), None if sinfo fails.
    /// sinfo prints one line per partition the node is in; they agree.
    pub fn node_state(&self, i: usize) -> Result<Option<String>> {
        self.node_state_within(i, CLIENT_TIMEOUT)
    }

    /// `node_state`, with sinfo given at most `timeout`; a sinfo that takes longer (a hung
    /// controller) counts as failed (None).
    pub fn node_state_within(&self, i: usize, timeout: Duration) -> Result<Option<String>> {
        let Some(node) = self.nodes().get(i) else {
            return Ok(None);
        };
        let mut c = self.tool("sinfo");
        c.args(["-h", "-N", "-n", &node.name, "-o", "%T"]);
        let out = match run_bounded(c, timeout) {
            Err(Error::Timeout { .. }) => return Ok(None),
            other => other?,
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let mut states: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        states.dedup();
        Ok((out.status.success() && !states.is_empty()).then(|| states.join("|")))
    }

    /// [`Cluster::leftovers`] on the nodes only: without what runs in the head daemons'
    /// namespaces (slurmctld's `slurmscriptd`). What is left once every job ended is a
    /// process Slurm lost track of.
    pub fn node_leftovers(&self) -> Vec<ProcRecord> {
        let head: Vec<u64> = Daemon::HEAD
            .iter()
            .filter_map(|&d| self.record(d).and_then(|r| r.mnt_ns))
            .collect();
        self.leftovers()
            .into_iter()
            .filter(|p| p.mnt_ns.is_none_or(|ns| !head.contains(&ns)))
            .collect()
    }

    /// The processes left in the mount namespaces of recorded daemons that are neither a
    /// running recorded daemon nor its own helper (a child under the daemon's name, or
    /// slurmctld's slurmscriptd, which is named so only where Slurm can rename a process:
    /// `prctl`, absent in the darwin personality as on macOS): job processes.
    pub fn leftovers(&self) -> Vec<ProcRecord> {
        let running = self.state.running();
        let is_daemon = |p: &ProcRecord| {
            running.iter().any(|d| {
                let program = d.name.split('-').next().unwrap_or(&d.name);
                let helper =
                    p.name == program || (program == "slurmctld" && p.name == "slurmscriptd");
                d.pid == p.pid || (procs::parent_of(p.pid) == Some(d.pid) && helper)
            })
        };
        let runs = self.state.run_dirs();
        self.state
            .namespaces
            .iter()
            .flat_map(|&ns| procs::processes_in_namespace(ns, &runs))
            .filter(|p| !is_daemon(p))
            .collect()
    }
}
