//! Reading what the peer suite is given and what it reports: the subset file, pytest node
//! ids, the JUnit report per test case, and the outcome counts printed per build.

use crate::check::{Outcome, Results};
use std::collections::BTreeMap;

/// The pytest node id of a JUnit key: `tests.test_116_28.Test_x::test_y[p]` ->
/// `tests/test_116_28.py::Test_x::test_y[p]`.
pub fn node_id(key: &str) -> Option<String> {
    let (class, name) = key.split_once("::")?;
    let parts: Vec<&str> = class.split('.').collect();
    let module = parts.iter().position(|p| p.starts_with("test_"))?;
    let mut id = format!("{}.py", parts[..=module].join("/"));
    for c in &parts[module + 1..] {
        id.push_str("::");
        id.push_str(c);
    }
    id.push_str("::");
    id.push_str(name);
    Some(id)
}

/// The subset file: one pytest argument per line (a test file or node id); `#` starts a comment.
pub fn parse_subset(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Per-test outcomes from pytest's JUnit XML (`xunit1`): `<testcase classname name>` with a
/// `<failure>` (FAIL), `<error>` (ERROR, e.g. a failing fixture or teardown), `<skipped>`
/// (SKIP, or XFAIL when its type is `pytest.xfail`) or nothing (PASS). Keys are
/// `classname::name` (`tests.test_101_1::test_sacctmgr_add`).
pub fn parse_junit(xml: &str) -> std::result::Result<Results, String> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| e.to_string())?;
    let mut results = BTreeMap::new();
    for case in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        let name = case.attribute("name").ok_or("a testcase has no name")?;
        let key = match case.attribute("classname") {
            Some(c) if !c.is_empty() => format!("{c}::{name}"),
            _ => name.to_string(),
        };
        let mut outcome = Outcome::Pass;
        for child in case.children().filter(|n| n.is_element()) {
            let this = match child.tag_name().name() {
                "error" => Outcome::Error,
                "failure" => Outcome::Fail,
                "skipped" if child.attribute("type") == Some("pytest.xfail") => Outcome::XFail,
                "skipped" => Outcome::Skip,
                _ => continue,
            };
            // A test that failed and then errored in teardown counts as ERROR.
            if rank(this) > rank(outcome) {
                outcome = this;
            }
        }
        results.insert(key, outcome);
    }
    if results.is_empty() {
        return Err("no testcase in the report".into());
    }
    Ok(results)
}

fn rank(o: Outcome) -> u8 {
    match o {
        Outcome::Pass => 0,
        Outcome::Skip | Outcome::XFail => 1,
        Outcome::Fail | Outcome::XPass => 2,
        Outcome::Error => 3,
    }
}

/// `PASS 12, FAIL 1, SKIP 40, ERROR 0` (every outcome named, zeros included).
pub fn counts(results: &Results) -> String {
    let all = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::Skip,
        Outcome::Error,
        Outcome::XFail,
        Outcome::XPass,
    ];
    all.iter()
        .filter(|o| {
            matches!(
                o,
                Outcome::Pass | Outcome::Fail | Outcome::Skip | Outcome::Error
            ) || results.values().any(|r| r == *o)
        })
        .map(|o| format!("{o} {}", results.values().filter(|r| *r == o).count()))
        .collect::<Vec<_>>()
        .join(", ")
}
