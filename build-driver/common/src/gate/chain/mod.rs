//! Whether root may act on a path: the path and every directory above it, up to `/`, belong
//! to root (or to the caller, when the caller is not root) and are not writable by group or
//! others (OpenSSH's StrictModes rule). A sticky directory (`/tmp`) is accepted above an entry
//! that belongs to root or the caller, since no one else can rename that entry.
//!
//! The walk starts at `/` and opens one component at a time relative to the descriptor of
//! the directory above it, with `O_NOFOLLOW`, and judges what it opened by `fstat`; a link is
//! read (`readlinkat`), judged by its owner, and its target walked in turn, as the kernel
//! resolves it. Once every directory of the resolved path is trusted, no other user can
//! change what the path names: starting a program by its resolved path after the check runs
//! what was checked.

use crate::error::{Error, Result};
use nix::fcntl::{OFlag, openat, readlinkat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

const STICKY: u32 = 0o1000;
/// The most links one walk follows (the kernel's own limit on Linux is 40).
const MAX_LINKS: usize = 40;

/// Who besides root may own what root acts on: nobody when the caller is root; the caller
/// itself otherwise (a test's scratch tree, a user's own run of `doctor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owners {
    pub user: u32,
}

impl Owners {
    pub const ROOT: Owners = Owners { user: 0 };

    /// Root and the effective user.
    pub fn caller() -> Owners {
        Owners {
            user: nix::unistd::geteuid().as_raw(),
        }
    }

    fn allows(self, uid: u32) -> bool {
        uid == 0 || uid == self.user
    }
}

/// What a walk found: the resolved path and, when it exists, its descriptor and status.
#[derive(Debug)]
pub struct Walked {
    /// The path with every link resolved (what a program is started by).
    pub resolved: PathBuf,
    /// The leaf, opened without following a link; `None` when it (or a directory on the way)
    /// does not exist yet.
    pub leaf: Option<(OwnedFd, FileStat)>,
}

/// Errors (naming the path, its owner and mode, why and the fix) unless no user but root
/// and `owners` can change `path` or anything above it. A path that does not exist yet is
/// judged up to its nearest existing directory.
pub fn trusted(path: &Path, owners: Owners) -> Result<()> {
    walk(path, owners).map(drop)
}

/// [`trusted`], and the path must exist.
pub fn open(path: &Path, owners: Owners) -> Result<Walked> {
    let w = walk(path, owners)?;
    if w.leaf.is_none() {
        return Err(Error::file(path, "does not exist"));
    }
    Ok(w)
}

/// [`trusted`] for a directory that will hold entries root makes (a work directory's
/// parent): judged as a directory above an entry, so a sticky world-writable one (`/tmp`)
/// passes.
pub fn trusted_parent(path: &Path, owners: Owners) -> Result<()> {
    walk_judging(path, owners, false).map(drop)
}

/// The walk of [`trusted`]/[`open`].
pub fn walk(path: &Path, owners: Owners) -> Result<Walked> {
    walk_judging(path, owners, true)
}

/// The walk; `leaf_is_leaf` false judges the last component as a directory above an entry.
fn walk_judging(path: &Path, owners: Owners, leaf_is_leaf: bool) -> Result<Walked> {
    let abs = std::path::absolute(path).map_err(|e| Error::io(path, e))?;
    let root = open_dir_fd(None, Path::new("/"))?;
    let st = fstat(&root).map_err(|e| errno(Path::new("/"), e))?;
    judge(Path::new("/"), &st, owners, false)?;
    let mut w = Walker {
        todo: names(&abs).into_iter().rev().collect(),
        here: PathBuf::from("/"),
        stack: vec![root],
        links: 0,
    };
    while let Some(name) = w.todo.pop() {
        if name == ".." {
            if w.stack.len() > 1 {
                w.stack.pop();
                w.here.pop();
            }
            continue;
        }
        let dir = w.stack.last().expect("the root stays on the stack");
        let shown = w.here.join(&name);
        let st = match fstatat(
            dir,
            name.as_os_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(st) => st,
            Err(nix::errno::Errno::ENOENT) => return Ok(w.missing(shown)),
            Err(e) => return Err(errno(&shown, e)),
        };
        if kind(&st) == SFlag::S_IFLNK {
            w.follow(&name, &shown, &st, owners)?;
            continue;
        }
        let fd = open_entry(dir, &name, &shown, kind(&st) == SFlag::S_IFDIR)?;
        // Judged on the descriptor: what was opened, not what the name pointed at a moment
        // earlier.
        let st = fstat(&fd).map_err(|e| errno(&shown, e))?;
        let last = w.todo.is_empty();
        judge(&shown, &st, owners, last && leaf_is_leaf)?;
        w.here = shown;
        if last {
            return Ok(Walked {
                resolved: w.here,
                leaf: Some((fd, st)),
            });
        }
        if kind(&st) != SFlag::S_IFDIR {
            return Err(Error::file(&w.here, "is not a directory"));
        }
        w.stack.push(fd);
    }
    // The path was `/` itself.
    let fd = open_dir_fd(None, Path::new("/"))?;
    let st = fstat(&fd).map_err(|e| errno(Path::new("/"), e))?;
    Ok(Walked {
        resolved: w.here,
        leaf: Some((fd, st)),
    })
}

/// The walk's state: names still to resolve (last first), where it is, the descriptors of
/// the directories down to here, links followed so far.
struct Walker {
    todo: Vec<OsString>,
    here: PathBuf,
    stack: Vec<OwnedFd>,
    links: usize,
}

impl Walker {
    /// A link is judged by its owner (its mode means nothing), then its target is walked
    /// from where the link lies, or from `/`.
    fn follow(
        &mut self,
        name: &OsString,
        shown: &Path,
        st: &FileStat,
        owners: Owners,
    ) -> Result<()> {
        judge_owner(shown, st, owners)?;
        self.links += 1;
        if self.links > MAX_LINKS {
            return Err(Error::file(shown, "has too many levels of links"));
        }
        let dir = self.stack.last().expect("the root stays on the stack");
        let target = PathBuf::from(readlinkat(dir, name.as_os_str()).map_err(|e| errno(shown, e))?);
        if target.is_absolute() {
            self.stack.truncate(1);
            self.here = PathBuf::from("/");
        }
        self.todo.extend(names(&target).into_iter().rev());
        Ok(())
    }

    /// The walk's answer when `shown` does not exist: the rest of the path appended.
    fn missing(&mut self, shown: PathBuf) -> Walked {
        let mut resolved = shown;
        while let Some(n) = self.todo.pop() {
            resolved.push(n);
        }
        Walked {
            resolved,
            leaf: None,
        }
    }
}

/// `name` in `dir`, opened without following a link (a directory, or any other entry
/// read-only and non-blocking).
fn open_entry(dir: &OwnedFd, name: &OsString, shown: &Path, is_dir: bool) -> Result<OwnedFd> {
    if is_dir {
        return open_dir_fd(Some(dir), Path::new(name));
    }
    openat(
        dir,
        name.as_os_str(),
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| errno(shown, e))
}

/// The components of `p` that name something (`.` dropped, `..` kept for the walk).
fn names(p: &Path) -> Vec<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// A directory opened without following a link (`dir` relative, or absolute when `None`).
pub(crate) fn open_dir_fd(dir: Option<&OwnedFd>, name: &Path) -> Result<OwnedFd> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let r = match dir {
        Some(d) => openat(d, name, flags, Mode::empty()),
        None => openat(nix::fcntl::AT_FDCWD, name, flags, Mode::empty()),
    };
    r.map_err(|e| errno(name, e))
}

pub fn kind(st: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT
}

/// `st_mode` as a u32 (a u16 on macOS, a u32 on Linux).
#[allow(clippy::useless_conversion)]
pub fn mode(st: &FileStat) -> u32 {
    u32::from(st.st_mode)
}

pub(crate) fn errno(path: &Path, e: nix::errno::Errno) -> Error {
    Error::io(path, std::io::Error::from(e))
}

/// The owner and mode as messages show them: `owner uid 65534, mode 0777`.
pub fn owner_mode(st: &FileStat) -> String {
    format!("owner uid {}, mode {:04o}", st.st_uid, mode(st) & 0o7777)
}

fn judge_owner(p: &Path, st: &FileStat, owners: Owners) -> Result<()> {
    if owners.allows(st.st_uid) {
        return Ok(());
    }
    Err(Error::Untrusted {
        path: p.to_path_buf(),
        why: format!("({}) belongs to another user, not to root", owner_mode(st)),
        fix: format!(
            "sudo chown root {}, or use a copy root owns (docs/JOIN.md, \"What root trusts\")",
            p.display()
        ),
    })
}

/// One object: owned by root (or the caller), not writable by group or others, except a
/// sticky directory above the leaf.
pub(crate) fn judge(p: &Path, st: &FileStat, owners: Owners, leaf: bool) -> Result<()> {
    judge_owner(p, st, owners)?;
    let mode = self::mode(st);
    let writable = mode & 0o022 != 0;
    let sticky_dir = kind(st) == SFlag::S_IFDIR && mode & STICKY != 0;
    if writable && (leaf || !sticky_dir) {
        return Err(Error::Untrusted {
            path: p.to_path_buf(),
            why: format!(
                "({}) is writable by {}",
                owner_mode(st),
                if mode & 0o002 != 0 {
                    "every user"
                } else {
                    "its group"
                }
            ),
            fix: format!("sudo chmod go-w {}", p.display()),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
