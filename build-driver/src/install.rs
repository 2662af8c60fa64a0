//! `cargo xtask install` and `uninstall` (in progress).
use crate::cli::{InstallArgs, UninstallArgs};
use crate::error::{Error, Result};
use std::path::Path;
use xshell::Shell;

pub fn run(_sh: &Shell, _root: &Path, _args: InstallArgs) -> Result<()> {
    Err(Error::Unsupported("install: not yet".into()))
}

pub fn uninstall(_args: &UninstallArgs) -> Result<()> {
    Err(Error::Unsupported("uninstall: not yet".into()))
}
