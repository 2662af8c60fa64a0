//! `cargo xtask ci`: everything CI runs, in order, each step timed, then a summary table.
//!
//! 1. Shim lane: `cargo test --workspace`, `codegen --check`, a type-check of the driver for
//!    aarch64-apple-darwin (it runs on the Mac of `ci/macos-arm64.yml`), release builds of the
//!    shim for aarch64-apple-darwin and x86_64-apple-darwin. `--shim-only` stops here.
//! 2. Linux non-regression: Slurm built natively without and with `patches/<line>/`,
//!    `make check` in both, and any difference in any test result fails.
//!    The patched source is scanned by `cargo xtask lint` (hazards on macOS: never-initialised
//!    pthread objects, /proc paths, ...) and compared exactly with
//!    `ci/expectations/lint-<line>.toml`.
//! 3. Darwin personality: built, `make check` compared with the native patched build. A
//!    difference fails unless `ci/expectations/<line>-darwin.toml` lists it with a reason; an
//!    entry that no longer matches fails too (the file must stay true). Then live clusters
//!    (slurmctld, slurmd, slurmdbd + a private MariaDB on loopback): the smoke scenarios on
//!    the native install, every scenario of `cargo xtask cluster test` on the darwin install,
//!    and Slurm's own Python suite (the subset in `ci/peer-subset.txt`) on both, whose
//!    per-test outcomes must agree.
//! 4. Darwin cross-build: `cargo xtask deps --target aarch64-apple-darwin` (json-c, libjwt,
//!    hwloc), then 24.11 (the pinned version) built for aarch64-apple-darwin with zig and those
//!    libraries, the installed programs, libslurmfull and plugins checked to be arm64 Mach-O.
//! 5. Plugin-linkage audit (`cargo xtask audit`) of the Mach-O, the native and the darwin install, each
//!    compared exactly with `ci/expectations/audit-<line>-<lane>.toml` (new and fixed
//!    findings both fail).
//!
//! A failed step does not stop independent steps; steps that need its output are skipped
//! with the reason printed. The command fails if any step failed.

use crate::build_slurm::{self, BuildOutput};
use crate::check::{self, Difference, Outcome, Results};
use crate::cli::{BuildArgs, CiArgs, DepsArgs, PeerArgs, Personality, SourceArgs};
use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use xshell::{Cmd, Shell, cmd};

pub fn run(sh: &Shell, root: &Path, args: CiArgs) -> Result<()> {
    let mut report = Report::default();
    shim_lane(sh, root, &mut report);
    if args.shim_only {
        println!("\n(--shim-only: Slurm lanes not run)");
    } else {
        slurm_lanes(sh, root, &args, &mut report);
    }
    println!("\n{}", report.table());
    println!("{}", report.counts());
    report.result()
}

fn shim_lane(sh: &Shell, root: &Path, report: &mut Report) {
    let _dir = sh.push_dir(root);
    report.step("cargo test --workspace", || {
        run_with_deadline(sh, cmd!(sh, "cargo test --workspace"), CARGO_TEST_TIMEOUT)?;
        Ok("passed".to_string())
    });
    report.step("cargo xtask codegen --check", || {
        crate::codegen::check(root)?;
        Ok("slurm_shim.h up to date".to_string())
    });
    report.step(
        "cargo check -p build-driver --target aarch64-apple-darwin",
        || {
            // The driver must build on the Mac of ci/macos-arm64.yml (lane 5): no Linux-only
            // API may slip into it unguarded.
            let check = cmd!(
                sh,
                "cargo check -p build-driver --all-targets --target aarch64-apple-darwin"
            );
            run_with_deadline(sh, check, CARGO_BUILD_TIMEOUT)?;
            Ok("the driver type-checks for macOS".to_string())
        },
    );
    for target in ["aarch64-apple-darwin", "x86_64-apple-darwin"] {
        report.step(
            &format!("cargo build -p slurm-shim --release --target {target}"),
            || {
                let build = cmd!(sh, "cargo build -p slurm-shim --release --target {target}");
                run_with_deadline(sh, build, CARGO_BUILD_TIMEOUT)?;
                Ok("built".to_string())
            },
        );
    }
}

/// Upper bounds, so a hanging test cannot eat CI's whole time budget.
const CARGO_TEST_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const CARGO_BUILD_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Run `cmd` with inherited output in its own process group; after `timeout` the whole group
/// (cargo and the test binaries it started) is killed. Non-zero exit is an error.
fn run_with_deadline(sh: &Shell, cmd: Cmd<'_>, timeout: Duration) -> Result<()> {
    let shown = cmd.to_string();
    let fail = |detail: String| Error::Command {
        step: "ci".into(),
        program: shown.clone(),
        detail,
    };
    let mut command: std::process::Command = cmd.into();
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| fail(format!("cannot start: {e}")))?;
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(fail(status.to_string())),
            Ok(None) if Instant::now() >= deadline => {
                // Our child is not reaped yet, so its process group id is still ours.
                let group = format!("-{}", child.id());
                cmd!(sh, "kill -KILL -- {group}")
                    .quiet()
                    .ignore_status()
                    .run()
                    .ok();
                child.wait().ok();
                return Err(fail(format!(
                    "did not finish within {}; its process group was killed",
                    fmt_duration(timeout)
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => return Err(fail(format!("cannot wait: {e}"))),
        }
    }
}

fn slurm_lanes(sh: &Shell, root: &Path, args: &CiArgs, report: &mut Report) {
    let src = SourceArgs {
        version: args.source.is_none().then(|| args.version.clone()),
        source: args.source.clone(),
    };
    let build_args = |personality, no_patches| BuildArgs {
        src: src.clone(),
        personality,
        no_patches,
        target: None,
        prefix: None,
        jobs: None,
        deps_prefix: None,
    };
    let pristine = report.step("build-slurm native --no-patches", || {
        build_slurm::build(sh, root, &build_args(Personality::Native, true)).map(described)
    });
    let patched = report.step("build-slurm native (patched)", || {
        build_slurm::build(sh, root, &build_args(Personality::Native, false)).map(described)
    });
    // the hazard scan of the patched source: ci/expectations/lint-<line>.toml, exactly
    report.step_after("lint: patched source (hazard scan)", &patched, |b| {
        let file = root
            .join("ci/expectations")
            .join(format!("lint-{}.toml", b.line));
        crate::lint::check(&b.src_dir, Some(&file))
    });
    let r_pristine = report.step_after("make check: native, no patches", &pristine, |b| {
        make_check(sh, b)
    });
    let r_patched = report.step_after("make check: native, patched", &patched, |b| {
        make_check(sh, b)
    });
    match (&r_pristine, &r_patched) {
        (Some(a), Some(b)) => {
            report.step("non-regression: pristine vs patched results", || {
                let diff = check::compare(a, b);
                if diff.is_empty() {
                    Ok(format!("identical ({} results)", a.len()))
                } else {
                    Err(Error::Regression(diff.join("\n")))
                }
            });
        }
        _ => report.skip(
            "non-regression: pristine vs patched results",
            "a make check above did not run",
        ),
    }

    let darwin = report.step("build-slurm --personality darwin", || {
        build_slurm::build(sh, root, &build_args(Personality::Darwin, false)).map(described)
    });
    let r_darwin = report.step_after("make check: darwin personality", &darwin, |b| {
        make_check(sh, b)
    });
    match (&r_patched, &r_darwin, &darwin) {
        (Some(native), Some(dar), Some(built)) => {
            let file = expectations_path(root, &built.line);
            report.step(
                "darwin vs native results (with recorded expectations)",
                || {
                    let expectations = Expectations::load(&file)?;
                    judge(&check::differences(native, dar), &expectations, &file)
                },
            );
        }
        _ => report.skip(
            "darwin vs native results (with recorded expectations)",
            "a make check above did not run",
        ),
    }
    report.step_after("cluster smoke: native install", &patched, |b| {
        crate::cluster::smoke(sh, root, &b.prefix)
            .map(|()| "sbatch, srun, scancel passed".to_string())
    });
    report.step_after("cluster scenarios: darwin install", &darwin, |b| {
        crate::cluster::scenarios(sh, &b.prefix)
            .map(|()| "every scenario passed or is a listed gap".to_string())
    });
    match (&patched, &darwin) {
        (Some(native), Some(dar)) => {
            report.step("peer suite subset: native vs darwin", || {
                let args = PeerArgs {
                    native: native.prefix.clone(),
                    darwin: dar.prefix.clone(),
                    subset: None,
                    all: false,
                    timeout: 240,
                    keep: false,
                };
                crate::cluster::peer::run(sh, root, args)
                    .map(|()| "same outcomes (ci/peer-subset.txt)".to_string())
            });
        }
        _ => report.skip(
            "peer suite subset: native vs darwin",
            "a build above did not succeed",
        ),
    }
    // Darwin cross lane: the target's json-c, libjwt and hwloc, then Slurm with them.
    let deps = report.step("deps --target aarch64-apple-darwin", || {
        crate::deps::run(
            sh,
            root,
            DepsArgs {
                target: "aarch64-apple-darwin".to_string(),
                jobs: None,
                debian_mirror: None,
            },
        )
        .map(|d| {
            let text = d.dir.display().to_string();
            (d, text)
        })
    });
    let macho = report.step_after(
        "build-slurm --target aarch64-apple-darwin (zig, deps, Mach-O check)",
        &deps,
        |d| {
            let args = BuildArgs {
                target: Some("aarch64-apple-darwin".to_string()),
                deps_prefix: Some(d.dir.clone()),
                ..build_args(Personality::Native, false)
            };
            build_slurm::build(sh, root, &args).map(described)
        },
    );
    // The Mach-O install's remaining findings (upstream link bugs, one slurmd-only function in
    // a /proc plugin) are recorded with their reasons in
    // ci/expectations/audit-<line>-macho-arm64.toml: any change fails.
    report.step_after("audit: Mach-O install (plugin linkage)", &macho, |b| {
        audit(sh, root, b, "macho-arm64")
    });
    report.step_after("audit: native install (plugin linkage)", &patched, |b| {
        audit(sh, root, b, "native")
    });
    report.step_after("audit: darwin install (plugin linkage)", &darwin, |b| {
        audit(sh, root, b, "darwin")
    });
}

/// `cargo xtask audit` on an install, compared exactly with
/// `ci/expectations/audit-<line>-<lane>.toml`.
fn audit(sh: &Shell, root: &Path, b: &BuildOutput, lane: &str) -> Result<String> {
    let file = audit_expectations_path(root, &b.line, lane);
    crate::audit::check(sh, root, &b.prefix, Some(&file), &[])
}

/// Where CI expects the accepted audit findings of a release line and lane.
pub fn audit_expectations_path(root: &Path, line: &str, lane: &str) -> PathBuf {
    root.join("ci/expectations")
        .join(format!("audit-{line}-{lane}.toml"))
}

/// The build result and a one-line description for the table.
fn described(b: BuildOutput) -> (BuildOutput, String) {
    let text = format!("{}", b.prefix.display());
    (b, text)
}

fn make_check(sh: &Shell, b: &BuildOutput) -> Result<(Results, String)> {
    let results = check::make_check(sh, b)?;
    let summary = check::summary(&results);
    println!("results: {summary}");
    Ok((results, summary))
}

/// Differences between native and darwin results that are known and explained.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectations {
    #[serde(default)]
    pub expected: Vec<Expected>,
}

/// One expected difference. `test` names a test program (covering its Check cases) or one
/// case (`program::tcase:test`); `darwin` is its darwin outcome (`PASS`, `FAIL`, ... or
/// `absent`); `reason` says why it differs and is required.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    pub test: String,
    pub darwin: String,
    pub reason: String,
}

impl Expectations {
    /// Read the file; a missing file means no expectations (and says so).
    pub fn load(path: &Path) -> Result<Expectations> {
        let Some(text) = crate::error::read_optional(path)? else {
            println!(
                "no expectations file {}: every difference fails",
                path.display()
            );
            return Ok(Expectations::default());
        };
        Expectations::parse(&text).map_err(|detail| Error::Io {
            path: path.to_path_buf(),
            detail,
        })
    }

    pub fn parse(text: &str) -> std::result::Result<Expectations, String> {
        let e: Expectations = toml::from_str(text).map_err(|e| e.to_string())?;
        for x in &e.expected {
            if x.reason.trim().is_empty() {
                return Err(format!("expectation for `{}` has an empty reason", x.test));
            }
            if x.darwin != "absent" && Outcome::parse(&x.darwin).is_none() {
                return Err(format!(
                    "expectation for `{}`: darwin = {:?} is not PASS|FAIL|SKIP|XFAIL|XPASS|ERROR|absent",
                    x.test, x.darwin
                ));
            }
        }
        Ok(e)
    }
}

/// Whether `expected` explains difference `d`: the same program (or case), and for the
/// program-level entry the same darwin outcome.
fn explains(expected: &Expected, d: &Difference) -> bool {
    let darwin = d.b.map_or_else(|| "absent".to_string(), |o| o.to_string());
    if d.test == expected.test {
        return expected.darwin == darwin;
    }
    d.test
        .strip_prefix(&expected.test)
        .is_some_and(|rest| rest.starts_with("::"))
}

/// Print every difference (expected ones with their reason); fail on unexplained
/// differences and on expectations that no longer match anything.
fn judge(diffs: &[Difference], exp: &Expectations, file: &Path) -> Result<String> {
    let mut unexplained = Vec::new();
    for d in diffs {
        match exp.expected.iter().find(|x| explains(x, d)) {
            Some(x) => println!("  expected: {d}  ({})", x.reason),
            None => {
                println!("  UNEXPECTED: {d}");
                unexplained.push(d.to_string());
            }
        }
    }
    let stale: Vec<String> = exp
        .expected
        .iter()
        .filter(|x| !diffs.iter().any(|d| explains(x, d)))
        .map(|x| format!("{} (darwin = {})", x.test, x.darwin))
        .collect();
    for s in &stale {
        println!(
            "  STALE expectation (no longer differs; remove it from {}): {s}",
            file.display()
        );
    }
    if unexplained.is_empty() && stale.is_empty() {
        return Ok(format!("{} differences, all expected", diffs.len()));
    }
    Err(Error::Regression(format!(
        "darwin personality vs native: {} unexpected difference(s), {} stale expectation(s) in {}:\n{}",
        unexplained.len(),
        stale.len(),
        file.display(),
        unexplained
            .iter()
            .chain(stale.iter())
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    )))
}

#[derive(Debug)]
enum Status {
    Passed(String),
    Failed(String),
    Skipped(String),
}

#[derive(Debug)]
struct StepRecord {
    name: String,
    status: Status,
    duration: Duration,
}

#[derive(Debug, Default)]
struct Report {
    steps: Vec<StepRecord>,
}

impl Report {
    /// Run one step with a heading and its elapsed time. `f` returns its value and a short
    /// description for the table (or just the description, see `Described`).
    fn step<T: Described>(
        &mut self,
        name: &str,
        f: impl FnOnce() -> Result<T>,
    ) -> Option<T::Value> {
        let n = self.steps.len() + 1;
        println!("\n==> [{n}] {name}");
        let start = Instant::now();
        let result = f();
        let duration = start.elapsed();
        let (status, value) = match result {
            Ok(v) => {
                let (value, text) = v.split();
                println!("<== [{n}] {name}: ok in {}", fmt_duration(duration));
                (Status::Passed(text), Some(value))
            }
            Err(e) => {
                eprintln!(
                    "<== [{n}] {name}: FAILED in {}\n{e}",
                    fmt_duration(duration)
                );
                (Status::Failed(first_line(&e.to_string())), None)
            }
        };
        self.steps.push(StepRecord {
            name: name.to_string(),
            status,
            duration,
        });
        value
    }

    /// A step that needs the output of an earlier one; skipped (with the reason) without it.
    fn step_after<I, T: Described>(
        &mut self,
        name: &str,
        input: &Option<I>,
        f: impl FnOnce(&I) -> Result<T>,
    ) -> Option<T::Value> {
        match input {
            Some(i) => self.step(name, || f(i)),
            None => {
                self.skip(name, "the step it depends on failed");
                None
            }
        }
    }

    fn skip(&mut self, name: &str, reason: &str) {
        println!("\n==> {name}: SKIPPED ({reason})");
        self.steps.push(StepRecord {
            name: name.to_string(),
            status: Status::Skipped(reason.to_string()),
            duration: Duration::ZERO,
        });
    }

    fn table(&self) -> String {
        let width = self
            .steps
            .iter()
            .map(|s| s.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let mut out = format!(
            "{:<width$}  {:<7}  {:>9}  detail\n",
            "step", "result", "duration"
        );
        out.push_str(&format!("{}\n", "-".repeat(width + 30)));
        for s in &self.steps {
            let (result, detail) = match &s.status {
                Status::Passed(d) => ("ok", d.as_str()),
                Status::Failed(d) => ("FAILED", d.as_str()),
                Status::Skipped(d) => ("skipped", d.as_str()),
            };
            out.push_str(&format!(
                "{:<width$}  {:<7}  {:>9}  {}\n",
                s.name,
                result,
                fmt_duration(s.duration),
                detail
            ));
        }
        let total: Duration = self.steps.iter().map(|s| s.duration).sum();
        out.push_str(&format!(
            "{:<width$}  {:<7}  {:>9}\n",
            "total",
            "",
            fmt_duration(total)
        ));
        out
    }

    /// The closing line, in the plain `N passed, N failed, N skipped` form CI tools read.
    fn counts(&self) -> String {
        let count = |f: fn(&Status) -> bool| self.steps.iter().filter(|s| f(&s.status)).count();
        format!(
            "steps: {} passed, {} failed, {} skipped",
            count(|s| matches!(s, Status::Passed(_))),
            count(|s| matches!(s, Status::Failed(_))),
            count(|s| matches!(s, Status::Skipped(_)))
        )
    }

    fn result(&self) -> Result<()> {
        let bad: Vec<&str> = self
            .steps
            .iter()
            .filter(|s| matches!(s.status, Status::Failed(_) | Status::Skipped(_)))
            .map(|s| s.name.as_str())
            .collect();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(Error::Unsupported(format!(
                "ci: {} step(s) failed or were skipped: {}",
                bad.len(),
                bad.join(", ")
            )))
        }
    }
}

/// A step's return: the value later steps use, and the text for the summary table.
trait Described {
    type Value;
    fn split(self) -> (Self::Value, String);
}

impl Described for String {
    type Value = ();
    fn split(self) -> ((), String) {
        ((), self)
    }
}

impl<T> Described for (T, String) {
    type Value = T;
    fn split(self) -> (T, String) {
        self
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

fn fmt_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 60.0 {
        format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
    } else {
        format!("{secs:.1}s")
    }
}

/// Where CI expects the darwin expectations of a release line.
pub fn expectations_path(root: &Path, line: &str) -> PathBuf {
    root.join("ci/expectations")
        .join(format!("{line}-darwin.toml"))
}

#[cfg(test)]
mod tests {
    #![allow(non_snake_case)]
    use super::*;

    fn d(test: &str, a: Option<Outcome>, b: Option<Outcome>) -> Difference {
        Difference {
            test: test.into(),
            a,
            b,
        }
    }

    const FILE: &str = r#"
[[expected]]
test = "slurm_unit/common/log-test"
darwin = "FAIL"
reason = "logs to syslog differently"
"#;

    #[test]
    fn expectations__parse_valid_file() {
        let e = Expectations::parse(FILE).unwrap();
        assert_eq!(e.expected.len(), 1);
        assert_eq!(e.expected[0].darwin, "FAIL");
        assert!(Expectations::parse("").unwrap().expected.is_empty());
    }

    #[test]
    fn expectations__reason_is_required() {
        let err =
            Expectations::parse(&FILE.replace("logs to syslog differently", " ")).unwrap_err();
        assert!(err.contains("empty reason"), "{err}");
        assert!(Expectations::parse("[[expected]]\ntest = \"x\"\ndarwin = \"FAIL\"\n").is_err());
    }

    #[test]
    fn expectations__outcome_must_be_known_and_fields_known() {
        assert!(
            Expectations::parse(&FILE.replace("\"FAIL\"", "\"BROKEN\""))
                .unwrap_err()
                .contains("BROKEN")
        );
        assert!(Expectations::parse(&format!("{FILE}extra = 1\n")).is_err());
    }

    #[test]
    fn expectations__missing_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            Expectations::load(&dir.path().join("none.toml"))
                .unwrap()
                .expected
                .is_empty()
        );
    }

    #[test]
    fn judge__no_differences_no_expectations_passes() {
        assert!(judge(&[], &Expectations::default(), Path::new("f")).is_ok());
    }

    #[test]
    fn judge__unexpected_difference_fails() {
        let diffs = [d(
            "slurm_unit/common/pack-test",
            Some(Outcome::Pass),
            Some(Outcome::Fail),
        )];
        let err = judge(&diffs, &Expectations::default(), Path::new("f"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("pack-test: PASS -> FAIL"), "{err}");
    }

    #[test]
    fn judge__expected_program_difference_covers_its_cases() {
        let e = Expectations::parse(FILE).unwrap();
        let diffs = [
            d(
                "slurm_unit/common/log-test",
                Some(Outcome::Pass),
                Some(Outcome::Fail),
            ),
            d(
                "slurm_unit/common/log-test::core:syslog",
                Some(Outcome::Pass),
                Some(Outcome::Fail),
            ),
        ];
        assert!(judge(&diffs, &e, Path::new("f")).is_ok());
    }

    #[test]
    fn judge__other_outcome_than_expected_fails() {
        let e = Expectations::parse(FILE).unwrap();
        let diffs = [d(
            "slurm_unit/common/log-test",
            Some(Outcome::Pass),
            Some(Outcome::Error),
        )];
        assert!(judge(&diffs, &e, Path::new("f")).is_err());
    }

    #[test]
    fn judge__stale_expectation_fails() {
        let e = Expectations::parse(FILE).unwrap();
        let err = judge(&[], &e, Path::new("f")).unwrap_err().to_string();
        assert!(err.contains("1 stale"), "{err}");
    }

    #[test]
    fn judge__prefix_of_another_program_does_not_match() {
        let e = Expectations::parse(FILE).unwrap();
        let diffs = [d(
            "slurm_unit/common/log-test-2",
            Some(Outcome::Pass),
            Some(Outcome::Fail),
        )];
        assert!(judge(&diffs, &e, Path::new("f")).is_err());
    }

    #[test]
    fn report__failure_skips_dependents_and_fails_overall() {
        let mut r = Report::default();
        let a: Option<u32> = r.step("a", || Ok((1u32, "one".to_string())));
        let b: Option<u32> = r.step("b", || {
            Err::<(u32, String), _>(Error::Cluster("boom\nmore".into()))
        });
        r.step_after("after a", &a, |v| Ok(format!("got {v}")));
        r.step_after("after b", &b, |v| Ok(format!("got {v}")));
        assert_eq!(a, Some(1));
        let table = r.table();
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("after a") && l.contains("ok") && l.contains("got 1")),
            "{table}"
        );
        assert!(
            table.lines().any(|l| l.starts_with("b ")
                && l.contains("FAILED")
                && l.contains("cluster: boom")),
            "{table}"
        );
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("after b") && l.contains("skipped")),
            "{table}"
        );
        let err = r.result().unwrap_err().to_string();
        assert!(
            err.contains("2 step(s)") && err.contains("b, after b"),
            "{err}"
        );
    }

    #[test]
    fn report__all_passed_is_ok() {
        let mut r = Report::default();
        r.step("x", || Ok("fine".to_string()));
        assert!(r.result().is_ok());
    }

    #[test]
    fn fmt_duration__seconds_and_minutes() {
        assert_eq!(fmt_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(fmt_duration(Duration::from_secs(125)), "2m05s");
    }

    #[test]
    fn run_with_deadline__kills_the_whole_group_on_timeout() {
        let sh = Shell::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("grandchild");
        // The shell starts a grandchild (as cargo starts test binaries) and waits for it.
        let script = format!("sleep 60 & echo $! > {}; wait", pidfile.display());
        let start = Instant::now();
        let err = run_with_deadline(&sh, cmd!(sh, "sh -c {script}"), Duration::from_millis(500))
            .unwrap_err();
        assert!(err.to_string().contains("did not finish"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(20));
        let pid = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .to_string();
        // The grandchild was killed too (give the kernel a moment to reap it via init).
        let gone = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(100));
            cmd!(sh, "kill -0 {pid}")
                .quiet()
                .ignore_stderr()
                .run()
                .is_err()
        });
        assert!(gone, "grandchild {pid} survived");
    }

    #[test]
    fn run_with_deadline__reports_exit_status() {
        let sh = Shell::new().unwrap();
        assert!(run_with_deadline(&sh, cmd!(sh, "true"), Duration::from_secs(10)).is_ok());
        let err = run_with_deadline(&sh, cmd!(sh, "sh -c 'exit 7'"), Duration::from_secs(10))
            .unwrap_err();
        assert!(err.to_string().contains("7"), "{err}");
    }
}
