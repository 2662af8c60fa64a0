//! PLACEHOLDER (being implemented).
use crate::{cli::ClusterArgs, error::Result};
use std::path::Path;
use xshell::Shell;
pub fn run(_sh: &Shell, _root: &Path, _args: ClusterArgs) -> Result<()> { Err(crate::error::Error::Unsupported("cluster: not implemented yet".into())) }
