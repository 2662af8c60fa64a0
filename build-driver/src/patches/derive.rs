//! What `patches refresh` re-derives for one line: entry by entry over the line's tree, the
//! file the series gives the line is compared with every other file of the entry (the main
//! file, the other lines' variants) on the same files. A variant whose change the main file
//! makes identically is redundant (the line can drop `@V`); a line whose file does not apply
//! needs a hand-made variant, or another line's variant that applies (named).

use super::series::{self, Entry};
use super::{own, touched_files};
use driver_common::error::{Error, Result};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// One finding about a line's series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// `line` applies `variant` but `instead` (the main file or another variant) gives the
    /// same files.
    Redundant {
        entry: String,
        variant: PathBuf,
        instead: PathBuf,
    },
    /// The line's file does not apply; `applies` are the entry's other files that do.
    NeedsVariant {
        entry: String,
        applies: Vec<PathBuf>,
    },
}

/// The files `paths` of `tree` (absent ones as None), read.
fn snapshot(tree: &Path, paths: &[String]) -> Result<BTreeMap<String, Option<Vec<u8>>>> {
    paths
        .iter()
        .map(|p| {
            let f = tree.join(p);
            Ok((
                p.clone(),
                if f.is_file() {
                    Some(fs::read(&f).map_err(|e| Error::io(&f, e))?)
                } else {
                    None
                },
            ))
        })
        .collect()
}

/// Applies `patch` to a scratch copy of `paths` of `tree`; the result, or None if it fails.
fn try_apply(
    sh: &Shell,
    tree: &Path,
    paths: &[String],
    patch: &Path,
    scratch: &Path,
) -> Result<Option<BTreeMap<String, Option<Vec<u8>>>>> {
    if scratch.exists() {
        fs::remove_dir_all(scratch).map_err(|e| Error::io(scratch, e))?;
    }
    for p in paths {
        let (from, to) = (tree.join(p), scratch.join(p));
        if from.is_file() {
            fs::create_dir_all(to.parent().unwrap_or(scratch)).map_err(|e| Error::io(&to, e))?;
            fs::copy(&from, &to).map_err(|e| Error::io(&to, e))?;
        }
    }
    fs::create_dir_all(scratch).map_err(|e| Error::io(scratch, e))?;
    let ceiling = scratch.parent().unwrap_or(scratch);
    let ok = cmd!(sh, "git -C {scratch} apply -p1 --whitespace=nowarn {patch}")
        .env("GIT_CEILING_DIRECTORIES", ceiling)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .quiet()
        .ignore_status()
        .output()?
        .status
        .success();
    if !ok {
        return Ok(None);
    }
    Ok(Some(snapshot(scratch, paths)?))
}

/// Re-derives `line`'s series over a copy of `pristine` in `work`.
pub fn derive(
    sh: &Shell,
    root: &Path,
    line: &str,
    pristine: &Path,
    work: &Path,
) -> Result<Vec<Finding>> {
    let dir = root.join("patches");
    let tree = work.join("tree");
    let scratch = work.join("scratch");
    for d in [&tree, &scratch] {
        if d.exists() {
            fs::remove_dir_all(d).map_err(|e| Error::io(d, e))?;
        }
    }
    fs::create_dir_all(work).map_err(|e| Error::io(work, e))?;
    driver_common::util::fs::copy_tree(pristine, &tree)?;
    own::place(root, line, &tree)?;
    let mut findings = Vec::new();
    for e in series::entries(root)? {
        let Some(chosen) = e.file_for(&dir, line) else {
            continue;
        };
        let others: Vec<PathBuf> = e.files(&dir).into_iter().filter(|f| *f != chosen).collect();
        let mut paths: Vec<String> = Vec::new();
        for f in std::iter::once(&chosen).chain(&others) {
            let text = fs::read_to_string(f).map_err(|err| Error::io(f, err))?;
            for p in touched_files(&text) {
                if !paths.contains(&p) {
                    paths.push(p);
                }
            }
        }
        let want = try_apply(sh, &tree, &paths, &chosen, &scratch)?;
        match &want {
            None => findings.push(needs_variant(sh, &e, &tree, &paths, &others, &scratch)?),
            Some(w) if chosen != dir.join(&e.name) => {
                for o in &others {
                    if try_apply(sh, &tree, &paths, o, &scratch)?.as_ref() == Some(w) {
                        findings.push(Finding::Redundant {
                            entry: e.name.clone(),
                            variant: chosen.clone(),
                            instead: o.clone(),
                        });
                        break;
                    }
                }
            }
            Some(_) => {}
        }
        // go on with the line's own file (or, if it failed, leave the tree as it is)
        if let Some(w) = want {
            for (p, bytes) in w {
                let f = tree.join(&p);
                match bytes {
                    Some(b) => {
                        fs::create_dir_all(f.parent().unwrap_or(&tree))
                            .map_err(|err| Error::io(&f, err))?;
                        fs::write(&f, b).map_err(|err| Error::io(&f, err))?;
                    }
                    None => driver_common::util::fs::remove_optional(&f)?,
                }
            }
        }
    }
    Ok(findings)
}

fn needs_variant(
    sh: &Shell,
    e: &Entry,
    tree: &Path,
    paths: &[String],
    others: &[PathBuf],
    scratch: &Path,
) -> Result<Finding> {
    let mut applies = Vec::new();
    for o in others {
        if try_apply(sh, tree, paths, o, scratch)?.is_some() {
            applies.push(o.clone());
        }
    }
    Ok(Finding::NeedsVariant {
        entry: e.name.clone(),
        applies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::write;

    const A: &str =
        "diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n";

    #[test]
    fn derive__a_redundant_variant_and_a_line_that_needs_one() {
        let (d, dir) = crate::testing::scratch("patches");
        let pristine = d.path().join("pristine");
        write(&pristine.join("f.c"), "a\nb\nc\n");
        write(&dir.join("0001-x.patch"), A);
        // 24.11's variant makes the same change with other offsets; 25.05's main file
        // cannot apply to a tree where `b` is already `B` (0002 below)
        write(
            &dir.join("24.11/0001-x.patch"),
            &A.replace("@@ -1,3 +1,3 @@", "@@ -2,3 +2,3 @@"),
        );
        write(&dir.join("series"), "0001-x.patch 24.11@24.11 25.05\n");
        let sh = Shell::new().unwrap();
        let f = derive(&sh, d.path(), "24.11", &pristine, &d.path().join("w")).unwrap();
        assert_eq!(
            f,
            vec![Finding::Redundant {
                entry: "0001-x.patch".into(),
                variant: dir.join("24.11/0001-x.patch"),
                instead: dir.join("0001-x.patch"),
            }]
        );
        write(&pristine.join("f.c"), "a\nB\nc\n");
        let f = derive(&sh, d.path(), "25.05", &pristine, &d.path().join("w")).unwrap();
        assert_eq!(
            f,
            vec![Finding::NeedsVariant {
                entry: "0001-x.patch".into(),
                applies: vec![]
            }]
        );
    }
}
