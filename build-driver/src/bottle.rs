//! `cargo xtask bottle`: a Homebrew bottle of Slurm built on Linux.

pub mod archive;
pub mod codesign;
pub mod linkage;
pub mod relocate;
pub mod scan;

use crate::cli::BottleArgs;
use crate::error::{Error, Result};
use std::path::Path;
use xshell::Shell;

pub fn run(_sh: &Shell, _root: &Path, _args: BottleArgs) -> Result<()> {
    Err(Error::Unsupported("bottle: not yet".into()))
}
