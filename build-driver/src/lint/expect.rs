//! Accepted lint findings (`ci/expectations/lint-<line>.toml`), compared exactly: a finding
//! not listed fails, and so does a listed one that is no longer found. Entries match on
//! class, file and subject (not the line, which moves between releases and patches); one
//! entry may list several subjects of one file and class that share a reason (each must
//! still be found), and every entry needs a reason.
//!
//! ```toml
//! [[accepted]]
//! class = "os-path"
//! file = "src/common/callerid.c"
//! subjects = ["/proc/net/tcp", "/proc/net/tcp6"]
//! reason = "scontrol callerid / pam_slurm_adopt only; not used on a macOS node"
//! ```

use super::{Class, Finding};
use driver_common::expectations::Entry;
use serde::Deserialize;
use std::collections::BTreeSet;

/// The accepted findings of one file.
pub type Expectations = driver_common::expectations::AcceptedList<Accepted>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accepted {
    pub class: String,
    pub file: String,
    pub subjects: Vec<String>,
    pub reason: String,
}

/// The comparison of findings with the accepted list.
#[derive(Debug, Default)]
pub struct Diff {
    pub accepted: Vec<(Finding, String)>,
    pub unexpected: Vec<Finding>,
    /// Accepted entries nothing matched (`class file subject`).
    pub stale: Vec<String>,
}

/// One entry: complete, with a reason, and nothing in it listed before.
fn check_entry(
    a: &Accepted,
    seen: &mut BTreeSet<(String, String, String)>,
) -> std::result::Result<(), String> {
    if Class::from_name(&a.class).is_none() {
        let known: Vec<&str> = Class::ALL.iter().map(|c| c.name()).collect();
        return Err(format!(
            "entry for {}: unknown class `{}` (known: {})",
            a.file,
            a.class,
            known.join(", ")
        ));
    }
    if a.reason.trim().is_empty() {
        return Err(format!("entry for {} has an empty reason", a.file));
    }
    if a.subjects.is_empty() {
        return Err(format!("entry for {} lists no subjects", a.file));
    }
    for subject in &a.subjects {
        if !seen.insert((a.class.clone(), a.file.clone(), subject.clone())) {
            return Err(format!(
                "{} {} `{subject}` is listed twice",
                a.class, a.file
            ));
        }
    }
    Ok(())
}

impl Entry for Accepted {
    const UNLISTED: &'static str = "finding";
    type Key = (String, String, String);

    fn check(&self, seen: &mut BTreeSet<Self::Key>) -> std::result::Result<(), String> {
        check_entry(self, seen)
    }
}

/// The accepted lint findings compared with a report's (the extension trait keeps the
/// method syntax on the shared list type).
pub trait Compare {
    fn compare(&self, findings: &[Finding]) -> Diff;
}

impl Compare for Expectations {
    fn compare(&self, findings: &[Finding]) -> Diff {
        let mut diff = Diff::default();
        let mut used = BTreeSet::new();
        for f in findings {
            let hit = self.accepted.iter().find(|a| {
                a.class == f.class.name() && a.file == f.file && a.subjects.contains(&f.subject)
            });
            match hit {
                Some(a) => {
                    used.insert((a.class.as_str(), a.file.as_str(), f.subject.as_str()));
                    diff.accepted.push((f.clone(), a.reason.clone()));
                }
                None => diff.unexpected.push(f.clone()),
            }
        }
        for a in &self.accepted {
            for subject in &a.subjects {
                if !used.contains(&(a.class.as_str(), a.file.as_str(), subject.as_str())) {
                    diff.stale
                        .push(format!("{} {} `{subject}`", a.class, a.file));
                }
            }
        }
        diff
    }
}
