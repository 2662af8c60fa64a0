//! `slurm-mac`: the node tool that ships in the bottle. The same code as `cargo xtask
//! install|uninstall|service|join|gres-conf`, for a Mac that has the bottle and no checkout.

use clap::{Parser, Subcommand};
use driver_common::error::{Error, Result};
use slurm_mac::cli::{
    CopyKegArgs, DoctorArgs, GresConfArgs, InstallArgs, JoinArgs, PowerArgs, ServiceArgs,
    UninstallArgs,
};
use std::process::ExitCode;
use xshell::Shell;

#[derive(Debug, Parser)]
#[command(
    name = "slurm-mac",
    version,
    about = "Make this Mac a Slurm node or submit host: join a cluster, run slurmd (or sackd) as a LaunchDaemon, write gres.conf, check the node"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Join this machine to a cluster as a compute node (or, with --client, as a submit host:
    /// sackd and the key, no slurmd): check the controller's release against the version
    /// rule with this install's own sackd and scontrol, then print (with --apply: carry out)
    /// the key install and the daemon's command.
    Join(JoinArgs),
    /// slurmd (or sackd) as a macOS LaunchDaemon: print the plist, install, uninstall, status.
    Service(ServiceArgs),
    /// Print the gres.conf and the slurm.conf NodeName= line of this machine (`slurmd -C`).
    GresConf(GresConfArgs),
    /// Install a staged build (--from) into its prefix, with the cluster's slurm.key.
    Install(InstallArgs),
    /// Copy a Homebrew keg to a root-owned root of the same length (the Homebrew prefix
    /// rewritten inside its files, Mach-O files signed again), for the LaunchDaemon: launchd
    /// must not run as root a slurmd the admin user's processes can change.
    CopyKeg(CopyKegArgs),
    /// Remove what `install` installed (by its manifest); slurm.conf and slurm.key stay.
    Uninstall(UninstallArgs),
    /// Report everything that stops this machine from being a Slurm node, each with its fix
    /// (key, files root runs, SACK directory, slurmd's port, node name, sleep, controller,
    /// what the cluster's plugin choices become on this Mac);
    /// fails if any check fails.
    Doctor(DoctorArgs),
    /// On the controller host, as slurm.conf's ResumeProgram/SuspendProgram: wake Macs with a
    /// wake-on-LAN packet, or run each one's suspend command (from a node map, --map).
    Power(PowerArgs),
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("slurm-mac: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let sh = Shell::new().map_err(Error::Shell)?;
    let here = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    match cli.command {
        Command::Join(args) => slurm_mac::join::run(args),
        Command::Service(args) => slurm_mac::service::run(&sh, &here, args),
        Command::GresConf(args) => slurm_mac::gres_conf::run(args),
        Command::Install(args) if args.from.is_none() => Err(Error::Usage(
            "install: --from DIR is required (the staged build to install: \
             `cargo xtask build-slurm --prefix P --destdir D` stages it in D/P)"
                .into(),
        )),
        Command::Install(args) => slurm_mac::install::run(&sh, &here, args),
        Command::CopyKeg(args) => slurm_mac::keg::run(args),
        Command::Uninstall(args) => slurm_mac::install::uninstall(&args),
        Command::Doctor(args) => slurm_mac::doctor::run(args),
        Command::Power(args) => slurm_mac::power::run(&args).map_err(Error::from),
    }
}
