//! A line's patched tree (the pristine source, our files placed, the series applied: what
//! `build-slurm` configures, before autoreconf) and its manifest,
//! `slurm-src/manifests/<version>.toml`: the hash of every file, the files the series adds or
//! changes, and the series hash the line's row in `docs/lines/` carries while the tree stays
//! the same ([`row_sha256`]).

use super::{own, series};
use driver_common::error::{Error, Result};
use driver_common::util::fs::hex;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use xshell::Shell;

/// Where the manifests live, relative to the checkout.
pub const DIR: &str = "slurm-src/manifests";

/// `slurm-src/manifests/<version>.toml`, as read.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub version: String,
    pub line: String,
    pub files: usize,
    pub tree_sha256: String,
    pub row_sha256: String,
    /// [`inputs_sha256`] of the line when the tree was last found equal.
    #[serde(default)]
    pub inputs_sha256: Option<String>,
    pub changed: BTreeMap<String, String>,
    #[serde(default)]
    pub removed: Vec<String>,
}

impl Manifest {
    pub fn path(root: &Path, version: &str) -> PathBuf {
        root.join(DIR).join(format!("{version}.toml"))
    }

    pub fn read(root: &Path, version: &str) -> Result<Manifest> {
        let p = Manifest::path(root, version);
        let text = fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
        toml::from_str(&text).map_err(|e| Error::file(&p, e.to_string()))
    }

    /// Every committed manifest, by version.
    pub fn all(root: &Path) -> Result<Vec<Manifest>> {
        let dir = root.join(DIR);
        let mut out = Vec::new();
        let Ok(rd) = fs::read_dir(&dir) else {
            return Ok(out);
        };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_string_lossy()
                    .strip_suffix(".toml")
                    .map(str::to_string)
            })
            .collect();
        names.sort();
        for v in names {
            out.push(Manifest::read(root, &v)?);
        }
        Ok(out)
    }

    /// The text of the file, comments included.
    pub fn render(&self) -> String {
        let v = &self.version;
        let mut s = format!(
            "# The patched tree of Slurm {v}: the pristine source (slurm-src/{v}/) with patches/src/ placed\n\
# and the series applied, before autoreconf. Checked and rewritten by `cargo xtask patches\n\
# refresh` (and the test patches::tree::tests::manifest__...).\n\
version = \"{v}\"\nline = \"{}\"\nfiles = {}\n\
# sha256 of the lines \"<sha256> <mode>  <path>\\n\" of every file, sorted by path (bytes)\n\
tree_sha256 = \"{}\"\n\
# the series hash docs/lines/<line>.toml rows carry while this tree is unchanged\n\
row_sha256 = \"{}\"\n",
            self.line, self.files, self.tree_sha256, self.row_sha256
        );
        if let Some(i) = &self.inputs_sha256 {
            s.push_str(&format!(
                "# the line's series inputs (its patches, our files) when the tree was last found equal\n\
inputs_sha256 = \"{i}\"\n"
            ));
        }
        s.push_str("# files the series removes\nremoved = [");
        s.push_str(
            &self
                .removed
                .iter()
                .map(|r| format!("\"{r}\""))
                .collect::<Vec<_>>()
                .join(", "),
        );
        s.push_str("]\n\n# files the series adds or changes: \"<sha256> <mode>\"\n[changed]\n");
        for (k, v) in &self.changed {
            s.push_str(&format!("\"{k}\" = \"{v}\"\n"));
        }
        s
    }
}

/// `(path, "<sha256> <mode>")` of every file below `dir`, sorted by path (bytes); a
/// symbolic link is hashed as its target (mode 120000).
pub fn listing(dir: &Path) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for rel in driver_common::util::fs::walk_files(dir)? {
        let p = dir.join(&rel);
        let meta = fs::symlink_metadata(&p).map_err(|e| Error::io(&p, e))?;
        let (bytes, mode) = if meta.file_type().is_symlink() {
            let t = fs::read_link(&p).map_err(|e| Error::io(&p, e))?;
            (t.into_os_string().into_encoded_bytes(), "120000")
        } else {
            let x = meta.permissions().mode() & 0o111 != 0;
            let bytes = fs::read(&p).map_err(|e| Error::io(&p, e))?;
            (bytes, if x { "100755" } else { "100644" })
        };
        let hash = hex(&Sha256::digest(&bytes));
        out.push((rel.to_string_lossy().into_owned(), format!("{hash} {mode}")));
    }
    out.sort();
    Ok(out)
}

/// sha256 of a listing's lines `"<sha256> <mode>  <path>\n"`.
pub fn listing_sha256(listing: &[(String, String)]) -> String {
    let mut h = Sha256::new();
    for (p, v) in listing {
        h.update(format!("{v}  {p}\n").as_bytes());
    }
    hex(&h.finalize())
}

/// sha256 over what makes `line`'s patched tree besides the pristine source: each patch it
/// applies (name, then bytes) in order and each of our files as the line gets it (path,
/// then text). Another line's entries, variants or version blocks do not enter.
pub fn inputs_sha256(root: &Path, line: &str) -> Result<String> {
    let mut h = Sha256::new();
    for p in series::for_line(root, line)? {
        h.update(p.file_name().unwrap_or_default().as_encoded_bytes());
        h.update(b"\0");
        h.update(fs::read(&p).map_err(|e| Error::io(&p, e))?);
        h.update(b"\0");
    }
    for (rel, text) in own::for_line(root, line)? {
        h.update(rel.as_bytes());
        h.update(b"\0");
        h.update(text.as_bytes());
        h.update(b"\0");
    }
    Ok(hex(&h.finalize()))
}

/// The series hash of `line` that rows record: the manifest's `row_sha256` while the line's
/// inputs are the ones its tree was last found equal with (the tree, so what every build of
/// the line compiles, is the same), else the inputs' own hash (the row is then stale until a
/// run of the line, or `patches refresh` proving the tree unchanged).
pub fn row_sha256(root: &Path, line: &str) -> Result<String> {
    let inputs = inputs_sha256(root, line)?;
    for m in Manifest::all(root)? {
        if m.line == line && m.inputs_sha256.as_deref() == Some(inputs.as_str()) {
            return Ok(m.row_sha256);
        }
    }
    Ok(inputs)
}

/// Copies `pristine` to `dest`, places our files and applies `line`'s series: the patched
/// tree. Returns the number of patches applied.
pub fn prepare(sh: &Shell, root: &Path, line: &str, pristine: &Path, dest: &Path) -> Result<usize> {
    driver_common::util::fs::copy_tree(pristine, dest)?;
    let n = own::place(root, line, dest)?;
    eprintln!("patches: placed {n} file(s) of {}", own::DIR);
    let patches = series::for_line(root, line)?;
    super::apply(sh, &patches, dest)?;
    Ok(patches.len())
}

/// What a patched tree gives against its manifest.
#[derive(Debug)]
pub struct Compared {
    pub tree_sha256: String,
    pub files: usize,
    pub changed: BTreeMap<String, String>,
    pub removed: Vec<String>,
    /// Files whose entry differs from the manifest's (changed/removed sets), sorted.
    pub differ: Vec<String>,
}

/// Builds `version`'s patched tree in a scratch directory below `work` and compares it with
/// the committed manifest.
pub fn compare(
    sh: &Shell,
    root: &Path,
    m: &Manifest,
    pristine: &Path,
    work: &Path,
) -> Result<Compared> {
    let dest = work.join(&m.version).join("src");
    if dest.exists() {
        fs::remove_dir_all(&dest).map_err(|e| Error::io(&dest, e))?;
    }
    let parent = work.join(&m.version);
    fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
    prepare(sh, root, &m.line, pristine, &dest)?;
    let tree = listing(&dest)?;
    let base: BTreeMap<String, String> = listing(pristine)?.into_iter().collect();
    let now: BTreeMap<String, String> = tree.iter().cloned().collect();
    let changed: BTreeMap<String, String> = now
        .iter()
        .filter(|(p, v)| base.get(*p) != Some(*v))
        .map(|(p, v)| (p.clone(), v.clone()))
        .collect();
    let removed: Vec<String> = base
        .keys()
        .filter(|p| !now.contains_key(*p))
        .cloned()
        .collect();
    let mut differ: Vec<String> = changed
        .iter()
        .filter(|(p, v)| m.changed.get(*p) != Some(*v))
        .map(|(p, _)| p.clone())
        .chain(
            m.changed
                .keys()
                .filter(|p| !changed.contains_key(*p))
                .cloned(),
        )
        .chain(removed.iter().filter(|r| !m.removed.contains(r)).cloned())
        .chain(m.removed.iter().filter(|r| !removed.contains(r)).cloned())
        .collect();
    differ.sort();
    differ.dedup();
    fs::remove_dir_all(&dest).map_err(|e| Error::io(&dest, e))?;
    Ok(Compared {
        tree_sha256: listing_sha256(&tree),
        files: tree.len(),
        changed,
        removed,
        differ,
    })
}

#[cfg(test)]
mod tests;
