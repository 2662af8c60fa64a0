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
    /// Installation prefix (default: a staging directory under target/).
    #[arg(long)]
    pub prefix: Option<PathBuf>,
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
    /// Throughput benchmark: trivial jobs against a native and a darwin-personality cluster,
    /// time to drain and submit-to-start latency, printed as darwin/native ratios.
    Bench(BenchArgs),
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
