//! `patches/series`: the one series of every line. An entry is a patch file name (in
//! `patches/`), then the lines it applies to; none: every line. `LINE@V` makes line LINE
//! apply the variant `patches/V/<name>` (the same change, hunks that fit that line's text).

use driver_common::error::{Error, Result};
use std::fs;
use std::path::{Path, PathBuf};

/// The series file, relative to the checkout.
pub const FILE: &str = "patches/series";

/// One entry of the series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    /// `(line, variant)`: the lines it applies to (empty: every line), with the folder of
    /// the line's variant when it has one.
    pub lines: Vec<(String, Option<String>)>,
}

impl Entry {
    /// The patch file `line` applies for this entry, or `None` when the entry skips it.
    pub fn file_for(&self, dir: &Path, line: &str) -> Option<PathBuf> {
        if self.lines.is_empty() {
            return Some(dir.join(&self.name));
        }
        let (_, variant) = self.lines.iter().find(|(l, _)| l == line)?;
        Some(match variant {
            Some(v) => dir.join(v).join(&self.name),
            None => dir.join(&self.name),
        })
    }

    /// Every file this entry names (the main file and each variant), once.
    pub fn files(&self, dir: &Path) -> Vec<PathBuf> {
        let mut out = vec![dir.join(&self.name)];
        for (_, v) in &self.lines {
            if let Some(v) = v {
                let p = dir.join(v).join(&self.name);
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }
}

/// The entries of `patches/series` below `root`, checked (see [`parse`]).
pub fn entries(root: &Path) -> Result<Vec<Entry>> {
    let file = root.join(FILE);
    let text = fs::read_to_string(&file).map_err(|e| {
        Error::io(&file, e).context(format!("no patch series ({FILE}; it may be empty)"))
    })?;
    parse(&root.join("patches"), &file, &text)
}

/// Parses the series' text: each named file (and variant) must exist in `dir`, a name is
/// listed once, a line once per entry, and every line is a known release line.
pub fn parse(dir: &Path, file: &Path, text: &str) -> Result<Vec<Entry>> {
    let bad = |n: usize, detail: String| Error::File {
        path: file.to_path_buf(),
        problem: format!("line {n}: {detail}"),
    };
    let known: Vec<&str> = driver_common::lines::LINES.iter().map(|f| f.name).collect();
    let mut out: Vec<Entry> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let mut entry = raw.trim();
        if entry.starts_with('#') {
            continue;
        }
        if let Some(pos) = entry.find(" #").or_else(|| entry.find("\t#")) {
            entry = entry[..pos].trim_end();
        }
        let mut words = entry.split_whitespace();
        let Some(name) = words.next() else {
            continue;
        };
        if !plain(name) {
            return Err(bad(
                n,
                format!("`{name}` must be a file name in {}", dir.display()),
            ));
        }
        let mut lines: Vec<(String, Option<String>)> = Vec::new();
        for w in words {
            let (line, variant) = match w.split_once('@') {
                Some((l, v)) => (l, Some(v)),
                None => (w, None),
            };
            for l in std::iter::once(line).chain(variant) {
                if !known.contains(&l) {
                    return Err(bad(
                        n,
                        format!(
                            "`{w}`: `{l}` is not a release line (known: {})",
                            known.join(", ")
                        ),
                    ));
                }
            }
            if lines.iter().any(|(x, _)| x == line) {
                return Err(bad(n, format!("`{name}` names line {line} twice")));
            }
            lines.push((line.to_string(), variant.map(str::to_string)));
        }
        let e = Entry {
            name: name.to_string(),
            lines,
        };
        for p in e.files(dir) {
            if !p.is_file() {
                return Err(bad(n, format!("patch file {} does not exist", p.display())));
            }
        }
        if out.iter().any(|o| o.name == e.name) {
            return Err(bad(n, format!("`{name}` is listed twice")));
        }
        out.push(e);
    }
    Ok(out)
}

fn plain(name: &str) -> bool {
    !name.is_empty() && !name.contains('/') && name != "." && name != ".."
}

/// The patch files `line` applies, in order, as paths below `root`.
pub fn for_line(root: &Path, line: &str) -> Result<Vec<PathBuf>> {
    let dir = root.join("patches");
    Ok(entries(root)?
        .iter()
        .filter_map(|e| e.file_for(&dir, line))
        .collect())
}

/// The file `line` applies for the patch `name` (the main file or the line's variant).
#[cfg(test)]
pub fn patch_of(root: &Path, line: &str, name: &str) -> Result<PathBuf> {
    for_line(root, line)?
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == name))
        .ok_or_else(|| Error::Usage(format!("line {line} does not apply {name} ({FILE})")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::write;

    #[test]
    fn for_line__every_line_only_its_lines_and_variants_in_order() {
        let (d, dir) = crate::testing::scratch("patches");
        for f in [
            "0002-b.patch",
            "0001-a.patch",
            "0003-c.patch",
            "24.11/0003-c.patch",
        ] {
            write(&dir.join(f), "x\n");
        }
        write(
            &dir.join("series"),
            "# header\n\n0002-b.patch   # every line\n0001-a.patch 25.05 26.11\n0003-c.patch 24.11@24.11 25.05@24.11 26.11\n",
        );
        let root = d.path();
        assert_eq!(
            for_line(root, "24.11").unwrap(),
            vec![dir.join("0002-b.patch"), dir.join("24.11/0003-c.patch")]
        );
        assert_eq!(
            for_line(root, "25.05").unwrap(),
            vec![
                dir.join("0002-b.patch"),
                dir.join("0001-a.patch"),
                dir.join("24.11/0003-c.patch")
            ]
        );
        assert_eq!(
            for_line(root, "26.11").unwrap(),
            vec![
                dir.join("0002-b.patch"),
                dir.join("0001-a.patch"),
                dir.join("0003-c.patch")
            ]
        );
        assert_eq!(
            for_line(root, "25.11").unwrap(),
            vec![dir.join("0002-b.patch")]
        );
    }

    #[test]
    fn parse__missing_files_unknown_lines_and_repeats_are_errors() {
        let (d, dir) = crate::testing::scratch("patches");
        write(&dir.join("a.patch"), "x\n");
        for (text, needle) in [
            ("nope.patch\n", "line 1: patch file"),
            ("a.patch\n../a.patch\n", "line 2"),
            ("a.patch 24.12\n", "not a release line"),
            ("a.patch 24.11@24.11\n", "24.11/a.patch does not exist"),
            ("a.patch 24.11 24.11\n", "twice"),
            ("a.patch\na.patch\n", "listed twice"),
        ] {
            write(&dir.join("series"), text);
            let e = entries(d.path()).unwrap_err().to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
        std::fs::remove_file(dir.join("series")).unwrap();
        let e = entries(d.path()).unwrap_err().to_string();
        assert!(e.contains("no patch series"), "{e}");
    }

    #[test]
    fn for_line__the_committed_series_parses_for_every_line() {
        let root = crate::project_root();
        for f in driver_common::lines::LINES {
            assert!(!for_line(&root, f.name).unwrap().is_empty(), "{}", f.name);
        }
    }
}
