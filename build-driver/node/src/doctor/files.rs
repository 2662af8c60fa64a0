//! What root executes or reads under the prefix: `sbin/` (slurmd, sackd, slurmstepd),
//! `lib/` (libslurm and the plugins of `lib/slurm`, recursively) and `etc/` (slurm.conf, the
//! key). Each path is judged by driver_common's trust rule (`util::trust::trusted`, owner
//! root: the path and every directory above it up to `/` belong to root and are not
//! writable by group or others), the rule `join --apply` and `service install` enforce.
//! A culprit is reported once, however many files lie below it (a world-writable plugin
//! directory is one finding, not one per plugin).

use super::{Check, Finding, Problem};
use driver_common::error::Error;
use driver_common::util::trust::trusted;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What must be there for a node: slurmd runs, sackd answers join's probe, the plugins load,
/// the configuration lives in etc.
const REQUIRED: &[&str] = &["sbin/slurmd", "sbin/sackd", "lib/slurm", "etc"];

/// Deeper than any install's `lib/slurm` (one level of plugins, a few of helpers).
const MAX_DEPTH: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileProblem {
    Missing {
        path: PathBuf,
    },
    /// From the trust rule: `path` is where it failed (the file or a directory above it).
    Untrusted {
        path: PathBuf,
        why: String,
        fix: String,
    },
    Unreadable {
        path: PathBuf,
        error: String,
    },
}

impl FileProblem {
    pub fn detail(&self) -> String {
        match self {
            FileProblem::Missing { path } => format!("{} is missing", path.display()),
            FileProblem::Untrusted { path, why, .. } => format!(
                "{} {why}: root would run or read what another user can change",
                path.display()
            ),
            FileProblem::Unreadable { path, error } => {
                format!("{} cannot be examined ({error})", path.display())
            }
        }
    }

    pub fn fix(&self) -> String {
        match self {
            FileProblem::Missing { .. } => "install the build as root: sudo slurm-mac install --prefix PREFIX --from STAGED_DIR --key ./slurm.key (docs/JOIN.md)".into(),
            FileProblem::Untrusted { fix, .. } => fix.clone(),
            FileProblem::Unreadable { path, .. } => format!("sudo ls -ld {} and fix its owner or mode", path.display()),
        }
    }
}

/// One `ok` with the count, or one failure per culprit.
pub fn check(prefix: &Path) -> Vec<Finding> {
    let mut problems: BTreeMap<PathBuf, FileProblem> = BTreeMap::new();
    for r in REQUIRED {
        let p = prefix.join(r);
        if std::fs::symlink_metadata(&p).is_err() {
            problems.insert(p.clone(), FileProblem::Missing { path: p });
        }
    }
    let mut paths = Vec::new();
    for top in ["sbin", "lib", "etc"] {
        walk(&prefix.join(top), 0, &mut paths, &mut problems);
    }
    for p in &paths {
        if let Err(e) = trusted(p, 0) {
            let problem = match e {
                Error::Untrusted { path, why, fix } => FileProblem::Untrusted { path, why, fix },
                other => FileProblem::Unreadable {
                    path: p.clone(),
                    error: other.to_string(),
                },
            };
            let at = match &problem {
                FileProblem::Untrusted { path, .. } => path.clone(),
                _ => p.clone(),
            };
            problems.entry(at).or_insert(problem);
        }
    }
    if problems.is_empty() {
        return vec![Finding::ok(
            Check::Files,
            format!(
                "{} paths under {} (sbin, lib, etc) are root's and not writable by group or others, up to /",
                paths.len(),
                prefix.display()
            ),
        )];
    }
    problems
        .into_values()
        .map(|p| Finding::fail(Check::Files, Problem::File(p)))
        .collect()
}

/// `dir` itself and everything below it (links are listed, not followed: the trust rule
/// judges where they lead).
fn walk(
    dir: &Path,
    depth: usize,
    out: &mut Vec<PathBuf>,
    problems: &mut BTreeMap<PathBuf, FileProblem>,
) {
    let Ok(m) = std::fs::symlink_metadata(dir) else {
        return;
    };
    out.push(dir.to_path_buf());
    if !m.is_dir() || depth >= MAX_DEPTH {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            problems.insert(
                dir.to_path_buf(),
                FileProblem::Unreadable {
                    path: dir.to_path_buf(),
                    error: e.to_string(),
                },
            );
            return;
        }
    };
    let mut below: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    below.sort();
    for p in below {
        walk(&p, depth + 1, out, problems);
    }
}
