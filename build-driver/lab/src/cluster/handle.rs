//! A running (or recorded) cluster, [`Cluster`]: what scenarios, `soak`, `peer` and `bench`
//! hold. The API, for writers of scenarios:
//!
//! - **What it is.** [`Cluster::nodes`] (node1 first; each [`Node`] has its name, build
//!   label, prefix, host name, address, port, hardware), [`Cluster::node`] by name,
//!   [`Cluster::profile`] (profile.rs), [`Cluster::layout`] (every path), `state` (the
//!   record, `cluster.toml`).
//! - **Daemons** are [`Daemon`]s: `MariaDb`, `Slurmdbd`, `Slurmctld`, `Slurmd(i)` for node
//!   `i` (0-based; [`Cluster::slurmd`] finds one by node name). [`Cluster::start`] starts one
//!   that is not running and returns once it serves (a slurmd: once slurmctld sees its node
//!   up; one that never registers is an error naming the node with its log tail);
//!   [`Cluster::start_nodes`] starts several slurmd at once; [`Cluster::stop`] (SIGTERM,
//!   then SIGKILL), [`Cluster::restart`], [`Cluster::kill`] (any signal, no wait: SIGKILL for
//!   a crash), [`Cluster::pause`]/[`Cluster::resume`] (SIGSTOP/SIGCONT: a hung daemon);
//!   [`Cluster::usage`] (RSS, descriptors, threads); [`Cluster::check_daemons`] names the
//!   first recorded daemon that died, with its log tail. Every signal goes through a pidfd
//!   after the PID's start time matched (procs.rs): never to a reused PID.
//! - **Logs.** [`Cluster::log`] and [`Cluster::output`] (what the daemon printed before its
//!   log was open) of any daemon: `log/slurmd-node2.log`, `log/slurmctld.log`, ...; every
//!   daemon and client gets the darwin shim's emulation log, `log/shim-emulation.log`
//!   (config.rs `emulation_log`), unless the caller set `SLURM_SHIM_EMULATION_LOG`.
//! - **Clients.** [`Cluster::tool`] (a client of the head's build, as root, on the head: its
//!   `/run` holds slurmctld's SACK socket), [`Cluster::tool_as`] (as another user, through
//!   `runuser`), [`Cluster::tool_on`] / [`Cluster::tool_on_as`] (the node's own build, in the
//!   node's namespaces: its host name and its slurmd's SACK socket, as a client on that
//!   machine), [`Cluster::wrap`] / [`Cluster::wrap_on`] for any other command. Each is a
//!   `std::process::Command` with `SLURM_CONF` (and the darwin personality's hardware file,
//!   `SLURM_SHIM_MAC_HARDWARE`, [`Layout::mac_hardware`]) set; run it with
//!   `driver_common::util::process::bounded` (a deadline) or through the scenarios' `Ctx`.
//! - **A node's own mounts.** [`Cluster::set_node_mounts`] gives node `i`'s namespace files
//!   or tmpfs of its own ([`NodeMount`]: its `/etc/passwd`, a tiny spool); its slurmd gets
//!   them at its next start. A tmpfs is private to the process started with it: read a
//!   daemon's through procfs, the root link of its pid ([`Cluster::seen_by`]).
//!   [`Cluster::set_slurmd_args`] adds arguments to its next start (`-c`),
//!   [`Cluster::set_slurmd_env`] variables to its environment (`SLURM_DEBUG_FLAGS`).
//! - **Nodes a scenario adds or starts its own way.** [`Cluster::slurmd_launch`] (a node's
//!   slurmd with other arguments and `SLURM_CONF`: configless, `-Z`), [`Cluster::add_node`]
//!   and [`Cluster::remove_node`] (a node not in `slurm.conf`), [`Cluster::forget`] (the
//!   record of a process a scenario started itself, once stopped).
//! - **Node state.** [`Cluster::node_state`] (sinfo's word for node `i`), and
//!   [`Cluster::leftovers`]: processes left in the cluster's namespaces that are no daemon
//!   (job processes).
//!
//! Commands are `std::process::Command`s (built from the prefix's paths) rather than xshell
//! ones because they may need the namespaces' pre-exec hook ([`driver_common::util::process::spawn`]),
//! which xshell lacks. Starting daemons is start.rs.

use super::config::Layout;
use super::daemon::Daemon;
use super::nodes::Node;
pub use super::procs::NodeMount;
use super::procs::{self, Isolation, Liveness, ProcRecord, Stopped, Usage};
use super::profile::Profile;
use super::state::State;
use driver_common::error::{Error, Result};
use driver_common::util::process::file_tail;
use nix::sys::signal::Signal;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

mod observe;

/// How long each daemon gets to become ready, by default ([`Cluster::ready_timeout`]).
pub(super) const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a daemon gets to exit after SIGTERM before SIGKILL.
pub(super) const STOP_GRACE: Duration = Duration::from_secs(15);
pub(super) const POLL: Duration = Duration::from_millis(200);

/// A running (or recorded) cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub state: State,
    /// The head's namespace (slurmctld, slurmdbd, the harness's clients), as root on Linux.
    pub(super) isolation: Option<Isolation>,
    /// Each node's namespaces (its `/run`, its host name), as root on Linux.
    pub(super) node_isolation: Vec<Option<Isolation>>,
    /// How long [`Cluster::start`] waits for a daemon to serve.
    pub ready_timeout: Duration,
    /// More arguments for each node's slurmd at its next start ([`Cluster::set_slurmd_args`]).
    pub(super) slurmd_args: Vec<Vec<String>>,
    /// More environment for a node's slurmd at its next start, by node index
    /// ([`Cluster::set_slurmd_env`]); not recorded in `cluster.toml`.
    pub(super) slurmd_env: BTreeMap<usize, Vec<(String, String)>>,
    /// Nodes whose slurmd a scenario starts otherwise than `up` does (configless, a
    /// dynamic node), by node index; not recorded in `cluster.toml`.
    pub slurmd_launch: BTreeMap<usize, SlurmdLaunch>,
}

/// How a scenario starts a node's slurmd instead of `slurmd -D -N <node> -f <slurm.conf>`
/// with `SLURM_CONF=<slurm.conf>` ([`Cluster::slurmd_launch`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlurmdLaunch {
    /// The arguments after `slurmd -D -N <node>` (instead of `-f <slurm.conf>`).
    pub args: Vec<String>,
    /// `SLURM_CONF` in its environment (default: the cluster's slurm.conf). auth/slurm
    /// finds `slurm.key` beside it.
    pub slurm_conf: Option<PathBuf>,
}

impl Cluster {
    /// The cluster recorded in `dir`.
    pub fn load(dir: &Path) -> Result<Cluster> {
        let state = State::load(dir)?.ok_or_else(|| Error::NoCluster {
            dir: dir.to_path_buf(),
        })?;
        Cluster::from_state(state)
    }

    pub(super) fn from_state(state: State) -> Result<Cluster> {
        let layout = state.layout();
        let isolation = match state.isolated {
            true => Some(Isolation::new(&layout.run())?),
            false => None,
        };
        let node_isolation = state
            .nodes
            .iter()
            .map(|n| {
                state
                    .node_namespaces
                    .then(|| Isolation::node(&layout.node_run(&n.name), &n.hostname))
                    .transpose()
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Cluster {
            state,
            isolation,
            slurmd_args: vec![Vec::new(); node_isolation.len()],
            slurmd_env: BTreeMap::new(),
            node_isolation,
            ready_timeout: READY_TIMEOUT,
            slurmd_launch: BTreeMap::new(),
        })
    }

    /// A node that is not in `slurm.conf` (a dynamic node): recorded with the others, its
    /// directories made, its namespaces like theirs; returns its index. Its slurmd is
    /// started by [`Cluster::start`] with a [`SlurmdLaunch`].
    pub fn add_node(&mut self, node: Node) -> Result<usize> {
        if self.nodes().iter().any(|n| n.name == node.name) {
            return Err(Error::Usage(format!(
                "cluster `{}` already has a node `{}`",
                self.state.name, node.name
            )));
        }
        let l = self.layout();
        for d in [l.node_run(&node.name), l.node_spool(&node.name)] {
            std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
        }
        let iso = self
            .state
            .node_namespaces
            .then(|| Isolation::node(&l.node_run(&node.name), &node.hostname))
            .transpose()?;
        self.state.nodes.push(node);
        self.node_isolation.push(iso);
        self.state.save()?;
        Ok(self.state.nodes.len() - 1)
    }

    /// Forget the last node added by [`Cluster::add_node`]; its slurmd must not run.
    pub fn remove_node(&mut self, i: usize) -> Result<()> {
        let d = Daemon::Slurmd(i);
        if i + 1 != self.nodes().len() || self.is_running(d) {
            return Err(Error::Usage(format!(
                "node index {i}: only the last node, once its slurmd stopped, can be removed"
            )));
        }
        self.forget(d)?;
        self.state.nodes.pop();
        self.node_isolation.pop();
        self.slurmd_launch.remove(&i);
        self.slurmd_env.remove(&i);
        self.state.save()
    }

    /// Drop a stopped process's record (a daemon a scenario started and stopped itself).
    pub fn forget(&mut self, d: impl std::fmt::Display) -> Result<()> {
        let name = d.to_string();
        if let Some(rec) = self.state.daemon(&name) {
            if rec.liveness() == Liveness::Running {
                return Err(Error::Usage(format!(
                    "{name} (pid {}) still runs: stop it before forgetting it",
                    rec.pid
                )));
            }
        }
        self.state.daemons.retain(|r| r.name != name);
        self.state.save()
    }

    pub fn name(&self) -> &str {
        &self.state.name
    }

    pub fn layout(&self) -> Layout {
        self.state.layout()
    }

    pub fn profile(&self) -> Profile {
        self.state.profile
    }

    /// The compute nodes, node1 first.
    pub fn nodes(&self) -> &[Node] {
        &self.state.nodes
    }

    /// A node by name (`node2`).
    pub fn node(&self, name: &str) -> Result<&Node> {
        self.nodes()
            .iter()
            .find(|n| n.name == name)
            .ok_or_else(|| self.no_such_node(name))
    }

    /// The slurmd of the node called `name`.
    pub fn slurmd(&self, name: &str) -> Result<Daemon> {
        self.nodes()
            .iter()
            .position(|n| n.name == name)
            .map(Daemon::Slurmd)
            .ok_or_else(|| self.no_such_node(name))
    }

    fn no_such_node(&self, name: &str) -> Error {
        Error::Usage(format!(
            "cluster `{}` has no node `{name}`; its nodes: {}",
            self.state.name,
            self.nodes()
                .iter()
                .map(|n| n.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// Every daemon of the cluster, in start order.
    pub fn daemons(&self) -> Vec<Daemon> {
        Daemon::all(self.nodes().len())
    }

    /// The daemon's log file.
    pub fn log(&self, d: Daemon) -> PathBuf {
        self.layout().daemon_log(&d.name())
    }

    /// What the daemon printed to stdout/stderr (before its log file was open, and fatal
    /// messages).
    pub fn output(&self, d: Daemon) -> PathBuf {
        self.layout().daemon_output(&d.name())
    }

    /// `bin/<tool>` of the head's build.
    pub fn bin(&self, tool: &str) -> PathBuf {
        self.state.prefix.join("bin").join(tool)
    }

    /// The head's build's `bin/<tool>` as a command that reaches this cluster: `SLURM_CONF`
    /// set, and in the head's mount namespace (Slurm 24.11 clients fetch their credential
    /// from the SACK socket under `/run`).
    pub fn tool(&self, tool: &str) -> Command {
        self.wrap(Command::new(self.bin(tool)))
    }

    /// `tool`, run as `user` (through `runuser`, which keeps `SLURM_CONF`).
    pub fn tool_as(&self, user: &str, tool: &str) -> Command {
        let mut c = Command::new("runuser");
        c.arg("-u").arg(user).arg("--").arg(self.bin(tool));
        self.wrap(c)
    }

    /// Node `i`'s build's `bin/<tool>`, run as a client on that node: in its namespaces (its
    /// host name; its `/run`, where its slurmd's SACK socket is).
    pub fn tool_on(&self, i: usize, tool: &str) -> Result<Command> {
        let bin = self.node_bin(i, tool)?;
        self.wrap_on(i, Command::new(bin))
    }

    /// `tool_on`, as `user`.
    pub fn tool_on_as(&self, i: usize, user: &str, tool: &str) -> Result<Command> {
        let bin = self.node_bin(i, tool)?;
        let mut c = Command::new("runuser");
        c.arg("-u").arg(user).arg("--").arg(bin);
        self.wrap_on(i, c)
    }

    fn node_bin(&self, i: usize, tool: &str) -> Result<PathBuf> {
        let node = self.nodes().get(i).ok_or_else(|| {
            Error::Usage(format!(
                "cluster `{}` has {} node(s); there is no node index {i}",
                self.state.name,
                self.nodes().len()
            ))
        })?;
        Ok(node.prefix.join("bin").join(tool))
    }

    /// Any command, with this cluster's environment and the head's namespace.
    pub fn wrap(&self, mut cmd: Command) -> Command {
        cmd.env("SLURM_CONF", self.layout().conf());
        cmd.env(
            slurm_mac::gres_conf::HARDWARE_VAR,
            self.layout().mac_hardware(),
        );
        super::config::set_emulation_log(&mut cmd, &self.layout());
        if let Some(iso) = &self.isolation {
            iso.apply(&mut cmd);
        }
        cmd
    }

    /// Any command, with this cluster's environment, in node `i`'s namespaces.
    pub fn wrap_on(&self, i: usize, mut cmd: Command) -> Result<Command> {
        if i >= self.nodes().len() {
            return Err(Error::Usage(format!(
                "cluster `{}` has no node index {i}",
                self.state.name
            )));
        }
        cmd.env("SLURM_CONF", self.layout().conf());
        cmd.env(
            slurm_mac::gres_conf::HARDWARE_VAR,
            self.layout().mac_hardware(),
        );
        super::config::set_emulation_log(&mut cmd, &self.layout());
        if let Some(Some(iso)) = self.node_isolation.get(i) {
            iso.apply(&mut cmd);
        }
        Ok(cmd)
    }

    /// Node `i`'s own mounts from its next slurmd start on (`&[]`: none again); commands
    /// [`Cluster::wrap_on`] starts on the node get them too. Without node namespaces (not
    /// root, not Linux) this is an error.
    pub fn set_node_mounts(&mut self, i: usize, mounts: &[NodeMount]) -> Result<()> {
        let name = self.state.name.clone();
        let base = match self.node_isolation.get(i) {
            Some(Some(iso)) => iso,
            Some(None) => {
                return Err(Error::Usage(format!(
                    "cluster `{name}` runs its nodes without namespaces (needs root on Linux): node mounts are not possible"
                )));
            }
            None => {
                return Err(Error::Usage(format!(
                    "cluster `{name}` has no node index {i}"
                )));
            }
        };
        let iso = base.with_mounts(mounts)?;
        self.node_isolation[i] = Some(iso);
        Ok(())
    }

    /// The head's own mounts (slurmctld, slurmdbd and the harness's clients) from their next
    /// start on (`&[]`: none again). Without isolation (not root, not Linux) this is an error.
    pub fn set_head_mounts(&mut self, mounts: &[NodeMount]) -> Result<()> {
        let iso = self.isolation.as_ref().ok_or_else(|| {
            Error::Usage(format!(
                "cluster `{}` runs its head without a namespace (needs root on Linux): head mounts are not possible",
                self.state.name
            ))
        })?;
        self.isolation = Some(iso.with_mounts(mounts)?);
        Ok(())
    }

    /// More arguments for node `i`'s slurmd from its next start on (`-c`: a clean start;
    /// `&[]`: none again).
    pub fn set_slurmd_args(&mut self, i: usize, args: &[&str]) -> Result<()> {
        let name = self.state.name.clone();
        let slot = self
            .slurmd_args
            .get_mut(i)
            .ok_or_else(|| Error::Usage(format!("cluster `{name}` has no node index {i}")))?;
        *slot = args.iter().map(|a| a.to_string()).collect();
        Ok(())
    }

    /// More environment variables for node `i`'s slurmd from its next start on (`&[]`: none
    /// again). Set after the cluster's own (`SLURM_CONF`, the daemons' environment), so a
    /// variable named in both takes this value.
    pub fn set_slurmd_env(&mut self, i: usize, vars: &[(&str, &str)]) -> Result<()> {
        if i >= self.nodes().len() {
            return Err(Error::Usage(format!(
                "cluster `{}` has no node index {i}",
                self.state.name
            )));
        }
        if vars.is_empty() {
            self.slurmd_env.remove(&i);
        } else {
            let vars = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            self.slurmd_env.insert(i, vars);
        }
        Ok(())
    }

    /// `path` as the daemon `d` sees it (in its mount namespace, through procfs: the root
    /// link of its pid, then `path`), or `path` itself when `d` shares ours or does not run.
    pub fn seen_by(&self, d: Daemon, path: &Path) -> PathBuf {
        match self.record(d) {
            Some(r) if r.mnt_ns.is_some() => {
                procs::root_of(r.pid).join(path.strip_prefix("/").unwrap_or(path))
            }
            _ => path.to_path_buf(),
        }
    }

    /// The daemon's record (PID and start time), if it was started.
    pub fn record(&self, d: Daemon) -> Option<&ProcRecord> {
        self.state.daemon(&d.name())
    }

    pub fn is_running(&self, d: Daemon) -> bool {
        self.record(d)
            .is_some_and(|r| r.liveness() == Liveness::Running)
    }

    /// The daemon's RSS, descriptors and threads, if it runs.
    pub fn usage(&self, d: Daemon) -> Option<Usage> {
        self.record(d)?.usage()
    }

    /// An error naming the first recorded daemon that no longer runs, with its log tail.
    pub fn check_daemons(&self) -> Result<()> {
        for d in &self.state.daemons {
            if d.liveness() != Liveness::Running {
                return Err(self.died(&d.name, d.pid, "while the cluster was up"));
            }
        }
        Ok(())
    }

    pub(super) fn died(&self, daemon: &str, pid: u32, when: &str) -> Error {
        let l = self.layout();
        let log = l.daemon_log(daemon);
        let how = procs::how_it_ended(pid)
            .map(|h| format!(" ({h})"))
            .unwrap_or_default();
        Error::DaemonDied {
            daemon: daemon.to_string(),
            pid,
            when: format!("{when}{how}"),
            tail: format!(
                "{}\n(its stdout/stderr, {}:)\n{}",
                file_tail(&log, 25),
                l.daemon_output(daemon).display(),
                file_tail(&l.daemon_output(daemon), 10)
            ),
            log,
        }
    }

    /// Stop one daemon by its record (SIGTERM, then SIGKILL after the grace period).
    pub fn stop(&mut self, d: Daemon) -> Result<Stopped> {
        match self.record(d).cloned() {
            Some(rec) => rec.stop(STOP_GRACE),
            None => Ok(Stopped::AlreadyGone),
        }
    }

    /// Send `signal` to the daemon (no wait); false when it does not run.
    pub fn kill(&self, d: Daemon, signal: Signal) -> Result<bool> {
        match self.record(d) {
            Some(rec) => rec.signal(signal),
            None => Ok(false),
        }
    }

    /// SIGSTOP: the daemon hangs (connections are accepted by the kernel, never answered).
    pub fn pause(&self, d: Daemon) -> Result<bool> {
        self.kill(d, Signal::SIGSTOP)
    }

    /// SIGCONT after [`Cluster::pause`].
    pub fn resume(&self, d: Daemon) -> Result<bool> {
        self.kill(d, Signal::SIGCONT)
    }

    /// Stop and start a daemon again; returns when it is ready.
    pub fn restart(&mut self, sh: &xshell::Shell, d: Daemon) -> Result<()> {
        self.stop(d)?;
        self.start(sh, d)
    }
}
