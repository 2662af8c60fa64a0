//! Scenarios that need other `slurm.conf` lines for a while ([`ConfChange`]) and
//! `scontrol reconfigure` ([`reconfigure`]).
//!
//! A change writes the lines into the cluster's one `slurm.conf` (a key already set is
//! replaced, others are appended: render.rs `edit_lines`), reconfigures, and waits until
//! every node's slurmd re-registered. [`ConfChange::restore`] puts the original bytes back and
//! reconfigures again; dropped without it (a scenario that failed), it does the same and
//! prints what went wrong, so no later scenario runs with the changed file.
//!
//! Slurm 24.11 reconfigures by re-executing: slurmctld and each slurmd (`-D`, not under
//! systemd) `execve` themselves in place (src/slurmd/slurmd/slurmd.c `_try_to_reconfig`), so
//! their PIDs stay, and a slurmd's `SlurmdStartTime` changes once the new image registered.

use super::super::handle::Cluster;
use super::client::{CLIENT_TIMEOUT, POLL, parse_fields};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::{poll, run_bounded};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long slurmctld and every slurmd get to come back after `scontrol reconfigure`.
pub const RECONFIGURE_TIMEOUT: Duration = Duration::from_secs(90);

/// Each node's `SlurmdStartTime` (None where scontrol did not answer).
fn start_times(cluster: &Cluster) -> Vec<Option<String>> {
    cluster
        .nodes()
        .iter()
        .map(|n| node_field(cluster, &n.name, "SlurmdStartTime"))
        .collect()
}

/// One field of `scontrol show node -o NAME`, None when scontrol fails (slurmctld is
/// re-executing) or the field is absent.
pub fn node_field(cluster: &Cluster, node: &str, key: &str) -> Option<String> {
    let mut c = cluster.tool("scontrol");
    c.args(["show", "node", "-o", node]);
    let out = run_bounded(c, CLIENT_TIMEOUT).ok()?;
    if !out.status.success() {
        return None;
    }
    parse_fields(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

/// This machine's local time as Slurm prints it (`2026-12-01T16:11:13`), None if the C
/// library cannot convert it.
fn local_now() -> Option<String> {
    let t: libc::time_t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs()
        .try_into()
        .ok()?;
    // SAFETY: an all-zero `tm` is a valid value of that plain C struct.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals; localtime_r writes only into `tm`.
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return None;
    }
    Some(format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    ))
}

/// `scontrol reconfigure`, then wait until every node's slurmd registered again: a new
/// `SlurmdStartTime` and a state without flags (IDLE, MIXED or ALLOCATED). Returns how long
/// that took.
pub fn reconfigure(cluster: &Cluster) -> Result<Duration> {
    let mut before = start_times(cluster);
    // SlurmdStartTime counts whole seconds: a slurmd started in this second (a restart just
    // before) would re-register after the reconfigure with the same time, and look as if it
    // never did. Wait for the next second first.
    let now = local_now();
    if now.is_some() && before.contains(&now) {
        std::thread::sleep(Duration::from_millis(1100));
        before = start_times(cluster);
    }
    let t = Instant::now();
    let mut c = cluster.tool("scontrol");
    c.arg("reconfigure");
    let out = run_bounded(c, CLIENT_TIMEOUT)?;
    if !out.status.success() {
        return Err(Error::Scenario(format!(
            "scontrol reconfigure: {}, {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let names: Vec<String> = cluster.nodes().iter().map(|n| n.name.clone()).collect();
    let mut last = Vec::new();
    poll(
        "every slurmd to register again after scontrol reconfigure",
        RECONFIGURE_TIMEOUT,
        POLL,
        || {
            cluster.check_daemons()?;
            last.clear();
            for (n, old) in names.iter().zip(&before) {
                let now = node_field(cluster, n, "SlurmdStartTime");
                let state = node_field(cluster, n, "State").unwrap_or_default();
                let usable = matches!(state.as_str(), "IDLE" | "MIXED" | "ALLOCATED");
                let fresh = now.is_some() && now.as_deref() != Some("None") && now != *old;
                if !(usable && fresh) {
                    last.push(format!("{n} State={state} SlurmdStartTime={now:?}"));
                }
            }
            Ok(last.is_empty().then_some(()))
        },
    )
    .map_err(|e| Error::Scenario(format!("{e}; still waiting for: {}", last.join(", "))))?;
    Ok(t.elapsed())
}

/// `slurm.conf` with some lines changed until [`ConfChange::restore`] (or drop).
#[derive(Debug)]
pub struct ConfChange {
    cluster: Cluster,
    path: PathBuf,
    original: Vec<u8>,
    done: bool,
}

impl ConfChange {
    /// Write `lines` into `slurm.conf` and reconfigure; on failure the original is back.
    pub fn apply(cluster: &Cluster, lines: &[String]) -> Result<ConfChange> {
        let path = cluster.layout().conf();
        let original = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let text = super::super::render::edit_lines(&String::from_utf8_lossy(&original), lines);
        let mut change = ConfChange {
            cluster: cluster.clone(),
            path,
            original,
            done: false,
        };
        driver_common::util::fs::write_atomic(&change.path, text.as_bytes(), 0o644)?;
        if let Err(e) = reconfigure(cluster) {
            change.done = true;
            change.put_back()?;
            return Err(e.context(format!("slurm.conf with {}", lines.join(" "))));
        }
        Ok(change)
    }

    /// Take the cluster's records again after a scenario restarted a daemon while the change
    /// was in place (the change keeps its own copy, whose PIDs would be the dead ones).
    pub fn refresh(&mut self, cluster: &Cluster) {
        self.cluster = cluster.clone();
    }

    /// The original bytes back, then reconfigure. Returns how long the reconfigure took.
    pub fn restore(mut self) -> Result<Duration> {
        self.done = true;
        self.put_back()
    }

    fn put_back(&self) -> Result<Duration> {
        driver_common::util::fs::write_atomic(&self.path, &self.original, 0o644)?;
        let back = std::fs::read(&self.path).map_err(|e| Error::io(&self.path, e))?;
        if back != self.original {
            return Err(Error::Scenario(format!(
                "{} differs from the original after restoring it",
                self.path.display()
            )));
        }
        reconfigure(&self.cluster)
    }
}

impl Drop for ConfChange {
    fn drop(&mut self) {
        if !self.done {
            self.done = true;
            println!("  restoring {} (the scenario did not)", self.path.display());
            if let Err(e) = self.put_back() {
                println!("  restore of slurm.conf: {e}");
            }
        }
    }
}
