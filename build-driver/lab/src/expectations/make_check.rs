//! Known darwin-vs-native differences of Slurm's `make check`
//! (`ci/expectations/<line>-darwin.toml`), compared exactly: an unexplained difference fails,
//! and an expectation that no longer matches a difference fails too (the file must stay
//! true). Every entry needs a reason.

use super::{Recorded, load};
use crate::check::{Difference, Outcome};
use driver_common::error::{Error, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Where CI expects the darwin expectations of a release line.
pub fn path(root: &Path, line: &str) -> PathBuf {
    super::file(root, &format!("{line}-darwin.toml"))
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
        load(path)
    }
}

impl Recorded for Expectations {
    const UNLISTED: &'static str = "difference";

    fn parse(text: &str) -> std::result::Result<Expectations, String> {
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
pub fn judge(diffs: &[Difference], exp: &Expectations, file: &Path) -> Result<String> {
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
    Err(Error::UnexpectedResults(format!(
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

#[cfg(test)]
mod tests {
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
        // Said as what it is: not the pristine-vs-patched non-regression.
        assert!(
            err.starts_with("make check: results differ beyond"),
            "{err}"
        );
        assert!(!err.contains("pristine"), "{err}");
    }

    /// Two tests as cases: the expected differences of a program and its case pass; another
    /// outcome than the expected one fails.
    #[test]
    fn judge__expected_differences_pass_and_other_outcomes_fail() {
        let e = Expectations::parse(FILE).unwrap();
        let log = |program: &str, to| d(program, Some(Outcome::Pass), Some(to));
        let cases = [
            (
                "expected_program_difference_covers_its_cases",
                vec![
                    log("slurm_unit/common/log-test", Outcome::Fail),
                    log("slurm_unit/common/log-test::core:syslog", Outcome::Fail),
                ],
                true,
            ),
            (
                "other_outcome_than_expected_fails",
                vec![log("slurm_unit/common/log-test", Outcome::Error)],
                false,
            ),
        ];
        for (name, diffs, ok) in cases {
            let r = judge(&diffs, &e, Path::new("f"));
            assert_eq!(r.is_ok(), ok, "{name}: {r:?}");
        }
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
}
