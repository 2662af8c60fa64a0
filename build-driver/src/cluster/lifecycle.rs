//! `up`, `down`, `status` and `exec` of one cluster (the cluster itself, its daemons and
//! clients: [`super::handle`]; the test lock: [`super::lock`]; MariaDB: [`super::mariadb`]).
//!
//! Start order: MariaDB (private instance: own data directory, socket and port), slurmdbd,
//! then `sacctmgr add cluster`, slurmctld, slurmd; `up` returns once the node is idle. Every
//! process is started detached and recorded in `cluster.toml` before the next one starts;
//! any failure on the way prints what died with its log tail and stops what was started.
//! `down` stops the record in reverse order, then kills what is left in the daemons' mount
//! namespaces (job steps of a slurmd that was killed).

use super::config::{self, Layout, Ports, Settings};
use super::handle::{Cluster, DAEMONS, NODE};
use super::lock::clear_leftover;
use super::procs::{self, Liveness, Stopped};
use super::profile::Profile;
use super::state::State;
use crate::error::{Error, Result};
use crate::util::process::bounded::read_bounded;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use xshell::{Shell, cmd};

/// Whether daemons and clients get a private `/run` (asked, root, Linux); without one, the
/// fixed SACK directories must be free (said so).
fn isolation(asked: bool, user: &str, uid: u32) -> Result<bool> {
    let isolated = asked && uid == 0 && procs::can_isolate();
    if !isolated && !asked {
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
    Ok(isolated)
}

/// The node's hardware as slurmd reports it (`slurmd -C`) and this machine's short hostname.
fn node_hardware(sh: &Shell, prefix: &Path) -> Result<(config::NodeHw, String)> {
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
    Ok((hw, hostname))
}

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
    /// The scheduling and tracking lines of `slurm.conf` (profile.rs).
    pub profile: Profile,
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
            profile: Profile::Default,
        }
    }
}

/// The default directory of cluster `name`: short, because slurmd and MariaDB put UNIX
/// sockets in it (108-byte limit).
pub fn default_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("slurm-cluster-{name}"))
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
    let isolated = isolation(opts.isolate, &user, uid)?;
    let (hw, hostname) = node_hardware(sh, &prefix)?;
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
        profile: opts.profile,
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
        profile: opts.profile,
        isolated,
        daemons: Vec::new(),
        namespaces: Vec::new(),
    };
    state.save()?;
    let mut cluster = Cluster::from_state(state)?;
    println!(
        "cluster `{}`: {} (profile `{}`, {} CPUs, {} MB), ports slurmctld {} slurmd {} slurmdbd {} mariadb {}",
        opts.name,
        dir.display(),
        opts.profile.name(),
        settings.hw.cpus,
        settings.hw.real_memory,
        ports.slurmctld,
        ports.slurmd,
        ports.slurmdbd,
        ports.mariadb
    );
    for var in ["SLURM_SHIM_EMULATION", "SLURM_SHIM_EMULATION_OFF"] {
        if let Some(v) = std::env::var_os(var) {
            println!(
                "note: the daemons inherit {var}={} (the darwin personality's macOS models)",
                v.to_string_lossy()
            );
        }
    }
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
        "cluster `{}` in {} (prefix {}, profile `{}`)\n  ports: slurmctld {} slurmd {} slurmdbd {} mariadb {}; private /run: {}",
        s.name,
        dir.display(),
        s.prefix.display(),
        s.profile.name(),
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

#[cfg(test)]
mod tests {
    #![allow(non_snake_case)]
    use super::*;

    #[test]
    fn default_dir__short_and_named() {
        let d = default_dir("native");
        assert!(d.to_string_lossy().ends_with("slurm-cluster-native"));
        assert!(d.as_os_str().len() < 60, "{}", d.display());
    }
}
