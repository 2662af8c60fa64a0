//! What this Mac will do with the cluster's plugin choices. A Linux site's slurm.conf names
//! cgroup and `/proc` plugins (`proctrack/cgroup`, `task/cgroup,task/affinity`,
//! `jobacct_gather/cgroup`) and its cgroup.conf a `CgroupPlugin`; configless hands both to
//! the Mac. On macOS, patch 0064 (every line) runs each of those as the macOS plugin that
//! does the same job and any `CgroupPlugin` as disabled, and slurmd logs each mapping once.
//! This check reads the slurm.conf the node will use, reports each mapping, and fails for a
//! plugin the node would load that this build does not have (`<prefix>/lib/slurm/<type>_<name>.so`).
//!
//! Which slurm.conf: `--conf FILE`, else the first that exists of `<prefix>/etc/slurm.conf`,
//! sackd's configless copy (`/var/run/slurm/conf/slurm.conf`) and slurmd's configless cache
//! (`/var/spool/slurmd/conf-cache/slurm.conf`, SlurmdSpoolDir's default); none: skipped, with
//! how to give one. `Include` lines are not followed (said in the report).

use super::{Check, Finding, Problem};
use std::path::{Path, PathBuf};

/// Patch 0064's table: the site's plugin, and the macOS plugin it runs as. A test holds it
/// to the patch text of every line, so the two cannot drift.
pub const MACOS_MAPPING: &[(&str, &str)] = &[
    ("proctrack/cgroup", "proctrack/darwin"),
    ("proctrack/linuxproc", "proctrack/darwin"),
    ("task/cgroup", "task/darwin"),
    ("task/affinity", "task/darwin"),
    ("jobacct_gather/cgroup", "jobacct_gather/darwin"),
    ("jobacct_gather/linux", "jobacct_gather/darwin"),
];

/// The slurm.conf keys whose plugins a compute node loads, and the plugin type a bare value
/// (`MpiDefault=pmi2`, `GresTypes=gpu`) belongs to. Lists are comma-separated.
const NODE_PLUGIN_KEYS: &[(&str, &str)] = &[
    ("AuthType", "auth"),
    ("CredType", "cred"),
    ("ProctrackType", "proctrack"),
    ("TaskPlugin", "task"),
    ("JobAcctGatherType", "jobacct_gather"),
    ("SwitchType", "switch"),
    ("MpiDefault", "mpi"),
    ("JobContainerType", "job_container"),
    ("AcctGatherEnergyType", "acct_gather_energy"),
    ("AcctGatherInterconnectType", "acct_gather_interconnect"),
    ("AcctGatherFilesystemType", "acct_gather_filesystem"),
    ("AcctGatherProfileType", "acct_gather_profile"),
    ("PrEpPlugins", "prep"),
    ("GresTypes", "gres"),
    ("HashPlugin", "hash"),
    ("TLSType", "tls"),
];

/// Where a configless node keeps the controller's slurm.conf (sackd, then slurmd).
pub const CONFIGLESS_COPIES: &[&str] = &[
    "/var/run/slurm/conf/slurm.conf",
    "/var/spool/slurmd/conf-cache/slurm.conf",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginProblem {
    /// The node would load `plugin` (from `key` in `conf`), and the build has no `file`.
    Missing {
        conf: PathBuf,
        key: String,
        plugin: String,
        file: PathBuf,
    },
    Unreadable {
        conf: PathBuf,
        error: String,
    },
}

impl PluginProblem {
    pub fn detail(&self) -> String {
        match self {
            PluginProblem::Missing {
                conf,
                key,
                plugin,
                file,
            } => format!(
                "{} sets {key} to {plugin}, and this build has no {}: on this node, what loads it fails (slurmd at start, or the job step that needs it)",
                conf.display(),
                file.display()
            ),
            PluginProblem::Unreadable { conf, error } => {
                format!("{} cannot be read ({error})", conf.display())
            }
        }
    }

    pub fn fix(&self) -> String {
        match self {
            PluginProblem::Missing { key, file, .. } => {
                let dir = file.parent().unwrap_or(Path::new("lib/slurm"));
                format!(
                    "the cluster must choose a {key} a Mac has (`ls {}`): macOS has no Linux-only plugin (docs/MACOS-PLUGINS.md); or build this plugin for macOS",
                    dir.display()
                )
            }
            PluginProblem::Unreadable { conf, .. } => {
                format!("sudo ls -l {} and fix its owner or mode", conf.display())
            }
        }
    }
}

/// The slurm.conf to read: the one given, else the first that exists of `candidates`.
pub fn choose_conf(given: Option<&Path>, candidates: &[PathBuf]) -> Option<PathBuf> {
    given
        .map(Path::to_path_buf)
        .or_else(|| candidates.iter().find(|c| c.is_file()).cloned())
}

/// `<prefix>/etc/slurm.conf`, then the configless copies.
pub fn default_candidates(prefix: &Path) -> Vec<PathBuf> {
    std::iter::once(prefix.join("etc/slurm.conf"))
        .chain(CONFIGLESS_COPIES.iter().map(PathBuf::from))
        .collect()
}

pub fn check(prefix: &Path, conf: Option<&Path>) -> Vec<Finding> {
    let Some(conf) = conf else {
        return vec![Finding::skip(
            Check::Plugins,
            format!(
                "no slurm.conf here ({}): give --conf a copy of the controller's, or run doctor again once slurmd has fetched it configless",
                default_candidates(prefix)
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )];
    };
    let read = |p: &Path| std::fs::read_to_string(p);
    let text = match read(conf) {
        Ok(t) => t,
        Err(e) => {
            return vec![Finding::fail(
                Check::Plugins,
                Problem::Plugins(PluginProblem::Unreadable {
                    conf: conf.to_path_buf(),
                    error: e.to_string(),
                }),
            )];
        }
    };
    // cgroup.conf sits beside slurm.conf (configless hands both).
    let cgroup = conf
        .parent()
        .map(|d| d.join("cgroup.conf"))
        .and_then(|p| read(&p).ok());
    judge(&prefix.join("lib/slurm"), conf, &text, cgroup.as_deref())
}

/// The findings for one slurm.conf text (and cgroup.conf's, when there is one): the
/// mappings as `ok`, each plugin the build lacks as a failure.
pub fn judge(plugin_dir: &Path, conf: &Path, text: &str, cgroup: Option<&str>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut mapped = Vec::new();
    for &(key, kind) in NODE_PLUGIN_KEYS {
        let Some(value) = setting(text, key) else {
            continue;
        };
        let mut runs = Vec::new();
        let mut any_mapped = false;
        for name in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let plugin = if name.contains('/') {
                name.to_string()
            } else {
                format!("{kind}/{name}")
            };
            let now = match macos_plugin(&plugin) {
                Some(m) => {
                    any_mapped = true;
                    m.to_string()
                }
                None => plugin,
            };
            if !runs.contains(&now) {
                runs.push(now);
            }
        }
        if any_mapped {
            mapped.push(format!("{key}={value} runs as {}", runs.join(",")));
        }
        for plugin in runs {
            if plugin.ends_with("/none") {
                continue;
            }
            let file = plugin_dir.join(format!("{}.so", plugin.replace('/', "_")));
            if !file.exists() {
                out.push(Finding::fail(
                    Check::Plugins,
                    Problem::Plugins(PluginProblem::Missing {
                        conf: conf.to_path_buf(),
                        key: key.to_string(),
                        plugin,
                        file,
                    }),
                ));
            }
        }
    }
    if let Some(cg) = cgroup.and_then(|t| setting(t, "CgroupPlugin")) {
        if cg != "disabled" {
            mapped.push(format!("CgroupPlugin={cg} runs as disabled"));
        }
    }
    let include = if setting(text, "Include").is_some() {
        " (its Include files were not read)"
    } else {
        ""
    };
    let summary = if mapped.is_empty() {
        format!(
            "{}{include}: no cgroup or /proc plugin to map; every plugin it names is in the build",
            conf.display()
        )
    } else {
        format!(
            "{}{include}: on this Mac {} (patch 0064; slurmd logs each once)",
            conf.display(),
            mapped.join("; ")
        )
    };
    if !out.iter().any(Finding::failed) {
        out.push(Finding::ok(Check::Plugins, summary));
    } else {
        out.insert(0, Finding::ok(Check::Plugins, summary));
    }
    out
}

/// The macOS plugin standing for a site's choice (patch 0064), if it is one it maps.
pub fn macos_plugin(plugin: &str) -> Option<&'static str> {
    MACOS_MAPPING
        .iter()
        .find(|(from, _)| *from == plugin)
        .map(|(_, to)| *to)
}

/// The value of a `Key=Value` line (keys case-insensitive as Slurm reads them; a `#` starts
/// a comment; the last setting wins, as in Slurm).
fn setting<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .rev()
        .filter_map(|l| {
            let l = l.split('#').next()?.trim();
            let (k, v) = l.split_once('=').or_else(|| {
                // `Include FILE` has no `=`
                l.split_once(char::is_whitespace)
            })?;
            k.trim().eq_ignore_ascii_case(key).then(|| v.trim())
        })
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SITE: &str = "ClusterName=site\nProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup,task/affinity\n\
        JobAcctGatherType=jobacct_gather/cgroup # accounted by cgroup\nMpiDefault=pmi2\nGresTypes=gpu\nSwitchType=switch/none\n";

    fn build_with(plugins: &[&str]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for p in plugins {
            std::fs::write(d.path().join(format!("{}.so", p.replace('/', "_"))), b"").unwrap();
        }
        d
    }

    fn failures(f: &[Finding]) -> Vec<String> {
        f.iter()
            .filter_map(|f| match &f.verdict {
                super::super::Verdict::Fail(Problem::Plugins(PluginProblem::Missing {
                    plugin,
                    ..
                })) => Some(plugin.clone()),
                _ => None,
            })
            .collect()
    }

    fn summary(f: &[Finding]) -> String {
        match &f[0].verdict {
            super::super::Verdict::Ok(s) => s.clone(),
            v => panic!("first finding is not the summary: {v:?}"),
        }
    }

    #[test]
    fn judge__site_cgroup_choices_are_reported_as_the_macos_plugins() {
        let lib = build_with(&[
            "proctrack/darwin",
            "task/darwin",
            "jobacct_gather/darwin",
            "mpi/pmi2",
            "gres/gpu",
        ]);
        let f = judge(
            lib.path(),
            Path::new("slurm.conf"),
            SITE,
            Some("CgroupPlugin=autodetect\n"),
        );
        assert_eq!(failures(&f), Vec::<String>::new());
        let s = summary(&f);
        for said in [
            "ProctrackType=proctrack/cgroup runs as proctrack/darwin",
            "TaskPlugin=task/cgroup,task/affinity runs as task/darwin",
            "JobAcctGatherType=jobacct_gather/cgroup runs as jobacct_gather/darwin",
            "CgroupPlugin=autodetect runs as disabled",
        ] {
            assert!(s.contains(said), "{said:?} not in {s:?}");
        }
        assert!(!s.contains("MpiDefault"), "pmi2 is not mapped: {s}");
    }

    #[test]
    fn judge__a_plugin_the_build_lacks_fails_with_its_key() {
        // a Mac build without the darwin process plugins, and a cluster choosing pmix
        let lib = build_with(&["mpi/pmi2", "gres/gpu", "task/darwin"]);
        let text = format!("{SITE}MpiDefault=pmix\n");
        let f = judge(lib.path(), Path::new("slurm.conf"), &text, None);
        assert_eq!(
            failures(&f),
            ["proctrack/darwin", "jobacct_gather/darwin", "mpi/pmix"]
        );
        let rendered = super::super::render(&f);
        assert!(
            rendered.contains("sets MpiDefault to mpi/pmix"),
            "{rendered}"
        );
        assert!(
            rendered.contains("fix: the cluster must choose a MpiDefault"),
            "{rendered}"
        );
    }

    #[test]
    fn judge__plain_config_maps_nothing() {
        let lib = build_with(&["proctrack/pgid", "task/darwin"]);
        let f = judge(
            lib.path(),
            Path::new("slurm.conf"),
            "ProctrackType=proctrack/pgid\nTaskPlugin=task/darwin\n",
            Some("CgroupPlugin=disabled\n"),
        );
        assert_eq!(f.len(), 1);
        assert!(summary(&f).contains("no cgroup or /proc plugin to map"));
    }

    #[test]
    fn check__no_conf_is_a_skip_naming_where_it_looked() {
        let d = tempfile::tempdir().unwrap();
        let f = check(d.path(), None);
        let super::super::Verdict::Skip(why) = &f[0].verdict else {
            panic!("{f:?}")
        };
        assert!(
            why.contains("etc/slurm.conf") && why.contains("--conf"),
            "{why}"
        );
    }

    #[test]
    fn choose_conf__given_first_then_the_first_existing_candidate() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.conf");
        let b = d.path().join("b.conf");
        std::fs::write(&b, "").unwrap();
        let given = Path::new("/given.conf");
        assert_eq!(
            choose_conf(Some(given), std::slice::from_ref(&b)),
            Some(given.into())
        );
        assert_eq!(choose_conf(None, &[a.clone(), b.clone()]), Some(b));
        assert_eq!(choose_conf(None, &[a]), None);
    }

    /// The table is patch 0064's: every line's copy of the patch maps each pair (both names
    /// in the patch text), and names no cgroup or /proc plugin the table lacks.
    #[test]
    fn mapping__is_patch_0064s_in_every_line() {
        // patches/ holds the one series (patches/0064-*.patch) and the lines' variants
        // (patches/<line>/0064-*.patch): every copy is judged.
        let patches = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../patches");
        let list = |d: &Path| -> Vec<std::path::PathBuf> {
            std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect()
        };
        let mut copies: Vec<_> = list(&patches)
            .into_iter()
            .flat_map(|p| if p.is_dir() { list(&p) } else { vec![p] })
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("0064-"))
            })
            .collect();
        copies.sort();
        assert!(
            !copies.is_empty(),
            "no copy of patch 0064 under {}",
            patches.display()
        );
        let mut seen = 0;
        for p in copies {
            let text = std::fs::read_to_string(&p).unwrap();
            for (from, to) in MACOS_MAPPING {
                let (kind, name) = from.split_once('/').unwrap();
                assert!(
                    text.contains(&format!("\"{from}\""))
                        || text.contains(&format!("\"{kind}/{name}\"")),
                    "{}: no {from}",
                    p.display()
                );
                assert!(
                    text.contains(&format!("\"{to}\"")),
                    "{}: no {to}",
                    p.display()
                );
            }
            for site in ["proctrack/", "task/", "jobacct_gather/"] {
                for quoted in text.split('"').skip(1).step_by(2) {
                    if quoted.starts_with(site) && !quoted.ends_with("/darwin") {
                        assert!(
                            macos_plugin(quoted).is_some(),
                            "{} maps {quoted}, the doctor's table does not",
                            p.display()
                        );
                    }
                }
            }
            seen += 1;
        }
        assert!(seen >= 1, "no copy of 0064 was judged");
        // ... and the series applies it (or a variant) to every line.
        let series = std::fs::read_to_string(patches.join("series")).unwrap();
        let entry = series
            .lines()
            .find(|l| l.starts_with("0064-"))
            .expect("0064 in patches/series");
        for line in ["24.11", "25.05", "25.11", "26.05", "26.11"] {
            assert!(
                entry.contains(line),
                "0064 does not apply to {line}: {entry}"
            );
        }
    }
}
