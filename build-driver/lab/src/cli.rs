//! The laboratory's arguments (clap): `cargo xtask cluster ...`.

use crate::profile_name::Profile;
use clap::{Args, Subcommand};
use std::path::PathBuf;

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
    /// Slurm's TLS between every program: tls/s2n in slurm.conf and slurmdbd.conf, a CA of
    /// the cluster's own and certificates for slurmctld, slurmdbd and the slurmds (every
    /// build made with `build-slurm --with-s2n`, Slurm 25.05 or later).
    #[arg(long)]
    pub tls: bool,
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
    /// Benchmark of a native and a darwin-personality cluster, printed as darwin/native ratios:
    /// batch throughput and latency (concurrent submitters: --clients), or step launch
    /// (--launch: srun -n1, srun -n4, steps in salloc; CPU and shim calls per step).
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
    /// The `testsuite/python` directory to run instead of the sources' own (release tags of
    /// 25.11 and later have none: `cargo xtask fetch --version V` exports the one its pin
    /// names to slurm-src/V-python-suite/testsuite/python).
    #[arg(long)]
    pub suite: Option<PathBuf>,
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

/// A `cargo xtask cluster ...` command line on its own: the laboratory parses its own lines
/// (the CI soak's, the peer suite's re-execution) with the arguments `cargo xtask` embeds.
#[derive(Debug, clap::Parser)]
#[command(name = "cargo xtask")]
pub struct ClusterCli {
    #[command(subcommand)]
    pub command: ClusterCommand,
}

/// The one command of [`ClusterCli`].
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    Cluster(ClusterArgs),
}

/// `cluster bench`'s arguments (the bench: cluster/bench.rs).
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The native build's prefix.
    #[arg(long)]
    pub native: PathBuf,
    /// The darwin-personality build's prefix.
    #[arg(long)]
    pub darwin: PathBuf,
    /// Rounds (each runs both builds, alternating which goes first).
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Batch mode: jobs per build and round.
    #[arg(long, default_value_t = 500)]
    pub jobs: usize,
    /// Batch mode: concurrent submitters, each submitting its share of --jobs one sbatch
    /// after the other (1: one client's sequential rate, which caps the figure).
    #[arg(long, default_value_t = 1)]
    pub clients: usize,
    /// Step-launch mode instead of batch: srun -n1, srun -n4 and steps inside salloc -n1.
    #[arg(long)]
    pub launch: bool,
    /// Launch mode: runs of `srun -n1 /bin/true` and of `srun -n4 /bin/true` per build and round.
    #[arg(long, default_value_t = 200)]
    pub runs: usize,
    /// Launch mode: `srun /bin/true` steps inside one `salloc -n1` per build and round.
    #[arg(long, default_value_t = 50)]
    pub steps: usize,
    /// The clusters' profile (`cargo xtask cluster profiles`); the benchmark's own lines
    /// (CR_CPU, its partition, no scheduler delay) go on top.
    #[arg(long, value_enum, default_value = "default")]
    pub profile: Profile,
}
