//! Asking the controller which release it runs, with the node's own build.
//!
//! Every Slurm RPC is authenticated, and with auth/slurm a client (`scontrol`) gets its
//! credential from a SACK socket served by a local daemon (Slurm 24.11
//! `src/plugins/auth/slurm/auth_slurm.c`: only sackd, slurmd, slurmctld and slurmdbd sign
//! with the key themselves). A Mac about to join runs no daemon yet, so the probe starts the
//! prefix's own `sackd` for the duration of one question:
//!
//! 1. `sackd -D --conf-server HOST[:PORT]` (configless) or `sackd -D -f FILE` (a local
//!    slurm.conf), with `SLURM_SACK_KEY` naming the key: configless, sackd fetches the
//!    configuration from slurmctld (`REQUEST_CONFIG`, signed with the key) exactly as the
//!    slurmd will, so the probe also proves the key, the address and that the controller
//!    serves configless;
//! 2. once its SACK socket exists, `scontrol show config` through it; the `SLURM_VERSION`
//!    line of the answer is the controller's version;
//! 3. sackd is stopped (by its PID: it is our child) and the scratch directory removed.
//!
//! On Linux as root both run in a private mount namespace with a scratch directory on
//! `/run` (util::process::spawn::private_run), so the probe never meets another daemon's
//! SACK socket. Elsewhere (macOS) the socket is the system's (`/var/run/slurm`,
//! patches/24.11/0011) and must be free: a Mac that already runs a slurmd has joined. Its
//! directory is made when missing, since sackd dies without it ([`make_run_dir`]), and
//! removed again with what the probe's sackd wrote there.
//!
//! A client newer than the controller cannot talk to it at all (the controller drops a
//! message of a protocol version it does not know): that failure is itself the answer, and
//! [`translate`] turns it, and the other failures a join meets, into [`Problem`]s that name
//! the fix. [`translate`] is a pure function of the programs' output, tested on recorded
//! outputs (tests below, and docs/JOIN.md).

use super::lines::{BadVersion, Version};
use driver_common::error::{Error, Result};
use driver_common::gate::workdir::WorkDir;
use driver_common::gate::{Owners, Program, env};
use driver_common::util::process::bounded::{poll, run_bounded};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub use crate::controller::{Controller, DEFAULT_PORT};

/// Why asking the controller failed, in the terms of its fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Nothing answered at the address (refused, no route, timed out).
    Unreachable { detail: String },
    /// The host name does not resolve.
    UnknownHost { detail: String },
    /// The controller rejected our credential: not its key.
    KeyMismatch { detail: String },
    /// The controller does not serve its configuration (no `enable_configless`).
    ConfiglessOff { detail: String },
    /// The controller closed the connection or answered in a protocol we do not speak: our
    /// build is newer than the controller (or the peer is no slurmctld).
    Protocol { detail: String },
    /// The configuration came, but its `PluginDir` (the controller's) does not hold this
    /// build's plugins: missing, or another release's ("Incompatible plugin version").
    PluginDir { detail: String },
    /// Anything else, with the programs' last lines.
    Other { detail: String },
}

impl Problem {
    /// The programs' own words behind the problem.
    pub fn detail(&self) -> &str {
        match self {
            Problem::Unreachable { detail }
            | Problem::UnknownHost { detail }
            | Problem::KeyMismatch { detail }
            | Problem::ConfiglessOff { detail }
            | Problem::Protocol { detail }
            | Problem::PluginDir { detail }
            | Problem::Other { detail } => detail,
        }
    }
}

/// The last lines of a program's output that carry `error:` or `fatal:` (else the last
/// lines), for a problem's detail.
fn errors_of(output: &str) -> String {
    let lines: Vec<&str> = output
        .lines()
        .filter(|l| l.contains("error") || l.contains("fatal"))
        .collect();
    let lines = if lines.is_empty() {
        output.lines().collect()
    } else {
        lines
    };
    lines[lines.len().saturating_sub(4)..].join("\n")
}

/// What went wrong, from the output of the probe's sackd and scontrol.
pub fn translate(output: &str) -> Problem {
    let o = output.to_ascii_lowercase();
    let detail = errors_of(output);
    let has = |needles: &[&str]| needles.iter().any(|n| o.contains(n));
    if has(&["configless mode is disabled"]) {
        Problem::ConfiglessOff { detail }
    } else if has(&[
        "incompatible plugin version",
        "incompatible slurm plugin",
        "couldn't find the specified plugin name",
        "no plugin dir given",
    ]) {
        Problem::PluginDir { detail }
    } else if has(&[
        "authentication error",
        "invalid authentication",
        "auth_g_verify",
        "sack_verify",
        "credential",
    ]) {
        Problem::KeyMismatch { detail }
    } else if has(&[
        "incompatible versions",
        "protocol version",
        "unsupported rpc",
        "zero bytes were transmitted",
        "unexpected message received",
        "insane message length",
        "header lengths are longer",
    ]) {
        Problem::Protocol { detail }
    } else if has(&[
        "name or service not known",
        "unable to resolve",
        "nodename nor servname",
        "could not resolve",
        "temporary failure in name resolution",
        "invalid controller",
    ]) {
        Problem::UnknownHost { detail }
    } else if has(&[
        "connection refused",
        "no route to host",
        "network is unreachable",
        "timed out",
        "unable to contact",
        "unable to establish",
    ]) {
        Problem::Unreachable { detail }
    } else {
        Problem::Other { detail }
    }
}

/// The `SLURM_VERSION` of `scontrol show config`'s answer.
pub fn version_of_config(show_config: &str) -> Result<Version, BadVersion> {
    let value = show_config
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == "SLURM_VERSION").then(|| v.trim())
        })
        .ok_or_else(|| BadVersion("(no SLURM_VERSION line in `scontrol show config`)".into()))?;
    Version::parse(value)
}

/// The local build's version: `sbin/slurmd -V` of the prefix (`slurm 24.11.5`).
pub fn local_version(prefix: &Path) -> Result<Version> {
    let slurmd = prefix.join("sbin/slurmd");
    if !driver_common::util::process::is_executable(&slurmd) {
        return Err(Error::NotASlurmPrefix {
            path: prefix.to_path_buf(),
            detail: format!("no executable {}", slurmd.display()),
        });
    }
    let mut c = Program::checked(&slurmd)?.command();
    c.arg("-V");
    let out = run_bounded(c, Duration::from_secs(30))?;
    let text = String::from_utf8_lossy(&out.stdout);
    Version::parse(&text).map_err(|e| Error::parse(format!("`{} -V`", slurmd.display()), e))
}

/// Where the configuration comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Fetched from slurmctld (`--conf-server`).
    Configless(Controller),
    /// A local slurm.conf naming the controller.
    Local(PathBuf),
}

/// One question to the controller.
#[derive(Debug, Clone)]
pub struct Ask<'a> {
    pub prefix: &'a Path,
    pub source: &'a Source,
    pub key: &'a Path,
    /// How long sackd may try before the controller counts as unreachable.
    pub timeout: Duration,
}

/// The answer: the controller's version, or why there is none.
pub type Answer = std::result::Result<Version, (Problem, String)>;

/// Ask (see the module doc). `Err` is an error of the probe itself (a program that cannot
/// start); what the controller said, or did not, is the [`Answer`].
/// Asks in a work directory of root's ([`WorkDir`]: under `/tmp`, never `TMPDIR`), with a
/// copy of the key in it (read without following a link), so nothing the probe's programs
/// read is another user's.
pub fn ask(a: &Ask<'_>) -> Result<Answer> {
    let work = WorkDir::new("slurm-join")?;
    let key = work.path.join("slurm.key");
    let bytes = driver_common::gate::file::read_nofollow(a.key)?;
    driver_common::util::fs::write_atomic(&key, &bytes, 0o600)?;
    ask_in(
        &Ask {
            key: &key,
            ..a.clone()
        },
        &work.path,
    )
}

fn ask_in(a: &Ask<'_>, work: &Path) -> Result<Answer> {
    let isolate = cfg!(target_os = "linux") && nix::unistd::geteuid().is_root();
    let run = work.join("run");
    std::fs::create_dir_all(run.join("slurm")).map_err(|e| Error::io(&run, e))?;
    let socket = sack_socket(isolate, &run)?;
    // sackd dies without the socket's directory (make_run_dir): outside a private `/run` (a
    // Mac) the probe makes it, and removes it with what its sackd wrote there.
    let made = match (isolate, socket.parent()) {
        (false, Some(dir)) => make_run_dir(dir)?.then(|| dir.to_path_buf()),
        _ => None,
    };
    let private = |cmd: &mut Command| {
        if isolate {
            if let Ok(dir) = std::ffi::CString::new(run.as_os_str().as_encoded_bytes()) {
                driver_common::util::process::spawn::private_run(cmd, dir, None, Vec::new());
            }
        }
    };
    let log = work.join("sackd.log");
    let (mut sackd, conf) = sackd_command(a)?;
    private(&mut sackd);
    let mut child = driver_common::util::process::spawn_logged(sackd, &log)?;
    let ready = poll(
        "sackd's SACK socket",
        a.timeout,
        Duration::from_millis(200),
        || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("Failed to load configs") || text.contains("fatal") {
                return Ok(Some(false));
            }
            if let Ok(Some(_)) = child.try_wait() {
                return Ok(Some(false));
            }
            Ok(socket.exists().then_some(true))
        },
    );
    let answer = match ready {
        Ok(true) => {
            let mut sc = Program::checked(&a.prefix.join("bin/scontrol"))?.command();
            sc.args(["show", "config"]);
            env::allow(&mut sc, "SLURM_CONF", &conf);
            private(&mut sc);
            config_answer(run_bounded(sc, Duration::from_secs(60)))
        }
        Ok(false) => {
            let t = std::fs::read_to_string(&log).unwrap_or_default();
            Err((translate(&t), t))
        }
        Err(_) => {
            let t = std::fs::read_to_string(&log).unwrap_or_default();
            let p = match translate(&t) {
                Problem::Other { .. } => Problem::Unreachable {
                    detail: format!("no answer within {:?}", a.timeout),
                },
                p => p,
            };
            Err((p, t))
        }
    };
    child.kill().ok();
    child.wait().ok();
    if let Some(dir) = made {
        let _ = std::fs::remove_dir_all(dir);
    }
    Ok(answer)
}

/// Makes sackd's run directory (0755) unless it exists; whether this call made it. sackd
/// makes `<dir>/conf` with a plain `mkdir()` first thing and dies when `<dir>` is missing
/// (`fatal: _establish_config_source: failed to create a clean cache dir`, Slurm 24.11
/// `src/sackd/sackd.c`); upstream's `etc/sackd.service.in` has systemd make it
/// (`RuntimeDirectory=slurm`), launchd has no such key.
pub fn make_run_dir(dir: &Path) -> Result<bool> {
    let existed = std::fs::symlink_metadata(dir).is_ok();
    driver_common::gate::dir::make_dirs(dir, 0o755, Owners::caller())?;
    Ok(!existed)
}

/// Where sackd puts its socket: below the private run directory when isolated, else the
/// real `/var/run/slurm/sack.socket`, which no other sackd may be serving.
fn sack_socket(isolate: bool, run: &Path) -> Result<PathBuf> {
    if isolate {
        return Ok(run.join("slurm/sack.socket"));
    }
    let socket = PathBuf::from("/var/run/slurm/sack.socket");
    if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
        return Err(Error::SackInUse { socket });
    }
    Ok(socket)
}

/// The sackd command for the configuration source, and the slurm.conf scontrol reads then.
fn sackd_command(a: &Ask<'_>) -> Result<(Command, PathBuf)> {
    let mut sackd = Program::checked(&a.prefix.join("sbin/sackd"))?.command();
    sackd.arg("-D");
    env::allow(&mut sackd, "SLURM_SACK_KEY", a.key);
    let conf = match a.source {
        Source::Configless(c) => {
            sackd.arg("--conf-server").arg(c.conf_server());
            // `/var/run`: macOS's run directory (patches/24.11/0011), and on Linux a symlink
            // to `/run`; the darwin personality's shim hides `/run` itself, as on a Mac.
            PathBuf::from("/var/run/slurm/conf/slurm.conf")
        }
        Source::Local(f) => {
            sackd.arg("-f").arg(f);
            f.clone()
        }
    };
    Ok((sackd, conf))
}

/// What `scontrol show config` (run once sackd is ready) says about the controller.
fn config_answer(out: Result<std::process::Output>) -> Answer {
    match out {
        Ok(o) if o.status.success() => version_of_config(&String::from_utf8_lossy(&o.stdout))
            .map_err(|e| {
                let t = e.to_string();
                (Problem::Other { detail: t.clone() }, t)
            }),
        Ok(o) => {
            let t = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            Err((translate(&t), t))
        }
        Err(e) => {
            let t = e.to_string();
            Err((Problem::Unreachable { detail: t.clone() }, t))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outputs recorded from the probe against live 24.11.5 loopback clusters (join::tests).
    #[test]
    fn translate__recorded_outputs() {
        let wrong_key = "sackd: error: _fetch_child: failed to fetch remote configs: Protocol authentication error\nsackd: error: Failed to load configs from slurmctld. Retrying in 10 seconds.\n";
        assert!(
            matches!(translate(wrong_key), Problem::KeyMismatch { detail } if detail.contains("Protocol authentication error"))
        );
        let nobody = "sackd: error: _fetch_child: failed to fetch remote configs: Unable to contact slurm controller (connect failure)\nsackd: error: Failed to load configs from slurmctld. Retrying in 10 seconds.\n";
        assert!(matches!(translate(nobody), Problem::Unreachable { .. }));
        // A 24.11 sackd given a 26.05 controller's configuration (its PluginDir).
        let other_plugins = "sackd: error: Couldn't load specified plugin name for auth/slurm: Incompatible plugin version\nsackd: error: cannot create auth context for auth/slurm\nsackd: fatal: auth_g_init() failed\n";
        assert!(matches!(
            translate(other_plugins),
            Problem::PluginDir { .. }
        ));
        let hidden_run = ": error: s_p_parse_file: cannot stat file /run/slurm/conf/slurm.conf: No such file or directory, retrying in 1sec up to 60sec\n: error: ClusterName needs to be specified\n: fatal: Unable to process configuration file\n";
        assert!(
            matches!(translate(hidden_run), Problem::Other { detail } if detail.contains("ClusterName"))
        );
        assert!(matches!(
            translate(
                "sackd: error: _fetch_child: failed to fetch remote configs: ConfigLess mode is disabled in slurm configuration.\n"
            ),
            Problem::ConfiglessOff { .. }
        ));
    }

    #[test]
    fn version_of_config__reads_slurm_version() {
        let text = "Configuration data as of 2026-12-01T12:00:00\nAccountingStorageBackupHost = (null)\nSLURM_CONF              = /etc/slurm/slurm.conf\nSLURM_VERSION           = 26.05.3\nSlurmctldHost[0]        = ctl(127.0.0.1)\n";
        assert_eq!(version_of_config(text).unwrap().text, "26.05.3");
        assert!(version_of_config("SLURM_CONF = x\n").is_err());
    }
}
