//! Slurm's own unit tests: `make -k check` in a configured and built tree, and the per-test
//! results collected from automake's `.trs` files and Check's per-case log lines.
//!
//! `make check` builds the programs of `testsuite/slurm_unit` (Check framework) and runs them
//! through automake's parallel test driver. Each test program leaves `<name>.trs` with a
//! `:test-result: PASS|FAIL|SKIP|XFAIL|XPASS|ERROR` line and `<name>.log` with one line per
//! Check test case (`file:line:P|F|E:tcase:test:iter: message`). A failing `make check` is not
//! an error here: the results are what matter, and CI compares them between trees.

use driver_common::error::{Error, Result};
use driver_common::util::process::tail;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;
use xshell::{Shell, cmd};

/// The result of one test program or one Check test case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Pass,
    Fail,
    Skip,
    XFail,
    XPass,
    Error,
}

impl Outcome {
    /// Automake's spelling (`:test-result:` values).
    pub fn parse(s: &str) -> Option<Outcome> {
        Some(match s {
            "PASS" => Outcome::Pass,
            "FAIL" => Outcome::Fail,
            "SKIP" => Outcome::Skip,
            "XFAIL" => Outcome::XFail,
            "XPASS" => Outcome::XPass,
            "ERROR" => Outcome::Error,
            _ => return None,
        })
    }

    /// True for results automake counts as failures.
    pub fn is_failure(self) -> bool {
        matches!(self, Outcome::Fail | Outcome::XPass | Outcome::Error)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::Skip => "SKIP",
            Outcome::XFail => "XFAIL",
            Outcome::XPass => "XPASS",
            Outcome::Error => "ERROR",
        })
    }
}

/// Results by name: test programs by their path below `testsuite/` without `.trs`
/// (`slurm_unit/common/pack-test`), Check cases as `<program>::<tcase>:<test>`.
pub type Results = BTreeMap<String, Outcome>;

/// The key of the synthetic entry recorded when `make check` failed although no test
/// result explains it (a test program that did not compile or link, for example).
pub const MAKE_FAILED: &str = "<make check: failed outside the test results>";

/// Run `make -k check` in the build directory of the staged `prefix` (its staging
/// manifest), with the make variables its build used (so a relink keeps the shim in a
/// darwin build), and collect the results.
pub fn make_check(sh: &Shell, prefix: &Path) -> Result<Results> {
    let staged = driver_common::staging::Manifest::read(prefix)?;
    make_check_with(
        sh,
        &staged.build_dir,
        driver_common::util::process::default_jobs(),
        &staged.make_vars,
    )
}

/// `make -k check -j<jobs> <vars>` in `build_dir` (a configured and built Slurm tree); the full
/// output goes to `<build_dir>/xtask-make-check.log`. Stale `.trs` files are removed first so
/// only this run's results are read.
/// `vars` are extra `VAR=value` arguments for make.
pub fn make_check_with(
    sh: &Shell,
    build_dir: &Path,
    jobs: usize,
    vars: &[String],
) -> Result<Results> {
    if !build_dir.join("Makefile").is_file() {
        return Err(Error::File {
            path: build_dir.to_path_buf(),
            problem: "no Makefile: not a configured Slurm build directory (run `cargo xtask build-slurm` first)".into(),
        });
    }
    let testsuite = build_dir.join("testsuite");
    for trs in trs_files(&testsuite)? {
        std::fs::remove_file(&trs).map_err(|e| Error::io(&trs, e))?;
    }
    let log = build_dir.join("xtask-make-check.log");
    let jobs = format!("-j{}", jobs.max(1));
    let start = Instant::now();
    let _dir = sh.push_dir(build_dir);
    let output = cmd!(sh, "make -k check {jobs} {vars...}")
        .ignore_status()
        .quiet()
        .output()?;
    let mut text = output.stdout;
    text.extend_from_slice(&output.stderr);
    std::fs::write(&log, &text).map_err(|e| Error::io(&log, e))?;
    let mut results = collect(&testsuite)?;
    let make_ok = output.status.success();
    eprintln!(
        "make check in {}: make {} in {:.0?}, {} test programs ({} failing); log {}",
        build_dir.display(),
        if make_ok { "succeeded" } else { "failed" },
        start.elapsed(),
        results.keys().filter(|k| !k.contains("::")).count(),
        results
            .iter()
            .filter(|(k, o)| !k.contains("::") && o.is_failure())
            .count(),
        log.display()
    );
    if !make_ok && !results.values().any(|o| o.is_failure()) {
        // Nothing in the results explains the failure: do not let it pass silently.
        results.insert(MAKE_FAILED.to_string(), Outcome::Error);
        eprintln!(
            "make check failed without a failing test result; tail of {}:\n{}",
            log.display(),
            tail(&text, 30)
        );
    }
    if results.is_empty() {
        return Err(Error::Build {
            step: "make check (no test results found)".into(),
            log,
            tail: tail(&text, 30),
        });
    }
    Ok(results)
}

/// All `.trs` files below `dir` (none if `dir` does not exist), sorted.
fn trs_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    if !dir.is_dir() {
        return Ok(found);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(|e| Error::io(&d, e))? {
            let path = entry.map_err(|e| Error::io(&d, e))?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "trs") {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Read every `.trs` below `testsuite` (and the Check case lines of the matching `.log`).
pub fn collect(testsuite: &Path) -> Result<Results> {
    let mut results = Results::new();
    for trs in trs_files(testsuite)? {
        let rel = trs
            .strip_prefix(testsuite)
            .unwrap_or(&trs)
            .with_extension("");
        let name = rel.to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(&trs).map_err(|e| Error::io(&trs, e))?;
        let outcome = parse_trs(&text).ok_or_else(|| Error::File {
            path: trs.clone(),
            problem: "no valid `:test-result:` line (interrupted test run?)".into(),
        })?;
        results.insert(name.clone(), outcome);
        let log = trs.with_extension("log");
        if let Ok(log_text) = std::fs::read_to_string(&log) {
            for (case, outcome) in parse_check_log(&log_text) {
                results.insert(format!("{name}::{case}"), outcome);
            }
        }
    }
    Ok(results)
}

/// The worst `:test-result:` of a `.trs` file (a test may report several).
pub fn parse_trs(text: &str) -> Option<Outcome> {
    text.lines()
        .filter_map(|l| l.strip_prefix(":test-result:"))
        .map(|v| Outcome::parse(v.trim()))
        .try_fold(None::<Outcome>, |worst, o| {
            let o = o?;
            Some(Some(match worst {
                Some(w) if severity(w) >= severity(o) => w,
                _ => o,
            }))
        })
        .flatten()
}

fn severity(o: Outcome) -> u8 {
    match o {
        Outcome::Pass => 0,
        Outcome::XFail => 1,
        Outcome::Skip => 2,
        Outcome::Fail => 3,
        Outcome::XPass => 4,
        Outcome::Error => 5,
    }
}

/// Check's verbose case lines: `path:line:R:tcase:test:iteration: message`, R in P/F/E.
/// Returns `tcase:test` (with `#iteration` appended when not 0) and its outcome.
pub fn parse_check_log(text: &str) -> Vec<(String, Outcome)> {
    let mut cases = Vec::new();
    for line in text.lines() {
        // The path may itself contain ':' only on exotic systems; split from the left.
        let mut parts = line.splitn(7, ':');
        let (Some(_path), Some(lineno), Some(r), Some(tcase), Some(test), Some(iter)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            continue;
        };
        if lineno.is_empty()
            || !lineno.bytes().all(|b| b.is_ascii_digit())
            || iter.parse::<u32>().is_err()
        {
            continue;
        }
        let outcome = match r {
            "P" => Outcome::Pass,
            "F" => Outcome::Fail,
            "E" => Outcome::Error,
            _ => continue,
        };
        let key = if iter == "0" {
            format!("{tcase}:{test}")
        } else {
            format!("{tcase}:{test}#{iter}")
        };
        cases.push((key, outcome));
    }
    cases
}

/// One difference between two result sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub test: String,
    pub a: Option<Outcome>,
    pub b: Option<Outcome>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |o: Option<Outcome>| o.map_or_else(|| "absent".to_string(), |o| o.to_string());
        write!(f, "{}: {} -> {}", self.test, show(self.a), show(self.b))
    }
}

/// Every test present in only one set or with different outcomes, in name order.
pub fn differences(a: &Results, b: &Results) -> Vec<Difference> {
    let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            let (x, y) = (a.get(name).copied(), b.get(name).copied());
            (x != y).then(|| Difference {
                test: name.clone(),
                a: x,
                b: y,
            })
        })
        .collect()
}

/// The differences as human-readable lines (`test: PASS -> FAIL`, `test: absent -> PASS`).
pub fn compare(a: &Results, b: &Results) -> Vec<String> {
    differences(a, b).iter().map(ToString::to_string).collect()
}

/// A short summary: program counts by outcome, and the failing programs.
pub fn summary(results: &Results) -> String {
    let mut counts: BTreeMap<Outcome, usize> = BTreeMap::new();
    let mut failing = Vec::new();
    for (name, o) in results.iter().filter(|(k, _)| !k.contains("::")) {
        *counts.entry(*o).or_default() += 1;
        if o.is_failure() {
            failing.push(name.as_str());
        }
    }
    let counts: Vec<String> = counts.iter().map(|(o, n)| format!("{o} {n}")).collect();
    if failing.is_empty() {
        counts.join(", ")
    } else {
        format!("{}; failing: {}", counts.join(", "), failing.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(items: &[(&str, Outcome)]) -> Results {
        items.iter().map(|(k, o)| (k.to_string(), *o)).collect()
    }

    #[test]
    fn parse_trs__reads_automake_result_lines() {
        let text = ":test-result: PASS\n:global-test-result: PASS\n:recheck: no\n:copy-in-global-log: no\n";
        assert_eq!(parse_trs(text), Some(Outcome::Pass));
        assert_eq!(parse_trs(":test-result: XFAIL\n"), Some(Outcome::XFail));
    }

    #[test]
    fn parse_trs__keeps_the_worst_of_several_results() {
        assert_eq!(
            parse_trs(":test-result: PASS\n:test-result: FAIL\n:test-result: SKIP\n"),
            Some(Outcome::Fail)
        );
        assert_eq!(
            parse_trs(":test-result: ERROR\n:test-result: PASS\n"),
            Some(Outcome::Error)
        );
    }

    #[test]
    fn parse_trs__rejects_missing_or_unknown_results() {
        assert_eq!(parse_trs(":global-test-result: PASS\n"), None);
        assert_eq!(parse_trs(":test-result: MAYBE\n"), None);
        assert_eq!(parse_trs(""), None);
    }

    #[test]
    fn parse_check_log__reads_case_lines_and_ignores_the_rest() {
        let log = "Running suite(s): x\n\
            ../../src/t/a-test.c:102:P:right_tests:root:0: Passed\n\
            ../../src/t/a-test.c:98:F:right_tests:both:0: Assertion 'count == 2' failed: a:b\n\
            ../../src/t/a-test.c:50:E:errs:crash:3: (after this point) Received signal 11\n\
            50%: Checks: 2, Failures: 1, Errors: 0\n\
            FAIL a-test (exit status: 1)\n";
        assert_eq!(
            parse_check_log(log),
            vec![
                ("right_tests:root".to_string(), Outcome::Pass),
                ("right_tests:both".to_string(), Outcome::Fail),
                ("errs:crash#3".to_string(), Outcome::Error),
            ]
        );
    }

    #[test]
    fn collect__names_programs_by_path_and_adds_cases() {
        let (dir, sub) = driver_common::testing::scratch("slurm_unit/common");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("pack-test.trs"), ":test-result: PASS\n").unwrap();
        std::fs::write(
            sub.join("pack-test.log"),
            "x.c:1:P:core:pack_u8:0: Passed\n",
        )
        .unwrap();
        std::fs::write(sub.join("log-test.trs"), ":test-result: FAIL\n").unwrap();
        let r = collect(dir.path()).unwrap();
        assert_eq!(
            r,
            results(&[
                ("slurm_unit/common/log-test", Outcome::Fail),
                ("slurm_unit/common/pack-test", Outcome::Pass),
                ("slurm_unit/common/pack-test::core:pack_u8", Outcome::Pass),
            ])
        );
    }

    #[test]
    fn collect__truncated_trs_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x-test.trs"), ":copy-in-global-log: no\n").unwrap();
        assert!(matches!(collect(dir.path()), Err(Error::File { .. })));
    }

    #[test]
    fn collect__missing_testsuite_gives_no_results() {
        let dir = tempfile::tempdir().unwrap();
        assert!(collect(&dir.path().join("absent")).unwrap().is_empty());
    }

    #[test]
    fn compare__equal_sets_have_no_difference() {
        let a = results(&[("t1", Outcome::Pass), ("t2", Outcome::Fail)]);
        assert!(compare(&a, &a.clone()).is_empty());
    }

    #[test]
    fn compare__lists_changed_and_one_sided_tests_in_order() {
        let a = results(&[
            ("a", Outcome::Pass),
            ("b", Outcome::Pass),
            ("c", Outcome::Skip),
        ]);
        let b = results(&[
            ("b", Outcome::Fail),
            ("c", Outcome::Skip),
            ("d", Outcome::Pass),
        ]);
        assert_eq!(
            compare(&a, &b),
            vec!["a: PASS -> absent", "b: PASS -> FAIL", "d: absent -> PASS"]
        );
    }

    #[test]
    fn summary__counts_programs_and_names_failures() {
        let r = results(&[
            ("x", Outcome::Pass),
            ("y", Outcome::Fail),
            ("y::c:t", Outcome::Fail),
            ("z", Outcome::Pass),
        ]);
        assert_eq!(summary(&r), "PASS 2, FAIL 1; failing: y");
    }

    #[test]
    fn make_check_in__refuses_an_unconfigured_directory() {
        let dir = tempfile::tempdir().unwrap();
        let sh = Shell::new().unwrap();
        assert!(matches!(
            make_check_with(&sh, dir.path(), 1, &[]),
            Err(Error::File { .. })
        ));
    }

    /// A shell with make and a temporary directory holding `dir` and a `Makefile` of
    /// `makefile`; `None` (the reason printed: the test is skipped) without make.
    fn make_project(dir: &str, makefile: &str) -> Option<(Shell, tempfile::TempDir)> {
        let sh = driver_common::testing::shell_with(&["make"])?;
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(dir)).unwrap();
        std::fs::write(d.path().join("Makefile"), makefile).unwrap();
        Some((sh, d))
    }

    /// A fake automake tree: `make -k check` writes one passing and one failing `.trs` and
    /// exits non-zero; the results are returned, not an error.
    #[test]
    fn make_check_in__failing_make_still_returns_results() {
        let Some((sh, dir)) = make_project(
            "testsuite/u",
            "check:\n\tprintf ':test-result: PASS\\n' > testsuite/u/a-test.trs\n\
             \tprintf ':test-result: FAIL\\n' > testsuite/u/b-test.trs\n\tfalse\n",
        ) else {
            return;
        };
        std::fs::write(
            dir.path().join("testsuite/u/stale-test.trs"),
            ":test-result: PASS\n",
        )
        .unwrap();
        let r = make_check_with(&sh, dir.path(), 1, &[]).unwrap();
        assert_eq!(
            r,
            results(&[("u/a-test", Outcome::Pass), ("u/b-test", Outcome::Fail)])
        );
        assert!(dir.path().join("xtask-make-check.log").is_file());
    }

    #[test]
    fn make_check_in__unexplained_make_failure_is_recorded() {
        let Some((sh, dir)) = make_project(
            "testsuite",
            "check:\n\tprintf ':test-result: PASS\\n' > testsuite/a-test.trs\n\tfalse\n",
        ) else {
            return;
        };
        let r = make_check_with(&sh, dir.path(), 1, &[]).unwrap();
        assert_eq!(
            r,
            results(&[("a-test", Outcome::Pass), (MAKE_FAILED, Outcome::Error)])
        );
    }

    /// Slurm's real `make check`, when a built tree is given (it takes a minute or more).
    #[test]
    fn make_check_in__real_slurm_tree_when_given() {
        let Some(dir) = std::env::var_os("XTASK_SLURM_BUILD_DIR") else {
            eprintln!(
                "skipped: set XTASK_SLURM_BUILD_DIR to a configured and built Slurm tree to run its make check"
            );
            return;
        };
        let sh = Shell::new().unwrap();
        let r = make_check_with(&sh, Path::new(&dir), 2, &[]).unwrap();
        eprintln!("{}", summary(&r));
        assert!(r.contains_key("slurm_unit/common/log-test"), "{r:?}");
        assert!(
            r.keys().filter(|k| !k.contains("::")).count() >= 30,
            "{r:?}"
        );
        assert!(
            r.keys().any(|k| k.contains("::")),
            "no Check case lines parsed"
        );
    }
}
