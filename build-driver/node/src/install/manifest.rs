//! The install manifest: every file and symlink `install` put into the prefix, with its
//! sha256 (or link target) and mode, written inside the prefix. It tells `install` whether a
//! second run would change anything, and `uninstall` what to remove.

use driver_common::error::{Error, Result};
use driver_common::gate::{self, dir::Dir};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// One installed entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// `sha256:<hex>` of a file, or `link:<target>` of a symlink.
    pub content: String,
    /// Permission bits (files; 0 for links).
    pub mode: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The prefix the programs are configured for.
    pub prefix: PathBuf,
    /// Path relative to the prefix -> entry.
    pub files: BTreeMap<String, Entry>,
}

fn not_found(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

/// The entry `name` in `d` (its sha256 and mode, or its link target), read through the
/// directory's descriptor without following a link.
fn entry_in(d: &Dir, name: &std::ffi::OsStr) -> Result<Option<Entry>> {
    let Some(st) = d.stat(name)? else {
        return Ok(None);
    };
    let kind = gate::chain::kind(&st);
    if kind == nix::sys::stat::SFlag::S_IFLNK {
        let t = d.read_link(name)?;
        return Ok(Some(Entry {
            content: format!("link:{}", t.display()),
            mode: 0,
        }));
    }
    if kind != nix::sys::stat::SFlag::S_IFREG {
        return Ok(None);
    }
    let data = d.read_file(name)?;
    Ok(Some(Entry {
        content: format!("sha256:{}", driver_common::util::fs::sha256_hex(&data)),
        mode: gate::chain::mode(&st) & 0o7777,
    }))
}

/// The entry at `path` ([`entry_in`] of its directory); `None` when it is neither a file
/// nor a link.
fn entry(path: &Path) -> Result<Option<Entry>> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(None);
    };
    entry_in(&Dir::open(parent)?, name)
}

impl Manifest {
    /// The manifest of the tree at `dir`, installed as `prefix`.
    pub fn of_tree(dir: &Path, prefix: &Path) -> Result<Manifest> {
        let mut files = BTreeMap::new();
        for rel in driver_common::util::fs::walk(dir)? {
            if let Some(e) = entry(&dir.join(&rel))? {
                files.insert(rel.display().to_string(), e);
            }
        }
        files.remove(super::MANIFEST);
        Ok(Manifest {
            prefix: prefix.to_path_buf(),
            files,
        })
    }

    /// Reads a manifest; every entry must be a plain relative path that stays inside the
    /// prefix (no `/`, `..`, `.` components): `uninstall` removes what it names, as root.
    pub fn read(path: &Path) -> Result<Manifest> {
        let text = fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let m: Manifest =
            toml::from_str(&text).map_err(|e| Error::parse(path.display().to_string(), e))?;
        for rel in m.files.keys() {
            let plain = Path::new(rel)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            if !plain || rel.is_empty() {
                return Err(Error::file(
                    path,
                    format!(
                        "names `{rel}`, which is not a relative path inside the prefix \
                         (outside: nothing removed); the manifest was altered: remove the \
                         install's files by hand or reinstall"
                    ),
                ));
            }
        }
        Ok(m)
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        let text = toml::to_string(self).map_err(|e| Error::parse("the install manifest", e))?;
        if let Some(p) = path.parent() {
            fs::create_dir_all(p).map_err(|e| Error::io(p, e))?;
        }
        let text = format!(
            "# Written by `cargo xtask install`; `cargo xtask uninstall` reads it.\n{text}"
        );
        driver_common::util::fs::write_atomic(path, text.as_bytes(), 0o644)
    }

    /// Errors unless every entry is in `dir` as recorded.
    pub fn verify(&self, dir: &Path) -> Result<()> {
        for (rel, want) in &self.files {
            let p = dir.join(rel);
            if entry(&p).ok().flatten().as_ref() != Some(want) {
                return Err(Error::file(p, "differs from the install manifest"));
            }
        }
        Ok(())
    }

    /// Removes the recorded entries that are still as installed, then the directories left
    /// empty and the manifest; returns what was kept because it changed. Everything goes
    /// through descriptors (no link followed on the way: `evil -> /etc` in the prefix stops
    /// the run), and every entry is looked at before the first is removed, so a refused run
    /// removes nothing.
    pub fn remove(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let top = Dir::open(dir)?;
        let nothing = |e: Error| e.context(format!("{}: nothing was removed", dir.display()));
        let mut remove = Vec::new();
        let mut kept = Vec::new();
        for (rel, want) in &self.files {
            let rel = Path::new(rel);
            let (parent, name) = gate::dir::split(rel)?;
            let d = match top.sub(parent) {
                Ok(d) => d,
                Err(e) if not_found(&e) => continue,
                Err(e) => return Err(nothing(e)),
            };
            match entry_in(&d, name).map_err(nothing)? {
                Some(e) if &e == want => remove.push(rel),
                Some(_) => kept.push(dir.join(rel)),
                None => {}
            }
        }
        for rel in remove.iter().copied().chain([Path::new(super::MANIFEST)]) {
            let (parent, name) = gate::dir::split(rel)?;
            match top.sub(parent) {
                Ok(d) if d.stat(name)?.is_some() => d.remove_file(name)?,
                Ok(_) => {}
                Err(e) if not_found(&e) => {}
                Err(e) => return Err(e),
            }
        }
        // The directories the entries lie in, deepest first, where they are empty now.
        let manifest = super::MANIFEST.to_string();
        let mut dirs: Vec<&Path> = self
            .files
            .keys()
            .chain([&manifest])
            .flat_map(|r| Path::new(r).ancestors().skip(1).collect::<Vec<_>>())
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        dirs.sort_by_key(|d| std::cmp::Reverse((d.components().count(), d.to_path_buf())));
        dirs.dedup();
        for d in dirs {
            let (parent, name) = gate::dir::split(d)?;
            match top.sub(parent) {
                Ok(p) => {
                    p.remove_empty_dir(name)?;
                }
                Err(e) if not_found(&e) => {}
                Err(e) => return Err(e),
            }
        }
        if let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) {
            Dir::open(parent)?.remove_empty_dir(name)?;
        }
        Ok(kept)
    }

    /// The entries of a file not in this manifest (an admin's), relative to `dir`.
    pub fn foreign_files(&self, dir: &Path) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for rel in driver_common::util::fs::walk(dir)? {
            let name = rel.display().to_string();
            let p = dir.join(&rel);
            let meta = fs::symlink_metadata(&p).map_err(|e| Error::io(&p, e))?;
            if !meta.is_dir() && !self.files.contains_key(&name) && name != super::MANIFEST {
                out.push(name);
            }
        }
        Ok(out)
    }
}
