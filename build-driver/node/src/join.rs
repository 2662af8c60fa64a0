//! `cargo xtask join`: make this machine (a Mac) a compute node of an existing cluster, with
//! a build of ours, after checking that the controller will take it.
//!
//! ```text
//! cargo xtask join --prefix P --controller HOST[:PORT] [--key FILE] [--conf FILE]
//!                  [--dynamic FEATURES | --node-addr ADDR] [--name NAME] [--apply]
//! ```
//!
//! 1. The local build's version: `P/sbin/slurmd -V` (the binary itself, not a manifest: a
//!    prefix installed from a package has none).
//! 2. The controller's version, asked with the prefix's own sackd and scontrol through the
//!    key (ask.rs: why a sackd, and how failures become advice).
//! 3. The version rule (lines.rs, a pure function over release lines): refused when this
//!    build is newer than the controller or further back than its window, naming the lines
//!    to install.
//! 4. The plan (plan.rs): the key (0600) and, for a local config, slurm.conf in `P/etc`,
//!    and the slurmd command: configless `--conf-server`, dynamic `-Z --conf Feature=...`
//!    or fixed (a `NodeName=... NodeAddr=` line for the controller's admin). It is printed;
//!    `--apply` carries it out (write.rs: atomic, undone on failure).
//!
//! `--client` (client.rs): a submit-only node, the key and sackd instead of slurmd.
//!
//! Why printing is the default: joining changes a shared cluster (a node appears in its
//! partitions) and runs a root daemon; the checks are worth running alone, and a person
//! should see the command before it runs. Every input is checked before anything is
//! written (the key, the local config, the controller's answer), so a refused or failed
//! join leaves nothing behind. docs/JOIN.md is the user's guide.

pub mod ask;
pub mod client;
mod lines;
pub mod plan;
pub mod write;

use ask::{Controller, Problem, Source};
use driver_common::error::{Error, Result};
use lines::{Verdict, Version};
use std::path::{Path, PathBuf};
use std::time::Duration;

// The command's arguments (clap), read by `slurm-mac` and `cargo xtask`.
#[derive(Debug, clap::Args)]
pub struct JoinArgs {
    /// The installed Slurm prefix of this node (sbin/slurmd, sbin/sackd, bin/scontrol).
    #[arg(long)]
    pub prefix: PathBuf,
    /// The controller, HOST[:PORT] (SlurmctldPort, default 6817): configless, slurmd fetches
    /// its configuration from there (the controller needs SlurmctldParameters=enable_configless).
    #[arg(long, value_name = "HOST[:PORT]", required_unless_present = "conf")]
    pub controller: Option<String>,
    /// A local slurm.conf (a copy of the controller's) instead of configless.
    #[arg(long, value_name = "FILE", conflicts_with = "controller")]
    pub conf: Option<PathBuf>,
    /// The cluster's auth/slurm key (a copy of the controller's slurm.key; default
    /// <etc>/slurm.key).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// A dynamic node (slurmd -Z) with these features, comma-separated (the default shape;
    /// default features: the OS and architecture, e.g. macos,aarch64).
    #[arg(long, value_name = "FEATURES", conflicts_with = "node_addr")]
    pub dynamic: Option<String>,
    /// A fixed node at this address: prints the NodeName= line the controller needs.
    #[arg(long, value_name = "ADDR")]
    pub node_addr: Option<String>,
    /// The node's name (slurmd -N; default: the short host name).
    #[arg(long)]
    pub name: Option<String>,
    /// Where this build reads slurm.conf and slurm.key (default: <prefix>/etc; for a
    /// Homebrew keg or its copy, <root>/etc/slurm).
    #[arg(long, value_name = "DIR")]
    pub etc: Option<PathBuf>,
    /// Seconds to wait for the controller's answer (1 to 3600).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout: u64,
    /// Install the key (and --conf) and start slurmd, instead of printing the plan only.
    #[arg(long)]
    pub apply: bool,
    /// A submit-only node: the key and sackd (configless, from --controller; a LaunchDaemon
    /// with --apply), no slurmd; prints the environment the client commands need.
    #[arg(long, requires = "controller", conflicts_with_all = ["conf", "dynamic", "node_addr", "name"])]
    pub client: bool,
    /// With --client: where sackd's LaunchDaemon writes its output (default /var/log/slurm).
    #[arg(long, value_name = "DIR", requires = "client")]
    pub log_dir: Option<PathBuf>,
}

/// What the checks found: both versions and the rule's verdict (accepted).
#[derive(Debug, Clone)]
pub struct Checked {
    pub node: Version,
    pub controller: Version,
    pub behind: u32,
}

/// The advice for a problem met while asking the controller: (what happened, the fix).
fn advice(p: &Problem, where_: &str, node: &Version, key: &Path) -> (String, String) {
    let older: Vec<_> = (1..=4).filter_map(|n| node.line.back(n)).collect();
    match p {
        Problem::Unreachable { .. } => (
            "no answer".into(),
            format!("check the host name and port ({where_}; SlurmctldPort, default {}), that slurmctld runs there, and that no firewall drops the port", ask::DEFAULT_PORT),
        ),
        Problem::UnknownHost { .. } => (
            "the host name does not resolve".into(),
            "give the controller's name as this machine resolves it, or its address (--controller 192.0.2.1:6817)".into(),
        ),
        // Recorded (join::tests): a wrong key and a build newer than the controller look
        // the same from here. The older controller cannot read the newer header
        // ("unpack_header: protocol_version N not supported" in its log) and answers with an
        // authentication error, exactly as to a wrong key.
        Problem::KeyMismatch { .. } => (
            format!(
                "it rejected our credential: either {} is not its key, or the controller runs an older release than this build (Slurm {}), whose messages it cannot read and reports as an authentication error",
                key.display(),
                node.text
            ),
            format!(
                "run `scontrol --version` on the controller: if it is older than {}, install its line on this node ({}), since neither slurmd nor the client commands may be newer than slurmctld; otherwise copy its key (/etc/slurm/slurm.key there, or the slurm.key beside its slurm.conf) and pass it with --key",
                node.line,
                lines::list(&older)
            ),
        ),
        Problem::ConfiglessOff { .. } => (
            "it does not serve its configuration (configless is off)".into(),
            "add SlurmctldParameters=enable_configless to the controller's slurm.conf and restart slurmctld, or pass a copy of its slurm.conf with --conf FILE".into(),
        ),
        Problem::Protocol { .. } => (
            format!("it does not speak this build's protocol (Slurm {}): the controller runs an older release, and neither slurmd nor the client commands may be newer than slurmctld", node.text),
            format!("install the controller's release line on this node (older than {}: {}; `scontrol --version` on the controller names it), or upgrade the controller first", node.line, lines::list(&older)),
        ),
        Problem::PluginDir { .. } => (
            "its configuration names a PluginDir that does not hold this build's plugins (missing, or another release's)".into(),
            "on the controller, leave PluginDir unset (each build then uses its own), or list this node's plugin directory after the controller's (PluginDir=/usr/lib64/slurm:/opt/slurm/lib/slurm: Slurm skips another release's plugins); or pass --conf FILE with this build's PluginDir".into(),
        ),
        Problem::Other { .. } => (
            "the question failed".into(),
            "read the output below; docs/JOIN.md lists the usual causes".into(),
        ),
    }
}

/// Steps 1 to 3: both versions and the rule. Errors name the fix.
/// Before any program of the prefix runs, the gate: the whole install trusted
/// ([`crate::keg::trusted_install`]), and a `--conf` file trusted like a program.
pub fn check(prefix: &Path, source: &Source, key: &Path, timeout: Duration) -> Result<Checked> {
    crate::keg::trusted_install(prefix, &[])?;
    require_key(key)?;
    let where_ = match source {
        Source::Configless(c) => c.conf_server(),
        Source::Local(f) => {
            if !f.is_file() {
                return Err(Error::file(
                    f,
                    "no such slurm.conf: pass the controller's slurm.conf (a copy) with --conf, or leave --conf out for configless",
                ));
            }
            driver_common::gate::file::read_trusted(f).map_err(|e| {
                e.context("--conf: root installs and reads this file: give a copy root owns (sudo install -o root -m 644 FILE /etc/slurm-join.conf)")
            })?;
            format!("the controller named in {}", f.display())
        }
    };
    let node = ask::local_version(prefix)?;
    let answer = ask::ask(&ask::Ask {
        prefix,
        source,
        key,
        timeout,
    })?;
    let controller = match answer {
        Ok(v) => v,
        Err((p, _raw)) => {
            let (what, fix) = advice(&p, &where_, &node, key);
            return Err(Error::JoinController {
                controller: where_,
                what,
                fix,
                detail: p.detail().to_string(),
            });
        }
    };
    match lines::check(node.line, controller.line) {
        Verdict::Accepted { behind } => Ok(Checked {
            node,
            controller,
            behind,
        }),
        Verdict::NodeNewer { ahead, install } => Err(Error::JoinRefused {
            node: node.text.clone(),
            controller: controller.text.clone(),
            why: format!(
                "this build is {ahead} release(s) newer than the controller, and neither slurmd nor the client commands may be newer than slurmctld"
            ),
            install: lines::list(&install),
        }),
        Verdict::NodeTooOld {
            behind,
            window,
            install,
        } => Err(Error::JoinRefused {
            node: node.text.clone(),
            controller: controller.text.clone(),
            why: format!(
                "this build is {behind} releases older than the controller, which takes slurmd at most {window} releases back"
            ),
            install: lines::list(&install),
        }),
    }
}

/// The key must be a readable regular file before anything else happens.
fn require_key(key: &Path) -> Result<()> {
    let fix = "copy the controller's slurm.key (/etc/slurm/slurm.key there; e.g. `scp root@CONTROLLER:/etc/slurm/slurm.key .`) and pass it with --key FILE";
    use std::os::unix::fs::PermissionsExt;
    match std::fs::File::open(key).and_then(|f| f.metadata()) {
        // auth/slurm refuses a key that others may read (internal.c, S_IRWXO).
        Ok(m) if m.is_file() && m.permissions().mode() & 0o007 != 0 => Err(Error::JoinKey {
            path: key.to_path_buf(),
            problem: format!(
                "is open to other users (mode {:o}), which auth/slurm refuses",
                m.permissions().mode() & 0o777
            ),
            fix: format!("chmod 600 {}", key.display()),
        }),
        Ok(m) if m.is_file() && m.len() > 0 => Ok(()),
        Ok(_) => Err(Error::JoinKey {
            path: key.to_path_buf(),
            problem: "is not a key (empty, or not a regular file)".into(),
            fix: fix.into(),
        }),
        Err(e) => Err(Error::JoinKey {
            path: key.to_path_buf(),
            problem: format!("cannot be read ({e})"),
            fix: if e.kind() == std::io::ErrorKind::PermissionDenied {
                "run join with sudo (the key is root's), or fix its owner and mode".into()
            } else {
                fix.into()
            },
        }),
    }
}

/// The short host name: slurmd's default node name, pinned with `-N`.
pub(crate) fn short_hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| h.split('.').next().unwrap_or_default().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

pub fn run(args: JoinArgs) -> Result<()> {
    let prefix = std::path::absolute(&args.prefix).map_err(|e| Error::io(&args.prefix, e))?;
    let etc = args
        .etc
        .clone()
        .unwrap_or_else(|| crate::keg::sysconfdir(&prefix));
    let key = args.key.clone().unwrap_or_else(|| etc.join("slurm.key"));
    if args.client {
        return client::run(&args, &prefix, etc, &key);
    }
    let source = match (&args.conf, &args.controller) {
        (Some(f), _) => Source::Local(std::path::absolute(f).map_err(|e| Error::io(f, e))?),
        (None, Some(c)) => Source::Configless(Controller::parse(c)?),
        (None, None) => {
            return Err(Error::Usage(
                "join: pass --controller HOST[:PORT] (configless) or --conf FILE (a local slurm.conf)".into(),
            ));
        }
    };
    // Names first: a refused name must not cost a question to the controller.
    let node_name = args.name.clone().unwrap_or_else(short_hostname);
    crate::names::node_name(&node_name)?;
    if let Some(f) = &args.dynamic {
        crate::names::features(f)?;
    }
    if let Some(a) = &args.node_addr {
        crate::names::address("--node-addr", a)?;
    }
    let checked = check(&prefix, &source, &key, Duration::from_secs(args.timeout))?;
    println!(
        "join: this build is Slurm {}, the controller runs {}: accepted ({})",
        checked.node.text,
        checked.controller.text,
        match checked.behind {
            0 => "the same release line".to_string(),
            n => format!(
                "{n} release(s) older; the rule allows {}",
                checked.controller.line.window()
            ),
        }
    );
    let shape = match &args.node_addr {
        Some(a) => plan::Shape::Fixed {
            node_addr: a.clone(),
        },
        None => plan::Shape::Dynamic {
            features: args.dynamic.clone().unwrap_or_else(default_features),
        },
    };
    let hardware = match shape {
        plan::Shape::Fixed { .. } => Some(slurmd_c(&prefix)?),
        plan::Shape::Dynamic { .. } => None,
    };
    let plan = plan::Plan::checked(&plan::Inputs {
        slurmd: prefix.join("sbin/slurmd"),
        etc,
        key: std::path::absolute(&key).map_err(|e| Error::io(&key, e))?,
        conf_server: match &source {
            Source::Configless(c) => Some(c.conf_server()),
            Source::Local(_) => None,
        },
        local_conf: match &source {
            Source::Local(f) => Some(f.clone()),
            Source::Configless(_) => None,
        },
        shape,
        node_name,
        hardware,
    })?;
    print!("{}", plan.render());
    if args.apply {
        write::apply(&plan)?;
        println!("join: slurmd started; `sinfo -N` on the cluster shows the node");
    } else {
        println!("join: nothing done (pass --apply to install the files and start slurmd)");
    }
    Ok(())
}

/// Features of a dynamic node when `--dynamic` gives none: the OS and the architecture.
fn default_features() -> String {
    let os = if cfg!(target_os = "macos") {
        "macos"
    } else {
        std::env::consts::OS
    };
    format!("{os},{}", std::env::consts::ARCH)
}

/// `slurmd -C`: the node's hardware line for the controller.
fn slurmd_c(prefix: &Path) -> Result<String> {
    let mut c = driver_common::gate::Program::checked(&prefix.join("sbin/slurmd"))?.command();
    c.arg("-C");
    driver_common::util::process::bounded::read_bounded(c, Duration::from_secs(60))
}

/// The checked plan, or `None` when its inputs are refused (the attacks' view).
#[cfg(test)]
fn plan_checked(i: &plan::Inputs) -> Option<plan::Plan> {
    plan::Plan::checked(i).ok()
}

#[cfg(test)]
mod attacks;
