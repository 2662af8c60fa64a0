//! Expected gaps: `ci/expectations/gaps-<line>.toml` lists every scenario allowed to end in
//! GAP (a feature the build lacks, shown and explained) or "not run" (the build has no such
//! plugin), for which cluster builds and profile, each with its reason. `cluster test` fails
//! on a gap the file does not list (a lost feature is a failure until someone writes down
//! why it is expected), and on a listed gap whose scenario now passes ("remove it from the
//! list"), so the list can neither hide a regression nor go stale.

use crate::cluster::handle::Cluster;
use crate::cluster::scenarios::Outcome;
use crate::expectations::{Entry, file};
use driver_common::error::{Error, Result};
use driver_common::personality::Personality;
use driver_common::staging::Manifest;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `ci/expectations/gaps-<line>.toml` below `root`.
pub fn path(root: &Path, line: &str) -> PathBuf {
    file(root, &format!("gaps-{line}.toml"))
}

/// The expected gaps of one release line.
pub type Gaps = driver_common::expectations::AcceptedList<Gap>;

/// One expected gap: the scenario, the cluster's builds (`native`, `darwin` or `mix`), the
/// profile, and why the build cannot do better.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Gap {
    pub scenario: String,
    pub builds: String,
    pub profile: String,
    pub reason: String,
}

const BUILDS: [&str; 3] = ["native", "darwin", "mix"];

impl Entry for Gap {
    const UNLISTED: &'static str = "GAP or not-run scenario";
    type Key = (String, String, String);

    fn check(&self, seen: &mut BTreeSet<Self::Key>) -> std::result::Result<(), String> {
        if self.reason.trim().is_empty() {
            return Err(format!("gap `{}` has an empty reason", self.scenario));
        }
        if !BUILDS.contains(&self.builds.as_str()) {
            return Err(format!(
                "gap `{}`: builds = {:?} is not one of {BUILDS:?}",
                self.scenario, self.builds
            ));
        }
        let key = (
            self.scenario.clone(),
            self.builds.clone(),
            self.profile.clone(),
        );
        if !seen.insert(key) {
            return Err(format!(
                "gap `{}` ({}, {}) is listed twice",
                self.scenario, self.builds, self.profile
            ));
        }
        Ok(())
    }
}

/// What the results say against the list, for a cluster of `builds` under `profile`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// A GAP or not-run the list does not have: `(scenario, the gap's reason)`.
    pub unlisted: Vec<(String, String)>,
    /// Listed, ran, and passed with no gap: the entry is stale.
    pub now_pass: Vec<String>,
}

/// Compares the scenario results with the gaps listed for `builds` and `profile`.
pub fn compare(results: &[Outcome], gaps: &Gaps, builds: &str, profile: &str) -> Verdict {
    let listed = |name: &str| {
        gaps.accepted
            .iter()
            .any(|g| g.scenario == name && g.builds == builds && g.profile == profile)
    };
    let mut v = Verdict::default();
    for r in results.iter().filter(|r| r.passed && r.skipped.is_none()) {
        match (&r.gap, listed(r.name)) {
            (Some(why), false) => v.unlisted.push((r.name.to_string(), why.clone())),
            (None, true) => v.now_pass.push(r.name.to_string()),
            _ => {}
        }
    }
    v
}

/// `Err` naming every unlisted gap and every stale entry, with the fix.
pub fn judge(verdict: &Verdict, file: &Path, builds: &str, profile: &str) -> Result<()> {
    let mut problems = Vec::new();
    for (name, why) in &verdict.unlisted {
        problems.push(format!(
            "GAP {name} is not an expected gap of a {builds} cluster under profile `{profile}` ({why}): \
             fix what the build lost, or list it with its reason in {}",
            file.display()
        ));
    }
    for name in &verdict.now_pass {
        problems.push(format!(
            "{name} passes now on a {builds} cluster under profile `{profile}`: remove it from the list in {}",
            file.display()
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Scenario(problems.join("\n")))
    }
}

/// What a cluster's builds are called in the list: `native` or `darwin` when the head and
/// every node are of that personality, else `mix`; and the head's release line.
fn builds_and_line(cluster: &Cluster) -> Result<(&'static str, String)> {
    let head = Manifest::read(&cluster.state.prefix)?;
    let mut kinds = vec![head.personality];
    for n in cluster.nodes() {
        let p = Manifest::read(&n.prefix)?.personality;
        if !kinds.contains(&p) {
            kinds.push(p);
        }
    }
    let builds = match kinds[..] {
        [Personality::Native] => "native",
        [Personality::Darwin] => "darwin",
        _ => "mix",
    };
    Ok((builds, head.line))
}

/// The results of `cluster test` against the gaps its line lists (see the module's
/// documentation); the figures printed either way.
pub fn check_cluster(cluster: &Cluster, results: &[Outcome]) -> Result<()> {
    let (builds, line) = builds_and_line(cluster)?;
    let profile = cluster.profile().name();
    let file = path(&driver_common::project_root(), &line);
    let gaps = Gaps::load(&file)?;
    let verdict = compare(results, &gaps, builds, profile);
    let expected = results
        .iter()
        .filter(|r| r.passed && r.gap.is_some())
        .count();
    println!(
        "gaps: {} of this {builds} cluster's results (profile `{profile}`) are GAP or not run; {} unlisted, {} listed that now pass ({})",
        expected,
        verdict.unlisted.len(),
        verdict.now_pass.len(),
        file.display()
    );
    judge(&verdict, &file, builds, profile)
}

/// Every darwin-personality build among `prefixes` has the files a Mac node needs
/// (`driver_common::node_files`: gpu/apple, the macOS process plugins, ...): a build that
/// lost one fails here, before its scenarios could pass as gaps or "not run".
pub fn check_darwin_builds<'a>(prefixes: impl IntoIterator<Item = &'a Path>) -> Result<()> {
    for prefix in prefixes {
        let m = Manifest::read(prefix)?;
        if m.personality != Personality::Darwin {
            continue;
        }
        let line = driver_common::lines::Line::from_name(&m.line, "the staging manifest")?;
        let missing = driver_common::node_files::missing(prefix, line, true, "so");
        if !missing.is_empty() {
            return Err(Error::File {
                path: prefix.to_path_buf(),
                problem: format!(
                    "this darwin-personality build of {} lacks what a Mac node loads: {}; rebuild it \
                     (`cargo xtask build-slurm --version {} --personality darwin`) and see its build log",
                    m.version,
                    missing.join(", "),
                    m.version
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use driver_common::expectations::Recorded as _;

    fn outcome(name: &'static str, gap: Option<&str>, skipped: bool) -> Outcome {
        Outcome {
            name,
            passed: true,
            gap: gap.map(String::from),
            skipped: skipped.then(|| "one node".to_string()),
            seconds: 0.0,
        }
    }

    const FILE: &str = "[[accepted]]\nscenario = \"smd-301\"\nbuilds = \"darwin\"\nprofile = \"default\"\nreason = \"r\"\n";

    #[test]
    fn compare__unlisted_gap_and_listed_pass_are_named_skips_and_other_builds_are_not() {
        let gaps = Gaps::parse(FILE).unwrap();
        let results = [
            outcome("smd-301", Some("refused"), false),
            outcome("srun-pty", Some("no pty.h"), false),
            outcome("nodes-two", None, true),
        ];
        let v = compare(&results, &gaps, "darwin", "default");
        assert_eq!(
            v.unlisted,
            [("srun-pty".to_string(), "no pty.h".to_string())]
        );
        assert!(v.now_pass.is_empty());
        let v = compare(
            &[outcome("smd-301", None, false)],
            &gaps,
            "darwin",
            "default",
        );
        assert_eq!(v.now_pass, ["smd-301"]);
        let e = judge(&v, Path::new("gaps-24.11.toml"), "darwin", "default").unwrap_err();
        assert!(
            e.to_string()
                .contains("remove it from the list in gaps-24.11.toml"),
            "{e}"
        );
        // the same gap on a native cluster, or under another profile, is not listed
        let v = compare(&results[..1], &gaps, "native", "default");
        assert_eq!(v.unlisted.len(), 1);
        let v = compare(&results[..1], &gaps, "darwin", "macos-native");
        assert_eq!(v.unlisted.len(), 1);
        // a skipped scenario judges nothing
        let v = compare(
            &[outcome("smd-301", None, true)],
            &gaps,
            "darwin",
            "default",
        );
        assert_eq!(v, Verdict::default());
    }

    #[test]
    fn parse__bad_entries_are_refused() {
        assert!(
            Gaps::parse(&format!("{FILE}{FILE}"))
                .unwrap_err()
                .contains("listed twice")
        );
        let e = Gaps::parse(&FILE.replace("darwin", "linux")).unwrap_err();
        assert!(e.contains("is not one of"), "{e}");
        let e = Gaps::parse(&FILE.replace("\"r\"", "\" \"")).unwrap_err();
        assert!(e.contains("empty reason"), "{e}");
    }
}
