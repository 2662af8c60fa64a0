//! Trusting a whole install, not one program: what slurmd and slurmstepd load (`sbin/`,
//! `bin/`, `libexec/`, `lib/` with every library and plugin), the configuration they read
//! (the sysconfdir) and the directories they write (spool, logs). Each tree is judged to the
//! last file: its top and every directory up to `/` by [`chain`](super::chain), everything
//! below through descriptors; a link is judged where it leads.

use super::chain::{self, Owners, judge, kind};
use super::dir::Dir;
use crate::error::{Error, Result};
use nix::dir::Dir as DirStream;
use nix::sys::stat::SFlag;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What a daemon will use: `trees` are judged to the last file, `dirs` by their own chain
/// only (a spool's content is the daemon's own). A tree or directory that does not exist is
/// judged up to its nearest existing directory.
#[derive(Debug, Default, Clone)]
pub struct Install {
    pub trees: Vec<PathBuf>,
    pub dirs: Vec<PathBuf>,
}

/// Every finding, in order (empty: trusted). `doctor` shows them; the commands stop at the
/// first ([`trusted`]).
pub fn examine(install: &Install, owners: Owners) -> Vec<Error> {
    let mut found = Vec::new();
    for d in &install.dirs {
        if let Err(e) = chain::trusted(d, owners) {
            found.push(e);
        }
    }
    for t in &install.trees {
        match chain::walk(t, owners) {
            Err(e) => found.push(e),
            Ok(w) if w.leaf.is_none() => {}
            Ok(w) => {
                if let Err(e) = tree(&w.resolved, owners, &mut found) {
                    found.push(e);
                }
            }
        }
    }
    found
}

/// The first finding of [`examine`], or `Ok`.
pub fn trusted(install: &Install, owners: Owners) -> Result<()> {
    match examine(install, owners).into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Judges everything below the trusted directory `top`, pushing one finding per culprit.
fn tree(top: &Path, owners: Owners, found: &mut Vec<Error>) -> Result<()> {
    let st = std::fs::symlink_metadata(top).map_err(|e| Error::io(top, e))?;
    if !st.is_dir() {
        return Ok(());
    }
    let mut todo = vec![Dir::open(top)?];
    while let Some(d) = todo.pop() {
        for name in entries(&d)? {
            let path = d.path.join(&name);
            let Some(st) = d.stat(&name)? else { continue };
            match kind(&st) {
                SFlag::S_IFLNK => {
                    if let Err(e) = chain::trusted(&path, owners) {
                        found.push(e);
                    }
                }
                SFlag::S_IFDIR => match judge(&path, &st, owners, true) {
                    Ok(()) => todo.push(d.sub(Path::new(&name))?),
                    Err(e) => found.push(e),
                },
                _ => {
                    if let Err(e) = judge(&path, &st, owners, true) {
                        found.push(e);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The names in `d`, sorted (`.` and `..` left out).
pub(crate) fn entries(d: &Dir) -> Result<Vec<OsString>> {
    let stream = DirStream::openat(
        d.raw(),
        ".",
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| chain::errno(&d.path, e))?;
    let mut names: Vec<OsString> = Vec::new();
    let mut stream = stream;
    for e in stream.iter() {
        let e = e.map_err(|e| chain::errno(&d.path, e))?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            names.push(std::ffi::OsStr::from_bytes(n).to_os_string());
        }
    }
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests;
