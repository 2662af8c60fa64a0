//! `cluster.toml` in the cluster directory: what `up` configured and every process it started
//! (PID + start time), rewritten atomically after each start, so `down` and `status` work from
//! another command and after the harness crashed.

use super::config::{Layout, Ports};
use super::nodes::Node;
use super::procs::{Liveness, ProcRecord};
use super::profile::Profile;
use driver_common::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    /// The cluster's name (`--name`), also its Slurm ClusterName.
    pub name: String,
    /// The head's build: slurmctld, slurmdbd and the harness's clients.
    pub prefix: PathBuf,
    pub root: PathBuf,
    /// This machine's short host name (SlurmctldHost, DbdHost).
    pub hostname: String,
    pub user: String,
    pub ports: Ports,
    /// The compute nodes (nodes.rs), node1 first.
    pub nodes: Vec<Node>,
    /// The profile `up` configured (profile.rs).
    #[serde(default)]
    pub profile: Profile,
    /// Whether the head's daemons and the harness's clients run in private mount namespaces
    /// (root only; off when the caller provides one: `peer`, `bench`).
    pub isolated: bool,
    /// Whether each node's slurmd runs in its own UTS and mount namespaces (root on Linux).
    #[serde(default)]
    pub node_namespaces: bool,
    /// Started processes, in start order. `down` empties the list.
    #[serde(default)]
    pub daemons: Vec<ProcRecord>,
    /// Every mount namespace a daemon of this cluster was started in (restarts included):
    /// what is left in them after the daemons stopped are job processes.
    #[serde(default)]
    pub namespaces: Vec<u64>,
    /// The newer build scenario smd-410 upgrades the cluster to (`cluster test
    /// --upgrade-to`).
    #[serde(default)]
    pub upgrade_to: Option<PathBuf>,
    /// Environment every Slurm daemon of the cluster starts with, restarts included (not
    /// MariaDB): the soak's allocator setting (soak/series.rs `ALLOCATOR_ENV`).
    #[serde(default)]
    pub daemon_env: Vec<(String, String)>,
    /// Slurm's TLS between every program (`--tls`).
    #[serde(default)]
    pub tls: bool,
}

impl State {
    pub fn layout(&self) -> Layout {
        Layout {
            root: self.root.clone(),
        }
    }

    /// Read `<dir>/cluster.toml`; `None` if there is none.
    pub fn load(dir: &Path) -> Result<Option<State>> {
        let path = Layout {
            root: dir.to_path_buf(),
        }
        .state_file();
        let Some(text) = driver_common::util::fs::read_optional(&path)? else {
            return Ok(None);
        };
        toml::from_str(&text).map(Some).map_err(|e| {
            Error::parse(
                format!(
                    "{}: not a cluster record (remove the directory if nothing of it runs)",
                    path.display()
                ),
                e,
            )
        })
    }

    /// Write `cluster.toml` atomically.
    pub fn save(&self) -> Result<()> {
        let text =
            toml::to_string(self).map_err(|e| Error::parse("serialising the cluster record", e))?;
        driver_common::util::fs::write_atomic(&self.layout().state_file(), text.as_bytes(), 0o644)
    }

    /// Record a started process (replacing an earlier record of the same name) and save.
    pub fn record(&mut self, rec: ProcRecord) -> Result<()> {
        if let Some(ns) = rec.mnt_ns.filter(|ns| !self.namespaces.contains(ns)) {
            self.namespaces.push(ns);
        }
        self.daemons.retain(|d| d.name != rec.name);
        self.daemons.push(rec);
        self.save()
    }

    /// The directories the cluster's namespaces have on `/run`: the head's and each node's.
    pub fn run_dirs(&self) -> Vec<PathBuf> {
        let l = self.layout();
        std::iter::once(l.run())
            .chain(self.nodes.iter().map(|n| l.node_run(&n.name)))
            .collect()
    }

    pub fn daemon(&self, name: &str) -> Option<&ProcRecord> {
        self.daemons.iter().find(|d| d.name == name)
    }

    /// The recorded processes that still run.
    pub fn running(&self) -> Vec<&ProcRecord> {
        self.daemons
            .iter()
            .filter(|d| d.liveness() == Liveness::Running)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(root: &Path) -> State {
        State {
            name: "t".into(),
            prefix: "/p".into(),
            root: root.to_path_buf(),
            hostname: "h".into(),
            user: "root".into(),
            ports: Ports {
                slurmctld: 1,
                slurmdbd: 3,
                mariadb: 4,
            },
            nodes: vec![Node {
                name: "node1".into(),
                build: "native".into(),
                prefix: "/p".into(),
                hostname: "node1".into(),
                addr: std::net::Ipv4Addr::new(127, 0, 0, 11),
                port: 2,
                hw: super::super::config::NodeHw {
                    cpus: 2,
                    boards: 1,
                    sockets_per_board: 1,
                    cores_per_socket: 2,
                    threads_per_core: 1,
                    real_memory: 2000,
                },
            }],
            profile: Profile::Poc,
            isolated: true,
            node_namespaces: true,
            daemons: vec![],
            namespaces: vec![],
            upgrade_to: None,
            daemon_env: vec![("MALLOC_ARENA_MAX".into(), "1".into())],
            tls: false,
        }
    }

    #[test]
    fn state__round_trips_and_replaces_a_record_by_name() {
        let dir = tempfile::tempdir().unwrap();
        assert!(State::load(dir.path()).unwrap().is_none());
        let mut s = state(dir.path());
        let me = std::process::id();
        let rec = ProcRecord {
            name: "slurmd".into(),
            pid: me,
            start_ticks: super::super::procs::start_ticks(me).unwrap(),
            mnt_ns: Some(5),
        };
        s.record(rec.clone()).unwrap();
        s.record(rec.clone()).unwrap();
        let back = State::load(dir.path()).unwrap().unwrap();
        assert_eq!(back.daemons, vec![rec]);
        assert_eq!(back.namespaces, vec![5]);
        assert_eq!(back.running().len(), 1);
        assert_eq!(back.ports, s.ports);
        assert_eq!(back.profile, Profile::Poc);
        assert_eq!(back.nodes, s.nodes);
        assert_eq!(back.daemon_env, s.daemon_env);
    }

    #[test]
    fn load__garbage_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cluster.toml"), "name = [").unwrap();
        let err = State::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("not a cluster record"), "{err}");
    }
}
