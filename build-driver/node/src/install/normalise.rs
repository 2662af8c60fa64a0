//! What root installs gets safe modes and stays inside the tree: files and directories lose
//! setuid, setgid, sticky and group/world write (a staged tree is built by a user; root must
//! not inherit a setuid helper or a writable `sbin/`), everything belongs to the install's
//! owner, and a symlink must lead to a place inside the tree (relative, or absolute below
//! the prefix).

use driver_common::error::{Error, Result};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

/// The group that goes with the files' owner `owner`: root's (0) for root, else the running
/// user's (a test's own install).
pub fn group_of(owner: u32) -> u32 {
    if owner == 0 {
        0
    } else {
        nix::unistd::getegid().as_raw()
    }
}

/// Normalises the staged copy `tree` that will be installed as `prefix`, for `owner`.
pub fn tree(tree: &Path, prefix: &Path, owner: u32) -> Result<()> {
    let gid = group_of(owner);
    for rel in driver_common::util::fs::walk(tree)? {
        let p = tree.join(&rel);
        let m = fs::symlink_metadata(&p).map_err(|e| Error::io(&p, e))?;
        if m.file_type().is_symlink() {
            check_link(tree, &rel, prefix)?;
        } else {
            let mode = m.permissions().mode() & 0o755;
            fs::set_permissions(&p, fs::Permissions::from_mode(mode))
                .map_err(|e| Error::io(&p, e))?;
        }
        std::os::unix::fs::lchown(&p, Some(owner), Some(gid)).map_err(|e| Error::io(&p, e))?;
    }
    let mode = fs::metadata(tree)
        .map_err(|e| Error::io(tree, e))?
        .permissions()
        .mode()
        & 0o755;
    fs::set_permissions(tree, fs::Permissions::from_mode(mode)).map_err(|e| Error::io(tree, e))?;
    std::os::unix::fs::lchown(tree, Some(owner), Some(gid)).map_err(|e| Error::io(tree, e))
}

/// The link at `rel` (in `tree`) must resolve, by name, to a path inside the tree.
fn check_link(tree: &Path, rel: &Path, prefix: &Path) -> Result<()> {
    let p = tree.join(rel);
    let target = fs::read_link(&p).map_err(|e| Error::io(&p, e))?;
    let inside = match target.strip_prefix(prefix) {
        Ok(below) if target.is_absolute() => inside_by_name(Path::new(""), below),
        _ if target.is_absolute() => None,
        _ => inside_by_name(rel.parent().unwrap_or(Path::new("")), &target),
    };
    match inside {
        Some(_) => Ok(()),
        None => Err(Error::file(
            &p,
            format!(
                "is a symlink to {}, outside the installed tree: root would install a link \
                 out of the prefix; remove it from the staged build or point it inside",
                target.display()
            ),
        )),
    }
}

/// `base/rel` resolved by name; `None` when `..` climbs above the top.
pub fn inside_by_name(base: &Path, rel: &Path) -> Option<PathBuf> {
    let mut out: Vec<&std::ffi::OsStr> = base.iter().collect();
    for c in rel.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out.iter().collect())
}
