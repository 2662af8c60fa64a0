//! The input hash that lets an unchanged build be skipped.
//!
//! Inputs: the source identity (version, line, and the pristine tree's file list with sizes
//! and modification times), the series file and each patch's contents (unless
//! `--no-patches`), the shim's sources, `Cargo.lock` and the header (only when the build
//! uses the shim), the configure arguments and make variables (which carry personality,
//! target, prefix and compiler), and the driver's version. The stamp is written only after
//! a successful install and check, and removed before any work starts, so an interrupted
//! build never leaves one.

use crate::error::{Error, Result};
use crate::util::fs::{hex, remove_optional, walk_files, write_atomic};
use sha2::{Digest, Sha256};
use std::fs;
use std::path::{Path, PathBuf};

/// An ordered list of named inputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    items: Vec<(String, String)>,
}

impl Inputs {
    pub fn add(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.items.push((key.into(), value.into()));
    }

    /// The hex sha256 of all inputs (each key and value length-prefixed, so no two different
    /// lists hash alike by concatenation).
    pub fn hash(&self) -> String {
        let mut h = Sha256::new();
        for (k, v) in &self.items {
            for part in [k, v] {
                h.update((part.len() as u64).to_le_bytes());
                h.update(part.as_bytes());
            }
        }
        hex(&h.finalize())
    }

    /// The stamp file's text: the hash, then the inputs for a human reader.
    pub fn stamp_text(&self) -> String {
        let mut s = format!("{}\n", self.hash());
        for (k, v) in &self.items {
            s.push_str(&format!("{k}: {v}\n"));
        }
        s
    }
}

/// Digest of a tree's metadata: each file's relative path, size and modification time.
/// Cheap (no file is read) and changes when any file is added, removed or rewritten.
pub fn tree_metadata_digest(dir: &Path) -> Result<String> {
    let files = walk_files(dir)?;
    let mut h = Sha256::new();
    for rel in files {
        let f = dir.join(&rel);
        let md = fs::symlink_metadata(&f).map_err(|e| Error::io(&f, e))?;
        let mtime = md
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        h.update(rel.as_os_str().as_encoded_bytes());
        h.update([0]);
        h.update(md.len().to_le_bytes());
        h.update(mtime.to_le_bytes());
    }
    Ok(hex(&h.finalize()))
}

/// Digest of the contents of every file under each of `paths` (files or directories),
/// with their paths relative to `root`.
pub fn contents_digest(root: &Path, paths: &[PathBuf]) -> Result<String> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            files.extend(walk_files(p)?.into_iter().map(|r| p.join(r)));
        } else if p.exists() {
            files.push(p.clone());
        }
    }
    files.sort();
    let mut h = Sha256::new();
    for f in files {
        // A link is its target's name (the SDK stand-ins link framework headers into the
        // shim's tree, which its own inputs cover); reading one to a directory would fail.
        let is_link = fs::symlink_metadata(&f)
            .map_err(|e| Error::io(&f, e))?
            .file_type()
            .is_symlink();
        let data = if is_link {
            let target = fs::read_link(&f).map_err(|e| Error::io(&f, e))?;
            [b"link:".as_slice(), target.as_os_str().as_encoded_bytes()].concat()
        } else {
            fs::read(&f).map_err(|e| Error::io(&f, e))?
        };
        h.update(
            f.strip_prefix(root)
                .unwrap_or(&f)
                .as_os_str()
                .as_encoded_bytes(),
        );
        h.update([0]);
        h.update((data.len() as u64).to_le_bytes());
        h.update(&data);
    }
    Ok(hex(&h.finalize()))
}

/// The hash recorded in a stamp file, if there is one.
pub fn read(path: &Path) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    text.lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

/// Removes a stamp (missing is fine).
pub fn remove(path: &Path) -> Result<()> {
    remove_optional(path)
}

/// Writes a stamp atomically (temporary file + rename).
pub fn write(path: &Path, inputs: &Inputs) -> Result<()> {
    write_atomic(path, inputs.stamp_text().as_bytes(), 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_digest__a_link_to_a_directory_is_its_target_name() {
        let (d, sdk) = crate::testing::scratch("sdk");
        fs::create_dir_all(d.path().join("headers/a")).unwrap();
        fs::create_dir_all(d.path().join("headers/b")).unwrap();
        crate::testing::write(&sdk.join("F.framework/F.tbd"), "stub");
        let link = sdk.join("F.framework/Headers");
        std::os::unix::fs::symlink("../../headers/a", &link).unwrap();
        let one = contents_digest(d.path(), std::slice::from_ref(&sdk)).unwrap();
        assert_eq!(
            one,
            contents_digest(d.path(), std::slice::from_ref(&sdk)).unwrap()
        );
        fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink("../../headers/b", &link).unwrap();
        assert_ne!(one, contents_digest(d.path(), &[sdk]).unwrap());
    }

    fn base() -> Inputs {
        let mut i = Inputs::default();
        i.add("source", "24.11.5 24.11 abc");
        i.add("patch:0001-x.patch", "d1");
        i.add("configure", "--prefix=/p\0CC=gcc");
        i
    }

    #[test]
    fn hash__stable_for_equal_inputs() {
        assert_eq!(base().hash(), base().hash());
        assert_eq!(base().hash().len(), 64);
    }

    #[test]
    fn hash__changes_when_any_input_changes() {
        let h = base().hash();
        let mut a = base();
        a.add("personality", "darwin");
        assert_ne!(a.hash(), h);
        let mut b = Inputs::default();
        b.add("source", "24.11.5 24.11 abc");
        b.add("patch:0001-x.patch", "d2");
        b.add("configure", "--prefix=/p\0CC=gcc");
        assert_ne!(b.hash(), h);
    }

    #[test]
    fn hash__no_ambiguity_from_concatenation() {
        let mut a = Inputs::default();
        a.add("ab", "c");
        let mut b = Inputs::default();
        b.add("a", "bc");
        assert_ne!(a.hash(), b.hash());
    }

    #[test]
    fn tree_metadata_digest__changes_on_add_and_rewrite() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("sub")).unwrap();
        fs::write(d.path().join("sub/a.c"), "int a;").unwrap();
        let h1 = tree_metadata_digest(d.path()).unwrap();
        assert_eq!(h1, tree_metadata_digest(d.path()).unwrap());
        fs::write(d.path().join("b.c"), "int b;").unwrap();
        let h2 = tree_metadata_digest(d.path()).unwrap();
        assert_ne!(h1, h2);
        fs::write(d.path().join("sub/a.c"), "int aa;").unwrap();
        assert_ne!(h2, tree_metadata_digest(d.path()).unwrap());
    }

    #[test]
    fn contents_digest__changes_when_a_file_changes() {
        let (d, src) = crate::testing::scratch("src");
        fs::create_dir(&src).unwrap();
        fs::write(src.join("lib.rs"), "fn a() {}").unwrap();
        fs::write(d.path().join("Cargo.lock"), "v1").unwrap();
        let paths = [
            src.clone(),
            d.path().join("Cargo.lock"),
            d.path().join("absent.h"),
        ];
        let h1 = contents_digest(d.path(), &paths).unwrap();
        fs::write(d.path().join("Cargo.lock"), "v2").unwrap();
        let h2 = contents_digest(d.path(), &paths).unwrap();
        assert_ne!(h1, h2);
        fs::write(src.join("lib.rs"), "fn b() {}").unwrap();
        assert_ne!(h2, contents_digest(d.path(), &paths).unwrap());
    }

    #[test]
    fn stamp__write_read_remove_roundtrip() {
        let (_d, p) = crate::testing::scratch("stamp");
        assert_eq!(read(&p), None);
        write(&p, &base()).unwrap();
        assert_eq!(read(&p), Some(base().hash()));
        assert!(fs::read_to_string(&p).unwrap().contains("source: 24.11.5"));
        remove(&p).unwrap();
        assert_eq!(read(&p), None);
        remove(&p).unwrap();
    }
}
