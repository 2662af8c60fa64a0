//! `fd-loop`: a `close()` loop bounded by the raw soft limit on open files.
//!
//! Without `close_range()` and `/proc/self/fd` (macOS has neither), Slurm's `closeall()`
//! closes every possible descriptor up to the soft `RLIMIT_NOFILE` (or
//! `sysconf(_SC_OPEN_MAX)`). On macOS that limit may be `RLIM_INFINITY`, and
//! `sysconf(_SC_OPEN_MAX)` then answers `INT64_MAX`, which becomes `INT_MAX` as an int: about
//! 2.1 billion `close()` calls, a ~187 s stall before every slurmstepd exec on a real Mac
//! (POC D13). Reported: a `for`/`while` loop whose body calls `close` and whose condition
//! compares with `rlim_cur` (unless its last assignment in the file passes it through a
//! function, `rlim.rlim_cur = getdtablesize()`), or with a variable some assignment of which is the raw
//! `<x>.rlim_cur` or `sysconf(_SC_OPEN_MAX)` (through casts only) and whose last assignment
//! in the file does not pass it through a function (a bound: `v = bound(v)`).

use super::token::{Token, matching};
use super::{Class, Finding, Scanned};
use std::collections::HashMap;

const TYPE_WORDS: &[&str] = &["int", "long", "unsigned", "rlim_t", "size_t", "uint64_t"];

/// Whether an expression calls a function other than `sysconf` (a cast is not a call).
fn bounding_call(expr: &[Token]) -> bool {
    expr.windows(2).any(|w| {
        w[1].is("(")
            && w[0]
                .ident()
                .is_some_and(|id| id != "sysconf" && !TYPE_WORDS.contains(&id))
    })
}

/// Whether an expression is the raw soft limit: mentions `rlim_cur` or `_SC_OPEN_MAX` and
/// calls nothing but `sysconf`.
fn raw_limit(expr: &[Token]) -> bool {
    let mentions = expr
        .iter()
        .any(|t| t.is("rlim_cur") || t.is("_SC_OPEN_MAX"));
    mentions && !bounding_call(expr)
}

pub fn scan(f: &Scanned, out: &mut Vec<Finding>) {
    let t = &f.mac;
    // per variable: (some assignment is the raw limit, the last one passes through a
    // bounding function)
    let mut vars: HashMap<&str, (bool, bool)> = HashMap::new();
    for k in 1..t.len() {
        if t[k].is("=") {
            if let Some(name) = t[k - 1].ident() {
                let end = (k + 1..t.len()).find(|&j| t[j].is(";")).unwrap_or(t.len());
                let rhs = &t[k + 1..end];
                let e = vars.entry(name).or_insert((false, false));
                e.0 |= raw_limit(rhs);
                e.1 = bounding_call(rhs);
            }
        }
    }
    let raw_var = |id: &str| vars.get(id).is_some_and(|(raw, bounded)| *raw && !*bounded);
    for k in 0..t.len() {
        if !((t[k].is("for") || t[k].is("while")) && t.get(k + 1).is_some_and(|x| x.is("("))) {
            continue;
        }
        let close = matching(t, k + 1);
        let head = &t[k + 2..close.min(t.len())];
        // the condition of a for is between its two `;`; a while's is all of it
        let cond: &[Token] = if t[k].is("for") {
            let semis: Vec<usize> = head
                .iter()
                .enumerate()
                .filter(|(_, x)| x.is(";"))
                .map(|(i, _)| i)
                .collect();
            match semis.as_slice() {
                [a, b, ..] => &head[a + 1..*b],
                _ => continue,
            }
        } else {
            head
        };
        let bound = cond
            .iter()
            .find(|x| x.is("rlim_cur") || x.ident().is_some_and(raw_var));
        let Some(bound) = bound else { continue };
        // `x.rlim_cur` itself: raw unless its last assignment in the file is a bound
        if bound.is("rlim_cur")
            && (!raw_limit(cond) || vars.get("rlim_cur").is_some_and(|(_, bounded)| *bounded))
        {
            continue;
        }
        let body_end = if t.get(close + 1).is_some_and(|x| x.is("{")) {
            matching(t, close + 1)
        } else {
            (close + 1..t.len())
                .find(|&j| t[j].is(";"))
                .unwrap_or(t.len())
        };
        let closes = (close + 1..body_end.min(t.len()))
            .any(|j| t[j].is("close") && t.get(j + 1).is_some_and(|x| x.is("(")));
        if closes {
            out.push(Finding {
                file: f.rel.clone(),
                line: t[k].line,
                class: Class::FdLoop,
                subject: bound.text.clone(),
                message: format!(
                    "close() loop up to `{}`, the raw soft RLIMIT_NOFILE/_SC_OPEN_MAX: unlimited on macOS means ~2^31 close() calls (no close_range, no /proc/self/fd)",
                    bound.text
                ),
            });
        }
    }
}
