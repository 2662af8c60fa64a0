//! A staged build or a keg copied into root's staging directory without being led elsewhere:
//! read through [`gate::read_tree`] (every directory opened relative to its parent with
//! `O_NOFOLLOW`, every entry checked on its descriptor, links copied as links), written into
//! a tree only root can change. A directory swapped for a link while this runs is an error,
//! never followed, so nothing outside the staged tree reaches the install.

use driver_common::error::{Error, Result};
use driver_common::gate::read_tree::{self, Entry};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What is done to each file's bytes and each link's target on the way (copy-keg rewrites the
/// Homebrew prefix; install changes nothing).
pub(crate) trait Rewrite {
    fn file(&mut self, rel: &Path, data: Vec<u8>) -> Result<Vec<u8>>;
    fn link(&mut self, target: PathBuf) -> PathBuf;
}

/// No change: `install`'s copy.
pub(crate) struct Same;

impl Rewrite for Same {
    fn file(&mut self, _: &Path, data: Vec<u8>) -> Result<Vec<u8>> {
        Ok(data)
    }
    fn link(&mut self, target: PathBuf) -> PathBuf {
        target
    }
}

/// Copies the tree at `from` into the new directory `tree`, through `rw`.
pub(crate) fn copy(from: &Path, tree: &Path, rw: &mut dyn Rewrite) -> Result<()> {
    fs::create_dir(tree).map_err(|e| Error::io(tree, e))?;
    read_tree::tree(from, &mut |rel, entry| {
        let dst = tree.join(&rel);
        match entry {
            Entry::Dir { mode } => {
                fs::create_dir(&dst).map_err(|e| Error::io(&dst, e))?;
                set_mode(&dst, mode)
            }
            Entry::File { mode, data } => {
                let data = rw.file(&rel, data)?;
                fs::write(&dst, data).map_err(|e| Error::io(&dst, e))?;
                set_mode(&dst, mode)
            }
            Entry::Link { target } => {
                let target = rw.link(target);
                std::os::unix::fs::symlink(&target, &dst).map_err(|e| Error::io(&dst, e))
            }
        }
    })?;
    Ok(())
}

pub(crate) fn set_mode(p: &Path, mode: u32) -> Result<()> {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).map_err(|e| Error::io(p, e))
}
