//! Whether root may act on a path: what root runs, reads as configuration or writes a secret
//! into must not be changeable by another user. OpenSSH's StrictModes rule: the path and
//! every directory above it, up to `/`, belong to root or to the expected owner and are not
//! writable by group or others; a sticky world-writable directory (`/tmp`) is accepted
//! above an entry that belongs to root or the owner, since no one else can rename that entry.
//! Both the path as written (each link checked where it lies) and the path links lead to
//! are checked. A path that does not exist yet is checked from its nearest existing ancestor.

use crate::error::{Error, Result};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

const STICKY: u32 = 0o1000;

/// Errors (naming the path, why and the fix) unless no user but root and `owner` can
/// change `path` or anything above it. The node tool passes `owner` 0 (root); tests pass
/// their own uid.
pub fn trusted(path: &Path, owner: u32) -> Result<()> {
    let abs = std::path::absolute(path).map_err(|e| Error::io(path, e))?;
    let mut existing = abs.as_path();
    while fs::symlink_metadata(existing).is_err() {
        existing = existing.parent().unwrap_or(Path::new("/"));
    }
    check_chain(&lexical(existing), owner)?;
    let real = existing
        .canonicalize()
        .map_err(|e| Error::io(existing, e))?;
    check_chain(&real, owner)
}

/// `p` with `.` and `..` resolved by name (no links followed).
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// Checks `path` (the leaf) and each ancestor; links themselves are not judged by their mode.
fn check_chain(path: &Path, owner: u32) -> Result<()> {
    let mut leaf = true;
    for p in path.ancestors() {
        let m = fs::symlink_metadata(p).map_err(|e| Error::io(p, e))?;
        if !m.file_type().is_symlink() {
            check_one(p, &m, owner, leaf)?;
        }
        leaf = false;
    }
    Ok(())
}

fn check_one(p: &Path, m: &fs::Metadata, owner: u32, leaf: bool) -> Result<()> {
    let shown = p.display();
    if m.uid() != 0 && m.uid() != owner {
        return Err(Error::Untrusted {
            path: p.to_path_buf(),
            why: format!("belongs to uid {}, not to root", m.uid()),
            fix: format!("sudo chown root {shown}, or choose a path root owns"),
        });
    }
    let writable = m.mode() & 0o022 != 0;
    let sticky_dir = m.is_dir() && m.mode() & STICKY != 0;
    if writable && (leaf || !sticky_dir) {
        return Err(Error::Untrusted {
            path: p.to_path_buf(),
            why: format!(
                "is writable by {} (mode {:o})",
                if m.mode() & 0o002 != 0 {
                    "every user"
                } else {
                    "its group"
                },
                m.mode() & 0o7777
            ),
            fix: format!("sudo chmod go-w {shown}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn trusted__attack_writable_or_foreign_directories_anywhere_above_are_refused() {
        let me = nix::unistd::geteuid().as_raw();
        let d = tempfile::tempdir().unwrap();
        let deep = d.path().join("a/b/c");
        fs::create_dir_all(&deep).unwrap();
        trusted(&deep.join("not-yet/file"), me).unwrap();
        chmod(&d.path().join("a"), 0o777);
        let e = trusted(&deep, me).unwrap_err().to_string();
        assert!(e.contains("a: ") || e.contains("/a "), "{e}");
        assert!(e.contains("chmod go-w"), "{e}");
        chmod(&d.path().join("a"), 0o1777);
        trusted(&deep, me).expect("a sticky directory above an owned entry is fine");
        chmod(&deep, 0o1777);
        assert!(
            trusted(&deep, me).is_err(),
            "the leaf itself may not be writable"
        );
        chmod(&deep, 0o755);
        chmod(&d.path().join("a/b"), 0o775);
        assert!(
            trusted(&deep.join("x"), me).is_err(),
            "group-writable above"
        );
        chmod(&d.path().join("a/b"), 0o755);
        // A link to a writable place: the place it leads to is checked.
        let open = d.path().join("open");
        fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        std::os::unix::fs::symlink(&open, d.path().join("a/link")).unwrap();
        assert!(trusted(&d.path().join("a/link/f"), me).is_err());
        if me == 0 {
            std::os::unix::fs::chown(&deep, Some(4242), None).unwrap();
            let e = trusted(&deep, 0).unwrap_err().to_string();
            assert!(e.contains("uid 4242") && e.contains("chown root"), "{e}");
        } else {
            eprintln!("skipped the ownership half: only root can give a directory away");
        }
    }
}
