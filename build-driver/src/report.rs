//! The summary of `cargo xtask ci`: each step run with a heading and its time, steps that need
//! a failed step's output skipped with the reason, the table at the end, and the closing line
//! in the plain `N passed, N failed, N skipped` form CI tools read.

use driver_common::error::{Error, Result};
use std::time::{Duration, Instant};

/// How the table and a line's row write a step that does not apply to the run.
pub const NOT_APPLICABLE: &str = "n/a";

#[derive(Debug)]
enum Status {
    Passed(String),
    Failed(String),
    Skipped(String),
    /// Not a step of this run by design (a snapshot has no bottle, 24.11 no TLS): recorded
    /// with its reason, and not a failure, unlike a step skipped because another failed.
    NotApplicable(String),
}

impl Status {
    /// The result as the table and a line's row write it, and the step's detail.
    fn result_and_detail(&self) -> (&'static str, &str) {
        match self {
            Status::Passed(d) => ("ok", d),
            Status::Failed(d) => ("FAILED", d),
            Status::Skipped(d) => ("skipped", d),
            Status::NotApplicable(d) => (NOT_APPLICABLE, d),
        }
    }
}

#[derive(Debug)]
struct StepRecord {
    name: String,
    status: Status,
    duration: Duration,
}

#[derive(Debug, Default)]
pub struct Report {
    steps: Vec<StepRecord>,
}

impl Report {
    /// Run one step with a heading and its elapsed time. `f` returns its value and a short
    /// description for the table (or just the description, see `Described`).
    pub fn step<T: Described>(
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
    pub fn step_after<I, T: Described>(
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

    /// A step this run has no use for by design, with the reason (recorded as `n/a`).
    pub fn not_applicable(&mut self, name: &str, reason: &str) {
        println!("\n==> {name}: not applicable ({reason})");
        self.not_run(name, Status::NotApplicable(reason.to_string()));
    }

    pub fn skip(&mut self, name: &str, reason: &str) {
        println!("\n==> {name}: SKIPPED ({reason})");
        self.not_run(name, Status::Skipped(reason.to_string()));
    }

    /// Records a step that did not run.
    fn not_run(&mut self, name: &str, status: Status) {
        self.steps.push(StepRecord {
            name: name.to_string(),
            status,
            duration: Duration::ZERO,
        });
    }

    /// Every step so far as (name, result, detail, duration): result is `ok`, `FAILED`,
    /// `skipped` or `n/a`, as the table prints it (`lines verify` records them in a line's row).
    pub fn records(&self) -> impl Iterator<Item = (&str, &'static str, &str, Duration)> {
        self.steps.iter().map(|s| {
            let (result, detail) = s.status.result_and_detail();
            (s.name.as_str(), result, detail, s.duration)
        })
    }

    pub fn table(&self) -> String {
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
            let (result, detail) = s.status.result_and_detail();
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
    pub fn counts(&self) -> String {
        let count = |f: fn(&Status) -> bool| self.steps.iter().filter(|s| f(&s.status)).count();
        format!(
            "steps: {} passed, {} failed, {} skipped ({} not applicable)",
            count(|s| matches!(s, Status::Passed(_))),
            count(|s| matches!(s, Status::Failed(_))),
            count(|s| matches!(s, Status::Skipped(_))),
            count(|s| matches!(s, Status::NotApplicable(_)))
        )
    }

    pub fn result(&self) -> Result<()> {
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
pub trait Described {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report__failure_skips_dependents_and_fails_overall() {
        let mut r = Report::default();
        let a: Option<u32> = r.step("a", || Ok((1u32, "one".to_string())));
        let b: Option<u32> = r.step("b", || {
            Err::<(u32, String), _>(Error::Scenario("boom\nmore".into()))
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
        crate::testing::assert_mentions(&err, &["2 step(s)", "b, after b"]);
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
}
