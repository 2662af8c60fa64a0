//! PLACEHOLDER (being implemented).
use crate::{cli::FetchArgs, error::Result};
use std::path::{Path, PathBuf};
use xshell::Shell;
pub fn run(_sh: &Shell, _root: &Path, _args: FetchArgs) -> Result<PathBuf> { Err(crate::error::Error::Unsupported("fetch: not implemented yet".into())) }
