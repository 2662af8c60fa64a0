//! Slurm's Python test suite for a release whose tag has none.
//!
//! SchedMD removes `testsuite/python` from a release branch (25.11 and later) before the
//! branch's releases are tagged. A git pin may then name, in `[pin."V".python_suite]`, the
//! commit of the same repository whose suite the peer run uses: `fetch` exports only that
//! commit's `testsuite/python` to `slurm-src/<V>-python-suite/testsuite/python`, with its own
//! completion marker, the same way as a source tree (staged, renamed, marker last).

use super::archive::Layout;
use super::{Export, export_tree, require_commit};
use driver_common::error::{Error, Result};
use driver_common::pins::{Pin, Pins, python_suite_name};
use std::path::{Path, PathBuf};
use xshell::Shell;

/// The suite's directory inside its tree, and the file that must be there.
const SUITE_DIR: &str = "testsuite/python";
const SUITE_MARK: &str = "testsuite/python/conftest.py";

fn identity(commit: &str) -> String {
    format!("commit {commit}")
}

/// Whether `pin` names a suite that is not exported yet (the commit `fetch` must get).
pub fn wanted<'p>(layout: &Layout, pin: &'p Pin) -> Option<&'p str> {
    let s = pin.python_suite.as_ref()?;
    let name = python_suite_name(&pin.version);
    (!layout.is_complete_with(&name, &identity(&s.commit), SUITE_MARK)).then_some(&s.commit)
}

/// Exports the suite `pin` names from `git_dir`; nothing to do without one or when done.
pub fn export(sh: &Shell, layout: &Layout, pin: &Pin, git_dir: &Path) -> Result<()> {
    let Some(commit) = wanted(layout, pin) else {
        return Ok(());
    };
    let label = format!("{} (python_suite)", pin.version);
    require_commit(sh, git_dir, commit, &label)?;
    let export = Export {
        commit,
        paths: &[SUITE_DIR],
        name: &python_suite_name(&pin.version),
        identity: &identity(commit),
        must_have: SUITE_MARK,
        what: &label,
    };
    let dest = export_tree(sh, layout, git_dir, &export)?;
    eprintln!("fetch: {label}: {}", dest.join(SUITE_DIR).display());
    Ok(())
}

/// The suite directory the peer run of `version` takes instead of its source's: `None` when
/// the pin names none; an error naming `cargo xtask fetch` when it is not exported yet.
pub fn resolve(root: &Path, version: &str) -> Result<Option<PathBuf>> {
    let pins = Pins::load(root)?;
    let pin = pins.get(version)?;
    if pin.python_suite.is_none() {
        return Ok(None);
    }
    let layout = Layout::new(root);
    let tree = layout.tree(&python_suite_name(version));
    match wanted(&layout, pin) {
        None => Ok(Some(tree.join(SUITE_DIR))),
        Some(_) => Err(Error::NotFetched {
            path: tree,
            version: version.to_string(),
        }),
    }
}
