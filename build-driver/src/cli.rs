//! The command line (binding names: see DESIGN.md, "The build driver").

//! Each command's arguments live with the command; this file only names the commands.

use crate::audit::AuditArgs;
use crate::bottle::BottleArgs;
use crate::bottle::tap::TapArgs;
use crate::build_slurm::BuildArgs;
use crate::ci::CiArgs;
use crate::codegen::CodegenArgs;
use crate::deps::DepsArgs;
use crate::fetch::FetchArgs;
use crate::lines::LinesArgs;
use crate::lint::LintArgs;
use crate::s2n::S2nArgs;
use clap::{Parser, Subcommand};
use slurm_lab::cli::ClusterArgs;
use slurm_mac::cli::{
    DoctorArgs, GresConfArgs, InstallArgs, JoinArgs, PowerArgs, ServiceArgs, UninstallArgs,
};

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
    /// compile) and checks it against slurm-src/manifests/; `patches doc` writes PATCHES.md's
    /// generated table.
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
