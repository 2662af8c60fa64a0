//! Accepted audit findings (`ci/expectations/audit-<line>-<lane>.toml`), compared exactly:
//! a finding not listed fails, a listed one that is no longer found fails (the file must stay
//! true), and a listed pair whose symbols changed fails. Every entry needs a reason.
//!
//! ```toml
//! [[accepted]]
//! plugin = "topology_tree.so"
//! programs = ["slurmd", "slurmstepd"]        # the same unresolved set in each
//! symbols = ["lock_slurmctld", "unlock_slurmctld"]
//! libraries = []                             # optional: missing libraries, as reported
//! reason = "D1: slurmctld-only functions, only called in slurmctld"
//! ```

use super::report::{Finding, Report};
use driver_common::error::{Error, Result};
use driver_common::expectations::Entry;
#[cfg(test)]
use driver_common::expectations::Recorded as _;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where CI expects the accepted audit findings of a release line and lane.
pub fn path(root: &Path, line: &str, lane: &str) -> PathBuf {
    driver_common::expectations::file(root, &format!("audit-{line}-{lane}.toml"))
}

/// The accepted findings of one file.
pub type Expectations = driver_common::expectations::AcceptedList<Accepted>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accepted {
    pub plugin: String,
    pub programs: Vec<String>,
    #[serde(default)]
    pub symbols: BTreeSet<String>,
    #[serde(default)]
    pub libraries: BTreeSet<String>,
    pub reason: String,
}

type Key = (String, String);
type Value = (BTreeSet<String>, BTreeSet<String>);

/// Every accepted (plugin, program) pair with its symbols, libraries and reason.
fn pairs(exp: &Expectations) -> BTreeMap<Key, (Value, &str)> {
    let mut out = BTreeMap::new();
    for a in &exp.accepted {
        for p in &a.programs {
            out.insert(
                (a.plugin.clone(), p.clone()),
                ((a.symbols.clone(), a.libraries.clone()), a.reason.as_str()),
            );
        }
    }
    out
}

impl Entry for Accepted {
    const UNLISTED: &'static str = "finding";
    type Key = (String, String);

    fn check(&self, seen: &mut BTreeSet<Self::Key>) -> std::result::Result<(), String> {
        check_entry(self, seen)
    }
}

/// One entry: complete, with a reason, and nothing in it listed before.
fn check_entry(
    a: &Accepted,
    seen: &mut BTreeSet<(String, String)>,
) -> std::result::Result<(), String> {
    if a.reason.trim().is_empty() {
        return Err(format!("entry for `{}` has an empty reason", a.plugin));
    }
    if a.programs.is_empty() || (a.symbols.is_empty() && a.libraries.is_empty()) {
        return Err(format!(
            "entry for `{}` needs programs and symbols (or libraries)",
            a.plugin
        ));
    }
    for p in &a.programs {
        if !seen.insert((a.plugin.clone(), p.clone())) {
            return Err(format!("`{}` in `{p}` is listed twice", a.plugin));
        }
    }
    Ok(())
}

fn found_pairs(findings: &[Finding]) -> BTreeMap<Key, Value> {
    findings
        .iter()
        .map(|f| {
            (
                (f.plugin.clone(), f.program.clone()),
                (f.symbols.clone(), f.libraries.clone()),
            )
        })
        .collect()
}

fn show(v: &Value) -> String {
    let mut parts: Vec<String> = v.0.iter().cloned().collect();
    parts.extend(v.1.iter().map(|l| format!("library {l}")));
    parts.join(", ")
}

/// Compare the report with the accepted findings; print every difference.
pub fn judge(report: &Report, exp: &Expectations, file: &Path) -> Result<()> {
    let found = found_pairs(&report.findings);
    let accepted = pairs(exp);
    let mut problems = Vec::new();
    let mut new = Vec::new();
    for (key, value) in &found {
        match accepted.get(key) {
            Some((v, _)) if v == value => {}
            Some((v, _)) => problems.push(format!(
                "CHANGED {} in {}: found [{}], accepted [{}]",
                key.0,
                key.1,
                show(value),
                show(v)
            )),
            None => {
                problems.push(format!("NEW {} in {}: {}", key.0, key.1, show(value)));
                new.push((key, value));
            }
        }
    }
    for (key, (v, _)) in &accepted {
        if !found.contains_key(key) {
            problems.push(format!(
                "GONE {} in {} (accepted [{}]; no longer found: remove it from {})",
                key.0,
                key.1,
                show(v),
                file.display()
            ));
        }
    }
    for u in &report.unknown {
        problems.push(format!("UNKNOWN TYPE {u}"));
    }
    let matched =
        found.len() - new.len() - problems.iter().filter(|p| p.starts_with("CHANGED")).count();
    println!(
        "expectations {}: {} accepted pair(s) found as listed",
        file.display(),
        matched
    );
    if problems.is_empty() {
        return Ok(());
    }
    for p in &problems {
        println!("  {p}");
    }
    if !new.is_empty() {
        println!(
            "  to accept the new findings, add (with a real reason):\n{}",
            suggest(&new)
        );
    }
    Err(Error::Audit(format!(
        "{} difference(s) from {}",
        problems.len(),
        file.display()
    )))
}

/// TOML entries for new findings, grouped by plugin and unresolved set.
fn suggest(new: &[(&Key, &Value)]) -> String {
    let mut groups: BTreeMap<(&str, &Value), Vec<&str>> = BTreeMap::new();
    for (key, value) in new {
        groups
            .entry((key.0.as_str(), value))
            .or_default()
            .push(key.1.as_str());
    }
    let list = |items: &mut dyn Iterator<Item = &String>| {
        items
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::new();
    for ((plugin, value), programs) in groups {
        out.push_str(&format!(
            "[[accepted]]\nplugin = {plugin:?}\nprograms = [{}]\nsymbols = [{}]\n",
            programs
                .iter()
                .map(|p| format!("{p:?}"))
                .collect::<Vec<_>>()
                .join(", "),
            list(&mut value.0.iter())
        ));
        if !value.1.is_empty() {
            out.push_str(&format!("libraries = [{}]\n", list(&mut value.1.iter())));
        }
        out.push_str("reason = \"\"\n\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::image::Format;
    use super::*;

    fn finding(plugin: &str, program: &str, symbols: &[&str]) -> Finding {
        Finding {
            plugin: plugin.into(),
            program: program.into(),
            symbols: symbols.iter().map(|s| s.to_string()).collect(),
            libraries: BTreeSet::new(),
        }
    }

    fn report(findings: Vec<Finding>) -> Report {
        Report {
            line: super::super::loaders::Line::L24_11,
            format: Format::Elf,
            arch: "x86_64".into(),
            plugins: 2,
            pairs: 4,
            findings,
            unknown: Vec::new(),
            not_installed: BTreeSet::new(),
        }
    }

    const FILE: &str = r#"
[[accepted]]
plugin = "topology_tree.so"
programs = ["slurmd", "slurmstepd"]
symbols = ["lock_slurmctld", "unlock_slurmctld"]
reason = "D1"
"#;

    fn both() -> Vec<Finding> {
        let s = ["lock_slurmctld", "unlock_slurmctld"];
        vec![
            finding("topology_tree.so", "slurmd", &s),
            finding("topology_tree.so", "slurmstepd", &s),
        ]
    }

    #[test]
    fn judge__exact_match_passes() {
        let e = Expectations::parse(FILE).unwrap();
        assert!(judge(&report(both()), &e, Path::new("f")).is_ok());
    }

    #[test]
    fn judge__new_finding_fails() {
        let e = Expectations::parse(FILE).unwrap();
        let mut f = both();
        f.push(finding(
            "prep_script.so",
            "slurmd",
            &["job_common_env_vars"],
        ));
        let err = judge(&report(f), &e, Path::new("f")).unwrap_err();
        assert!(err.to_string().contains("1 difference"), "{err}");
    }

    #[test]
    fn judge__fixed_finding_fails_as_gone() {
        let e = Expectations::parse(FILE).unwrap();
        let mut f = both();
        f.pop();
        assert!(judge(&report(f), &e, Path::new("f")).is_err());
        assert!(judge(&report(Vec::new()), &e, Path::new("f")).is_err());
    }

    #[test]
    fn judge__changed_symbols_fail() {
        let e = Expectations::parse(FILE).unwrap();
        let mut f = both();
        f[0].symbols.remove("unlock_slurmctld");
        assert!(judge(&report(f), &e, Path::new("f")).is_err());
    }

    #[test]
    fn judge__unknown_type_fails_even_without_findings() {
        let mut r = report(Vec::new());
        r.unknown.push("widget_foo.so".into());
        assert!(judge(&r, &Expectations::default(), Path::new("f")).is_err());
        assert!(
            judge(
                &report(Vec::new()),
                &Expectations::default(),
                Path::new("f")
            )
            .is_ok()
        );
    }

    #[test]
    fn parse__reason_required_no_duplicates_no_unknown_fields() {
        assert!(Expectations::parse(&FILE.replace("\"D1\"", "\" \"")).is_err());
        assert!(Expectations::parse(&format!("{FILE}{FILE}")).is_err());
        assert!(Expectations::parse(&format!("{FILE}extra = 1\n")).is_err());
        assert!(Expectations::parse(&FILE.replace("symbols", "libraries")).is_ok());
        assert!(
            Expectations::parse(
                "[[accepted]]\nplugin = \"a\"\nprograms = []\nsymbols = [\"x\"]\nreason = \"r\"\n"
            )
            .is_err()
        );
    }

    #[test]
    fn suggest__groups_programs_with_the_same_set() {
        let f = both();
        let found = found_pairs(&f);
        let new: Vec<_> = found.iter().collect();
        let text = suggest(&new);
        assert!(
            text.contains("programs = [\"slurmd\", \"slurmstepd\"]"),
            "{text}"
        );
        // The suggestion parses once a reason is filled in.
        assert!(Expectations::parse(&text.replace("reason = \"\"", "reason = \"x\"")).is_ok());
    }

    /// The committed expectation files parse (a broken file fails here, not late in CI).
    #[test]
    fn committed_files__parse() {
        let dir = crate::project_root().join("ci/expectations");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("audit-") && name.ends_with(".toml") {
                Expectations::load(&e.path()).unwrap_or_else(|e| panic!("{name}: {e}"));
                n += 1;
            }
        }
        assert!(
            n >= 2,
            "expected the native and darwin audit files in {}",
            dir.display()
        );
    }
}
