//! The soak's accounting check: every job it submitted (an `sbatch` that returned an id, an
//! `srun` that printed one; each array element counts) has exactly one record in `sacct`, in a
//! final state (a requeued job counts once, with its final state: sacct without `-D` shows
//! the last run), and every cancelled job ended CANCELLED.

use super::super::scenarios::client::is_terminal;
use std::collections::{BTreeMap, BTreeSet};

/// A job the soak expects in sacct: its sacct JobID (`123`, or `123_4` for an array element),
/// its kind, and whether it was cancelled.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Expected {
    pub key: String,
    pub kind: &'static str,
    pub cancelled: bool,
}

/// What the check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Expected jobs without a record.
    pub missing: Vec<String>,
    /// Expected jobs with more than one record (`key`, count).
    pub doubled: Vec<(String, usize)>,
    /// Expected jobs whose record is not final (`key`, state).
    pub unfinished: Vec<(String, String)>,
    /// Cancelled jobs that did not end CANCELLED (`key`, state).
    pub not_cancelled: Vec<(String, String)>,
    /// Records of jobs the soak did not submit (an answer lost to a fault: the job exists,
    /// the client never heard of it).
    pub unknown: usize,
    /// Final states per kind.
    pub states: BTreeMap<(&'static str, String), usize>,
}

impl Findings {
    pub fn ok(&self) -> bool {
        self.missing.is_empty()
            && self.doubled.is_empty()
            && self.unfinished.is_empty()
            && self.not_cancelled.is_empty()
    }

    /// A few of each problem, for the error.
    pub fn problems(&self) -> String {
        let pairs = |v: &[(String, String)]| v.iter().map(|(k, s)| format!("{k} {s}")).collect();
        let doubled = self.doubled.iter().map(|(k, n)| format!("{k} x{n}"));
        [
            ("without a record in sacct", self.missing.clone()),
            ("with several records", doubled.collect()),
            ("not in a final state", pairs(&self.unfinished)),
            ("cancelled jobs not CANCELLED", pairs(&self.not_cancelled)),
        ]
        .into_iter()
        .filter(|(_, items)| !items.is_empty())
        .map(|(what, items)| {
            let few = items
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            format!("{} {what}: {few}", items.len())
        })
        .collect::<Vec<_>>()
        .join("; ")
    }
}

/// Check `expected` against `sacct -X -n -P -o JobID,State` output (no `-D`).
pub fn check(expected: &[Expected], sacct: &str) -> Findings {
    let mut records: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for line in sacct.lines().filter(|l| !l.trim().is_empty()) {
        let mut f = line.split('|');
        let (Some(id), Some(state)) = (f.next(), f.next()) else {
            continue;
        };
        let state = state.split_whitespace().next().unwrap_or("").to_string();
        records.entry(id.trim()).or_default().push(state);
    }
    let keys: BTreeSet<&str> = expected.iter().map(|e| e.key.as_str()).collect();
    let mut found = Findings {
        unknown: records.keys().filter(|k| !keys.contains(*k)).count(),
        ..Findings::default()
    };
    for e in expected {
        let Some(states) = records.get(e.key.as_str()) else {
            found.missing.push(e.key.clone());
            continue;
        };
        if states.len() > 1 {
            found.doubled.push((e.key.clone(), states.len()));
            continue;
        }
        let state = &states[0];
        if !is_terminal(state) {
            found.unfinished.push((e.key.clone(), state.clone()));
            continue;
        }
        if e.cancelled && state != "CANCELLED" {
            found.not_cancelled.push((e.key.clone(), state.clone()));
        }
        *found.states.entry((e.kind, state.clone())).or_default() += 1;
    }
    found
}

/// How many records of the `-D` (duplicates) output are earlier runs of requeued jobs.
pub fn requeued(sacct_duplicates: &str) -> usize {
    sacct_duplicates
        .lines()
        .filter(|l| {
            l.split('|')
                .nth(1)
                .is_some_and(|s| s.starts_with("REQUEUED"))
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(key: &str, kind: &'static str, cancelled: bool) -> Expected {
        Expected {
            key: key.into(),
            kind,
            cancelled,
        }
    }

    /// One submission of each kind: a batch job, a two-task array, a cancelled job.
    fn submitted() -> [Expected; 4] {
        [
            e("1", "batch", false),
            e("2_0", "array", false),
            e("2_1", "array", false),
            e("3", "cancel", true),
        ]
    }

    #[test]
    fn check__all_accounted() {
        let f = check(
            &submitted(),
            "1|COMPLETED\n2_0|COMPLETED\n2_1|COMPLETED\n3|CANCELLED by 0\n9|COMPLETED\n",
        );
        assert!(f.ok(), "{f:?}");
        assert_eq!(f.unknown, 1);
        assert_eq!(f.states[&("array", "COMPLETED".to_string())], 2);
    }

    #[test]
    fn check__every_problem_named() {
        let f = check(
            &submitted(),
            "2_0|COMPLETED\n2_0|COMPLETED\n2_1|RUNNING\n3|COMPLETED\n",
        );
        assert!(!f.ok());
        assert_eq!(f.missing, ["1"]);
        assert_eq!(f.doubled, [("2_0".to_string(), 2)]);
        assert_eq!(f.unfinished, [("2_1".to_string(), "RUNNING".to_string())]);
        assert_eq!(
            f.not_cancelled,
            [("3".to_string(), "COMPLETED".to_string())]
        );
        assert_eq!(
            f.problems(),
            "1 without a record in sacct: 1; 1 with several records: 2_0 x2; \
             1 not in a final state: 2_1 RUNNING; 1 cancelled jobs not CANCELLED: 3 COMPLETED"
        );
    }

    #[test]
    fn requeued__counts_earlier_runs() {
        assert_eq!(requeued("5|REQUEUED\n5|COMPLETED\n6|COMPLETED\n"), 1);
    }
}
