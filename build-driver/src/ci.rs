//! PLACEHOLDER (being implemented).
use crate::{cli::CiArgs, error::Result};
use std::path::Path;
use xshell::Shell;
pub fn run(_sh: &Shell, _root: &Path, _args: CiArgs) -> Result<()> { Err(crate::error::Error::Unsupported("ci: not implemented yet".into())) }
