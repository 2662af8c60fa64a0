//! The node commands' arguments (clap), shared by `slurm-mac` and `cargo xtask`.

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct GresConfArgs {
    /// The installed Slurm prefix whose sbin/slurmd is asked (a macOS build on a Mac; on
    /// Linux a darwin-personality build).
    #[arg(long)]
    pub prefix: PathBuf,
    /// Linux, darwin personality: the modelled Mac's hardware file (SLURM_SHIM_MAC_HARDWARE;
    /// format in shim/src/emulate/mac_hardware.rs). Default: that variable, else the shim's
    /// default Mac (no GPU).
    #[arg(long, value_name = "FILE")]
    pub hardware: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ServiceArgs {
    #[command(subcommand)]
    pub action: ServiceAction,
}

#[derive(Debug, Subcommand)]
pub enum ServiceAction {
    /// Write the plist to /Library/LaunchDaemons and load it (launchctl bootstrap system).
    Install(ServiceOptions),
    /// Unload it (launchctl bootout, waiting until the label is gone) and remove the plist.
    Uninstall(ServiceOptions),
    /// What launchd says about the label.
    Status(ServiceOptions),
    /// Print the plist (any OS).
    Print(ServiceOptions),
}

#[derive(Debug, Args, Clone)]
pub struct ServiceOptions {
    /// Which daemon.
    #[arg(long, value_enum, default_value = "slurmd")]
    pub daemon: crate::launchd::Daemon,
    /// The prefix holding sbin/slurmd (root's: the default is the root-owned copy
    /// `slurm-mac copy-keg` makes of the Homebrew keg on Apple Silicon).
    #[arg(long, default_value = "/opt/slurmmac/opt/slurm-wlm")]
    pub prefix: PathBuf,
    /// Where the daemon's stdout and stderr go.
    #[arg(long, default_value = "/opt/slurmmac/var/log/slurm")]
    pub log_dir: PathBuf,
    /// Configless: slurmd --conf-server HOST[:PORT] (the controller).
    #[arg(long, value_name = "HOST[:PORT]")]
    pub conf_server: Option<String>,
    /// Run the daemon under `caffeinate -s`: no system sleep while it runs (AC power only).
    #[arg(long)]
    pub caffeinate: bool,
    /// The directory of system daemon plists.
    #[arg(long, default_value = crate::launchd::LAUNCH_DAEMONS)]
    pub launchd_dir: PathBuf,
    /// The launchctl program (default /bin/launchctl).
    #[arg(long)]
    pub launchctl: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The prefix the build was configured for (build-slurm --prefix).
    #[arg(long)]
    pub prefix: PathBuf,
    /// Install below this root instead of / (a package root, a test).
    #[arg(long, value_name = "DIR")]
    pub destdir: Option<PathBuf>,
    /// The staged build to install: `build-slurm --prefix P --destdir D` stages it in D/P
    /// (its staging manifest must say it was configured for --prefix). Default:
    /// target/stage/P, where `build-slurm --prefix P --destdir target/stage` puts it.
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// The cluster's slurm.key (it must be the controller's), copied to <sysconfdir>/slurm.key
    /// with mode 0600, owned by root.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CopyKegArgs {
    /// The Homebrew keg to copy: the formula's directory, `$(brew --prefix slurm-wlm)`.
    #[arg(long, value_name = "DIR")]
    pub keg: PathBuf,
    /// The copy's root, owned by root, with as many bytes as the Homebrew prefix (default:
    /// /opt/slurmmac for /opt/homebrew, /opt/slurm for /usr/local).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// The cluster's slurm.key (the controller's), copied to <root>/etc/slurm/slurm.key with
    /// mode 0600, owned by root.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Print the copy's root and change nothing (no root needed).
    #[arg(long)]
    pub print_root: bool,
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// The prefix `install` installed into.
    #[arg(long)]
    pub prefix: PathBuf,
    /// The root `install` was given.
    #[arg(long, value_name = "DIR")]
    pub destdir: Option<PathBuf>,
}

#[derive(Debug, Args)]
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

#[derive(Debug, Args)]
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
    #[arg(long, default_value_t = crate::doctor::DEFAULT_SLURMD_PORT)]
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

#[derive(Debug, Args)]
pub struct PowerArgs {
    /// What slurmctld asks: `resume` (as ResumeProgram) or `suspend` (as SuspendProgram).
    #[arg(value_enum)]
    pub action: crate::power::Action,
    /// The nodes, as slurmctld passes them: a hostlist expression (`mac[1-3],mini`).
    pub hostlist: String,
    /// The map of nodes: each node's MAC address and suspend command, the broadcast address
    /// (TOML; the format is in docs/JOIN.md, power saving).
    #[arg(long, value_name = "FILE")]
    pub map: PathBuf,
    /// The scontrol that expands a hostlist with brackets (`scontrol show hostnames`).
    #[arg(long, value_name = "PATH", default_value = "scontrol")]
    pub scontrol: PathBuf,
    /// Seconds each suspend command (and scontrol) may take before it is killed.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout: u64,
}
