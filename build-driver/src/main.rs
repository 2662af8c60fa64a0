//! `cargo xtask`: the build driver. One file per subcommand; `main` builds the shell, moves
//! to the project root and dispatches.

// Test names read `subject__behaviour` across the driver, so every test module allows it.
#![cfg_attr(test, allow(non_snake_case))]

mod audit;
mod bottle;
mod build_slurm;
mod check;
mod ci;
mod cli;
mod cluster;
mod codegen;
mod cross;
mod deps;
mod error;
mod expectations;
mod fetch;
mod gres_conf;
#[cfg(test)]
mod house;
mod install;
mod join;
mod launchd;
mod lines;
mod lint;
mod macho;
#[cfg(test)]
mod macos_workflow;
mod patches;
mod personality;
mod pins;
mod service;
mod staging;
mod targets;
#[cfg(test)]
mod testing;
mod util;

use clap::Parser;
use error::{Error, Result};
use std::path::PathBuf;
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
        cli::Command::Cluster(args) => cluster::run(&sh, &root, args),
        cli::Command::Audit(args) => audit::run(&sh, &root, args),
        cli::Command::Deps(args) => deps::run(&sh, &root, args).map(|_| ()),
        cli::Command::Lint(args) => lint::run(&sh, &root, args),
        cli::Command::GresConf(args) => gres_conf::run(args),
        cli::Command::Bottle(args) => bottle::run(&sh, &root, args).map(|_| ()),
        cli::Command::Service(args) => service::run(&sh, &root, args),
        cli::Command::Install(args) => install::run(&sh, &root, args),
        cli::Command::Uninstall(args) => install::uninstall(&args),
        cli::Command::Join(args) => join::run(args),
    }
}

/// The workspace root: the parent of this crate's manifest directory.
pub fn project_root() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    dir.parent().map(PathBuf::from).unwrap_or(dir)
}
