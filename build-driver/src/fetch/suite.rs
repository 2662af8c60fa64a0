//! Slurm's Python test suite for a release whose tag has none.
//!
//! SchedMD removes `testsuite/python` from a release branch (25.11 and later) before the
//! branch's releases are tagged. A git pin may then name, in `[pin."V".python_suite]`, the
//! commit of the same repository whose suite the peer run uses: `fetch` exports only that
//! commit's `testsuite/python` to `slurm-src/<V>-python-suite/testsuite/python`, with its own
//! completion marker, the same way as a source tree (staged, renamed, marker last).

use super::archive::{self, Layout};
use super::{has_commit, step};
use driver_common::error::{Error, Result};
use driver_common::pins::{Pin, Pins, python_suite_name};
use driver_common::util::fs::Staging;
use driver_common::util::process::run_checked;
use std::fs;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

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
    if !has_commit(sh, git_dir, commit)? {
        return Err(Error::MissingCommit {
            repo: git_dir.to_path_buf(),
            commit: commit.to_string(),
            version: label,
        });
    }
    let name = python_suite_name(&pin.version);
    let staging = Staging::new(&layout.dir, &name)?;
    let tar = staging.dir.join("suite.tar");
    let top = format!("suite-{}", &commit[..12]);
    let prefix = format!("{top}/");
    step(&format!("git archive {commit} {SUITE_DIR}"), || {
        let archive = cmd!(
            sh,
            "git --git-dir {git_dir} archive --format=tar --prefix={prefix} -o {tar} {commit} {SUITE_DIR}"
        );
        run_checked(archive, &format!("fetch {label}"), "git archive")
    })?;
    let unpacked = staging.dir.join("tree");
    fs::create_dir(&unpacked).map_err(|e| Error::io(&unpacked, e))?;
    let t = archive::unpack_single_top(&tar, Some(&top), &unpacked)?;
    let dest = archive::install_with(layout, &name, &t, &identity(commit), SUITE_MARK)?;
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
