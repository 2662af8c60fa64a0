//! A running (or recorded) cluster: its record, the paths and commands that reach it (the
//! cluster's `SLURM_CONF` and mount namespace), and its daemons one by one: start (checked
//! until ready, with the log tail when one dies), stop, restart, the node's state.
//!
//! Commands are `std::process::Command`s (built from the prefix's paths) rather than xshell
//! ones because they may need the mount namespace's pre-exec hook
//! ([`crate::util::process::spawn`]), which xshell lacks.

use super::config::{CLIENT_TIMEOUT, Layout};
use super::mariadb;
use super::procs::{self, Isolation, Liveness, ProcRecord, Stopped};
use super::state::State;
use crate::error::{Error, Result};
use crate::util::process::bounded::{poll, read_bounded, run_bounded};
use crate::util::process::file_tail;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use xshell::{Shell, cmd};

/// The node's name in every cluster.
pub const NODE: &str = "node1";
/// How long each daemon gets to become ready.
pub(super) const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a daemon gets to exit after SIGTERM before SIGKILL.
pub(super) const STOP_GRACE: Duration = Duration::from_secs(15);
pub(super) const POLL: Duration = Duration::from_millis(200);

/// The daemons in start order.
pub const DAEMONS: [&str; 4] = ["mariadb", "slurmdbd", "slurmctld", "slurmd"];

/// A running (or recorded) cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub state: State,
    isolation: Option<Isolation>,
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
        let isolation = match state.isolated {
            true => Some(Isolation::new(&state.layout().run())?),
            false => None,
        };
        Ok(Cluster { state, isolation })
    }

    pub fn layout(&self) -> Layout {
        self.state.layout()
    }

    pub fn bin(&self, tool: &str) -> PathBuf {
        self.state.prefix.join("bin").join(tool)
    }

    /// `prefix/bin/<tool>` as a command that reaches this cluster: `SLURM_CONF` set, and in
    /// the cluster's mount namespace (Slurm 24.11 clients fetch their credential from the
    /// SACK socket under `/run`).
    pub fn tool(&self, tool: &str) -> Command {
        self.wrap(Command::new(self.bin(tool)))
    }

    /// `tool`, run as `user` (through `runuser`, which keeps `SLURM_CONF`).
    pub fn tool_as(&self, user: &str, tool: &str) -> Command {
        let mut c = Command::new("runuser");
        c.arg("-u").arg(user).arg("--").arg(self.bin(tool));
        self.wrap(c)
    }

    /// Any command, with this cluster's environment and namespace.
    pub fn wrap(&self, mut cmd: Command) -> Command {
        cmd.env("SLURM_CONF", self.layout().conf());
        cmd.env(crate::gres_conf::HARDWARE_VAR, self.layout().mac_hardware());
        if let Some(iso) = &self.isolation {
            iso.apply(&mut cmd);
        }
        cmd
    }

    pub fn daemon(&self, name: &str) -> Option<&ProcRecord> {
        self.state.daemon(name)
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

    fn died(&self, daemon: &str, pid: u32, when: &str) -> Error {
        let log = log_of(&self.layout(), daemon);
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
                self.layout().daemon_output(daemon).display(),
                file_tail(&self.layout().daemon_output(daemon), 10)
            ),
            log,
        }
    }

    /// Start one daemon (which must not be running) and wait until it is ready.
    pub fn start(&mut self, sh: &Shell, daemon: &str, first: bool) -> Result<()> {
        self.start_checked(sh, daemon, first, true)
    }

    /// `start`, optionally without checking first that its port is free (the bad-state
    /// scenarios use that to see how a daemon that cannot bind is reported).
    pub fn start_checked(
        &mut self,
        sh: &Shell,
        daemon: &str,
        first: bool,
        check_port: bool,
    ) -> Result<()> {
        let t = Instant::now();
        let l = self.layout();
        let port = match daemon {
            "mariadb" => self.state.ports.mariadb,
            "slurmdbd" => self.state.ports.slurmdbd,
            "slurmctld" => self.state.ports.slurmctld,
            "slurmd" => self.state.ports.slurmd,
            other => return Err(Error::Usage(format!("unknown daemon `{other}`"))),
        };
        if check_port {
            check_port_free(daemon, port)?;
        }
        let (mut cmd, isolated) = self.daemon_command(sh, daemon, first, port)?;
        // A daemon that aborts dumps its core in its working directory: the cluster's logs,
        // never the caller's directory (a source tree).
        cmd.env("SLURM_CONF", l.conf())
            .env(crate::gres_conf::HARDWARE_VAR, l.mac_hardware())
            .current_dir(l.logs());
        let iso = if isolated {
            self.isolation.as_ref()
        } else {
            None
        };
        let rec = procs::spawn_detached(daemon, cmd, iso, &l.daemon_output(daemon))?;
        let pid = rec.pid;
        self.state.record(rec)?;
        self.until_ready(daemon, pid, first, port)?;
        println!("  {daemon} ready (pid {pid}) in {:.1?}", t.elapsed());
        Ok(())
    }

    /// How `daemon` is started (MariaDB installed first on the first start), and whether it
    /// runs in the cluster's mount namespace.
    fn daemon_command(
        &self,
        sh: &Shell,
        daemon: &str,
        first: bool,
        port: u16,
    ) -> Result<(Command, bool)> {
        let l = self.layout();
        let sbin = self.state.prefix.join("sbin");
        let conf = l.conf();
        Ok(match daemon {
            "mariadb" => {
                if first {
                    mariadb::install(sh, &l)?;
                }
                (mariadb::server(sh, &l, port)?, false)
            }
            "slurmdbd" => (Command::from(cmd!(sh, "{sbin}/slurmdbd -D")), true),
            "slurmctld" => (
                Command::from(cmd!(sh, "{sbin}/slurmctld -D -i -f {conf}")),
                true,
            ),
            _ => (
                Command::from(cmd!(sh, "{sbin}/slurmd -D -N {NODE} -f {conf}")),
                true,
            ),
        })
    }

    /// Waits until `daemon` (pid `pid`) serves; after its first start, the accounts it needs.
    fn until_ready(&mut self, daemon: &str, pid: u32, first: bool, port: u16) -> Result<()> {
        let l = self.layout();
        let when = if first {
            "during start"
        } else {
            "during restart"
        };
        match daemon {
            "mariadb" => {
                self.wait_ready(daemon, pid, when, || mariadb::ready(&l))?;
                if first {
                    mariadb::create_account(&l)?;
                }
            }
            "slurmdbd" => {
                self.wait_ready(daemon, pid, when, || {
                    Ok(TcpStream::connect(("127.0.0.1", port)).is_ok())
                })?;
                if first {
                    let name = self.state.name.clone();
                    let mut c = self.tool("sacctmgr");
                    c.args(["-i", "add", "cluster", &name]);
                    read_bounded(c, CLIENT_TIMEOUT)?;
                }
            }
            "slurmctld" => self.wait_ready(daemon, pid, when, || {
                let mut c = self.tool("scontrol");
                c.arg("ping");
                let out = run_bounded(c, CLIENT_TIMEOUT)?;
                Ok(String::from_utf8_lossy(&out.stdout).contains("is UP"))
            })?,
            // slurmctld keeps showing the node idle while slurmd restarts: also wait for
            // slurmd's own port.
            _ => self.wait_ready(daemon, pid, when, || {
                Ok(TcpStream::connect(("127.0.0.1", port)).is_ok()
                    && self
                        .node_state()?
                        .is_some_and(|s| s == "idle" || s == "mixed" || s == "allocated"))
            })?,
        }
        Ok(())
    }

    /// Poll `ready` while the daemon runs.
    fn wait_ready(
        &self,
        daemon: &str,
        pid: u32,
        when: &str,
        mut ready: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        let rec = self
            .daemon(daemon)
            .cloned()
            .ok_or_else(|| Error::Usage(format!("{daemon} is not recorded")))?;
        poll(
            &format!(
                "{daemon} to become ready (its log: {})",
                log_of(&self.layout(), daemon).display()
            ),
            READY_TIMEOUT,
            POLL,
            || {
                if rec.liveness() != Liveness::Running {
                    return Err(self.died(daemon, pid, when));
                }
                Ok(ready()?.then_some(()))
            },
        )
    }

    /// `sinfo`'s state of the node (`idle`, `mixed`, `drained`, ...), None if sinfo fails.
    /// sinfo prints one line per partition the node is in; they agree.
    pub fn node_state(&self) -> Result<Option<String>> {
        let mut c = self.tool("sinfo");
        c.args(["-h", "-N", "-n", NODE, "-o", "%T"]);
        let out = run_bounded(c, CLIENT_TIMEOUT)?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut states: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        states.dedup();
        Ok((out.status.success() && !states.is_empty()).then(|| states.join("|")))
    }

    /// Stop one daemon by its record (SIGTERM, then SIGKILL after the grace period).
    pub fn stop(&mut self, daemon: &str) -> Result<Stopped> {
        let Some(rec) = self.daemon(daemon).cloned() else {
            return Ok(Stopped::AlreadyGone);
        };
        rec.stop(STOP_GRACE)
    }

    /// Stop and start a daemon again; returns when it is ready.
    pub fn restart(&mut self, sh: &Shell, daemon: &str) -> Result<()> {
        self.stop(daemon)?;
        self.start(sh, daemon, false)
    }

    /// The processes left in the mount namespaces of recorded daemons (job steps).
    pub fn leftovers(&self) -> Vec<ProcRecord> {
        let namespaces = self.state.namespaces.clone();
        let ours: Vec<u32> = self.state.running().iter().map(|d| d.pid).collect();
        let run = self.state.layout().run();
        namespaces
            .into_iter()
            .flat_map(|ns| procs::processes_in_namespace(ns, &run))
            .filter(|p| !ours.contains(&p.pid))
            .collect()
    }
}

pub(super) fn log_of(l: &Layout, daemon: &str) -> PathBuf {
    match daemon {
        "mariadb" => l.daemon_log("mariadb"),
        d => l.daemon_log(d),
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

#[cfg(test)]
mod tests {
    #![allow(non_snake_case)]
    use super::*;

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
