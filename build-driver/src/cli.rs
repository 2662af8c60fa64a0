//! The command line (binding names: see DESIGN.md, "The build driver").

use clap::builder::ArgPredicate;
use clap::{Args, Parser, Subcommand, ValueEnum};
use driver_common::lines::{CI_VERSION, DEFAULT_VERSION};
use driver_common::personality::Personality;
pub use slurm_lab::cli::*;
pub use slurm_mac::cli::*;
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
    /// Download (or take a local) Slurm source, verify it against its pin, unpack it under
    /// slurm-src/. With internet access `--version V` alone is enough: the pin has the
    /// release tarball's URL and sha256, or the repository and commit of the release tag.
    Fetch(FetchArgs),
    /// Copy the pristine source, place patches/src/, apply the line's patches/series, regenerate autotools files, build the
    /// shim, configure, make and install Slurm.
    BuildSlurm(BuildArgs),
    /// Everything CI runs: shim tests, codegen --check, Linux non-regression, darwin personality.
    Ci(CiArgs),
    /// One release line through the whole suite (`lines verify --version V`): CI's Slurm lanes
    /// and every local scenario, then the line's row in docs/RELEASE-LINES.md.
    Lines(LinesArgs),
    /// The patch series: `patches refresh` builds every fetched line's patched tree (no
    /// compile) and checks it against slurm-src/manifests/.
    Patches(crate::patches::refresh::PatchesArgs),
    /// The upstreamable changes of a line as a `git format-patch` series against a pinned
    /// tree, proven with `git am` on a clean copy (SERIES.md says what was left out and why).
    Upstream(crate::upstream::UpstreamArgs),
    /// A local Slurm cluster on loopback from an installed prefix.
    Cluster(ClusterArgs),
    /// Check that every plugin's undefined symbols resolve in every program that loads it.
    Audit(AuditArgs),
    /// Build the third-party libraries (OpenSSL, jansson, json-c, hwloc, libjwt 1.x) for an
    /// Apple target from the pins in slurm-src/deps.toml.
    Deps(DepsArgs),
    /// Build s2n-tls for this machine (Slurm's tls/s2n, 25.05 and later) from the pinned
    /// source in slurm-src/s2n.toml; `build-slurm --with-s2n` uses it.
    S2n(S2nArgs),
    /// Scan a Slurm source tree for hazards on macOS (never-initialised pthread objects,
    /// /proc, /run, /sys paths, memory rlimits, descriptor loops, ...) in the code a compute
    /// node runs.
    Lint(LintArgs),
    /// Print the gres.conf and the slurm.conf NodeName= line (GPU, CPU Features) of this
    /// machine from a built slurmd (`slurmd -v -C`); on Linux, of the darwin personality's
    /// modelled Mac, marked as such.
    GresConf(GresConfArgs),
    /// A Homebrew bottle of Slurm for a macOS target, built here (with its .bottle.json; the
    /// keg holds its formula and the LaunchDaemon plist), checked: signatures, install names,
    /// no build-machine path. `tap` writes the formulae of a tap from such bottles.
    Bottle(BottleArgs),
    /// The Homebrew tap of the bottles `bottle` made: Formula/slurm-wlm.rb (every tag's
    /// bottle merged, root_url), Formula/slurm-wlm@<line>.rb per other line, README.md.
    Tap(TapArgs),
    /// slurmd (or sackd) as a macOS LaunchDaemon: print the plist, install, uninstall, status.
    Service(ServiceArgs),
    /// Install a staged build into its prefix (staged, then renamed; a manifest), with the
    /// cluster's slurm.key.
    Install(InstallArgs),
    /// Remove what `install` installed (by its manifest); slurm.conf and slurm.key stay.
    Uninstall(UninstallArgs),
    /// Join this machine to a cluster as a compute node (or, with --client, as a submit host:
    /// sackd and the key, no slurmd): check the controller's release against the version
    /// rule with this build's own sackd and scontrol, then print (with --apply: carry out)
    /// the key install and the daemon's command (docs/JOIN.md).
    Join(JoinArgs),
    /// Report everything that stops this machine from being a Slurm node, each with its fix;
    /// fails if any check fails (docs/JOIN.md, "Doctor").
    Doctor(DoctorArgs),
    /// On the controller host, as slurm.conf's ResumeProgram/SuspendProgram: wake Macs with a
    /// wake-on-LAN packet, or run each one's suspend command (docs/JOIN.md, "Power saving").
    Power(PowerArgs),
}

#[derive(Debug, Args)]
pub struct BottleArgs {
    /// A pinned Slurm version (slurm-src/pins.toml), fetched first (`cargo xtask fetch`); the
    /// default is the newest verified release.
    #[arg(long, default_value = DEFAULT_VERSION)]
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
    /// The tap the receipt names (`ORG/REPO`; the repository is ORG/homebrew-REPO).
    #[arg(long, value_name = "ORG/REPO", default_value = crate::bottle::DEFAULT_TAP)]
    pub tap: String,
    /// Where the bottle will be served (the JSON's root_url; `cargo xtask tap` requires it).
    #[arg(long, value_name = "URL")]
    pub root_url: Option<String>,
}

#[derive(Debug, Args)]
pub struct TapArgs {
    /// The tap (`ORG/REPO`): `brew install ORG/REPO/slurm-wlm`.
    #[arg(long, value_name = "ORG/REPO")]
    pub tap: String,
    /// Where the bottles are served (`bottle do root_url`; file names
    /// `<name>-<version>.<tag>.bottle.tar.gz`).
    #[arg(long, value_name = "URL")]
    pub root_url: String,
    /// Where `cargo xtask bottle` wrote the bottles and their .bottle.json (default:
    /// target/bottle/).
    #[arg(long, value_name = "DIR")]
    pub bottles: Option<PathBuf>,
    /// The tap directory (default: target/tap/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// A Debian mirror's base URL: the third-party resources' URLs (pool/ paths), unless
    /// slurm-src/deps.toml gives `urls`.
    #[arg(long, value_name = "URL")]
    pub debian_mirror: Option<String>,
    /// Make the tap directory a git repository with one commit (for `brew tap ORG/REPO
    /// file://DIR`).
    #[arg(long)]
    pub git: bool,
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
    /// Build for this oldest macOS (MAJOR.MINOR, at least 11.0) instead of the target table's
    /// 12.0; the prefix is then deps/<triple>-macos<MIN>. Bottles keep the table's.
    #[arg(long, value_name = "MAJOR.MINOR")]
    pub macos_min: Option<String>,
}

#[derive(Debug, Args)]
pub struct S2nArgs {
    /// Parallel compile jobs (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Build for this macOS target (e.g. aarch64-apple-darwin: a static libs2n.a against
    /// `cargo xtask deps --target`'s libcrypto, for the Mach-O lane) instead of this machine.
    #[arg(long)]
    pub target: Option<String>,
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
    /// A pinned version (see slurm-src/pins.toml), e.g. 24.11.5 or 26.11-snapshot; the
    /// default is the newest verified release. With --source there is no default: it names
    /// the pin the local source is checked against.
    #[arg(
        long,
        default_value = DEFAULT_VERSION,
        default_value_if("source", ArgPredicate::IsPresent, None)
    )]
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
#[command(
    after_help = "Without --source and --from, `fetch --version V` needs nothing but the pin and internet access: \
curl downloads the pinned tarball and checks its sha256, or git fetches the pinned commit of a git pin \
(no local mirror, clone or tarball). Offline, pass a local copy with --source."
)]
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
    /// Build the pristine tree without patches/ (no files of patches/src/, no series).
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
    /// macOS targets: the oldest macOS to build for (MAJOR.MINOR, at least 11.0) instead of
    /// the target table's 12.0, e.g. 11.0 for Darling's macOS 11 userland; the staging
    /// directory then ends in -macos<MIN>. Give `deps` the same value.
    #[arg(long, value_name = "MAJOR.MINOR")]
    pub macos_min: Option<String>,
    /// Build Slurm's tls/s2n plugin (25.05 and later) against the s2n-tls that `cargo xtask
    /// s2n [--target T]` installed for the target (or --s2n-prefix); the staging directory
    /// then ends in -s2n.
    #[arg(long)]
    pub with_s2n: bool,
    /// With --with-s2n: another s2n-tls installation (include/s2n.h, and lib/libs2n.so, or
    /// lib/libs2n.a for a macOS target).
    #[arg(long, value_name = "DIR", requires = "with_s2n")]
    pub s2n_prefix: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CiArgs {
    /// Pinned version to build: CI's, the one release a package registry serves to CI's
    /// machines (Debian's slurm-wlm), not the users' default.
    #[arg(long, default_value = CI_VERSION)]
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
pub struct LinesArgs {
    #[command(subcommand)]
    pub command: LinesCommand,
}

#[derive(Debug, Subcommand)]
pub enum LinesCommand {
    /// Fetched source of a pinned version -> native builds with and without the series and
    /// `make check` in both, lint, darwin personality and its `make check`, every scenario
    /// (CI's and the local ones) under `default` and `macos-native`, `site`, multi-node and
    /// mix, soak, peer subset, Mach-O build, bottle (tarball pins), audits; then writes
    /// docs/lines/<line>.toml and RELEASE-LINES.md's table, whatever the steps gave. Hours on
    /// two cores. Fails if any step failed.
    Verify(LinesVerifyArgs),
    /// Regenerate RELEASE-LINES.md's table from the rows in docs/lines/ (after a merge of
    /// rows, say); fails on a row older than its series.
    Table,
}

#[derive(Debug, Args)]
pub struct LinesVerifyArgs {
    /// A pinned version (slurm-src/pins.toml), already fetched (`cargo xtask fetch --version
    /// V`), e.g. 25.05.8, 25.11.7, 26.05.3, 26.11-snapshot.
    #[arg(long)]
    pub version: String,
    /// Keep the pristine (unpatched) native build after its `make check`.
    #[arg(long)]
    pub keep_builds: bool,
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
