//! The install manifest: every file and symlink `install` put into the prefix, with its
//! sha256 (or link target) and mode, written inside the prefix. It tells `install` whether a
//! second run would change anything, and `uninstall` what to remove.

use driver_common::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
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

fn entry(path: &Path) -> Result<Option<Entry>> {
    let meta = fs::symlink_metadata(path).map_err(|e| Error::io(path, e))?;
    if meta.file_type().is_symlink() {
        let t = fs::read_link(path).map_err(|e| Error::io(path, e))?;
        return Ok(Some(Entry {
            content: format!("link:{}", t.display()),
            mode: 0,
        }));
    }
    if !meta.is_file() {
        return Ok(None);
    }
    Ok(Some(Entry {
        content: format!("sha256:{}", driver_common::util::fs::sha256_file(path)?),
        mode: meta.permissions().mode() & 0o7777,
    }))
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
    /// empty and the manifest; returns what was kept because it changed.
    pub fn remove(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let mut kept = Vec::new();
        for (rel, want) in &self.files {
            let p = dir.join(rel);
            match entry(&p) {
                Ok(Some(e)) if &e == want => driver_common::util::fs::remove_optional(&p)?,
                Ok(Some(_)) => kept.push(p),
                _ => {}
            }
        }
        driver_common::util::fs::remove_optional(&dir.join(super::MANIFEST))?;
        let mut dirs: Vec<PathBuf> = driver_common::util::fs::walk(dir)?
            .into_iter()
            .map(|r| dir.join(r))
            .filter(|p| p.is_dir() && !p.is_symlink())
            .collect();
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for d in dirs.iter().map(PathBuf::as_path).chain([dir]) {
            if fs::read_dir(d)
                .map(|mut r| r.next().is_none())
                .unwrap_or(false)
            {
                fs::remove_dir(d).map_err(|e| Error::io(d, e))?;
            }
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
