//! `cargo xtask lint --source DIR`: a source hazard scan of the code a macOS compute node
//! runs, over a (patched or pristine) Slurm tree.
//!
//! Each hazard class is one file below; each reports file:line, its class and a subject
//! (the object, path or call it is about), only in code a macOS build compiles: the
//! tokenizer ([`source`]) tracks `#if` nesting and evaluates every condition for macOS
//! ([`cond`]), so a `/proc` path in an `#if defined(__linux__)` branch, or in the `#else` of
//! an `#ifdef __APPLE__`, is guarded and not reported. Which files are scanned is
//! [`scope`]'s (the directories of slurmd, slurmstepd, sackd, the client commands and
//! libslurm, plus the plugin types those programs load, from the audit's loader table).
//!
//! | class | what it reports | DARWIN-CATALOG / POC-DEFECTS |
//! |---|---|---|
//! | `pthread-uninit` | a mutex/cond/rwlock/once object (file scope, local, or struct member) nothing initialises: zero bytes are valid on glibc, EINVAL on macOS | POC D4, D5 |
//! | `os-path` | a string literal starting with `/proc`, `/run` or `/sys` | catalog B2, B4-B6, B8, D9; POC D2, D17, D19, D20 |
//! | `rlimit-fatal` | a failed set of `RLIMIT_RSS`/`RLIMIT_AS` (or a macro for them) ends in `fatal()` | catalog D6; POC D8 |
//! | `fd-loop` | a `close()` loop bounded by the raw soft `RLIMIT_NOFILE` or `_SC_OPEN_MAX` | POC D13 |
//! | `linux-api` | a call to a Linux-only function the shim does not provide (`close_range`, `prlimit`, `memfd_create`, `epoll_*`, `prctl`, ...) | catalog D8, section 6 |
//! | `setgroups-16` | `setgroups(n, ...)` with no bound by `NGROUPS_MAX` (macOS: at most 16) | catalog D7 |
//! | `af-wire` | a native address family packed into, or stored from, a message | POC D21 |
//!
//! Left out, on purpose: `TIOCOUTQ` (catalog D3: defined on macOS, fails with ENOTTY on a
//! socket, and conmgr already treats that as "cannot query"), `SO_PEERCRED` (answered by
//! the shim; patch 0010 makes macOS take that branch on purpose), `mlockall` (catalog D10:
//! only with `LaunchParameters=slurmd_memlock*`, and its failure is logged, not fatal),
//! and catalog D5's `rlim_cur = rlim_max` for `RLIMIT_NOFILE`: XNU accepts it since
//! macOS 12 (`dosetrlimit()` caps the table at `kern.maxfilesperproc` instead of refusing,
//! apple-oss-distributions/xnu `bsd/kern/kern_resource.c`, xnu-8019.41.5; Apple's Libc
//! `tests/stdio.c` raises the limit to `RLIM_INFINITY`), so the idiom works; what an
//! infinite soft limit breaks is the `fd-loop` class.

mod af_wire;
mod cond;
mod expect;
mod fds;
mod linux_api;
mod paths;
mod pthread;
mod rlimit;
mod scope;
mod setgroups;
mod source;
#[cfg(test)]
mod tests;
mod token;

use clap::Args;
use driver_common::error::{Error, Result};
use expect::Compare as _;
use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;
use std::time::Instant;
use xshell::Shell;

pub use expect::Expectations;

#[derive(Debug, Args)]
pub struct LintArgs {
    /// The top of a Slurm source tree (pristine, e.g. slurm-src/24.11.5, or patched).
    #[arg(long)]
    pub source: PathBuf,
    /// Accepted findings (e.g. ci/expectations/lint-24.11.toml): succeed only when the
    /// findings are exactly these. Without it, any finding fails.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
}

/// A hazard class (the name is what reports and expectations files use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    PthreadUninit,
    OsPath,
    RlimitFatal,
    FdLoop,
    LinuxApi,
    Setgroups16,
    AfWire,
}

impl Class {
    pub const ALL: [Class; 7] = [
        Class::PthreadUninit,
        Class::OsPath,
        Class::RlimitFatal,
        Class::FdLoop,
        Class::LinuxApi,
        Class::Setgroups16,
        Class::AfWire,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::PthreadUninit => "pthread-uninit",
            Class::OsPath => "os-path",
            Class::RlimitFatal => "rlimit-fatal",
            Class::FdLoop => "fd-loop",
            Class::LinuxApi => "linux-api",
            Class::Setgroups16 => "setgroups-16",
            Class::AfWire => "af-wire",
        }
    }

    pub fn from_name(s: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// One hazard at one place.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// Path relative to the tree's root (`src/scancel/scancel.c`).
    pub file: String,
    pub line: u32,
    pub class: Class,
    /// What it is about: an object name, a path, a call. With `class` and `file` it is the
    /// key an expectations entry matches (lines move between releases).
    pub subject: String,
    pub message: String,
}

/// A scanned file: its relative path and tokens.
pub struct Scanned {
    pub rel: String,
    pub src: source::Source,
    /// The tokens macOS compiles, in order (what most classes read).
    pub mac: Vec<token::Token>,
}

/// The result of a scan.
#[derive(Debug)]
pub struct Report {
    pub files: usize,
    pub findings: Vec<Finding>,
    /// Plugin directories left out, with the reason (printed with the report).
    pub excluded: Vec<(String, &'static str)>,
}

/// Scan the tree at `root`.
pub fn scan(root: &Path) -> Result<Report> {
    let scope = scope::files(root)?;
    let mut scanned = Vec::with_capacity(scope.files.len());
    for path in &scope.files {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let text = String::from_utf8_lossy(&bytes);
        let src = source::parse(&text).map_err(|detail| {
            Error::Lint(format!(
                "{}: cannot follow its preprocessor conditionals: {detail} (is it a C source?)",
                path.display()
            ))
        })?;
        let rel = path
            .strip_prefix(root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned();
        let mac = src.mac_tokens();
        scanned.push(Scanned { rel, src, mac });
    }
    let mut findings = Vec::new();
    pthread::scan(&scanned, &mut findings);
    for f in &scanned {
        paths::scan(f, &mut findings);
        rlimit::scan(f, &mut findings);
        fds::scan(f, &mut findings);
        linux_api::scan(f, &mut findings);
        setgroups::scan(f, &mut findings);
        af_wire::scan(f, &mut findings);
    }
    findings.sort();
    findings.dedup();
    Ok(Report {
        files: scanned.len(),
        findings,
        excluded: scope.excluded,
    })
}

pub fn run(_sh: &Shell, root: &Path, args: LintArgs) -> Result<()> {
    let source = if args.source.is_absolute() {
        args.source.clone()
    } else {
        root.join(&args.source)
    };
    let expect = args.expect.as_ref().map(|file| {
        if file.is_absolute() {
            file.clone()
        } else {
            root.join(file)
        }
    });
    let summary = check(&source, expect.as_deref())?;
    println!("{summary}");
    Ok(())
}

/// Scan `source`, print the report, and compare with `expect` (without it, any finding
/// fails). The summary line on success.
pub fn check(source: &Path, expect: Option<&Path>) -> Result<String> {
    let start = Instant::now();
    let report = scan(source)?;
    let elapsed = start.elapsed();
    print_report(source, &report);
    println!(
        "lint: {} files scanned in {:.2} s",
        report.files,
        elapsed.as_secs_f64()
    );
    match expect {
        Some(expect_path) => {
            let expect = Expectations::load(expect_path)?;
            let diff = expect.compare(&report.findings);
            for (f, reason) in &diff.accepted {
                println!(
                    "accepted: {}:{}: {} `{}`: {reason}",
                    f.file,
                    f.line,
                    f.class.name(),
                    f.subject
                );
            }
            if diff.unexpected.is_empty() && diff.stale.is_empty() {
                Ok(format!(
                    "lint: {} findings in {} files, all accepted in {} ({:.1} s)",
                    report.findings.len(),
                    report.files,
                    expect_path.display(),
                    elapsed.as_secs_f64()
                ))
            } else {
                let mut msg = String::new();
                for f in &diff.unexpected {
                    msg.push_str(&format!(
                        "  new finding: {}:{}: {} `{}`\n",
                        f.file,
                        f.line,
                        f.class.name(),
                        f.subject
                    ));
                }
                for s in &diff.stale {
                    msg.push_str(&format!(
                        "  accepted but no longer found (remove it): {s}\n"
                    ));
                }
                Err(Error::Lint(format!(
                    "findings differ from {}:\n{msg}fix the code (a patch in patches/, see patches/series) or, for a real exception, accept it there with a reason",
                    expect_path.display()
                )))
            }
        }
        None if report.findings.is_empty() => Ok(format!(
            "lint: no findings in {} files ({:.1} s)",
            report.files,
            elapsed.as_secs_f64()
        )),
        None => Err(Error::Lint(format!(
            "{} findings (pass --expect FILE to accept known ones)",
            report.findings.len()
        ))),
    }
}

fn print_report(root: &Path, report: &Report) {
    println!("lint: {}", root.display());
    for (dir, why) in &report.excluded {
        println!("not scanned: {dir}: {why}");
    }
    for f in &report.findings {
        println!("{}:{}: {}: {}", f.file, f.line, f.class.name(), f.message);
    }
    let mut by_class: BTreeMap<Class, usize> = Class::ALL.iter().map(|c| (*c, 0)).collect();
    for f in &report.findings {
        *by_class.entry(f.class).or_default() += 1;
    }
    let counts: Vec<String> = by_class
        .iter()
        .map(|(c, n)| format!("{} {n}", c.name()))
        .collect();
    println!(
        "lint: {} findings ({})",
        report.findings.len(),
        counts.join(", ")
    );
}

/// The text of a token range, tokens joined by single spaces (for subjects and messages).
pub fn text(tokens: &[token::Token]) -> String {
    let mut s = String::new();
    for t in tokens {
        if !s.is_empty() {
            s.push(' ');
        }
        match t.kind {
            token::Kind::Str => {
                s.push('"');
                s.push_str(&t.text);
                s.push('"');
            }
            _ => s.push_str(&t.text),
        }
    }
    s
}
