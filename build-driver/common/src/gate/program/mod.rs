//! A program the node tool may start: judged by [`chain`](super::chain) (the file and every
//! directory up to `/` root's, not group/world-writable, on descriptors), then started by its
//! resolved path, from `/`, with a clean environment ([`env`](super::env)). Every program the
//! node tool starts goes through [`Program`]; a test (node/tests/gate_only.rs) fails on any
//! other way of starting one in `build-driver/node` or `common`.

use super::chain::{self, Owners};
use super::env;
use crate::error::{Error, Result};
use nix::sys::stat::SFlag;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The path as the caller named it (messages).
    pub shown: PathBuf,
    /// The resolved, judged path it is started by.
    pub path: PathBuf,
}

impl Program {
    /// `path`, trusted for the caller ([`Owners::caller`]: root only when root runs us).
    pub fn checked(path: &Path) -> Result<Program> {
        Program::checked_for(path, Owners::caller())
    }

    /// `path`, trusted for `owners`: a regular, executable file.
    pub fn checked_for(path: &Path, owners: Owners) -> Result<Program> {
        let w = chain::open(path, owners).map_err(|e| match e {
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Error::file(path, "does not exist")
            }
            other => other,
        })?;
        let (_, st) = w.leaf.as_ref().expect("open returns an existing leaf");
        if chain::kind(st) != SFlag::S_IFREG || chain::mode(st) & 0o111 == 0 {
            return Err(Error::file(
                path,
                format!("is not an executable file ({})", chain::owner_mode(st)),
            ));
        }
        Ok(Program {
            shown: path.to_path_buf(),
            path: w.resolved,
        })
    }

    /// A system program by name (`launchctl`, `pmset`, `ssh`), looked up in
    /// [`env::SYSTEM_PATH`] only, never the caller's `PATH`, and trusted like any other; a
    /// name with a `/` is taken as a path.
    pub fn system(name: &str) -> Result<Program> {
        if name.contains('/') {
            return Program::checked(Path::new(name));
        }
        let found = env::SYSTEM_PATH
            .split(':')
            .map(|d| Path::new(d).join(name))
            .find(|p| p.exists())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{name}: not found in {} (the only directories searched for a program \
                     named without a path): give its full path",
                    env::SYSTEM_PATH
                ))
            })?;
        Program::checked(&found)
    }

    /// The command that starts it: from `/`, with a clean environment.
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.path);
        env::clean(&mut c).current_dir("/");
        c
    }
}

#[cfg(test)]
mod tests;
