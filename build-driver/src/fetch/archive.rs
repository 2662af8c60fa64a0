//! Hashing, unpacking and atomic installation of source trees under `slurm-src/`.
//!
//! Nothing half-made survives: archives are unpacked into `slurm-src/.tmp-*` (removed on
//! any failure), the single top directory is renamed into place, and the completion marker
//! `slurm-src/.<version>.complete` is written last.

use driver_common::error::{Error, Result};
use driver_common::util::fs::Staging;
use driver_common::util::fs::sha256_file;
use flate2::read::GzDecoder;
use std::fs;
use std::io::{self, BufReader, Read};
use std::path::{Component, Path, PathBuf};

/// Checks that `path` has the sha256 `expected`.
pub fn verify_sha256(path: &Path, expected: &str) -> Result<()> {
    let actual = sha256_file(path)?;
    if actual != expected {
        return Err(Error::HashMismatch {
            what: path.display().to_string(),
            expected: expected.to_string(),
            actual,
        });
    }
    Ok(())
}

/// The file every Slurm source tree has.
pub const SOURCE_MARK: &str = "configure.ac";

/// Where fetched things live: `slurm-src/` below the project root.
#[derive(Debug, Clone)]
pub struct Layout {
    pub dir: PathBuf,
}

impl Layout {
    pub fn new(root: &Path) -> Layout {
        Layout {
            dir: root.join("slurm-src"),
        }
    }
    /// The unpacked, never-modified tree of `version`.
    pub fn tree(&self, version: &str) -> PathBuf {
        self.dir.join(version)
    }
    /// Written last; holds the pin identity the tree was made from.
    pub fn marker(&self, version: &str) -> PathBuf {
        self.dir.join(format!(".{version}.complete"))
    }
    pub fn downloads(&self) -> PathBuf {
        self.dir.join("downloads")
    }
    /// True if `version`'s tree was completely installed from the pin with `identity`.
    pub fn is_complete(&self, version: &str, identity: &str) -> bool {
        self.is_complete_with(version, identity, SOURCE_MARK)
    }
    /// True if the tree `name` was completely installed from `identity` and has `must_have`.
    pub fn is_complete_with(&self, name: &str, identity: &str, must_have: &str) -> bool {
        fs::read_to_string(self.marker(name)).is_ok_and(|m| m.trim_end() == identity)
            && self.tree(name).join(must_have).is_file()
    }
}

/// Unpacks a tar archive (gzip-compressed or plain, detected by magic bytes) into the
/// empty directory `into`. The archive must have exactly one top directory (`expected_top`
/// if given); returns the path of that directory inside `into`. Truncated or corrupt
/// archives are an `Unpack` error (the caller's `Staging` then removes everything).
pub fn unpack_single_top(
    archive: &Path,
    expected_top: Option<&str>,
    into: &Path,
) -> Result<PathBuf> {
    let what = archive.display().to_string();
    let err = |detail: String| Error::Unpack {
        what: what.clone(),
        detail,
    };
    let mut ar = tar::Archive::new(open_maybe_gzip(archive)?);
    ar.set_preserve_permissions(true);
    ar.set_preserve_mtime(true);
    ar.set_unpack_xattrs(false);
    let mut top: Option<String> = None;
    let entries = ar
        .entries()
        .map_err(|e| err(format!("truncated or corrupt archive: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| err(format!("truncated or corrupt archive: {e}")))?;
        let kind = entry.header().entry_type();
        if kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        let path = entry
            .path()
            .map_err(|e| err(format!("bad entry name: {e}")))?
            .into_owned();
        let first = top_component(&path, kind.is_dir()).map_err(err)?;
        check_single_top(&mut top, first, expected_top).map_err(err)?;
        let inside = entry.unpack_in(into).map_err(|e| {
            err(format!(
                "truncated or corrupt archive at `{}`: {e}",
                path.display()
            ))
        })?;
        if !inside {
            return Err(err(format!(
                "entry `{}` points outside the archive",
                path.display()
            )));
        }
    }
    // Read to the end so that gzip checks its trailer (CRC and length).
    io::copy(&mut ar.into_inner(), &mut io::sink())
        .map_err(|e| err(format!("truncated or corrupt archive: {e}")))?;
    let top = top.ok_or_else(|| err("empty archive".into()))?;
    Ok(into.join(top))
}

/// The archive's bytes, gunzipped when it starts with gzip's magic bytes.
fn open_maybe_gzip(archive: &Path) -> Result<Box<dyn Read>> {
    let mut file = BufReader::new(fs::File::open(archive).map_err(|e| Error::io(archive, e))?);
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).map_err(|e| Error::io(archive, e))?;
    let file = io::Cursor::new(magic[..n].to_vec()).chain(file);
    Ok(if n == 2 && magic == [0x1f, 0x8b] {
        Box::new(GzDecoder::new(file))
    } else {
        Box::new(file)
    })
}

/// The top directory an entry `path` lies in; a file at the top level has none.
fn top_component(path: &Path, is_dir: bool) -> std::result::Result<String, String> {
    let mut comps = path
        .components()
        .filter(|c| !matches!(c, Component::CurDir));
    let first = match comps.next() {
        Some(Component::Normal(f)) => f.to_string_lossy().into_owned(),
        _ => {
            return Err(format!(
                "entry `{}` is not below a top directory",
                path.display()
            ));
        }
    };
    if comps.next().is_none() && !is_dir {
        return Err(format!(
            "`{first}` is a file at the top level; expected a single top directory"
        ));
    }
    Ok(first)
}

/// Records the first top directory (which must be `expected` if given); any other differs.
fn check_single_top(
    top: &mut Option<String>,
    first: String,
    expected: Option<&str>,
) -> std::result::Result<(), String> {
    match top {
        None => {
            if let Some(exp) = expected {
                if first != exp {
                    return Err(format!(
                        "top directory is `{first}`, the pin expects `{exp}`"
                    ));
                }
            }
            *top = Some(first);
        }
        Some(t) if *t != first => {
            return Err(format!("more than one top directory (`{t}`, `{first}`)"));
        }
        Some(_) => {}
    }
    Ok(())
}

/// Moves the staged tree `staged` to `layout.tree(version)` and writes the marker last.
/// A stale (incomplete or from another pin) destination is removed first.
pub fn install(layout: &Layout, version: &str, staged: &Path, identity: &str) -> Result<PathBuf> {
    install_with(layout, version, staged, identity, SOURCE_MARK)
}

/// [`install`] for a tree `name` that must have the file `must_have`.
pub fn install_with(
    layout: &Layout,
    name: &str,
    staged: &Path,
    identity: &str,
    must_have: &str,
) -> Result<PathBuf> {
    let dest = layout.tree(name);
    let marker = layout.marker(name);
    if !staged.join(must_have).is_file() {
        return Err(Error::NotASource {
            path: staged.to_path_buf(),
            detail: format!("the unpacked tree has no {must_have}"),
        });
    }
    match fs::remove_file(&marker) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(&marker, e)),
    }
    if fs::symlink_metadata(&dest).is_ok() {
        fs::remove_dir_all(&dest).map_err(|e| Error::io(&dest, e))?;
    }
    fs::rename(staged, &dest).map_err(|e| Error::io(&dest, e))?;
    let part = marker.with_extension("complete.part");
    fs::write(&part, format!("{identity}\n")).map_err(|e| Error::io(&part, e))?;
    fs::rename(&part, &marker).map_err(|e| Error::io(&marker, e))?;
    Ok(dest)
}

/// Unpacks `archive` into a staging directory beside the destination and installs it.
pub fn unpack_and_install(
    layout: &Layout,
    version: &str,
    archive: &Path,
    expected_top: Option<&str>,
    identity: &str,
) -> Result<PathBuf> {
    let staging = Staging::new(&layout.dir, version)?;
    let top = unpack_single_top(archive, expected_top, &staging.dir)?;
    install(layout, version, &top, identity)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty `slurm-src/` stand-in in a fresh temporary directory.
    fn tmp_layout() -> (tempfile::TempDir, Layout) {
        let d = tempfile::tempdir().unwrap();
        let layout = Layout {
            dir: d.path().to_path_buf(),
        };
        (d, layout)
    }
    use flate2::{Compression, write::GzEncoder};

    /// A .tar.gz with the given (path, contents) files; paths ending in `/` are directories.
    fn make_tgz(path: &Path, files: &[(&str, &str)]) {
        let gz = GzEncoder::new(fs::File::create(path).unwrap(), Compression::fast());
        let mut b = tar::Builder::new(gz);
        for (name, body) in files {
            let mut h = tar::Header::new_gnu();
            if name.ends_with('/') {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                b.append_data(&mut h, name, io::empty()).unwrap();
            } else {
                h.set_mode(0o644);
                h.set_size(body.len() as u64);
                b.append_data(&mut h, name, body.as_bytes()).unwrap();
            }
        }
        b.into_inner().unwrap().finish().unwrap();
    }

    /// A layout and `in.tar.gz` beside its trees: a Slurm-like source below `top`.
    fn slurmish_in_layout(top: &str) -> (tempfile::TempDir, Layout, PathBuf) {
        let (d, layout) = tmp_layout();
        let tgz = d.path().join("in.tar.gz");
        slurmish(&tgz, top);
        (d, layout, tgz)
    }

    fn slurmish(path: &Path, top: &str) {
        let files: Vec<(String, String)> = vec![
            (format!("{top}/"), String::new()),
            (format!("{top}/configure.ac"), "AC_INIT\n".into()),
            (format!("{top}/META"), "  Version:\t1.2.3\n".repeat(200)),
            (format!("{top}/src/x.c"), "int x;\n".repeat(5000)),
        ];
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        make_tgz(path, &refs);
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "in.tar.gz")
            .collect()
    }

    #[test]
    fn verify_sha256__accepts_good_and_rejects_bad() {
        let (_d, f) = crate::testing::scratch("f");
        fs::write(&f, "abc").unwrap();
        let good = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256_file(&f).unwrap(), good);
        verify_sha256(&f, good).unwrap();
        let e = verify_sha256(&f, &"0".repeat(64)).unwrap_err();
        assert!(
            matches!(&e, Error::HashMismatch { actual, .. } if actual == good),
            "{e}"
        );
    }

    #[test]
    fn unpack_and_install__installs_contents_of_top_dir_and_marker() {
        let (d, layout, tgz) = slurmish_in_layout("slurm-1");
        let dest = unpack_and_install(&layout, "1.2.3", &tgz, Some("slurm-1"), "sha256 x").unwrap();
        assert_eq!(dest, d.path().join("1.2.3"));
        assert!(dest.join("configure.ac").is_file() && dest.join("src/x.c").is_file());
        assert!(layout.is_complete("1.2.3", "sha256 x"));
        assert!(
            !layout.is_complete("1.2.3", "sha256 y"),
            "another pin's identity must not match"
        );
        let mut left = leftovers(d.path());
        left.sort();
        assert_eq!(left, vec![".1.2.3.complete", "1.2.3"]);
    }

    #[test]
    fn unpack_and_install__truncated_archive_is_an_error_and_leaves_no_tree() {
        let (d, layout, tgz) = slurmish_in_layout("slurm-1");
        let bytes = fs::read(&tgz).unwrap();
        for cut in [bytes.len() / 2, bytes.len() - 4] {
            fs::write(&tgz, &bytes[..cut]).unwrap();
            let e = unpack_and_install(&layout, "1.2.3", &tgz, None, "sha256 x").unwrap_err();
            assert!(
                matches!(&e, Error::Unpack { detail, .. } if detail.contains("truncated")),
                "cut {cut}: {e}"
            );
            assert!(
                leftovers(d.path()).is_empty(),
                "cut {cut}: left {:?}",
                leftovers(d.path())
            );
        }
    }

    #[test]
    fn unpack_and_install__wrong_top_dir_is_an_error() {
        let (d, layout, tgz) = slurmish_in_layout("other-top");
        let e = unpack_and_install(&layout, "v", &tgz, Some("slurm-1"), "i").unwrap_err();
        assert!(
            e.to_string()
                .contains("top directory is `other-top`, the pin expects `slurm-1`"),
            "{e}"
        );
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn unpack_and_install__multiple_top_dirs_or_top_level_file_is_an_error() {
        let (d, layout) = tmp_layout();
        let tgz = d.path().join("in.tar.gz");
        make_tgz(&tgz, &[("a/configure.ac", "x"), ("b/configure.ac", "y")]);
        let e = unpack_and_install(&layout, "v", &tgz, None, "i").unwrap_err();
        assert!(
            e.to_string()
                .contains("more than one top directory (`a`, `b`)"),
            "{e}"
        );
        make_tgz(&tgz, &[("README", "x")]);
        let e = unpack_and_install(&layout, "v", &tgz, None, "i").unwrap_err();
        assert!(e.to_string().contains("file at the top level"), "{e}");
        make_tgz(&tgz, &[]);
        let e = unpack_and_install(&layout, "v", &tgz, None, "i").unwrap_err();
        assert!(e.to_string().contains("empty archive"), "{e}");
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn install__replaces_a_stale_tree_without_marker() {
        let (d, layout) = tmp_layout();
        fs::create_dir_all(layout.tree("v").join("junk")).unwrap();
        assert!(!layout.is_complete("v", "i"));
        let tgz = d.path().join("in.tar.gz");
        slurmish(&tgz, "t");
        unpack_and_install(&layout, "v", &tgz, None, "i").unwrap();
        assert!(!layout.tree("v").join("junk").exists());
        assert!(layout.is_complete("v", "i"));
    }
}
