//! Reading a tree that another user owns (a Homebrew keg, a staged build), as root, without
//! being led elsewhere.
//!
//! The tree belongs to its user, so anything running as that user can change it while
//! root reads it: swap a file for a symlink to `/etc/master.passwd`, or a directory for a
//! link to `/var/root`. So nothing is opened by path: each directory is opened relative to
//! its parent's descriptor with `O_NOFOLLOW`, each entry is looked at with `fstatat` without
//! following links and opened the same way, and what was opened is checked again on its
//! descriptor (same inode, regular file or directory, owned by the tree's owner). A symlink
//! is read as a link, never followed. A file owned by anyone else (root's file hard-linked
//! into the tree), a device, a FIFO or a socket is refused.

use super::chain::kind;
use crate::error::{Error, Result};
use nix::dir::Dir;
use nix::fcntl::AtFlags;
use nix::fcntl::{OFlag, openat, readlinkat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};
use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// One entry of the tree, by its path relative to its top.
#[derive(Debug)]
pub enum Entry {
    Dir { mode: u32 },
    File { mode: u32, data: Vec<u8> },
    Link { target: PathBuf },
}

/// Hands every entry below `top` to `sink`, in walk order (a directory before what it
/// holds), and returns the tree's owner (the uid of its top directory).
pub fn tree(top: &Path, sink: &mut dyn FnMut(PathBuf, Entry) -> Result<()>) -> Result<u32> {
    let fd = nix::fcntl::open(
        top,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::io(top, e.into()))?;
    let st = fstat(&fd).map_err(|e| Error::io(top, e.into()))?;
    let owner = st.st_uid;
    walk(top, Path::new(""), fd, owner, sink)?;
    Ok(owner)
}

fn mode(st: &FileStat) -> u32 {
    super::chain::mode(st) & 0o7777
}

fn walk(
    top: &Path,
    rel: &Path,
    dir: OwnedFd,
    owner: u32,
    sink: &mut dyn FnMut(PathBuf, Entry) -> Result<()>,
) -> Result<()> {
    let here = top.join(rel);
    let dup = dir.try_clone().map_err(|e| Error::io(&here, e))?;
    let mut names: Vec<Vec<u8>> = Dir::from_fd(dup)
        .map_err(|e| Error::io(&here, e.into()))?
        .iter()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_bytes().to_vec())
        .filter(|n| n != b"." && n != b"..")
        .collect();
    names.sort();
    for name in names {
        let name = OsStr::from_bytes(&name);
        let r = rel.join(name);
        let path = top.join(&r);
        let st = fstatat(&dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)
            .map_err(|e| Error::io(&path, e.into()))?;
        let k = kind(&st);
        if k == SFlag::S_IFLNK {
            let target = readlinkat(&dir, name).map_err(|e| Error::io(&path, e.into()))?;
            sink(
                r,
                Entry::Link {
                    target: target.into(),
                },
            )?;
            continue;
        }
        let flags = match k {
            SFlag::S_IFDIR => OFlag::O_DIRECTORY,
            SFlag::S_IFREG => OFlag::O_NONBLOCK,
            _ => {
                return Err(Error::file(
                    &path,
                    "is not a file, a directory or a symlink (a device, FIFO or socket): a \
                     keg or a staged build holds none; remove it, or build it again",
                ));
            }
        };
        let (fd, now) = open_checked(&dir, name, &path, &st, flags, owner)?;
        if k == SFlag::S_IFDIR {
            sink(r.clone(), Entry::Dir { mode: mode(&now) })?;
            walk(top, &r, fd, owner, sink)?;
        } else {
            let mut data = Vec::new();
            std::fs::File::from(fd)
                .read_to_end(&mut data)
                .map_err(|e| Error::io(&path, e))?;
            sink(
                r,
                Entry::File {
                    mode: mode(&now),
                    data,
                },
            )?;
        }
    }
    Ok(())
}

/// `name` in `dir`, opened without following a link, and checked on its descriptor: the
/// entry `st` described (same inode and type), owned by `owner`.
fn open_checked(
    dir: &OwnedFd,
    name: &OsStr,
    path: &Path,
    st: &FileStat,
    flags: OFlag,
    owner: u32,
) -> Result<(OwnedFd, FileStat)> {
    let k = kind(st);
    let fd = openat(
        dir,
        name,
        flags | OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::io(path, e.into()))?;
    let now = fstat(&fd).map_err(|e| Error::io(path, e.into()))?;
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) || kind(&now) != k {
        return Err(Error::file(
            path,
            "changed while it was being copied: something is modifying the tree; stop \
             it and run this again",
        ));
    }
    if now.st_uid != owner {
        return Err(Error::file(
            path,
            format!(
                "belongs to uid {}, not to the tree's owner (uid {owner}): a keg's or a \
                 staged build's files are all its owner's, so this one was put there (a hard \
                 link?); remove it, or build it again",
                now.st_uid
            ),
        ));
    }
    Ok((fd, now))
}
