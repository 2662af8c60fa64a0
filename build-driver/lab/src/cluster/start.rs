//! Starting a cluster's daemons ([`Cluster::start`], [`Cluster::start_nodes`]): each one
//! detached and recorded before anything waits for it, then checked until it serves, with
//! its log tail when it dies and the node named when a slurmd never registers.
//!
//! How each is started: `mariadbd` (mariadb.rs; installed on the first start) outside any
//! namespace; slurmdbd and slurmctld of the head's build in the head's namespace; each node's
//! `slurmd -D -N <node>` of the node's build in the node's namespaces (nodes.rs).

use super::config::CLIENT_TIMEOUT;
use super::daemon::Daemon;
use super::handle::{Cluster, POLL};
use super::mariadb;
use super::procs::{self, Isolation, Liveness};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::{poll, read_bounded, run_bounded};
use driver_common::util::process::file_tail;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::Command;
use std::time::Instant;
use xshell::{Shell, cmd};

impl Cluster {
    /// Start one daemon (which must not be running) and wait until it is ready.
    pub fn start(&mut self, sh: &Shell, d: Daemon) -> Result<()> {
        self.start_as(sh, d, false, true)
    }

    /// `start`, without checking first that its port is free (the bad-state scenarios use
    /// that to see how a daemon that cannot bind is reported; sack-replace to start a second
    /// slurmd beside the first).
    pub fn start_unchecked(&mut self, sh: &Shell, d: Daemon) -> Result<()> {
        self.start_as(sh, d, false, false)
    }

    /// Start the slurmd of nodes `nodes` together, then wait until every one is up.
    pub fn start_nodes(&mut self, sh: &Shell, nodes: &[usize]) -> Result<()> {
        self.spawn_nodes(sh, nodes, false)
    }

    /// The first start of every daemon of a new cluster (`up`).
    pub(super) fn start_all(&mut self, sh: &Shell) -> Result<()> {
        for d in Daemon::HEAD {
            self.start_as(sh, d, true, true)?;
        }
        let nodes: Vec<usize> = (0..self.nodes().len()).collect();
        self.spawn_nodes(sh, &nodes, true)
    }

    fn spawn_nodes(&mut self, sh: &Shell, nodes: &[usize], first: bool) -> Result<()> {
        let t = Instant::now();
        let mut started = Vec::new();
        for &i in nodes {
            let d = Daemon::Slurmd(i);
            check_port_free(&d.name(), self.port(d)?)?;
            started.push((d, self.spawn(sh, d, first)?));
        }
        for (d, pid) in started {
            self.until_ready(d, pid, first)?;
        }
        println!("  {} slurmd ready in {:.1?}", nodes.len(), t.elapsed());
        Ok(())
    }

    fn start_as(&mut self, sh: &Shell, d: Daemon, first: bool, check_port: bool) -> Result<()> {
        let t = Instant::now();
        if check_port {
            check_port_free(&d.name(), self.port(d)?)?;
        }
        let pid = self.spawn(sh, d, first)?;
        self.until_ready(d, pid, first)?;
        println!("  {d} ready (pid {pid}) in {:.1?}", t.elapsed());
        Ok(())
    }

    /// The daemon's TCP port.
    pub fn port(&self, d: Daemon) -> Result<u16> {
        let p = &self.state.ports;
        Ok(match d {
            Daemon::MariaDb => p.mariadb,
            Daemon::Slurmdbd => p.slurmdbd,
            Daemon::Slurmctld => p.slurmctld,
            Daemon::Slurmd(i) => self.node_at(i)?.port,
        })
    }

    fn node_at(&self, i: usize) -> Result<&super::nodes::Node> {
        self.nodes().get(i).ok_or_else(|| {
            Error::Usage(format!(
                "cluster `{}` has no node index {i} ({} nodes)",
                self.state.name,
                self.nodes().len()
            ))
        })
    }

    /// Start the daemon detached, record it, return its PID.
    fn spawn(&mut self, sh: &Shell, d: Daemon, first: bool) -> Result<u32> {
        let l = self.layout();
        let (mut cmd, iso) = self.daemon_command(sh, d, first)?;
        let conf = d
            .node()
            .and_then(|i| self.slurmd_launch.get(&i))
            .and_then(|launch| launch.slurm_conf.clone())
            .unwrap_or_else(|| l.conf());
        // A daemon that aborts dumps its core in its working directory: the cluster's logs,
        // never the caller's directory (a source tree).
        // The darwin personality's modelled Mac (gpu/apple, node metrics) is the cluster's
        // hardware file for every daemon; native builds never read it.
        cmd.env("SLURM_CONF", conf)
            .env(slurm_mac::gres_conf::HARDWARE_VAR, l.mac_hardware())
            .current_dir(l.logs());
        if d != Daemon::MariaDb {
            cmd.envs(self.state.daemon_env.iter().map(|(k, v)| (k, v)));
        }
        if let Some(vars) = d.node().and_then(|i| self.slurmd_env.get(&i)) {
            cmd.envs(vars.iter().map(|(k, v)| (k, v)));
        }
        super::config::set_emulation_log(&mut cmd, &l);
        let rec = procs::spawn_detached(&d.name(), cmd, iso.as_ref(), &l.daemon_output(&d.name()))?;
        let pid = rec.pid;
        self.state.record(rec)?;
        Ok(pid)
    }

    /// How `d` is started (MariaDB installed first on its first start), and the namespaces
    /// it runs in.
    fn daemon_command(
        &self,
        sh: &Shell,
        d: Daemon,
        first: bool,
    ) -> Result<(Command, Option<Isolation>)> {
        let l = self.layout();
        let conf = l.conf();
        let sbin = self.state.prefix.join("sbin");
        Ok(match d {
            Daemon::MariaDb => {
                if first {
                    mariadb::install(sh, &l)?;
                }
                (mariadb::server(sh, &l, self.port(d)?)?, None)
            }
            Daemon::Slurmdbd => (
                Command::from(cmd!(sh, "{sbin}/slurmdbd -D")),
                self.isolation.clone(),
            ),
            Daemon::Slurmctld => (
                Command::from(cmd!(sh, "{sbin}/slurmctld -D -i -f {conf}")),
                self.isolation.clone(),
            ),
            Daemon::Slurmd(i) => {
                let node = self.node_at(i)?;
                let sbin = node.prefix.join("sbin");
                let name = &node.name;
                let extra = self.slurmd_args.get(i).cloned().unwrap_or_default();
                let c = match self.slurmd_launch.get(&i) {
                    Some(launch) => {
                        let args = &launch.args;
                        cmd!(sh, "{sbin}/slurmd -D -N {name} {args...} {extra...}")
                    }
                    None => cmd!(sh, "{sbin}/slurmd -D -N {name} -f {conf} {extra...}"),
                };
                (
                    Command::from(c),
                    self.node_isolation.get(i).cloned().flatten(),
                )
            }
        })
    }

    /// Waits until `d` (pid `pid`) serves; after its first start, the accounts it needs.
    fn until_ready(&mut self, d: Daemon, pid: u32, first: bool) -> Result<()> {
        let l = self.layout();
        let when = if first {
            "during start"
        } else {
            "during restart"
        };
        let port = self.port(d)?;
        match d {
            Daemon::MariaDb => {
                self.wait_ready(d, pid, when, || mariadb::ready(&l))?;
                if first {
                    mariadb::create_account(&l)?;
                }
            }
            Daemon::Slurmdbd => {
                self.wait_ready(d, pid, when, || {
                    Ok(TcpStream::connect(("127.0.0.1", port)).is_ok())
                })?;
                if first {
                    let name = self.state.name.clone();
                    let mut c = self.tool("sacctmgr");
                    c.args(["-i", "add", "cluster", &name]);
                    read_bounded(c, CLIENT_TIMEOUT)?;
                }
            }
            Daemon::Slurmctld => self.wait_ready(d, pid, when, || {
                let mut c = self.tool("scontrol");
                c.arg("ping");
                let out = run_bounded(c, CLIENT_TIMEOUT)?;
                Ok(String::from_utf8_lossy(&out.stdout).contains("is UP"))
            })?,
            // slurmctld keeps showing the node idle while slurmd restarts: also wait for
            // slurmd's own port.
            Daemon::Slurmd(i) => {
                let addr: Ipv4Addr = self.node_at(i)?.addr;
                let mut last = None;
                let probe = self.ready_timeout.min(std::time::Duration::from_secs(10));
                let result = self.wait_ready(d, pid, when, || {
                    let state = self.node_state_within(i, probe)?;
                    let up = state.as_deref().is_some_and(registered_state);
                    last = state;
                    Ok(TcpStream::connect((addr, port)).is_ok() && up)
                });
                if let Err(Error::TimedOut { after, .. }) = result {
                    return Err(self.never_registered(i, after, last));
                }
                result?;
            }
        }
        Ok(())
    }

    fn never_registered(
        &self,
        i: usize,
        after: std::time::Duration,
        state: Option<String>,
    ) -> Error {
        let node = &self.nodes()[i];
        let log = self.log(Daemon::Slurmd(i));
        Error::NodeNeverRegistered {
            node: node.name.clone(),
            after,
            state: state.unwrap_or_else(|| "unknown (sinfo failed)".into()),
            tail: format!(
                "{}\n(its stdout/stderr:)\n{}",
                file_tail(&log, 20),
                file_tail(&self.output(Daemon::Slurmd(i)), 10)
            ),
            log,
        }
    }

    /// Poll `ready` while the daemon runs.
    fn wait_ready(
        &self,
        d: Daemon,
        pid: u32,
        when: &str,
        mut ready: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        let rec = self
            .record(d)
            .cloned()
            .ok_or_else(|| Error::Usage(format!("{d} is not recorded")))?;
        poll(
            &format!("{d} to become ready (its log: {})", self.log(d).display()),
            self.ready_timeout,
            POLL,
            || {
                if rec.liveness() != Liveness::Running {
                    return Err(self.died(&d.name(), pid, when));
                }
                Ok(ready()?.then_some(()))
            },
        )
    }
}

pub(super) fn check_port_free(daemon: &str, port: u16) -> Result<()> {
    match TcpListener::bind(("127.0.0.1", port)) {
        Ok(_) => Ok(()),
        Err(_) => Err(Error::PortTaken {
            daemon: daemon.to_string(),
            port,
        }),
    }
}

/// Whether sinfo's `%T` word for a node says its slurmd registered and the node takes jobs:
/// `idle`, `mixed` or `allocated`, also with the `-` suffix (PLANNED: the backfill scheduler
/// holds the node for a pending job, seen after a slurmd restart in a busy soak), never with
/// `*` (not responding) nor a down, drained or failing word.
fn registered_state(state: &str) -> bool {
    let base = state.strip_suffix('-').unwrap_or(state);
    matches!(base, "idle" | "mixed" | "allocated")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_state__planned_counts_not_responding_does_not() {
        for s in [
            "idle",
            "mixed",
            "allocated",
            "mixed-",
            "idle-",
            "allocated-",
        ] {
            assert!(registered_state(s), "{s} is a registered node");
        }
        for s in [
            "idle*", "mixed*", "down", "down*", "drained", "draining", "unknown", "mixed-*", "",
        ] {
            assert!(!registered_state(s), "{s} is not a registered node");
        }
    }

    #[test]
    fn check_port_free__names_the_daemon_and_port() {
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let err = check_port_free("slurmctld", port).unwrap_err().to_string();
        assert!(
            err.contains(&format!("port {port}")) && err.contains("slurmctld"),
            "{err}"
        );
        drop(l);
        check_port_free("slurmctld", port).unwrap();
    }
}
