//! A line's row: what the last `lines verify` (or `ci`) of that line gave, as data
//! (`docs/lines/<line>.toml`), with the hash of the series it ran with.

use crate::report::Report;
use driver_common::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where the rows live, relative to the checkout.
/// How much of the Slurm lanes runs: CI's set, or CI's set and every local scenario a
/// one-node darwin cluster runs (`cargo xtask lines verify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Ci,
    Full,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Ci => "ci",
            Scope::Full => "full",
        }
    }
}

pub const DIR: &str = "docs/lines";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    pub line: String,
    pub version: String,
    /// `full` (`lines verify`) or `ci` (`cargo xtask ci`: CI's scenario set).
    pub suite: String,
    /// The command that wrote the row.
    pub command: String,
    /// UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub date: String,
    /// The checkout's commit when the run started (`git rev-parse HEAD`), `unknown` outside
    /// a git checkout.
    pub commit: String,
    /// Uncommitted changes to tracked files when the run started or ended, or another commit
    /// checked out at its end: the run did not use that commit alone.
    pub dirty: bool,
    /// [`series_sha256`] of the line when the run ended.
    pub series_sha256: String,
    /// `passed` when every step passed, else `failed`.
    pub result: String,
    /// Sum of the steps' times.
    pub seconds: u64,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub name: String,
    /// `ok`, `FAILED`, `skipped` (another step failed) or `n/a` (not a step of this run by
    /// design, with the reason in `detail`).
    pub result: String,
    pub seconds: u64,
    pub detail: String,
}

impl Step {
    /// Passed, or does not apply to the run.
    pub fn is_ok(&self) -> bool {
        self.result == "ok" || self.result == crate::report::NOT_APPLICABLE
    }
}

/// `detail` with the checkout's absolute path left out (`<root>/target/...` becomes
/// `target/...`): a committed row names no directory of the machine that ran it.
pub fn relative_to(root: &Path, detail: &str) -> String {
    let mut prefix = root.display().to_string();
    if prefix.is_empty() || prefix == "/" {
        return detail.to_string();
    }
    prefix.push('/');
    detail.replace(&prefix, "")
}

impl Row {
    pub fn from_report(root: &Path, run: &RunInfo<'_>, line: &str, report: &Report) -> Result<Row> {
        let (version, scope, command) = (run.version, run.scope, run.command);
        let steps: Vec<Step> = report
            .records()
            .map(|(name, result, detail, d)| Step {
                name: name.to_string(),
                result: result.to_string(),
                seconds: d.as_secs(),
                detail: relative_to(root, detail),
            })
            .collect();
        if steps.is_empty() {
            return Err(Error::Usage(format!(
                "{version}: no step ran, so there is no row to write"
            )));
        }
        let (commit, dirty) = run.start.judged_with(&Checkout::of(root));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Ok(Row {
            line: line.to_string(),
            version: version.to_string(),
            suite: scope.name().to_string(),
            command: command.to_string(),
            date: crate::bottle::receipt::rfc3339(now),
            commit,
            dirty,
            series_sha256: series_sha256(root, line)?,
            result: if steps.iter().all(|s| s.is_ok()) {
                "passed"
            } else {
                "failed"
            }
            .to_string(),
            seconds: steps.iter().map(|s| s.seconds).sum(),
            steps,
        })
    }

    pub fn failed_steps(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(|s| !s.is_ok())
    }
}

/// The series hash a row records: [`crate::patches::tree::row_sha256`] (the same while the
/// line's patched tree is the same; an edited patch, series entry or file of ours that the
/// line uses makes it another until `patches refresh` proves the tree unchanged).
pub fn series_sha256(root: &Path, line: &str) -> Result<String> {
    crate::patches::tree::row_sha256(root, line)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// What a row says about its run: the version, suite and command, and the checkout when
/// the run started.
pub struct RunInfo<'a> {
    pub version: &'a str,
    pub scope: Scope,
    pub command: &'a str,
    pub start: &'a Checkout,
}

/// The checkout's commit and whether tracked files differ from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkout {
    pub commit: String,
    pub dirty: bool,
}

impl Checkout {
    /// Now; `unknown` outside a git checkout.
    pub fn of(root: &Path) -> Checkout {
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .arg("-C")
                .arg(root)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        match git(&["rev-parse", "HEAD"]) {
            Some(commit) => {
                let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                    .is_some_and(|s| !s.is_empty());
                Checkout { commit, dirty }
            }
            None => Checkout {
                commit: "unknown".to_string(),
                dirty: false,
            },
        }
    }

    /// The row's commit (this one, the start's) and whether it is dirty: uncommitted changes
    /// at the start or at the `end`, or another commit at the end (said on stderr).
    pub fn judged_with(&self, end: &Checkout) -> (String, bool) {
        let moved = end.commit != self.commit;
        if moved {
            eprintln!(
                "lines: the checkout moved during the run ({} -> {}): the row is marked as \
                 not one commit's",
                self.commit, end.commit
            );
        }
        (self.commit.clone(), self.dirty || end.dirty || moved)
    }
}

pub fn path(root: &Path, line: &str) -> PathBuf {
    root.join(DIR).join(format!("{line}.toml"))
}

/// Writes the row (whole: a temporary file renamed over the old row).
pub fn write(root: &Path, row: &Row) -> Result<PathBuf> {
    let path = path(root, &row.line);
    let dir = root.join(DIR);
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    let text = format!(
        "# Written by `{}`; do not edit (docs/RELEASE-LINES.md's table is generated from it).\n{}",
        row.command,
        toml::to_string(row).map_err(|e| Error::File {
            path: path.clone(),
            problem: format!("cannot serialise the row: {e}"),
        })?
    );
    driver_common::util::fs::write_atomic(&path, text.as_bytes(), 0o644)?;
    Ok(path)
}

/// Every committed row, by line name.
pub fn load_all(root: &Path) -> Result<Vec<Row>> {
    let dir = root.join(DIR);
    let mut rows = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(rows),
        Err(source) => return Err(Error::Io { path: dir, source }),
    };
    for entry in entries {
        let p = entry
            .map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?
            .path();
        if p.extension().is_some_and(|e| e == "toml") {
            let text = String::from_utf8(read(&p)?).map_err(|e| Error::File {
                path: p.clone(),
                problem: format!("not UTF-8: {e}"),
            })?;
            let row: Row = toml::from_str(&text).map_err(|e| Error::File {
                path: p.clone(),
                problem: format!("not a line's row: {e}"),
            })?;
            if p.file_stem().is_some_and(|s| s != row.line.as_str()) {
                return Err(Error::File {
                    path: p,
                    problem: format!("holds the row of line {}", row.line),
                });
            }
            rows.push(row);
        }
    }
    rows.sort_by(|a, b| a.line.cmp(&b.line));
    Ok(rows)
}

/// Rows older than their series: each with the command that makes it current.
pub fn stale(root: &Path, rows: &[Row]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for r in rows {
        if series_sha256(root, &r.line)? != r.series_sha256 {
            out.push(format!(
                "{}: its row ({}, {}) is older than its series (patches/series for line {}): run `{}` and commit the row",
                r.line, r.version, r.date, r.line, r.command
            ));
        }
    }
    Ok(out)
}
