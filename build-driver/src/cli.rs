//! The command line (binding names: see DESIGN.md, "The build driver").

use crate::cluster::profile::Profile;
use crate::personality::Personality;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    about = "Build upstream Slurm for macOS compute nodes, and prove Linux unchanged"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Regenerate shim/include/slurm_shim.h from the shim's sources and export table.
    Codegen(CodegenArgs),
    /// Download (or take a local) Slurm source, verify it against its pin, unpack it under slurm-src/.
    Fetch(FetchArgs),
    /// Copy the pristine source, apply patches/<line>/, regenerate autotools files, build the
    /// shim, configure, make and install Slurm.
    BuildSlurm(BuildArgs),
    /// Everything CI runs: shim tests, codegen --check, Linux non-regression, darwin personality.
    Ci(CiArgs),
    /// A local Slurm cluster on loopback from an installed prefix.
    Cluster(ClusterArgs),
    /// Check that every plugin's undefined symbols resolve in every program that loads it.
    Audit(AuditArgs),
    /// Build the third-party libraries (OpenSSL, jansson, json-c, hwloc, libjwt 1.x) for an
    /// Apple target from the pins in slurm-src/deps.toml.
    Deps(DepsArgs),
    /// Scan a Slurm source tree for hazards on macOS (never-initialised pthread objects,
    /// /proc, /run, /sys paths, memory rlimits, descriptor loops, ...) in the code a compute
    /// node runs.
    Lint(LintArgs),
    /// Print the gres.conf and the slurm.conf NodeName= line (GPU, CPU Features) of this
    /// machine from a built slurmd (`slurmd -v -C`); on Linux, of the darwin personality's
    /// modelled Mac, marked as such.
    GresConf(GresConfArgs),
    /// A Homebrew bottle of Slurm for a macOS target, built here (with its .bottle.json, the
    /// formula slurm-wlm.rb and the LaunchDaemon plist), checked: signatures, install names,
    /// no build-machine path.
    Bottle(BottleArgs),
    /// slurmd (or sackd) as a macOS LaunchDaemon: print the plist, install, uninstall, status.
    Service(ServiceArgs),
    /// Install a staged build into its prefix (staged, then renamed; a manifest), with the
    /// cluster's slurm.key.
    Install(InstallArgs),
    /// Remove what `install` installed (by its manifest); slurm.conf and slurm.key stay.
    Uninstall(UninstallArgs),
    /// Join this machine to a cluster as a compute node: check the controller's release
    /// against the version rule with this build's own sackd and scontrol, then print (with
    /// --apply: carry out) the key install and the slurmd command (docs/JOIN.md).
    Join(JoinArgs),
}

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
pub struct BottleArgs {
    /// A pinned Slurm version (slurm-src/pins.toml), e.g. 24.11.5.
    #[arg(long)]
    pub version: String,
    /// aarch64-apple-darwin (tag arm64_sonoma, /opt/homebrew) or x86_64-apple-darwin
    /// (tag sonoma, /usr/local).
    #[arg(long)]
    pub target: String,
    /// Where the bottle, its .bottle.json and the formula go (default: target/bottle/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Parallel make jobs for the Slurm build (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Where apt is absent (macOS): a Debian mirror's base URL for the pinned third-party
    /// tarballs (as `cargo xtask deps --debian-mirror`).
    #[arg(long, value_name = "URL")]
    pub debian_mirror: Option<String>,
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
    /// The prefix holding sbin/slurmd.
    #[arg(long, default_value = "/opt/homebrew/opt/slurm-wlm")]
    pub prefix: PathBuf,
    /// Where the daemon's stdout and stderr go.
    #[arg(long, default_value = "/opt/homebrew/var/log/slurm")]
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
    /// Where this build reads slurm.conf and slurm.key (default: <prefix>/etc).
    #[arg(long, value_name = "DIR")]
    pub etc: Option<PathBuf>,
    /// Seconds to wait for the controller's answer.
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
    /// Install the key (and --conf) and start slurmd, instead of printing the plan only.
    #[arg(long)]
    pub apply: bool,
}

#[derive(Debug, Args)]
pub struct LintArgs {
    /// The top of a Slurm source tree (pristine, e.g. slurm-src/24.11.5, or patched).
    #[arg(long)]
    pub source: PathBuf,
    /// Accepted findings (e.g. ci/expectations/lint-24.11.toml): succeed only when the
    /// findings are exactly these. Without it, any finding fails.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DepsArgs {
    /// Rust target triple (aarch64-apple-darwin or x86_64-apple-darwin).
    #[arg(long)]
    pub target: String,
    /// Parallel jobs per library build (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Where apt is absent (macOS): a Debian mirror's base URL; the pinned orig tarballs are
    /// then downloaded from its pool/ with curl (and sha256-checked like any download).
    #[arg(long, value_name = "URL")]
    pub debian_mirror: Option<String>,
    /// macOS: build json-c and hwloc too, even where Homebrew has them (a self-contained
    /// prefix, as a bottle or the formula's source build needs).
    #[arg(long)]
    pub build_all: bool,
}

#[derive(Debug, Args)]
pub struct CodegenArgs {
    /// Fail if the committed header differs from what would be generated.
    #[arg(long)]
    pub check: bool,
}

/// Where a Slurm source comes from.
#[derive(Debug, Args, Clone)]
pub struct SourceArgs {
    /// A pinned version (see slurm-src/pins.toml), e.g. 24.11.5 or 26.11-snapshot. With
    /// --source it names the pin the local source is checked against.
    #[arg(long)]
    pub version: Option<String>,
    /// A local source, instead of downloading. A .tar.gz: checked against --version's pin, or
    /// else against the pin with the same sha256 (no such pin: error). A git directory (bare
    /// repository or checkout): the commit of --version's git pin, or else of the one git pin
    /// whose commit it contains, is exported with `git archive`. An unpacked tree (configure.ac
    /// and META): copied as unverified version `<META version>-local`, without --version.
    #[arg(long, value_name = "DIR|TARBALL|GIT_DIR")]
    pub source: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Origin {
    /// Debian's source package slurm-wlm, through a private apt state directory.
    Debian,
}

#[derive(Debug, Args)]
pub struct FetchArgs {
    #[command(flatten)]
    pub src: SourceArgs,
    /// Get the tarball from a distribution's source package instead of the pin's URLs.
    #[arg(long, value_enum)]
    pub from: Option<Origin>,
}

#[derive(Debug, Args, Clone)]
pub struct BuildArgs {
    #[command(flatten)]
    pub src: SourceArgs,
    #[arg(long, value_enum, default_value = "native")]
    pub personality: Personality,
    /// Build the pristine tree without patches/<line>/.
    #[arg(long)]
    pub no_patches: bool,
    /// Rust target triple to build for (default: this machine).
    #[arg(long)]
    pub target: Option<String>,
    /// Installation prefix (default: a staging directory under target/). With --destdir it
    /// is the prefix the programs are configured for, not where the files go.
    #[arg(long)]
    pub prefix: Option<PathBuf>,
    /// Stage the install below this directory (`make install DESTDIR=...`): the files of
    /// --prefix P land in DIR/P (a Homebrew Cellar path built on another machine).
    #[arg(long, value_name = "DIR")]
    pub destdir: Option<PathBuf>,
    /// configure's --sysconfdir (where slurm.conf is read; default PREFIX/etc).
    #[arg(long, value_name = "DIR")]
    pub sysconfdir: Option<PathBuf>,
    /// configure's --localstatedir (default PREFIX/var).
    #[arg(long, value_name = "DIR")]
    pub localstatedir: Option<PathBuf>,
    /// Parallel make jobs (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// macOS targets: prefix holding the target's json-c, libjwt and hwloc (for
    /// auth/slurm, cred/slurm, serializer/json and hwloc topology); without it they are
    /// configured off.
    #[arg(long)]
    pub deps_prefix: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CiArgs {
    /// Pinned version to build (default: 24.11.5).
    #[arg(long, default_value = "24.11.5")]
    pub version: String,
    /// A local Slurm source instead of the pinned version.
    #[arg(long)]
    pub source: Option<PathBuf>,
    /// Only the shim lane (tests, codegen --check, cross builds); no Slurm builds.
    #[arg(long)]
    pub shim_only: bool,
    /// Keep the pristine (unpatched) native build after its `make check` results are
    /// recorded; by default it is removed to halve the lanes' peak disk use (about 1.5 GiB).
    #[arg(long)]
    pub keep_builds: bool,
}

#[derive(Debug, Args)]
pub struct ClusterArgs {
    #[command(subcommand)]
    pub action: ClusterAction,
}

/// Which cluster: by name (directory `<tmp>/slurm-cluster-<name>`) or by directory.
#[derive(Debug, Args, Clone)]
pub struct ClusterTarget {
    /// The cluster's name (also its Slurm ClusterName); two names run side by side.
    #[arg(long)]
    pub name: Option<String>,
    /// The cluster's directory (default: `<tmp>/slurm-cluster-<name>`).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// The `slurm.conf` profile of a cluster (`cargo xtask cluster profiles` prints them).
#[derive(Debug, Args, Clone, Copy)]
pub struct ProfileArg {
    /// Scheduling and tracking lines of slurm.conf: default (cores and memory consumable,
    /// every job gets its share of memory), poc (the proof of concept's slurm.conf), cpu (the
    /// harness's earlier configuration: no RealMemory, no DefMemPerCPU).
    #[arg(long, value_enum, default_value = "default")]
    pub profile: Profile,
}

/// What a cluster is made of: one build (`--prefix`) or several (`--mix`), and its nodes.
#[derive(Debug, Args, Clone)]
pub struct ShapeArgs {
    /// The installed Slurm prefix (every daemon runs it).
    #[arg(long, required_unless_present = "mix", conflicts_with = "mix")]
    pub prefix: Option<PathBuf>,
    /// Nodes of several builds in one cluster: LABEL=PREFIX,LABEL=PREFIX (e.g.
    /// native=P1,darwin=P2). The nodes are split among them in order (the label becomes a
    /// node feature); slurmctld, slurmdbd and the harness's clients run the first.
    #[arg(long, value_name = "LABEL=PREFIX,...")]
    pub mix: Option<String>,
    /// How many nodes (slurmd on 127.0.0.11, .12, ...), 1 to 4 (default 1, or one per --mix
    /// build).
    #[arg(long)]
    pub nodes: Option<usize>,
}

#[derive(Debug, Subcommand)]
pub enum ClusterAction {
    /// Start MariaDB, slurmdbd, slurmctld and one slurmd per node on loopback, detached;
    /// return when every node is idle.
    Up {
        #[command(flatten)]
        shape: ShapeArgs,
        #[command(flatten)]
        target: ClusterTarget,
        #[command(flatten)]
        profile: ProfileArg,
    },
    /// Print the profiles (`--profile NAME`) and their slurm.conf lines, as a Markdown table.
    Profiles,
    /// Say what runs.
    Status {
        #[command(flatten)]
        target: ClusterTarget,
    },
    /// Stop exactly what `up` started (by PID and start time), and the job processes left.
    Down {
        #[command(flatten)]
        target: ClusterTarget,
    },
    /// Run a command against the cluster (SLURM_CONF and the cluster's private /run).
    Exec {
        #[command(flatten)]
        target: ClusterTarget,
        /// Run it on this node (`node2`): the node's build's client, in the node's namespaces
        /// (its host name, its slurmd's SACK socket).
        #[arg(long, value_name = "NODE")]
        node: Option<String>,
        /// The command; a bare Slurm client name (sinfo, sbatch, ...) means the prefix's.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// `up`, the verification scenarios, `down`.
    Test {
        #[command(flatten)]
        shape: ShapeArgs,
        #[command(flatten)]
        target: ClusterTarget,
        /// Run only the scenarios whose name starts with this (repeatable).
        #[arg(long)]
        only: Vec<String>,
        /// Leave the cluster running afterwards.
        #[arg(long)]
        keep: bool,
        #[command(flatten)]
        profile: ProfileArg,
        /// A newer build (within Slurm's upgrade window: at most three releases later) that
        /// scenario smd-410 upgrades the running cluster to: slurmdbd and slurmctld first,
        /// then each slurmd with its spool. The cluster then names no PluginDir (each program
        /// loads its own build's plugins), as a mix does.
        #[arg(long, value_name = "PREFIX", conflicts_with = "mix")]
        upgrade_to: Option<PathBuf>,
    },
    /// Slurm's own Python test suite (testsuite/python, local-config) against a native and a
    /// darwin-personality cluster; fails if any test's outcome differs.
    Peer(PeerArgs),
    /// Soak: N mixed jobs (batch, srun, arrays, cancels, GPU) on a cluster, with seeded faults
    /// (slurmd, slurmctld, slurmdbd killed and restarted; slurmctld stopped and continued);
    /// then every job must have one final sacct record, no job process may be left, and the
    /// daemons' descriptors, threads and RSS must be flat. Prints the figures.
    Soak(SoakArgs),
    /// Throughput benchmark: trivial jobs against a native and a darwin-personality cluster,
    /// time to drain and submit-to-start latency, printed as darwin/native ratios.
    Bench(BenchArgs),
    /// Accounting benchmark: CPU per poll of a job with many processes, jobacct_gather/darwin
    /// against jobacct_gather/linux, both in one darwin-personality install's slurmstepd.
    BenchAcct(BenchAcctArgs),
}

#[derive(Debug, Args)]
pub struct PeerArgs {
    /// The native build's prefix (staged by build-slurm: src/ and build/ beside it).
    #[arg(long)]
    pub native: PathBuf,
    /// The darwin-personality build's prefix (staged the same way).
    #[arg(long)]
    pub darwin: PathBuf,
    /// The tests to run: one pytest path or node id per line (default: ci/peer-subset.txt).
    #[arg(long, conflicts_with = "all")]
    pub subset: Option<PathBuf>,
    /// Run the whole suite instead of the subset.
    #[arg(long)]
    pub all: bool,
    /// Per-test timeout in seconds (pytest-timeout).
    #[arg(long, default_value_t = 240)]
    pub timeout: u64,
    /// Keep the work directory (logs, JUnit reports) even when the builds agree.
    #[arg(long)]
    pub keep: bool,
    /// The clusters' profile; the suite's own lines (CR_CPU, MinJobAge, KillWait) go on top.
    #[command(flatten)]
    pub profile: ProfileArg,
    /// Nodes per cluster (1 to 4): tests that need several nodes skip on one.
    #[arg(long, default_value_t = 1)]
    pub nodes: usize,
}

#[derive(Debug, Args)]
pub struct SoakArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub target: ClusterTarget,
    #[command(flatten)]
    pub profile: ProfileArg,
    /// How many jobs (array elements count as their array's one submission here).
    #[arg(long)]
    pub jobs: usize,
    /// Inject faults (default count: one per 250 jobs, at least 2).
    #[arg(long)]
    pub faults: bool,
    /// How many faults (implies nothing without --faults).
    #[arg(long, requires = "faults")]
    pub fault_count: Option<usize>,
    /// The seed of the job mix and the faults (default: from the clock; printed either way).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Seconds between two samples of the daemons' descriptors, threads and RSS.
    #[arg(long, default_value_t = 2)]
    pub sample_every: u64,
    /// Whose flatness decides (comma-separated: slurmctld, slurmd); the others are printed.
    #[arg(long, default_value = "slurmctld,slurmd")]
    pub judge: String,
    /// Leave the cluster running afterwards.
    #[arg(long)]
    pub keep: bool,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The native build's prefix.
    #[arg(long)]
    pub native: PathBuf,
    /// The darwin-personality build's prefix.
    #[arg(long)]
    pub darwin: PathBuf,
    /// Jobs per build and round.
    #[arg(long, default_value_t = 500)]
    pub jobs: usize,
    /// Rounds (each runs both builds, alternating which goes first).
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// The clusters' profile; the benchmark's own lines (CR_CPU, oversubscription) go on top.
    #[command(flatten)]
    pub profile: ProfileArg,
}

#[derive(Debug, Args)]
pub struct BenchAcctArgs {
    /// The darwin-personality install (it builds both jobacct_gather plugins).
    #[arg(long)]
    pub prefix: PathBuf,
    /// Processes in the job's tree (besides its script's shell).
    #[arg(long, default_value_t = 1000)]
    pub procs: usize,
    /// Polls measured per plugin and round (at least 3).
    #[arg(long, default_value_t = 20)]
    pub polls: usize,
    /// Rounds (each runs both plugins, alternating which goes first).
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The installed Slurm prefix (with lib/slurm/ and sbin/ or bin/), ELF or Mach-O.
    #[arg(long)]
    pub prefix: PathBuf,
    /// Accepted findings (e.g. ci/expectations/audit-24.11-native.toml): succeed only when
    /// the findings are exactly these.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Another SDK stub (.tbd) with system-library exports for a Mach-O prefix, beyond the
    /// libSystem stubs zig ships (repeatable).
    #[arg(long, value_name = "FILE")]
    pub tbd: Vec<PathBuf>,
}
