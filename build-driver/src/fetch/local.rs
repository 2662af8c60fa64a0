//! `fetch --source DIR` of an unpacked tree: copied as the unverified version
//! `<META version>-local` (always re-copied; never verified against a pin).

use super::archive::{self, Layout};
use super::{SourceTree, step};
use driver_common::error::{Error, Result};
use driver_common::util::fs::{Staging, copy_tree_excluding};
use std::fs;
use std::path::Path;

/// `Version` and `Major`.`Minor` from a Slurm META file.
pub(super) fn parse_meta(text: &str) -> Option<(String, String)> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let version = field("Version").filter(|v| !v.is_empty())?;
    let (major, minor) = (field("Major")?, field("Minor")?);
    Some((version, format!("{major}.{minor}")))
}

/// Copies an unpacked tree as the unverified version `<META version>-local`.
pub(super) fn copy_local_tree(layout: &Layout, path: &Path) -> Result<SourceTree> {
    let meta_path = path.join("META");
    let text = fs::read_to_string(&meta_path).map_err(|e| Error::io(&meta_path, e))?;
    let (meta_version, line) = parse_meta(&text).ok_or_else(|| Error::NotASource {
        path: path.to_path_buf(),
        detail: "META has no Version/Major/Minor fields".into(),
    })?;
    let version = format!("{meta_version}-local");
    let dest = layout.tree(&version);
    let src_c = path.canonicalize().map_err(|e| Error::io(path, e))?;
    if dest.canonicalize().is_ok_and(|d| d == src_c) {
        return Err(Error::Unsupported(format!(
            "{} is already the local copy; use --version {version} is not a pin: pass the original tree",
            dest.display()
        )));
    }
    eprintln!(
        "fetch: {} is an unpacked tree (META {meta_version}): unverified, copied as `{version}`",
        path.display()
    );
    let staging = Staging::new(&layout.dir, &version)?;
    let copy = staging.dir.join("tree");
    step(&format!("copying {}", path.display()), || {
        copy_tree_excluding(&src_c, &copy, &[".git"])
    })?;
    archive::install(
        layout,
        &version,
        &copy,
        &format!("local {}", src_c.display()),
    )?;
    Ok(SourceTree {
        path: dest,
        version,
        line,
    })
}
