//! PLACEHOLDER (being implemented).
use crate::{cli::CodegenArgs, error::Result};
use std::path::Path;
use xshell::Shell;
pub fn run(_sh: &Shell, _root: &Path, _args: CodegenArgs) -> Result<()> { Err(crate::error::Error::Unsupported("codegen: not implemented yet".into())) }
