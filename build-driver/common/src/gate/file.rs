//! Files read as root. Configuration (`--conf`, `--map`, `--hardware`, a `SLURM_CONF`) is read
//! only from a trusted file ([`read_trusted`]); a file inside a tree the caller chose (a key,
//! a staged build's example) is read without following a link ([`read_nofollow`]). Errors
//! name the file, its owner and mode, never its content: root can read what the caller could
//! not.

use super::chain::{self, Owners};
use crate::error::{Error, Result};
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, SFlag, fstat};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;

/// The content of `path`, a regular file that only root (or the caller) can change, as are
/// the directories above it.
pub fn read_trusted(path: &Path) -> Result<Vec<u8>> {
    read_trusted_for(path, Owners::caller())
}

/// [`read_trusted`] for `owners`.
pub fn read_trusted_for(path: &Path, owners: Owners) -> Result<Vec<u8>> {
    let w = chain::open(path, owners)?;
    let (fd, st) = w.leaf.expect("open returns an existing leaf");
    if chain::kind(&st) != SFlag::S_IFREG {
        return Err(Error::file(path, "is not a regular file"));
    }
    read_fd(path, fd)
}

/// The content of the regular file `path`, opened with `O_NOFOLLOW`: a link in its place is
/// refused, not followed.
pub fn read_nofollow(path: &Path) -> Result<Vec<u8>> {
    let fd = openat(
        nix::fcntl::AT_FDCWD,
        path,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        nix::errno::Errno::ELOOP => Error::file(path, "is a link: give the file itself"),
        e => chain::errno(path, e),
    })?;
    let st = fstat(&fd).map_err(|e| chain::errno(path, e))?;
    if chain::kind(&st) != SFlag::S_IFREG {
        return Err(Error::file(path, "is not a regular file"));
    }
    read_fd(path, fd)
}

pub(crate) fn read_fd(path: &Path, fd: OwnedFd) -> Result<Vec<u8>> {
    let mut f = std::fs::File::from(fd);
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).map_err(|e| Error::io(path, e))?;
    Ok(buf)
}

/// [`read_trusted`] as UTF-8 text; an error names the file, never its content.
pub fn read_trusted_text(path: &Path) -> Result<String> {
    String::from_utf8(read_trusted(path)?).map_err(|_| Error::file(path, "is not UTF-8 text"))
}
