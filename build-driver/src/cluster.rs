//! `cargo xtask cluster test --prefix P`: a live one-node Slurm cluster on loopback from an
//! installed prefix, exercised with sbatch, srun and scancel, then stopped and removed.
//!
//! - slurmctld and slurmd from the prefix run in the foreground (`-D`) as our children, with
//!   `SLURM_CONF` pointing at a generated `slurm.conf` in a temporary directory that also holds
//!   state, spool, PID files, logs and the auth/slurm key (`slurm.key`, 1024 random bytes,
//!   0600; auth/slurm reads it beside `slurm.conf`).
//! - Ports: two free ports on 127.0.0.1 picked at run time. The node is
//!   `NodeAddr=127.0.0.1 NodeHostname=$(hostname -s)`, with the topology `slurmd -C` reports.
//! - auth/slurm's SACK sockets are fixed paths in Slurm 24.11 (`/run/slurmctld/sack.socket`,
//!   `/run/slurm/sack.socket`; no configuration moves them, see DARWIN-CATALOG B2), and the
//!   daemons create the directories themselves when run as root. We refuse to start if another
//!   process already serves one of these sockets, and remove what our daemons created.
//! - As root, SlurmUser and SlurmdUser are root. As another user they are that user, and the
//!   two `/run` directories must already exist and belong to that user (we say so).

mod bench;
mod config;
mod daemons;
mod jobs;
mod lab;
mod peer;
mod private_ns;

use crate::cli::{ClusterAction, ClusterArgs};
use crate::error::{Error, Result};
use config::{Layout, Settings};
use daemons::{Daemon, file_tail, poll, read_bounded};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use xshell::{Shell, cmd};

/// How long the daemons get to bring the node to `idle`.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a daemon gets to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(20);
const NODE: &str = "smoke1";

pub fn run(sh: &Shell, root: &Path, args: ClusterArgs) -> Result<()> {
    match args.action {
        ClusterAction::Test { prefix } => smoke(sh, root, &prefix),
        ClusterAction::Peer(args) => peer::run(sh, root, args),
        ClusterAction::Bench(args) => bench::run(sh, root, args),
    }
}

/// The SACK socket directories of auth/slurm (24.11: hard-coded in sack.c and sack_api.c;
/// under `/var/run` on macOS, where `/` is read-only: patches/24.11/0011).
fn sack_dirs() -> [PathBuf; 2] {
    let run = Path::new(if cfg!(target_os = "macos") {
        "/var/run"
    } else {
        "/run"
    });
    [run.join("slurmctld"), run.join("slurm")]
}

/// Start the cluster from `prefix`, run the smoke jobs, stop and clean up. The temporary
/// directory is removed on success and kept (its path printed) on failure.
pub fn smoke(sh: &Shell, _root: &Path, prefix: &Path) -> Result<()> {
    let start = Instant::now();
    let prefix = std::path::absolute(prefix).map_err(|e| Error::io(prefix, e))?;
    check_prefix(&prefix)?;
    let (user, uid) = current_user(sh)?;
    if uid != 0 {
        println!("note: not root: SlurmUser and SlurmdUser are `{user}`; jobs run as `{user}`");
    }
    let sack_created = prepare_sack_dirs(uid)?;
    let layout = Layout {
        root: unique_temp_dir()?,
    };
    layout.create()?;
    println!(
        "cluster: prefix {}, directory {}",
        prefix.display(),
        layout.root.display()
    );

    let result = run_cluster(sh, &prefix, &layout, &user);
    cleanup_sack(&sack_created);
    match result {
        Ok(()) => {
            std::fs::remove_dir_all(&layout.root).map_err(|e| Error::io(&layout.root, e))?;
            println!("cluster: smoke test passed in {:.1?}", start.elapsed());
            Ok(())
        }
        Err(e) => {
            eprintln!(
                "cluster: smoke test FAILED after {:.1?}; files kept in {}",
                start.elapsed(),
                layout.root.display()
            );
            Err(e)
        }
    }
}

fn run_cluster(sh: &Shell, prefix: &Path, layout: &Layout, user: &str) -> Result<()> {
    let t = Instant::now();
    let slurmd_bin = prefix.join("sbin/slurmd");
    let slurmctld_bin = prefix.join("sbin/slurmctld");
    let hw = config::parse_slurmd_c(&read_bounded(
        cmd!(sh, "{slurmd_bin} -C"),
        Duration::from_secs(30),
    )?)?;
    let hostname = read_bounded(cmd!(sh, "hostname -s"), Duration::from_secs(10))?
        .trim()
        .to_string();
    let ports = config::free_ports(2)?;
    let settings = Settings {
        layout: layout.clone(),
        cluster: "xtask".into(),
        node: NODE.into(),
        hostname,
        ctld_port: ports[0],
        slurmd_port: ports[1],
        user: user.to_string(),
        plugin_dir: prefix.join("lib/slurm"),
        hw,
    };
    let conf = layout.conf();
    std::fs::write(&conf, config::render(&settings)).map_err(|e| Error::io(&conf, e))?;
    config::write_key(&layout.key())?;
    println!(
        "  configured: {} CPUs, slurmctld port {}, slurmd port {} ({:.1?})",
        settings.hw.cpus,
        settings.ctld_port,
        settings.slurmd_port,
        t.elapsed()
    );

    let _env = sh.push_env("SLURM_CONF", &conf);
    let t = Instant::now();
    let mut ctld = Daemon::start(
        "slurmctld",
        cmd!(sh, "{slurmctld_bin} -D -i -f {conf}"),
        &layout.daemon_output("slurmctld"),
    )?;
    let mut slurmd = Daemon::start(
        "slurmd",
        cmd!(sh, "{slurmd_bin} -D -N {NODE} -f {conf}"),
        &layout.daemon_output("slurmd"),
    )?;
    println!(
        "  started slurmctld (pid {:?}) and slurmd (pid {:?})",
        ctld.pid(),
        slurmd.pid()
    );
    let clients = jobs::Clients {
        sh,
        bin: prefix.join("bin"),
        jobs: layout.jobs(),
        node: NODE.into(),
    };

    let mut outcome = wait_idle(sh, prefix, &mut ctld, &mut slurmd);
    let came_up = outcome.is_ok();
    if came_up {
        println!("  node {NODE} idle after {:.1?}", t.elapsed());
        let step = |what: &str, f: &dyn Fn() -> Result<()>| -> Result<()> {
            let t = Instant::now();
            f().map_err(|e| Error::Cluster(format!("{what}: {e}")))?;
            println!("  {what} check passed in {:.1?}", t.elapsed());
            Ok(())
        };
        outcome = step("sbatch", &|| clients.batch())
            .and_then(|()| step("srun", &|| clients.srun()))
            .and_then(|()| step("scancel", &|| clients.cancel()));
    }
    if outcome.is_err() {
        // Leave nothing running inside the cluster; best effort, the failure is reported below.
        if let Err(e) = if came_up {
            clients.cancel_all()
        } else {
            Ok(())
        } {
            eprintln!("  (could not cancel the remaining jobs: {e})");
        }
        report_failure(layout, &clients);
    }
    let t = Instant::now();
    for d in [&mut slurmd, &mut ctld] {
        let how = d.stop(sh, STOP_GRACE)?;
        println!("  stopped {}: {how:?}", d.name);
        if how == daemons::Stopped::AlreadyExited && outcome.is_ok() {
            outcome = Err(Error::Cluster(format!(
                "{} had exited before the end of the test",
                d.name
            )));
        }
    }
    println!("  daemons stopped in {:.1?}", t.elapsed());
    outcome
}

/// Poll until both daemons run, `scontrol ping` answers and `sinfo` shows the node idle.
fn wait_idle(sh: &Shell, prefix: &Path, ctld: &mut Daemon, slurmd: &mut Daemon) -> Result<()> {
    let sinfo = prefix.join("bin/sinfo");
    poll(
        &format!("node {NODE} to become idle"),
        READY_TIMEOUT,
        Duration::from_millis(500),
        || {
            ctld.check_running()?;
            slurmd.check_running()?;
            let out = daemons::run_bounded(
                cmd!(sh, "{sinfo} -h -N -n {NODE} -o %T"),
                Duration::from_secs(20),
            )?;
            let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
            Ok((out.status.success() && state == "idle").then_some(()))
        },
    )
}

fn report_failure(layout: &Layout, clients: &jobs::Clients<'_>) {
    let mut files = vec![
        layout.daemon_log("slurmctld"),
        layout.daemon_output("slurmctld"),
        layout.daemon_log("slurmd"),
        layout.daemon_output("slurmd"),
    ];
    files.extend(clients.outputs());
    for f in files.iter().filter(|f| f.exists()) {
        eprintln!("---- tail of {} ----\n{}", f.display(), file_tail(f, 40));
    }
}

/// The programs and plugin the smoke test needs.
pub(crate) fn check_prefix(prefix: &Path) -> Result<()> {
    let needed = crate::build_slurm::KEY_BINARIES
        .iter()
        .map(|(dir, name)| format!("{dir}/{name}"));
    if let Some(missing) = needed.map(|p| prefix.join(p)).find(|p| !p.is_file()) {
        return Err(Error::Cluster(format!(
            "{} is missing: {} is not a complete Slurm installation (run `cargo xtask build-slurm`)",
            missing.display(),
            prefix.display()
        )));
    }
    let auth = prefix.join("lib/slurm/auth_slurm.so");
    if !auth.is_file() {
        return Err(Error::Cluster(format!(
            "{} is missing: this Slurm was configured without auth/slurm (it needs libjwt and json-c at configure time)",
            auth.display()
        )));
    }
    Ok(())
}

/// The user name and uid (`id -un`, `id -u`).
fn current_user(sh: &Shell) -> Result<(String, u32)> {
    let name = read_bounded(cmd!(sh, "id -un"), Duration::from_secs(10))?
        .trim()
        .to_string();
    let uid = read_bounded(cmd!(sh, "id -u"), Duration::from_secs(10))?
        .trim()
        .parse::<u32>()
        .map_err(|e| Error::Cluster(format!("`id -u`: {e}")))?;
    Ok((name, uid))
}

/// Refuse if another process serves a SACK socket; as non-root, require the directories.
/// Returns the directories that did not exist (our daemons will create them).
fn prepare_sack_dirs(uid: u32) -> Result<Vec<PathBuf>> {
    let mut absent = Vec::new();
    for dir in sack_dirs() {
        let socket = dir.join("sack.socket");
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            return Err(Error::Cluster(format!(
                "{} is served by another Slurm daemon; stop it first (Slurm 24.11 auth/slurm has one fixed socket per daemon type)",
                socket.display()
            )));
        }
        if !dir.exists() {
            if uid != 0 {
                return Err(Error::Cluster(format!(
                    "{} does not exist and only root can create it; as root: mkdir -p {d} && chown {uid} {d}",
                    dir.display(),
                    d = dir.display()
                )));
            }
            absent.push(dir);
        }
    }
    Ok(absent)
}

/// Remove the SACK sockets our daemons left (nobody serves them any more) and the
/// directories that did not exist before.
fn cleanup_sack(created: &[PathBuf]) {
    for dir in sack_dirs() {
        let socket = dir.join("sack.socket");
        if socket.exists() && std::os::unix::net::UnixStream::connect(&socket).is_err() {
            std::fs::remove_file(&socket).ok();
        }
    }
    for dir in created {
        std::fs::remove_dir(dir).ok();
    }
}

/// A new directory under the system temporary directory, short enough for the UNIX socket
/// paths slurmd creates in its spool directory.
fn unique_temp_dir() -> Result<PathBuf> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("xtask-cluster-{}-{nanos:x}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, e))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    #![allow(non_snake_case)]
    use super::*;

    #[test]
    fn check_prefix__names_the_missing_program() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sbin")).unwrap();
        std::fs::write(dir.path().join("sbin/slurmctld"), "").unwrap();
        let err = check_prefix(dir.path()).unwrap_err().to_string();
        assert!(err.contains("sbin/slurmd is missing"), "{err}");
    }

    #[test]
    fn check_prefix__requires_auth_slurm() {
        let dir = tempfile::tempdir().unwrap();
        for (d, n) in crate::build_slurm::KEY_BINARIES {
            let p = format!("{d}/{n}");
            let f = dir.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, "").unwrap();
        }
        let err = check_prefix(dir.path()).unwrap_err().to_string();
        assert!(err.contains("auth_slurm.so is missing"), "{err}");
        std::fs::create_dir_all(dir.path().join("lib/slurm")).unwrap();
        std::fs::write(dir.path().join("lib/slurm/auth_slurm.so"), "").unwrap();
        check_prefix(dir.path()).unwrap();
    }

    #[test]
    fn unique_temp_dir__creates_distinct_directories() {
        let (a, b) = (unique_temp_dir().unwrap(), unique_temp_dir().unwrap());
        assert_ne!(a, b);
        assert!(a.is_dir() && b.is_dir());
        std::fs::remove_dir(a).unwrap();
        std::fs::remove_dir(b).unwrap();
    }

    #[test]
    fn current_user__matches_id() {
        let sh = Shell::new().unwrap();
        let (name, uid) = current_user(&sh).unwrap();
        assert!(!name.is_empty());
        assert_eq!(uid.to_string(), cmd!(sh, "id -u").read().unwrap());
    }
}
