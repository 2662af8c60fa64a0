//! `up`, `down`, `status` and `exec` of one cluster (the cluster itself, its daemons and
//! clients: [`super::handle`]; the test lock: [`super::lock`]; MariaDB: [`super::mariadb`]).
//!
//! Start order: MariaDB (private instance: own data directory, socket and port), slurmdbd,
//! then `sacctmgr add cluster`, slurmctld, slurmd; `up` returns once the node is idle. Every
//! process is started detached and recorded in `cluster.toml` before the next one starts;
//! any failure on the way prints what died with its log tail and stops what was started.
//! `down` stops the record in reverse order, then kills what is left in the daemons' mount
//! namespaces (job steps of a slurmd that was killed).

use super::config::{self, Layout, Ports};
use super::daemon::Daemon;
use super::handle::Cluster;
use super::lock::clear_leftover;
use super::nodes::{Build, Node, node_addr, node_name};
use super::procs::{self, Liveness, Stopped};
use super::profile::Profile;
use super::render::{self, Settings};
use super::state::State;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::read_bounded;
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

/// What `slurmd -C` of `prefix` reports.
fn slurmd_hw(sh: &Shell, prefix: &Path) -> Result<config::NodeHw> {
    let slurmd_bin = prefix.join("sbin/slurmd");
    config::parse_slurmd_c(&read_bounded(
        Command::from(cmd!(sh, "{slurmd_bin} -C")),
        Duration::from_secs(30),
    )?)
}

/// This machine's short host name.
fn short_hostname(sh: &Shell) -> Result<String> {
    Ok(read_bounded(
        Command::from(cmd!(sh, "hostname -s")),
        Duration::from_secs(10),
    )?
    .trim()
    .to_string())
}

/// What `up` needs.
#[derive(Debug, Clone)]
pub struct UpOptions {
    /// The builds: one (every daemon), or several (`--mix`: the nodes split among them, the
    /// head runs the first).
    pub builds: Vec<Build>,
    /// How many nodes (default: one per build).
    pub nodes: Option<usize>,
    pub name: String,
    pub dir: PathBuf,
    /// Lines for `slurm.conf`: a key already set is replaced, others are appended.
    pub extra_conf: Vec<String>,
    /// Give daemons and clients a private `/run` (as root on Linux). Off for callers that
    /// run inside a mount namespace of their own (`cluster peer`, `cluster bench`).
    pub isolate: bool,
    /// The scheduling and tracking lines of `slurm.conf` (profile.rs).
    pub profile: Profile,
    /// The build scenario smd-410 upgrades the cluster to (`cluster test --upgrade-to`):
    /// staged, checked like a mix's builds; `slurm.conf` then names no PluginDir.
    pub upgrade_to: Option<PathBuf>,
    /// Environment of every Slurm daemon (kept in the cluster record for restarts).
    pub daemon_env: Vec<(String, String)>,
    /// Slurm's TLS (tls/s2n) between every program, with the cluster's own CA (tls.rs).
    pub tls: bool,
}

impl UpOptions {
    /// One build, one node.
    pub fn new(prefix: PathBuf, name: String, dir: PathBuf) -> UpOptions {
        UpOptions {
            builds: vec![Build {
                label: String::new(),
                prefix,
            }],
            nodes: None,
            name,
            dir,
            extra_conf: Vec::new(),
            isolate: true,
            profile: Profile::Default,
            upgrade_to: None,
            daemon_env: Vec::new(),
            tls: false,
        }
    }
}

/// The default directory of cluster `name`: short, because slurmd and MariaDB put UNIX
/// sockets in it (108-byte limit).
pub fn default_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("slurm-cluster-{name}"))
}

/// The builds with absolute prefixes, each checked (a mix: also against its staging
/// manifest, see nodes.rs).
fn checked_builds(builds: &[Build]) -> Result<Vec<Build>> {
    if builds.is_empty() {
        return Err(Error::Usage("no Slurm prefix given".into()));
    }
    builds
        .iter()
        .map(|b| {
            let prefix = std::path::absolute(&b.prefix).map_err(|e| Error::io(&b.prefix, e))?;
            super::host::check_prefix(&prefix)?;
            let b = Build {
                label: b.label.clone(),
                prefix,
            };
            if builds.len() > 1 {
                super::nodes::check_mixed_build(&b)?;
            }
            Ok(b)
        })
        .collect()
}

/// The nodes of a new cluster: names, builds, host names, addresses, ports, hardware.
fn plan_nodes(
    sh: &Shell,
    builds: &[Build],
    n: usize,
    isolated: bool,
    hostname: &str,
    ports: &[u16],
) -> Result<Vec<Node>> {
    let mut hw = std::collections::BTreeMap::new();
    for b in builds {
        hw.insert(b.prefix.clone(), slurmd_hw(sh, &b.prefix)?);
    }
    super::nodes::assign(builds, n)
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let name = node_name(i);
            Ok(Node {
                hostname: if isolated {
                    name.clone()
                } else {
                    hostname.to_string()
                },
                name,
                build: b.label.clone(),
                prefix: b.prefix.clone(),
                addr: node_addr(i, isolated),
                port: ports[i],
                hw: hw[&b.prefix].clone(),
            })
        })
        .collect()
}

/// Start a cluster. A cluster recorded in the directory that still runs is refused (clear
/// message naming `down`); the files of one that no longer runs are removed first. On any
/// failure, what was started is stopped again before the error is returned.
pub fn up(sh: &Shell, opts: &UpOptions) -> Result<Cluster> {
    let t = Instant::now();
    let builds = checked_builds(&opts.builds)?;
    let prefix = builds[0].prefix.clone();
    let upgrade_to = opts
        .upgrade_to
        .as_deref()
        .map(|to| super::upgrade::check_upgrade(&prefix, to))
        .transpose()?;
    if opts.tls {
        super::tls::check_builds(&builds, upgrade_to.as_deref())?;
    }
    let dir = std::path::absolute(&opts.dir).map_err(|e| Error::io(&opts.dir, e))?;
    clear_leftover(&opts.name, &dir)?;
    let (user, uid) = super::host::current_user()?;
    let isolated = isolation(opts.isolate, &user, uid)?;
    // Each node gets its own UTS and mount namespaces whenever they can be made, also when
    // the caller provides the head's (`peer`, `bench`): two slurmd cannot share /run.
    let node_ns = procs::can_isolate();
    let n = super::nodes::node_count(opts.nodes, builds.len(), node_ns)?;
    let layout = Layout { root: dir.clone() };
    layout.create(n)?;
    let hostname = short_hostname(sh)?;
    let (ports, node_ports) = Ports::pick(n)?;
    let nodes = plan_nodes(sh, &builds, n, node_ns, &hostname, &node_ports)?;
    let settings = Settings {
        layout: layout.clone(),
        cluster: opts.name.clone(),
        hostname: hostname.clone(),
        ports,
        user: user.clone(),
        plugin_dir: (builds.len() == 1 && upgrade_to.is_none()).then(|| prefix.join("lib/slurm")),
        nodes: nodes.clone(),
        profile: opts.profile,
        db_password: config::random_password()?,
        tls: opts.tls,
    };
    render::write_all(&settings, &opts.extra_conf)?;
    if opts.tls {
        super::tls::make_certs(sh, &layout)?;
    }
    let state = State {
        name: opts.name.clone(),
        prefix: prefix.clone(),
        root: dir.clone(),
        hostname,
        user,
        ports,
        nodes,
        profile: opts.profile,
        isolated,
        node_namespaces: node_ns,
        daemons: Vec::new(),
        namespaces: Vec::new(),
        upgrade_to,
        daemon_env: opts.daemon_env.clone(),
        tls: opts.tls,
    };
    state.save()?;
    let mut cluster = Cluster::from_state(state)?;
    print_plan(&cluster, &opts.name, &dir);
    if let Err(e) = cluster.start_all(sh) {
        eprintln!(
            "cluster `{}` failed to start; stopping what was started",
            opts.name
        );
        if let Err(d) = down(&dir) {
            eprintln!("  (down after the failure: {d})");
        }
        return Err(e);
    }
    println!(
        "cluster `{}` up in {:.1?} ({} node(s)); clients: `cargo xtask cluster exec --name {} -- sinfo`",
        opts.name,
        t.elapsed(),
        n,
        opts.name
    );
    Ok(cluster)
}

fn print_plan(cluster: &Cluster, name: &str, dir: &Path) {
    let s = &cluster.state;
    println!(
        "cluster `{name}`: {} (profile `{}`), ports slurmctld {} slurmdbd {} mariadb {}",
        dir.display(),
        s.profile.name(),
        s.ports.slurmctld,
        s.ports.slurmdbd,
        s.ports.mariadb
    );
    for n in cluster.nodes() {
        println!(
            "  {} {}:{} ({} CPUs, {} MB){}: {}",
            n.name,
            n.addr,
            n.port,
            n.hw.cpus,
            n.hw.real_memory,
            if n.build.is_empty() {
                String::new()
            } else {
                format!(" [{}]", n.build)
            },
            n.prefix.display()
        );
    }
    for var in ["SLURM_SHIM_EMULATION", "SLURM_SHIM_EMULATION_OFF"] {
        if let Some(v) = std::env::var_os(var) {
            println!(
                "note: the daemons inherit {var}={} (the darwin personality's macOS models)",
                v.to_string_lossy()
            );
        }
    }
    for (k, v) in &cluster.state.daemon_env {
        println!("note: the Slurm daemons run with {k}={v}");
    }
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
    let records: Vec<_> = cluster.state.daemons.iter().rev().cloned().collect();
    for rec in &records {
        match rec.stop(super::handle::STOP_GRACE) {
            Ok(how) => println!("  {} (pid {}): {}", rec.name, rec.pid, stopped_word(how)),
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
        "cluster `{}` in {} (prefix {}, profile `{}`)\n  ports: slurmctld {} slurmdbd {} mariadb {}; private /run: {}",
        s.name,
        dir.display(),
        s.prefix.display(),
        s.profile.name(),
        s.ports.slurmctld,
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
            Liveness::Running => match d.usage() {
                Some(u) => format!(
                    "running, RSS {} kB, {} descriptors, {} threads",
                    u.rss_kb, u.fds, u.threads
                ),
                None => "running".into(),
            },
            Liveness::Gone => "NOT RUNNING".into(),
            Liveness::Reused => "NOT RUNNING (PID reused by another process)".into(),
        };
        println!("  {:<13} pid {:<7} {what}", d.name, d.pid);
    }
    let left = cluster.leftovers();
    if !left.is_empty() {
        println!(
            "  {} other processes in the cluster's namespaces (job steps)",
            left.len()
        );
    }
    if cluster.is_running(Daemon::Slurmctld) {
        for (i, n) in cluster.nodes().iter().enumerate() {
            if let Ok(Some(state)) = cluster.node_state(i) {
                println!("  node {} ({}:{}): {state}", n.name, n.addr, n.port);
            }
        }
    }
    cluster.check_daemons()
}

/// Run `argv` against the cluster (environment and namespace), with our stdio; returns its
/// exit code. With `node`, on that node: its build's client, in its namespaces.
pub fn exec(dir: &Path, node: Option<&str>, argv: &[std::ffi::OsString]) -> Result<i32> {
    let cluster = Cluster::load(dir)?;
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| Error::Usage("exec: no command given".into()))?;
    let on = node
        .map(|name| cluster.slurmd(name).map(|d| d.node().unwrap_or(0)))
        .transpose()?;
    // A bare client name means the build's tool.
    let prog_path = Path::new(prog);
    let name = prog.to_string_lossy();
    let bare = prog_path.components().count() == 1 && cluster.bin(&name).is_file();
    let mut cmd = match (on, bare) {
        (None, true) => cluster.tool(&name),
        (None, false) => cluster.wrap(Command::new(prog)),
        (Some(i), true) => cluster.tool_on(i, &name)?,
        (Some(i), false) => cluster.wrap_on(i, Command::new(prog))?,
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
    use super::*;

    #[test]
    fn default_dir__short_and_named() {
        let d = default_dir("native");
        assert!(d.to_string_lossy().ends_with("slurm-cluster-native"));
        assert!(d.as_os_str().len() < 60, "{}", d.display());
    }
}
