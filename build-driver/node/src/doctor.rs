//! `slurm-mac doctor`: one report of everything that stops this machine from being a Slurm
//! node, each finding with its fix; the command fails when any check fails.
//!
//! ```text
//! slurm-mac doctor --prefix P [--key FILE] [--expect-key FILE] [--sack-dir DIR]
//!                  [--slurmd-port N] [--name NAME] [--node-addr ADDR]
//!                  [--controller HOST[:PORT]] [--timeout S] [--no-ask] [--conf FILE] [--json]
//! ```
//!
//! One file per check, each returning typed [`Finding`]s (never text parsed later):
//! key.rs (the auth/slurm key), files.rs (what root runs and reads under the prefix, by
//! driver_common's trust rule), sack.rs (the SACK directory), port.rs (slurmd's port),
//! name.rs (this node's name resolves, to `--node-addr`), sleep.rs (`pmset -g` on macOS),
//! controller.rs (TCP reach, then join's own version probe and rule), plugins.rs (what this
//! Mac does with the cluster's plugin choices, and plugins the build lacks). Clock skew and uid/gid
//! agreement need the controller's side and are reported as not checked, with that reason.
//! Every skip says why. docs/JOIN.md ("Doctor") shows a report.

mod controller;
mod files;
mod key;
mod name;
mod plugins;
mod port;
mod sack;
mod sleep;

use driver_common::error::{Error, Result};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

// The command's arguments (clap), read by `slurm-mac` and `cargo xtask`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The installed Slurm prefix of this node (sbin/slurmd, sbin/sackd, lib/slurm, etc).
    #[arg(long)]
    pub prefix: PathBuf,
    /// The auth/slurm key to check (default <prefix>/etc/slurm.key; for a Homebrew keg or
    /// its copy, <root>/etc/slurm/slurm.key).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// A copy of the controller's slurm.key: the key must hold the same bytes.
    #[arg(long, value_name = "FILE")]
    pub expect_key: Option<PathBuf>,
    /// The SACK socket directory (default /var/run/slurm on macOS, /run/slurm on Linux).
    #[arg(long, value_name = "DIR")]
    pub sack_dir: Option<PathBuf>,
    /// slurmd's port (SlurmdPort), which must be free.
    #[arg(long, default_value_t = DEFAULT_SLURMD_PORT)]
    pub slurmd_port: u16,
    /// This node's name (default: the short host name), which must resolve.
    #[arg(long)]
    pub name: Option<String>,
    /// The address the name must resolve to.
    #[arg(long, value_name = "ADDR")]
    pub node_addr: Option<String>,
    /// The controller, HOST[:PORT] (default port 6817): reached over TCP, then asked its
    /// release as `join` asks it (the version rule).
    #[arg(long, value_name = "HOST[:PORT]")]
    pub controller: Option<String>,
    /// Seconds to wait for a name lookup, a TCP connection or the controller's answer.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout: u64,
    /// The cluster's slurm.conf (a copy of the controller's) whose plugin choices are
    /// judged: what this Mac runs instead of cgroup and /proc plugins, and any plugin the
    /// build lacks. Default: <prefix>/etc/slurm.conf, else the configless copies
    /// (/var/run/slurm/conf, /var/spool/slurmd/conf-cache); cgroup.conf is read beside it.
    #[arg(long, value_name = "FILE")]
    pub conf: Option<PathBuf>,
    /// Do not ask the controller's release (the probe starts this prefix's sackd once).
    #[arg(long)]
    pub no_ask: bool,
    /// Print the report as JSON: an array of {check, status, detail, fix}.
    #[arg(long)]
    pub json: bool,
}

pub use controller::ControllerProblem;
pub use files::FileProblem;
pub use key::KeyProblem;
pub use name::NameProblem;
pub use plugins::PluginProblem;
pub use port::DEFAULT_SLURMD_PORT;
pub use sack::SackProblem;

/// Which check a finding belongs to (the report's `<check>` word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Key,
    Files,
    SackDir,
    Port,
    Name,
    Sleep,
    Controller,
    Version,
    Plugins,
    ClockSkew,
    Ids,
}

impl Check {
    pub fn label(self) -> &'static str {
        match self {
            Check::Key => "key",
            Check::Files => "files",
            Check::SackDir => "sack-dir",
            Check::Port => "slurmd-port",
            Check::Name => "node-name",
            Check::Sleep => "sleep",
            Check::Controller => "controller",
            Check::Version => "version-rule",
            Check::Plugins => "plugins",
            Check::ClockSkew => "clock-skew",
            Check::Ids => "uid-gid",
        }
    }
}

/// What stops the node, by check; each knows its detail and its fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    Key(KeyProblem),
    File(FileProblem),
    Sack(SackProblem),
    /// Something already listens on slurmd's port.
    PortTaken {
        addr: std::net::SocketAddr,
        error: String,
    },
    Name(NameProblem),
    /// `pmset -g` says the system sleeps after this many minutes.
    Sleeps {
        minutes: u32,
    },
    /// `pmset -g` could not be run or read.
    Pmset(String),
    Controller(ControllerProblem),
    Plugins(PluginProblem),
}

impl Problem {
    pub fn detail(&self) -> String {
        match self {
            Problem::Key(p) => p.detail(),
            Problem::File(p) => p.detail(),
            Problem::Sack(p) => p.detail(),
            Problem::PortTaken { addr, error } => {
                format!("{addr} is taken ({error}): slurmd could not listen there")
            }
            Problem::Name(p) => p.detail(),
            Problem::Sleeps { minutes } => format!(
                "the system sleeps after {minutes} idle minute(s) (`pmset -g`: sleep {minutes}); a sleeping node stops answering and the controller marks it DOWN"
            ),
            Problem::Pmset(e) => format!("cannot read the sleep settings: {e}"),
            Problem::Controller(p) => p.detail(),
            Problem::Plugins(p) => p.detail(),
        }
    }

    pub fn fix(&self) -> String {
        match self {
            Problem::Key(p) => p.fix(),
            Problem::File(p) => p.fix(),
            Problem::Sack(p) => p.fix(),
            Problem::PortTaken { addr, .. } => format!(
                "find the owner with `sudo lsof -nP -iTCP:{port} -sTCP:LISTEN` and stop it (an old slurmd: `sudo launchctl bootout system/org.slurm.slurmd`), or give slurmd another SlurmdPort in slurm.conf and --slurmd-port",
                port = addr.port()
            ),
            Problem::Name(p) => p.fix(),
            Problem::Sleeps { .. } => "sudo pmset -a sleep 0 (or run slurmd under caffeinate: slurm-mac service install --caffeinate)".into(),
            Problem::Pmset(_) => "run `pmset -g` by hand and check `sleep` is 0".into(),
            Problem::Controller(p) => p.fix(),
            Problem::Plugins(p) => p.fix(),
        }
    }
}

/// A check's verdict: fine (with what was seen), failed, or skipped (with why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Ok(String),
    Fail(Problem),
    Skip(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub check: Check,
    pub verdict: Verdict,
}

impl Finding {
    pub fn ok(check: Check, detail: impl Into<String>) -> Finding {
        Finding {
            check,
            verdict: Verdict::Ok(detail.into()),
        }
    }
    pub fn fail(check: Check, p: Problem) -> Finding {
        Finding {
            check,
            verdict: Verdict::Fail(p),
        }
    }
    pub fn skip(check: Check, why: impl Into<String>) -> Finding {
        Finding {
            check,
            verdict: Verdict::Skip(why.into()),
        }
    }
    pub fn failed(&self) -> bool {
        matches!(self.verdict, Verdict::Fail(_))
    }
}

/// Everything the checks look at, resolved from the command line (tests build it directly:
/// a temporary prefix and SACK directory, loopback only).
#[derive(Debug, Clone)]
pub struct Params {
    pub prefix: PathBuf,
    pub key: PathBuf,
    pub expect_key: Option<PathBuf>,
    pub sack_dir: PathBuf,
    pub slurmd_port: u16,
    /// The addresses slurmd's port is tried on.
    pub bind: Vec<IpAddr>,
    pub name: String,
    pub node_addr: Option<String>,
    pub controller: Option<String>,
    pub timeout: Duration,
    /// Ask the controller's release with join's probe (starts the prefix's sackd once).
    pub ask_version: bool,
    /// How names are resolved: [`name::resolve`] (the system's resolver); tests give a
    /// stand-in so that no query leaves the machine.
    pub resolver: name::Resolver,
    /// The slurm.conf whose plugin choices are judged (`--conf`, else the first found of
    /// [`plugins::default_candidates`]); `None`: that check is skipped, saying why.
    pub conf: Option<PathBuf>,
}

/// Every check, in the report's order.
pub fn examine(p: &Params) -> Vec<Finding> {
    let mut out = key::check(&p.key, p.expect_key.as_deref());
    let key_ok = !out.iter().any(Finding::failed);
    let files = files::check(&p.prefix);
    // The probe runs this prefix's sackd and scontrol: never when the files root would run
    // failed their check.
    let files_ok = !files.iter().any(Finding::failed);
    out.extend(files);
    out.push(sack::check(&p.sack_dir));
    out.push(port::check(&p.bind, p.slurmd_port));
    out.push(name::check(
        p.resolver,
        &p.name,
        p.node_addr.as_deref(),
        p.timeout,
    ));
    out.push(sleep::check(p.timeout));
    out.extend(controller::check(p, key_ok, files_ok));
    out.extend(plugins::check(&p.prefix, p.conf.as_deref()));
    let why = "needs the controller's side, which doctor does not log into";
    out.push(Finding::skip(
        Check::ClockSkew,
        format!("not checked: {why} (compare `date -u` here and on the controller; auth/slurm credentials carry a time)"),
    ));
    out.push(Finding::skip(
        Check::Ids,
        format!("not checked: {why} (`id USER` must give the same uid and gids here and on the controller for every job user)"),
    ));
    out
}

/// The report: `ok|FAIL|skip  <check>: <detail>`, and `  fix: ...` under each failure.
pub fn render(findings: &[Finding]) -> String {
    let mut s = String::new();
    for f in findings {
        let (word, detail) = match &f.verdict {
            Verdict::Ok(d) => ("ok", d.clone()),
            Verdict::Fail(p) => ("FAIL", p.detail()),
            Verdict::Skip(why) => ("skip", why.clone()),
        };
        s.push_str(&format!("{word:<4}  {}: {detail}\n", f.check.label()));
        if let Verdict::Fail(p) = &f.verdict {
            s.push_str(&format!("  fix: {}\n", p.fix()));
        }
    }
    s
}

/// The report as JSON: `[{"check", "status": "ok|FAIL|skip", "detail", "fix"}]` (`fix`
/// only on failures), the same words as [`render`].
pub fn render_json(findings: &[Finding]) -> String {
    let rows: Vec<serde_json::Value> = findings
        .iter()
        .map(|f| {
            let mut row = serde_json::json!({ "check": f.check.label() });
            let (status, detail) = match &f.verdict {
                Verdict::Ok(d) => ("ok", d.clone()),
                Verdict::Fail(p) => {
                    row["fix"] = p.fix().into();
                    ("FAIL", p.detail())
                }
                Verdict::Skip(why) => ("skip", why.clone()),
            };
            row["status"] = status.into();
            row["detail"] = detail.into();
            row
        })
        .collect();
    serde_json::Value::Array(rows).to_string()
}

/// The default SACK directory: Slurm's run directory (patches/24.11/0011: `/var/run` on
/// macOS, `/run` elsewhere) and `slurm` below it.
pub fn default_sack_dir() -> PathBuf {
    PathBuf::from(crate::join::client::RUN_DIR)
}

pub fn run(args: DoctorArgs) -> Result<()> {
    let prefix = std::path::absolute(&args.prefix).map_err(|e| Error::io(&args.prefix, e))?;
    let params = Params {
        key: args
            .key
            .clone()
            .unwrap_or_else(|| crate::keg::sysconfdir(&prefix).join("slurm.key")),
        prefix: prefix.clone(),
        expect_key: args.expect_key.clone(),
        sack_dir: args.sack_dir.clone().unwrap_or_else(default_sack_dir),
        slurmd_port: args.slurmd_port,
        bind: vec![IpAddr::from([0, 0, 0, 0]), IpAddr::from([127, 0, 0, 1])],
        name: args
            .name
            .clone()
            .unwrap_or_else(crate::join::short_hostname),
        node_addr: args.node_addr.clone(),
        controller: args.controller.clone(),
        timeout: Duration::from_secs(args.timeout),
        ask_version: !args.no_ask,
        resolver: name::resolve,
        conf: plugins::choose_conf(args.conf.as_deref(), &plugins::default_candidates(&prefix)),
    };
    let findings = examine(&params);
    if args.json {
        println!("{}", render_json(&findings));
    } else {
        print!("{}", render(&findings));
    }
    let failed = findings.iter().filter(|f| f.failed()).count();
    if failed > 0 {
        return Err(Error::DoctorFailed { failed });
    }
    if !args.json {
        println!("doctor: nothing found that stops this machine from being a Slurm node");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
