//! PLACEHOLDER (being implemented).
use crate::{cli::BuildArgs, error::Result};
use std::path::{Path, PathBuf};
use xshell::Shell;
pub fn run(_sh: &Shell, _root: &Path, _args: BuildArgs) -> Result<PathBuf> { Err(crate::error::Error::Unsupported("build-slurm: not implemented yet".into())) }
