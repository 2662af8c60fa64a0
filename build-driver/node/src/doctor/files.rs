//! What root executes or reads under the prefix, judged as every root command judges it
//! before it starts a program (`keg::install_of`, `driver_common::gate::keg`): `sbin/`,
//! `bin/`, `libexec/`, `lib/` (libslurm and the plugins of `lib/slurm`, recursively), the
//! spool and log directories and `etc/` (slurm.conf, the
//! key; for a Homebrew keg or its copy, the root's `etc/slurm`, which its programs read).
//! A keg another user owns is one finding whose fix is its root-owned copy (`copy-keg`), and
//! another prefix a user owns one finding whose fix is `install` into a root-owned prefix.
//! Each path is judged by the gate's rule (`driver_common::gate::chain`, owner root: the
//! path and every directory above it up to `/` belong to root and are not writable by group
//! or others), the rule every root command enforces before it starts a program.
//! A culprit is reported once, however many files lie below it (a world-writable plugin
//! directory is one finding, not one per plugin).

use super::{Check, Finding, Problem};
use driver_common::error::Error;
use driver_common::gate::{self, Owners};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What must be there for a node: slurmd runs, sackd answers join's probe, the plugins load
/// (the configuration's directory, [`crate::keg::sysconfdir`], is checked too).
const REQUIRED: &[&str] = &["sbin/slurmd", "sbin/sackd", "lib/slurm"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileProblem {
    Missing {
        path: PathBuf,
    },
    /// A Homebrew keg that belongs to `uid`, not root.
    UserKeg {
        keg: PathBuf,
        uid: u32,
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
            FileProblem::UserKeg { keg, uid } => format!(
                "{} is a Homebrew keg of uid {uid}: root would run what that user's processes can change",
                keg.display()
            ),
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
            FileProblem::UserKeg { keg, .. } => format!(
                "make its root-owned copy and use that prefix: sudo {k}/bin/slurm-mac copy-keg --keg {k} (docs/JOIN.md)",
                k = keg.display()
            ),
            FileProblem::Untrusted { fix, .. } => fix.clone(),
            FileProblem::Unreadable { path, .. } => format!("sudo ls -ld {} and fix its owner or mode", path.display()),
        }
    }
}

/// One `ok` with the count, or one failure per culprit.
pub fn check(prefix: &Path) -> Vec<Finding> {
    if let Some(p) = user_keg(prefix).or_else(|| user_prefix(prefix)) {
        return vec![Finding::fail(Check::Files, Problem::File(p))];
    }
    let mut problems: BTreeMap<PathBuf, FileProblem> = BTreeMap::new();
    let etc = crate::keg::sysconfdir(prefix);
    for p in REQUIRED.iter().map(|r| prefix.join(r)).chain([etc.clone()]) {
        if std::fs::symlink_metadata(&p).is_err() {
            problems.insert(p.clone(), FileProblem::Missing { path: p });
        }
    }
    // The very judgement every root command makes before it starts a program of the prefix
    // (keg::install_of, gate::keg), as root would be judged: one finding per culprit.
    for e in gate::keg::examine(&crate::keg::install_of(prefix, &[]), Owners::ROOT) {
        let problem = match e {
            Error::Untrusted { path, why, fix } => FileProblem::Untrusted { path, why, fix },
            other => FileProblem::Unreadable {
                path: prefix.to_path_buf(),
                error: other.to_string(),
            },
        };
        let at = match &problem {
            FileProblem::Untrusted { path, .. } => path.clone(),
            _ => prefix.to_path_buf(),
        };
        problems.entry(at).or_insert(problem);
    }
    if problems.is_empty() {
        return vec![Finding::ok(
            Check::Files,
            format!(
                "everything root would run or load under {} (sbin, bin, libexec, lib, etc) and the spool and log directories are root's and not writable by group or others, up to /",
                prefix.display()
            ),
        )];
    }
    problems
        .into_values()
        .map(|p| Finding::fail(Check::Files, Problem::File(p)))
        .collect()
}

/// The keg `prefix` is, when it belongs to a user other than root.
fn user_keg(prefix: &Path) -> Option<FileProblem> {
    use std::os::unix::fs::MetadataExt;
    let keg = crate::keg::Keg::at(prefix).ok()?;
    let uid = std::fs::metadata(&keg.dir).ok()?.uid();
    (uid != 0).then(|| FileProblem::UserKeg {
        keg: prefix.to_path_buf(),
        uid,
    })
}

/// A prefix (not a keg) that belongs to a user other than root: one finding, whose fix is
/// an install into a root-owned prefix.
fn user_prefix(prefix: &Path) -> Option<FileProblem> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(prefix).ok()?;
    (m.uid() != 0).then(|| FileProblem::Untrusted {
        path: prefix.to_path_buf(),
        why: format!(
            "(owner uid {}, mode {:04o}) is a user's prefix: that user's processes could replace what root runs",
            m.uid(),
            m.mode() & 0o7777
        ),
        fix: crate::keg::user_prefix_fix(prefix),
    })
}

#[cfg(test)]
mod tests {
    use super::super::Verdict;
    use super::*;
    use driver_common::testing::write;

    /// `<d>/hb/Cellar/slurm-wlm/1.0` with sbin/slurmd, sbin/sackd, lib/slurm and the Homebrew
    /// prefix's etc/slurm, all of the running (root) user.
    fn keg(d: &Path) -> PathBuf {
        let k = d.join("hb/Cellar/slurm-wlm/1.0");
        for f in ["sbin/slurmd", "sbin/sackd", "lib/slurm/auth_slurm.so"] {
            write(&k.join(f), "x");
        }
        std::fs::create_dir_all(d.join("hb/etc/slurm")).unwrap();
        k
    }

    #[test]
    fn check__a_keg_reads_its_roots_etc_slurm_and_a_users_keg_is_sent_to_copy_keg() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: the files must be root's, and giving them away needs root");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let k = keg(d.path());
        let found = check(&k);
        // Root's keg: no `<keg>/etc` is asked for; the tempdir's mode decides the rest.
        assert!(
            !found.iter().any(|f| matches!(&f.verdict, Verdict::Fail(Problem::File(FileProblem::Missing { path })) if path.ends_with("etc"))),
            "{found:?}"
        );
        std::os::unix::fs::chown(&k, Some(4242), Some(4242)).unwrap();
        let found = check(&k);
        assert_eq!(found.len(), 1, "{found:?}");
        let Verdict::Fail(Problem::File(p)) = &found[0].verdict else {
            panic!("{found:?}")
        };
        assert_eq!(
            *p,
            FileProblem::UserKeg {
                keg: k.clone(),
                uid: 4242
            }
        );
        assert!(
            p.fix().contains(&format!("copy-keg --keg {}", k.display())),
            "{}",
            p.fix()
        );
    }
}
