//! `os-path`: `/proc`, `/run` and `/sys` paths in code macOS compiles.
//!
//! macOS has no procfs and no sysfs, and its root volume is sealed and read-only, so `/run`
//! cannot be created (its run-time state lives in `/var/run`). A string literal that starts
//! with one of these directories (`"/proc"`, `"/proc/%d/stat"`, `"/run/slurm"`), in the code
//! or in a `#define` body, is reported unless macOS does not compile it (see
//! [`super::source`]: `#if defined(__linux__)`, the `#else` of `#ifdef __APPLE__`, ...).
//! Only the start of a literal counts, so a log message that mentions `/proc` in passing is
//! not a finding.

use super::cond::Mac;
use super::token::{Kind, Token};
use super::{Class, Finding, Scanned};

const ROOTS: &[&str] = &["/proc", "/run", "/sys"];

/// The Linux-only root directory `s` starts with, if any.
pub fn linux_root(s: &str) -> Option<&'static str> {
    ROOTS.iter().copied().find(|r| {
        s.strip_prefix(r)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

pub fn scan(f: &Scanned, out: &mut Vec<Finding>) {
    let bodies = f
        .src
        .defines
        .iter()
        .filter(|d| d.mac != Mac::No)
        .flat_map(|d| d.body.iter());
    let tokens: Vec<&Token> = f.mac.iter().chain(bodies).collect();
    for t in tokens {
        if t.kind != Kind::Str {
            continue;
        }
        if let Some(root) = linux_root(&t.text) {
            out.push(Finding {
                file: f.rel.clone(),
                line: t.line,
                class: Class::OsPath,
                subject: t.text.clone(),
                message: format!(
                    "\"{}\": macOS has no {root} ({}), and no guard keeps macOS from compiling this",
                    t.text,
                    if root == "/run" {
                        "sealed read-only root; run-time state lives in /var/run"
                    } else {
                        "no procfs/sysfs"
                    }
                ),
            });
        }
    }
}
