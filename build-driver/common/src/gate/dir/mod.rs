//! Directories as root: made only after the directory above is trusted ([`make_dirs`]), and
//! walked, read and emptied through descriptors ([`Dir`]): each component opened relative to
//! its parent with `O_NOFOLLOW`, entries removed with `unlinkat`, so a link in a tree (or one
//! swapped in while root works) cannot lead outside it.

use super::chain::{self, Owners, errno, kind};
use crate::error::{Error, Result};
use nix::fcntl::{AtFlags, readlinkat};
use nix::sys::stat::{FileStat, SFlag, fstatat};
use nix::unistd::UnlinkatFlags;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};

/// Makes `path` and its missing parents (mode `mode`), each only after the directory above it
/// was judged trusted for `owners`; an existing `path` must be trusted itself.
pub fn make_dirs(path: &Path, mode: u32, owners: Owners) -> Result<()> {
    let abs = std::path::absolute(path).map_err(|e| Error::io(path, e))?;
    let mut missing = Vec::new();
    let mut p = abs.as_path();
    while std::fs::symlink_metadata(p).is_err() {
        missing.push(p.to_path_buf());
        p = p.parent().unwrap_or(Path::new("/"));
    }
    chain::trusted(p, owners)?;
    for d in missing.iter().rev() {
        std::fs::DirBuilder::new()
            .mode(mode)
            .create(d)
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    Ok(())
                } else {
                    Err(Error::io(d, e))
                }
            })?;
        chain::trusted(d, owners)?;
    }
    let w = chain::walk(&abs, owners)?;
    match w.leaf {
        Some((_, st)) if kind(&st) == SFlag::S_IFDIR => Ok(()),
        _ => Err(Error::file(&abs, "exists and is not a directory")),
    }
}

/// A directory opened without following a link, and the path it was reached by (messages).
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    pub path: PathBuf,
}

impl Dir {
    /// `path` itself: its last component must not be a link (links above it are the
    /// caller's choice and are followed).
    pub fn open(path: &Path) -> Result<Dir> {
        Ok(Dir {
            fd: chain::open_dir_fd(None, path)?,
            path: path.to_path_buf(),
        })
    }

    /// The directory `rel` below this one, every component opened without following a link:
    /// a link on the way is an error naming it.
    pub fn sub(&self, rel: &Path) -> Result<Dir> {
        let mut here = Dir {
            fd: self.fd.try_clone().map_err(|e| Error::io(&self.path, e))?,
            path: self.path.clone(),
        };
        for c in rel.components() {
            let Component::Normal(name) = c else {
                return Err(Error::file(
                    self.path.join(rel),
                    "is not a plain path below the directory",
                ));
            };
            let path = here.path.join(name);
            let fd = chain::open_dir_fd(Some(&here.fd), Path::new(name)).map_err(|e| match here
                .stat(name)
            {
                Ok(Some(st)) if kind(&st) == SFlag::S_IFLNK => {
                    Error::file(&path, "is a link: root does not follow it")
                }
                _ => e,
            })?;
            here = Dir { fd, path };
        }
        Ok(here)
    }

    /// The descriptor (for `openat`-style calls of the gate's other modules).
    pub(crate) fn raw(&self) -> &OwnedFd {
        &self.fd
    }

    /// `name`'s status, not following a link; `None` when there is no such entry.
    pub fn stat(&self, name: &OsStr) -> Result<Option<FileStat>> {
        match fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(nix::errno::Errno::ENOENT) => Ok(None),
            Err(e) => Err(errno(&self.path.join(name), e)),
        }
    }

    /// The target of the link `name`.
    pub fn read_link(&self, name: &OsStr) -> Result<PathBuf> {
        readlinkat(&self.fd, name)
            .map(PathBuf::from)
            .map_err(|e| errno(&self.path.join(name), e))
    }

    /// The content of the regular file `name`, opened without following a link.
    pub fn read_file(&self, name: &OsStr) -> Result<Vec<u8>> {
        let path = self.path.join(name);
        let fd = nix::fcntl::openat(
            &self.fd,
            name,
            nix::fcntl::OFlag::O_RDONLY
                | nix::fcntl::OFlag::O_NOFOLLOW
                | nix::fcntl::OFlag::O_NONBLOCK
                | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(|e| errno(&path, e))?;
        super::file::read_fd(&path, fd)
    }

    /// Removes the entry `name` (a file or a link, never what a link points at).
    pub fn remove_file(&self, name: &OsStr) -> Result<()> {
        nix::unistd::unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir)
            .map_err(|e| errno(&self.path.join(name), e))
    }

    /// Removes the directory `name` if it is empty; false when it is not (or is gone).
    pub fn remove_empty_dir(&self, name: &OsStr) -> Result<bool> {
        match nix::unistd::unlinkat(&self.fd, name, UnlinkatFlags::RemoveDir) {
            Ok(()) => Ok(true),
            Err(nix::errno::Errno::ENOTEMPTY | nix::errno::Errno::EEXIST) => Ok(false),
            Err(nix::errno::Errno::ENOENT) => Ok(false),
            Err(e) => Err(errno(&self.path.join(name), e)),
        }
    }
}

/// `rel`'s parent (below `top`) and its last component.
pub fn split(rel: &Path) -> Result<(&Path, &OsStr)> {
    let name = rel
        .file_name()
        .ok_or_else(|| Error::file(rel, "has no file name"))?;
    Ok((rel.parent().unwrap_or(Path::new("")), name))
}

#[cfg(test)]
mod tests;
