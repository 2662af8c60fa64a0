//! `up`, `down`, `status` and daemon restarts of one cluster, and the client commands that
//! talk to it.
//!
//! Start order: MariaDB (private instance: own data directory, socket and port), slurmdbd,
//! then `sacctmgr add cluster`, slurmctld, slurmd; `up` returns once the node is idle. Every
//! process is started detached and recorded in `cluster.toml` before the next one starts;
//! any failure on the way prints what died with its log tail and stops what was started.
//! `down` stops the record in reverse order, then kills what is left in the daemons' mount
//! namespaces (job steps of a slurmd that was killed).
//!
//! Commands are `std::process::Command`s (built from the prefix's paths) rather than xshell
//! ones where they need a pre-exec hook (setsid, the mount namespace), which xshell lacks.

use super::config::{self, Layout, Ports, Settings};
use super::procs::{self, Isolation, Liveness, ProcRecord, Stopped};
use super::state::State;
use crate::error::{Error, Result};
use crate::util::process::bounded::{poll, read_bounded, run_bounded};
use crate::util::process::file_tail;
use nix::fcntl::{Flock, FlockArg};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use xshell::{Shell, cmd};

/// The node's name in every cluster.
pub const NODE: &str = "node1";
/// How long each daemon gets to become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a daemon gets to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(15);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(200);

/// The daemons in start order.
pub const DAEMONS: [&str; 4] = ["mariadb", "slurmdbd", "slurmctld", "slurmd"];

/// What `up` needs.
#[derive(Debug, Clone)]
pub struct UpOptions {
    pub prefix: PathBuf,
    pub name: String,
    pub dir: PathBuf,
    /// Fixed ports instead of free ones picked now (the bad-state checks use this).
    pub ports: Option<Ports>,
    /// Lines for `slurm.conf`: a key already set is replaced, others are appended.
    pub extra_conf: Vec<String>,
    /// Give daemons and clients a private `/run` (as root on Linux). Off for callers that
    /// run inside a mount namespace of their own (`cluster peer`, `cluster bench`).
    pub isolate: bool,
}

impl UpOptions {
    pub fn new(prefix: PathBuf, name: String, dir: PathBuf) -> UpOptions {
        UpOptions {
            prefix,
            name,
            dir,
            ports: None,
            extra_conf: Vec::new(),
            isolate: true,
        }
    }
}

/// The default directory of cluster `name`: short, because slurmd and MariaDB put UNIX
/// sockets in it (108-byte limit).
pub fn default_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("slurm-cluster-{name}"))
}

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

    fn from_state(state: State) -> Result<Cluster> {
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
        let sbin = self.state.prefix.join("sbin");
        let conf = l.conf();
        let (cmd, isolated): (Command, bool) = match daemon {
            "mariadb" => {
                if first {
                    install_mariadb(sh, &l)?;
                }
                (mariadbd_command(sh, &l, port)?, false)
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
        };
        let mut cmd = cmd;
        cmd.env("SLURM_CONF", &conf);
        let iso = if isolated {
            self.isolation.as_ref()
        } else {
            None
        };
        let rec = procs::spawn_detached(daemon, cmd, iso, &l.daemon_output(daemon))?;
        let pid = rec.pid;
        self.state.record(rec)?;
        let when = if first {
            "during start"
        } else {
            "during restart"
        };
        match daemon {
            "mariadb" => {
                self.wait_ready(daemon, pid, when, || mariadb_ready(&l))?;
                if first {
                    create_db_account(&l)?;
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
        println!("  {daemon} ready (pid {pid}) in {:.1?}", t.elapsed());
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

/// Start a cluster. A cluster recorded in the directory that still runs is refused (clear
/// message naming `down`); the files of one that no longer runs are removed first. On any
/// failure, what was started is stopped again before the error is returned.
pub fn up(sh: &Shell, opts: &UpOptions) -> Result<Cluster> {
    let t = Instant::now();
    let prefix = std::path::absolute(&opts.prefix).map_err(|e| Error::io(&opts.prefix, e))?;
    super::host::check_prefix(&prefix)?;
    let dir = std::path::absolute(&opts.dir).map_err(|e| Error::io(&opts.dir, e))?;
    clear_leftover(&opts.name, &dir)?;
    let layout = Layout { root: dir.clone() };
    layout.create()?;

    let (user, uid) = super::host::current_user()?;
    let isolated = opts.isolate && uid == 0 && procs::can_isolate();
    if !isolated && !opts.isolate {
        println!("note: no private /run for the daemons (the caller provides one)");
    } else if !isolated {
        if uid == 0 {
            println!(
                "note: no private /run here (mount namespaces are Linux's): one cluster at a time"
            );
        } else {
            println!(
                "note: not root: no private /run, so only one cluster at a time; SlurmUser is `{user}`"
            );
        }
        super::host::require_sack_dirs(uid)?;
    }
    let slurmd_bin = prefix.join("sbin/slurmd");
    let hw = config::parse_slurmd_c(&read_bounded(
        Command::from(cmd!(sh, "{slurmd_bin} -C")),
        Duration::from_secs(30),
    )?)?;
    let hostname = read_bounded(
        Command::from(cmd!(sh, "hostname -s")),
        Duration::from_secs(10),
    )?
    .trim()
    .to_string();
    let ports = match opts.ports {
        Some(p) => p,
        None => Ports::pick()?,
    };
    let settings = Settings {
        layout: layout.clone(),
        cluster: opts.name.clone(),
        node: NODE.into(),
        hostname: hostname.clone(),
        ports,
        user: user.clone(),
        plugin_dir: prefix.join("lib/slurm"),
        hw: hw.clone(),
        db_password: config::random_password()?,
    };
    config::write_all(&settings, &opts.extra_conf)?;
    let state = State {
        name: opts.name.clone(),
        prefix: prefix.clone(),
        root: dir.clone(),
        hostname,
        node: NODE.into(),
        user,
        ports,
        hw,
        isolated,
        daemons: Vec::new(),
        namespaces: Vec::new(),
    };
    state.save()?;
    let mut cluster = Cluster::from_state(state)?;
    println!(
        "cluster `{}`: {} ({} CPUs), ports slurmctld {} slurmd {} slurmdbd {} mariadb {}",
        opts.name,
        dir.display(),
        settings.hw.cpus,
        ports.slurmctld,
        ports.slurmd,
        ports.slurmdbd,
        ports.mariadb
    );
    for daemon in DAEMONS {
        if let Err(e) = cluster.start(sh, daemon, true) {
            eprintln!(
                "cluster `{}`: {daemon} failed to start; stopping what was started",
                opts.name
            );
            if let Err(d) = down(&dir) {
                eprintln!("  (down after the failure: {d})");
            }
            return Err(e);
        }
    }
    println!(
        "cluster `{}` up in {:.1?}; clients: `cargo xtask cluster exec --name {} -- sinfo`",
        opts.name,
        t.elapsed(),
        opts.name
    );
    Ok(cluster)
}

/// Hold `<dir>.lock` (flock, with our PID in it) for as long as the returned file lives, so a
/// second `cluster test` on the same cluster refuses instead of stopping the first one's.
pub fn lock(name: &str, dir: &Path) -> Result<Flock<std::fs::File>> {
    use std::io::{Read, Seek, Write};
    let mut path = dir.as_os_str().to_owned();
    path.push(".lock");
    let path = PathBuf::from(path);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    let mut f = match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => locked,
        Err((mut f, _)) => {
            let mut holder = String::new();
            f.read_to_string(&mut holder).ok();
            return Err(Error::ClusterBusy {
                name: name.to_string(),
                dir: dir.to_path_buf(),
                holder: holder.trim().to_string(),
            });
        }
    };
    f.set_len(0).map_err(|e| Error::io(&path, e))?;
    f.rewind().map_err(|e| Error::io(&path, e))?;
    write!(f, "{}", std::process::id()).map_err(|e| Error::io(&path, e))?;
    Ok(f)
}

/// A recorded cluster that still runs: refuse. One that does not: remove its files.
/// A directory that is not a cluster directory: refuse (never delete unknown files).
fn clear_leftover(name: &str, dir: &Path) -> Result<()> {
    match State::load(dir)? {
        Some(state) => {
            let running = state.running();
            if !running.is_empty() {
                return Err(Error::ClusterRunning {
                    name: state.name.clone(),
                    dir: dir.to_path_buf(),
                    running: describe(&running),
                });
            }
            if !state.daemons.is_empty() {
                println!(
                    "note: cluster `{}` in {} was not stopped by `down` (nothing of it runs any more); removing its files",
                    state.name,
                    dir.display()
                );
            }
            std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))
        }
        None if dir.exists()
            && std::fs::read_dir(dir)
                .map_err(|e| Error::io(dir, e))?
                .next()
                .is_some() =>
        {
            Err(Error::NotAClusterDir {
                dir: dir.to_path_buf(),
                name: name.to_string(),
            })
        }
        None => Ok(()),
    }
}

fn describe(running: &[&ProcRecord]) -> String {
    running
        .iter()
        .map(|d| format!("{} pid {}", d.name, d.pid))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Stop every process recorded in `dir` (reverse start order), then what is left in the
/// daemons' mount namespaces. Files stay (logs); the record's process list is emptied.
pub fn down(dir: &Path) -> Result<()> {
    let Some(state) = State::load(dir)? else {
        println!("no cluster recorded in {}: nothing to stop", dir.display());
        return Ok(());
    };
    let mut cluster = Cluster::from_state(state)?;
    let mut failures = Vec::new();
    let order: Vec<String> = cluster
        .state
        .daemons
        .iter()
        .rev()
        .map(|d| d.name.clone())
        .collect();
    for name in &order {
        let pid = cluster.daemon(name).map(|d| d.pid).unwrap_or(0);
        match cluster.stop(name) {
            Ok(how) => println!("  {name} (pid {pid}): {}", stopped_word(how)),
            Err(e) => failures.push(e.to_string()),
        }
    }
    for p in cluster.leftovers() {
        match p.signal(nix::sys::signal::Signal::SIGKILL) {
            Ok(true) => {
                p.wait_gone(Duration::from_secs(5));
                println!(
                    "  killed {} (pid {}) left in the cluster's namespace",
                    p.name, p.pid
                );
            }
            Ok(false) => {}
            Err(e) => failures.push(e.to_string()),
        }
    }
    if !failures.is_empty() {
        return Err(Error::DownFailed {
            dir: dir.to_path_buf(),
            failures: failures.join("; "),
        });
    }
    cluster.state.daemons.clear();
    cluster.state.namespaces.clear();
    cluster.state.save()?;
    println!(
        "cluster `{}` down ({} kept for its logs)",
        cluster.state.name,
        dir.display()
    );
    Ok(())
}

fn stopped_word(how: Stopped) -> &'static str {
    match how {
        Stopped::AlreadyGone => "had already exited",
        Stopped::PidReused => "had exited (its PID now belongs to another process, left alone)",
        Stopped::Terminated => "stopped (SIGTERM)",
        Stopped::Killed => "killed (ignored SIGTERM)",
    }
}

/// Print what runs; an error if the cluster is recorded as up but a daemon is gone.
pub fn status(dir: &Path) -> Result<()> {
    let cluster = Cluster::load(dir)?;
    let s = &cluster.state;
    println!(
        "cluster `{}` in {} (prefix {})\n  ports: slurmctld {} slurmd {} slurmdbd {} mariadb {}; private /run: {}",
        s.name,
        dir.display(),
        s.prefix.display(),
        s.ports.slurmctld,
        s.ports.slurmd,
        s.ports.slurmdbd,
        s.ports.mariadb,
        if s.isolated { "yes" } else { "no" }
    );
    if s.daemons.is_empty() {
        println!("  stopped (nothing recorded as running)");
        return Ok(());
    }
    for d in &s.daemons {
        let what = match d.liveness() {
            Liveness::Running => match d.rss_and_fds() {
                Some((rss, fds)) => format!("running, RSS {rss} kB, {fds} descriptors"),
                None => "running".into(),
            },
            Liveness::Gone => "NOT RUNNING".into(),
            Liveness::Reused => "NOT RUNNING (PID reused by another process)".into(),
        };
        println!("  {:<9} pid {:<7} {what}", d.name, d.pid);
    }
    let left = cluster.leftovers();
    if !left.is_empty() {
        println!(
            "  {} other processes in the cluster's namespaces (job steps)",
            left.len()
        );
    }
    if cluster
        .daemon("slurmctld")
        .is_some_and(|d| d.liveness() == Liveness::Running)
    {
        if let Ok(Some(state)) = cluster.node_state() {
            println!("  node {NODE}: {state}");
        }
    }
    cluster.check_daemons()
}

/// Run `argv` against the cluster (environment and namespace), with our stdio; returns its
/// exit code.
pub fn exec(dir: &Path, argv: &[std::ffi::OsString]) -> Result<i32> {
    let cluster = Cluster::load(dir)?;
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| Error::Usage("exec: no command given".into()))?;
    // A bare client name means the prefix's tool.
    let prog_path = Path::new(prog);
    let mut cmd =
        if prog_path.components().count() == 1 && cluster.bin(&prog.to_string_lossy()).is_file() {
            cluster.tool(&prog.to_string_lossy())
        } else {
            cluster.wrap(Command::new(prog))
        };
    cmd.args(args);
    let status = cmd.status().map_err(|source| Error::Spawn {
        program: prog_path.display().to_string(),
        source,
    })?;
    Ok(status.code().unwrap_or(128))
}

fn log_of(l: &Layout, daemon: &str) -> PathBuf {
    match daemon {
        "mariadb" => l.daemon_log("mariadb"),
        d => l.daemon_log(d),
    }
}

fn check_port_free(daemon: &str, port: u16) -> Result<()> {
    match TcpListener::bind(("127.0.0.1", port)) {
        Ok(_) => Ok(()),
        Err(_) => Err(Error::PortTaken {
            daemon: daemon.to_string(),
            port,
        }),
    }
}

/// `mariadb-install-db` into the cluster's data directory (never the system's).
fn install_mariadb(sh: &Shell, l: &Layout) -> Result<()> {
    let data = l.mysql_data();
    let log = l.logs().join("mariadb-install.log");
    let user = super::host::current_user()?.0;
    let out = run_bounded(
        Command::from(cmd!(
            sh,
            "mariadb-install-db --no-defaults --user={user} --datadir={data} --auth-root-authentication-method=socket --skip-test-db"
        )),
        Duration::from_secs(120),
    )
    .map_err(|e| {
        e.context(
            "mariadb-install-db (is Debian's mariadb-server installed? ci/setup-debian.sh installs it)",
        )
    })?;
    let mut text = out.stdout.clone();
    text.extend_from_slice(&out.stderr);
    std::fs::write(&log, &text).map_err(|e| Error::io(&log, e))?;
    if !out.status.success() {
        return Err(Error::Scenario(format!(
            "mariadb-install-db failed ({}); last lines of {}:\n{}",
            out.status,
            log.display(),
            file_tail(&log, 20)
        )));
    }
    Ok(())
}

/// The private `mariadbd`: own data directory, socket, port on 127.0.0.1, error log; the
/// InnoDB settings slurmdbd checks at start.
fn mariadbd_command(sh: &Shell, l: &Layout, port: u16) -> Result<Command> {
    let (data, sock) = (l.mysql_data(), l.mysql_socket());
    let pid = l.pids().join("mariadb.pid");
    let err = l.daemon_log("mariadb");
    let user = super::host::current_user()?.0;
    let port = port.to_string();
    Ok(Command::from(cmd!(
        sh,
        "mariadbd --no-defaults --user={user} --datadir={data} --socket={sock} --port={port} --bind-address=127.0.0.1 --pid-file={pid} --log-error={err} --skip-name-resolve --innodb-buffer-pool-size=128M --innodb-log-file-size=64M --innodb-lock-wait-timeout=900"
    )))
}

fn mariadb_client(l: &Layout, sql: &str) -> Result<Command> {
    let sh = Shell::new().map_err(Error::Shell)?;
    let socket = format!("--socket={}", l.mysql_socket().display());
    Ok(Command::from(cmd!(
        sh,
        "mariadb --no-defaults {socket} -u root -e {sql}"
    )))
}

fn mariadb_ready(l: &Layout) -> Result<bool> {
    Ok(
        run_bounded(mariadb_client(l, "SELECT 1")?, Duration::from_secs(10))?
            .status
            .success(),
    )
}

/// The `slurm` account (password from slurmdbd.conf) with rights on slurmdbd's database.
fn create_db_account(l: &Layout) -> Result<()> {
    let conf = std::fs::read_to_string(l.dbd_conf()).map_err(|e| Error::io(l.dbd_conf(), e))?;
    let pass = conf
        .lines()
        .find_map(|x| x.strip_prefix("StoragePass="))
        .ok_or_else(|| Error::file(l.dbd_conf(), "no StoragePass"))?;
    let (user, db) = (config::DB_USER, config::DB_NAME);
    let sql = format!(
        "CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{pass}'; GRANT ALL ON {db}.* TO '{user}'@'127.0.0.1';"
    );
    read_bounded(mariadb_client(l, &sql)?, CLIENT_TIMEOUT).map(|_| ())
}

#[cfg(test)]
mod tests {
    #![allow(non_snake_case)]
    use super::*;

    #[test]
    fn clear_leftover__refuses_a_foreign_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("precious"), "x").unwrap();
        let err = clear_leftover("n", dir.path()).unwrap_err().to_string();
        assert!(err.contains("not a cluster directory"), "{err}");
        assert!(dir.path().join("precious").exists());
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

    #[test]
    fn lock__second_holder_refused_with_the_pid() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("c");
        let first = lock("c", &c).unwrap();
        let err = lock("c", &c).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        lock("c", &c).unwrap();
    }

    #[test]
    fn default_dir__short_and_named() {
        let d = default_dir("native");
        assert!(d.to_string_lossy().ends_with("slurm-cluster-native"));
        assert!(d.as_os_str().len() < 60, "{}", d.display());
    }
}
