//! Our own files (`patches/src/<path in Slurm's tree>`): the darwin plugins, gpu/apple,
//! `daemon_only.h`, `x_ac_apple_gpu.m4`. They live once, for every line; where lines differ
//! a file has blocks on Slurm's version macro, marked as ours:
//!
//! ```c
//! #if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(25,11,0)
//! extern int fini(void)
//! #else /* SLURM_VERSION */
//! extern void fini(void)
//! #endif /* SLURM_VERSION */
//! ```
//!
//! (`>=` too). The blocks compile as they stand (the macros are `slurm/slurm_version.h`'s);
//! `build-slurm` places each file with its blocks already decided for the line ([`resolve`]),
//! so a line's patched tree holds exactly the text that line compiles.

use driver_common::error::{Error, Result};
use std::fs;
use std::path::{Path, PathBuf};

/// The directory of our own files, relative to the checkout.
pub const DIR: &str = "patches/src";

const ELSE: &str = "#else /* SLURM_VERSION */";
const ENDIF: &str = "#endif /* SLURM_VERSION */";

/// Every file below `patches/src/` as (path in Slurm's tree, file), sorted by path.
pub fn files(root: &Path) -> Result<Vec<(String, PathBuf)>> {
    let dir = root.join(DIR);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out: Vec<(String, PathBuf)> = driver_common::util::fs::walk_files(&dir)?
        .into_iter()
        .map(|rel| (rel.to_string_lossy().into_owned(), dir.join(rel)))
        .collect();
    out.sort();
    Ok(out)
}

/// `(major, minor, micro)` of `#if SLURM_VERSION_NUMBER <op> SLURM_VERSION_NUM(a,b,c)`, with
/// whether the op is `<`; `None` for any other line.
fn condition(line: &str) -> Option<(bool, (u32, u32, u32))> {
    let rest = line.strip_prefix("#if SLURM_VERSION_NUMBER ")?;
    let (less, rest) = if let Some(r) = rest.strip_prefix("< ") {
        (true, r)
    } else {
        (false, rest.strip_prefix(">= ")?)
    };
    let args = rest.strip_prefix("SLURM_VERSION_NUM(")?.strip_suffix(')')?;
    let v: Vec<u32> = args
        .split(',')
        .map(|x| x.trim().parse().ok())
        .collect::<Option<_>>()?;
    (v.len() == 3).then(|| (less, (v[0], v[1], v[2])))
}

/// `text` with its version blocks decided for Slurm `version` (`(major, minor, 0)` of a
/// line); an unbalanced block is an error naming `what`.
pub fn resolve(text: &str, version: (u32, u32, u32), what: &Path) -> Result<String> {
    let bad = |n: usize, p: &str| Error::file(what, format!("line {n}: {p}"));
    let mut out = String::with_capacity(text.len());
    let mut stack: Vec<bool> = Vec::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches('\n');
        if let Some((less, at)) = condition(bare) {
            stack.push((version < at) == less);
        } else if bare == ELSE {
            let top = stack
                .last_mut()
                .ok_or_else(|| bad(i + 1, "#else without #if"))?;
            *top = !*top;
        } else if bare == ENDIF {
            stack
                .pop()
                .ok_or_else(|| bad(i + 1, "#endif without #if"))?;
        } else if stack.iter().all(|&on| on) {
            out.push_str(line);
        }
    }
    if !stack.is_empty() {
        return Err(bad(
            text.lines().count(),
            "a SLURM_VERSION block is not closed",
        ));
    }
    Ok(out)
}

/// The line's `(major, minor, 0)`.
pub fn line_version(line: &str) -> Result<(u32, u32, u32)> {
    let f = driver_common::lines::LINES
        .iter()
        .find(|f| f.name == line)
        .ok_or_else(|| Error::Usage(format!("unknown release line {line}")))?;
    Ok((f.major, f.minor, 0))
}

/// Our files as `line` gets them: (path in the tree, text).
pub fn for_line(root: &Path, line: &str) -> Result<Vec<(String, String)>> {
    let v = line_version(line)?;
    files(root)?
        .into_iter()
        .map(|(rel, p)| {
            let text = fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
            Ok((rel, resolve(&text, v, &p)?))
        })
        .collect()
}

/// Writes our files, decided for `line`, into `tree`; a file the tree already has is an
/// error (ours are new files, never a replacement of upstream's).
pub fn place(root: &Path, line: &str, tree: &Path) -> Result<usize> {
    let files = for_line(root, line)?;
    for (rel, text) in &files {
        let dst = tree.join(rel);
        if dst.exists() {
            return Err(Error::file(
                &dst,
                format!("{DIR}/{rel} would replace a file of the pristine tree"),
            ));
        }
        if let Some(parent) = dst.parent() {
            fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        fs::write(&dst, text).map_err(|e| Error::io(&dst, e))?;
    }
    Ok(files.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "a\n#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(25,11,0)\nold\n#else /* SLURM_VERSION */\nnew\n#endif /* SLURM_VERSION */\n#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25,5,0)\n#ifdef X\nx\n#else\ny\n#endif\n#endif /* SLURM_VERSION */\nz\n";

    #[test]
    fn resolve__keeps_the_lines_of_the_version_and_other_conditions() {
        let p = Path::new("t.c");
        assert_eq!(resolve(TEXT, (24, 11, 0), p).unwrap(), "a\nold\nz\n");
        assert_eq!(
            resolve(TEXT, (25, 5, 0), p).unwrap(),
            "a\nold\n#ifdef X\nx\n#else\ny\n#endif\nz\n"
        );
        assert_eq!(
            resolve(TEXT, (26, 11, 0), p).unwrap(),
            "a\nnew\n#ifdef X\nx\n#else\ny\n#endif\nz\n"
        );
        let e = resolve(
            "#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(1,2,3)\n",
            (1, 0, 0),
            p,
        );
        assert!(e.unwrap_err().to_string().contains("not closed"));
        let e = resolve("#endif /* SLURM_VERSION */\n", (1, 0, 0), p);
        assert!(e.unwrap_err().to_string().contains("without #if"));
    }

    #[test]
    fn place__refuses_to_replace_a_pristine_file() {
        let (d, src) = crate::testing::scratch("patches/src/src/x");
        crate::testing::write(&src.join("new.c"), "int x;\n");
        let tree = d.path().join("tree");
        assert_eq!(place(d.path(), "24.11", &tree).unwrap(), 1);
        crate::testing::assert_file(&tree.join("src/x/new.c"), "int x;\n");
        let e = place(d.path(), "24.11", &tree).unwrap_err().to_string();
        assert!(e.contains("would replace"), "{e}");
    }
}
