//! The cluster `cluster peer` and `cluster bench` run against: the cluster of `cluster up`
//! (lifecycle.rs: MariaDB, slurmdbd, slurmctld, one slurmd per node) in `<dir>/cluster`, plus
//! a few `slurm.conf` lines, without the head's per-command private `/run`: these commands
//! run inside a mount namespace of their own (private_ns.rs) whose `/run` the head's daemons
//! and every client share (each node's slurmd still has its own namespaces, nodes.rs).
//! Stopped by record (`down`), also if the caller unwinds without `stop`.

use super::config::Layout;
use super::handle::Cluster;
use super::lifecycle::{self, UpOptions};
use super::private_ns::Private;
use super::profile::Profile;
use driver_common::error::Result;
use driver_common::util::process::file_tail;
use std::path::{Path, PathBuf};
use xshell::Shell;

/// What finished jobs stay visible to `scontrol` for (the benchmark checks COMPLETED there).
const MIN_JOB_AGE: &str = "MinJobAge=300";

/// A running cluster.
#[derive(Debug)]
pub struct Lab {
    pub prefix: PathBuf,
    pub layout: Layout,
    cluster: Option<Cluster>,
    _private: Private,
}

impl Lab {
    /// Configure and start a cluster of `nodes` nodes and `profile` from `prefix` below `dir`,
    /// with `extra` lines for `slurm.conf` (a key already set is replaced) and `daemon_env`
    /// in the Slurm daemons' environment, and wait until every node is idle.
    pub fn start(
        _sh: &Shell,
        prefix: &Path,
        dir: &Path,
        profile: Profile,
        nodes: usize,
        extra: &[String],
        daemon_env: &[(String, String)],
    ) -> Result<Lab> {
        let layout = Layout {
            root: dir.join("cluster"),
        };
        let private = Private::new(_sh, dir, prefix, &layout.conf())?;
        let mut opts = UpOptions::new(prefix.to_path_buf(), "lab".into(), layout.root.clone());
        opts.isolate = false;
        opts.profile = profile;
        opts.nodes = Some(nodes);
        opts.daemon_env = daemon_env.to_vec();
        opts.extra_conf = std::iter::once(MIN_JOB_AGE.to_string())
            .chain(extra.iter().cloned())
            .collect();
        let cluster = lifecycle::up(_sh, &opts)?;
        Ok(Lab {
            prefix: cluster.state.prefix.clone(),
            layout,
            cluster: Some(cluster),
            _private: private,
        })
    }

    pub fn conf(&self) -> PathBuf {
        self.layout.conf()
    }

    /// The PID of a daemon of the cluster, from its record.
    pub fn pid_of(&self, d: super::daemon::Daemon) -> Option<u32> {
        self.cluster.as_ref()?.record(d).map(|r| r.pid)
    }

    /// A client program of the prefix.
    pub fn tool(&self, name: &str) -> PathBuf {
        self.prefix.join("bin").join(name)
    }

    /// Print the tails of the daemon logs.
    pub fn report(&self) {
        let daemons = self
            .cluster
            .as_ref()
            .map(|c| c.daemons())
            .unwrap_or_default();
        for d in daemons {
            let name = d.name();
            for f in [
                self.layout.daemon_log(&name),
                self.layout.daemon_output(&name),
            ] {
                if f.exists() {
                    eprintln!("---- tail of {} ----\n{}", f.display(), file_tail(&f, 30));
                }
            }
        }
    }

    /// Stop everything; an error if a daemon had died before.
    pub fn stop(mut self, _sh: &Shell) -> Result<()> {
        let Some(cluster) = self.cluster.take() else {
            return Ok(());
        };
        let alive = cluster.check_daemons();
        if alive.is_err() {
            self.report();
        }
        let stopped = lifecycle::down(&self.layout.root);
        alive.and(stopped)
    }
}

impl Drop for Lab {
    /// Never leave the daemons behind when the caller unwinds without `stop`.
    fn drop(&mut self) {
        if self.cluster.take().is_some() {
            if let Err(e) = lifecycle::down(&self.layout.root) {
                eprintln!(
                    "cluster: stopping {} failed: {e}",
                    self.layout.root.display()
                );
            }
        }
    }
}
