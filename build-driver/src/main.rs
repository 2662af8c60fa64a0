//! `cargo xtask`: the build driver. One file per subcommand; `main` builds the shell, moves
//! to the project root and dispatches: the node commands into `slurm_mac` (build-driver/node),
//! `cluster` into the laboratory (`slurm_lab`, build-driver/lab).

// Test names read `subject__behaviour` across the driver, so every test module allows it.
#![cfg_attr(test, allow(non_snake_case))]

mod audit;
mod bottle;
mod build_slurm;
mod ci;
mod cli;
mod codegen;
mod cross;
#[cfg(test)]
mod defaults;
mod deps;
mod fetch;
#[cfg(test)]
mod house;
mod lines;
mod lint;
mod macho;
#[cfg(test)]
mod macos_workflow;
mod patches;
mod report;
mod s2n;
#[cfg(test)]
mod testing;
mod upstream;

use clap::Parser;
use driver_common::error::{Error, Result};
pub use driver_common::project_root;
use std::process::ExitCode;
use xshell::Shell;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: cli::Cli) -> Result<()> {
    let sh = Shell::new().map_err(Error::Shell)?;
    let root = project_root();
    sh.change_dir(&root);
    match cli.command {
        cli::Command::Codegen(args) => codegen::run(&sh, &root, args),
        cli::Command::Fetch(args) => fetch::run(&sh, &root, args).map(|_| ()),
        cli::Command::BuildSlurm(args) => build_slurm::run(&sh, &root, args).map(|_| ()),
        cli::Command::Ci(args) => ci::run(&sh, &root, args),
        cli::Command::Lines(args) => match args.command {
            lines::LinesCommand::Verify(a) => ci::verify::run(&sh, &root, a),
            lines::LinesCommand::Table => lines::table(&root),
        },
        cli::Command::Patches(args) => patches::refresh::run(&sh, &root, args),
        cli::Command::Upstream(args) => upstream::run(&sh, &root, args),
        cli::Command::Cluster(args) => slurm_lab::cluster::run(&sh, &root, args),
        cli::Command::Audit(args) => audit::run(&sh, &root, args),
        cli::Command::Deps(args) => deps::run(&sh, &root, args).map(|_| ()),
        cli::Command::S2n(args) => s2n::run(&sh, &root, args).map(|_| ()),
        cli::Command::Lint(args) => lint::run(&sh, &root, args),
        cli::Command::GresConf(args) => slurm_mac::gres_conf::run(args),
        cli::Command::Bottle(args) => bottle::run(&sh, &root, args).map(|_| ()),
        cli::Command::Tap(args) => bottle::tap::run(&sh, &root, args).map(|_| ()),
        cli::Command::Service(args) => slurm_mac::service::run(&sh, &root, args),
        cli::Command::Install(args) => slurm_mac::install::run(&sh, &root, args),
        cli::Command::Uninstall(args) => slurm_mac::install::uninstall(&args),
        cli::Command::Join(args) => slurm_mac::join::run(args),
        cli::Command::Doctor(args) => slurm_mac::doctor::run(args),
        cli::Command::Power(args) => slurm_mac::power::run(&args).map_err(Error::from),
    }
}
