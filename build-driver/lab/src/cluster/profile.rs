//! Cluster profiles: the `slurm.conf` lines that decide how a cluster schedules and tracks
//! jobs (select plugin and its parameters, memory, process tracking, task plugin, job
//! accounting), chosen with `--profile NAME` wherever the harness starts a cluster.
//!
//! [`TABLE`] is the one place these lines live: `config.rs` renders them into `slurm.conf`,
//! `cargo xtask cluster profiles` prints the table, and a test checks that docs/CLUSTER.md's copy
//! is the same text. Everything else in `slurm.conf` (ports, paths, auth/slurm, accounting
//! through slurmdbd, prolog/epilog, the harness's short `KillWait`) is the same in every
//! profile.
//!
//! - `default`: what a typical site runs. Cores and memory are consumable
//!   (`CR_Core_Memory`), the node's `RealMemory` is what `slurmd -C` reports and
//!   `DefMemPerCPU` is `RealMemory / CPUs`, so every job gets a memory allocation of its own
//!   share and jobs share a node up to its cores (every step also gets a memory limit: on
//!   macOS the case of POC-DEFECTS D8, slurmstepd's `RLIMIT_RSS` fatal, fixed by
//!   patches/*/0026).
//! - `poc`: the proof of concept's `slurm.conf` as the seed article prints it (the Mac node's
//!   file): `select/cons_tres` without `SelectTypeParameters` (Slurm's default for cons_tres
//!   is `CR_Core_Memory`: src/common/read_config.c of 24.11.5, and slurm.conf(5)),
//!   `proctrack/pgid`, `jobacct_gather/none`, `RealMemory` set, and no `DefMemPerCPU`. A job
//!   that does not ask for memory is then given the node's whole `RealMemory` (seen here in
//!   sacct's AllocTRES; the 131072 MB of D8 is the PoC node's), so such jobs run one at a time
//!   per node. `AccountingStorageTRES=gres/gpu,gres/gpu:apple` is what the PoC added for the
//!   Apple GPU (POC-DEFECTS, section B). The seed's `TaskPlugin` line is commented out;
//!   Slurm's default (no task plugin) is what `task/none` says.
//! - `cpu`: the harness's configuration before profiles existed, kept as an explicit choice:
//!   no `RealMemory` (Slurm's default, 1 MB) and no `DefMemPerCPU`. Memory is still
//!   consumable: a job without `--mem` is given the node's whole 1 MB, so jobs run one at a
//!   time per node whatever their cores, and a job asking for memory is refused.
//! - `macos-native`: `default` plus the macOS process plugins of patches/*/0040-0044
//!   (`jobacct_gather/darwin`, `proctrack/darwin`, `task/darwin`), memory enforced by polling
//!   (`JobAcctGatherParams=OverMemoryKill`, a poll every second: `JobAcctGatherFrequency=task=1`).
//!   Only a darwin-personality (or macOS) build has these plugins; the scenarios of
//!   `scenarios/macos_native.rs` run under it.

use super::config::NodeHw;
use std::fmt::Write as _;

/// A named profile (`--profile NAME`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// A typical site: cores and memory consumable, every job gets its share of memory.
    #[default]
    Default,
    /// The proof of concept's slurm.conf (the seed article).
    Poc,
    /// The harness's earlier configuration: no RealMemory, no DefMemPerCPU.
    Cpu,
    /// `default` plus the macOS process plugins and OverMemoryKill.
    #[serde(rename = "macos-native")]
    MacosNative,
    /// What a typical Linux site runs: the cgroup process plugins, `CgroupPlugin=autodetect`.
    Site,
}

/// Where a value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// Written as it is.
    Fixed(&'static str),
    /// The node's memory as `slurmd -C` reports it (MB).
    RealMemory,
    /// `RealMemory / CPUs` (MB), the smallest over the cluster's nodes.
    MemPerCpu,
}

/// Which line a setting goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A line of its own (`Key=Value`).
    Global,
    /// A parameter of every `NodeName=` line.
    Node,
}

/// One setting of a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub key: &'static str,
    pub value: Value,
    pub place: Place,
}

/// One profile: its settings and what it is for.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub profile: Profile,
    pub settings: &'static [Setting],
    pub purpose: &'static str,
}

const fn global(key: &'static str, value: &'static str) -> Setting {
    Setting {
        key,
        value: Value::Fixed(value),
        place: Place::Global,
    }
}

const REAL_MEMORY: Setting = Setting {
    key: "RealMemory",
    value: Value::RealMemory,
    place: Place::Node,
};

const MEM_PER_CPU: Setting = Setting {
    key: "DefMemPerCPU",
    value: Value::MemPerCpu,
    place: Place::Global,
};

/// `cgroup.conf`: `CgroupPlugin=disabled`. The cluster uses no cgroups, and a Mac has none:
/// 24.11's default `autodetect` makes slurmd fail there ("cgroup filesystem not mounted in
/// /sys/fs/cgroup/", "Unable to initialize cgroup plugin"; the 26.11 snapshot defaults to
/// `disabled` without `WITH_CGROUP`), as it now does in the darwin personality.
pub const CGROUP_CONF: &str =
    "# Generated by `cargo xtask cluster`: no cgroups (a Mac has none).\nCgroupPlugin=disabled\n";

/// `cgroup.conf` of profile `site`: Slurm 24.11's default, which a Linux site often keeps.
pub const SITE_CGROUP_CONF: &str = "# Generated by `cargo xtask cluster`, profile site: a Linux site's cgroup.conf.\nCgroupPlugin=autodetect\n";

/// Every profile: the one table (see the module doc).
pub const TABLE: &[Spec] = &[
    Spec {
        profile: Profile::Default,
        settings: &[
            global("SelectType", "select/cons_tres"),
            global("SelectTypeParameters", "CR_Core_Memory"),
            MEM_PER_CPU,
            global("ProctrackType", "proctrack/pgid"),
            global("TaskPlugin", "task/none"),
            global("JobAcctGatherType", "jobacct_gather/none"),
            global("AccountingStorageTRES", "gres/gpu"),
            REAL_MEMORY,
        ],
        purpose: "what a typical site runs: cores and memory consumable, every job gets `RealMemory / CPUs` per CPU, so jobs share a node up to its cores (the scenarios' and CI's profile)",
    },
    Spec {
        profile: Profile::Poc,
        settings: &[
            global("SelectType", "select/cons_tres"),
            global("ProctrackType", "proctrack/pgid"),
            global("TaskPlugin", "task/none"),
            global("JobAcctGatherType", "jobacct_gather/none"),
            global("AccountingStorageTRES", "gres/gpu,gres/gpu:apple"),
            REAL_MEMORY,
        ],
        purpose: "the proof of concept's slurm.conf (seed article): no SelectTypeParameters (cons_tres's default `CR_Core_Memory`), `RealMemory` set, no `DefMemPerCPU`: a job without `--mem` is given the whole node's memory, so such jobs run one per node",
    },
    Spec {
        profile: Profile::Cpu,
        settings: &[
            global("SelectType", "select/cons_tres"),
            global("ProctrackType", "proctrack/pgid"),
            global("TaskPlugin", "task/none"),
            global("JobAcctGatherType", "jobacct_gather/none"),
            global("AccountingStorageTRES", "gres/gpu"),
        ],
        purpose: "the harness's earlier configuration: no `RealMemory` (Slurm's default 1 MB), no `DefMemPerCPU`: a job without `--mem` takes the node's whole 1 MB, so jobs run one per node; a job asking for memory is refused",
    },
    Spec {
        profile: Profile::MacosNative,
        settings: &[
            global("SelectType", "select/cons_tres"),
            global("SelectTypeParameters", "CR_Core_Memory"),
            MEM_PER_CPU,
            global("ProctrackType", "proctrack/darwin"),
            global("TaskPlugin", "task/darwin"),
            global("JobAcctGatherType", "jobacct_gather/darwin"),
            global("JobAcctGatherParams", "OverMemoryKill"),
            global("JobAcctGatherFrequency", "task=1"),
            global("AccountingStorageTRES", "gres/gpu"),
            REAL_MEMORY,
        ],
        purpose: "`default` plus the macOS process plugins (patches 0040-0044; darwin personality or macOS builds only): processes tracked by ancestry and unique id, accounting through `proc_pid_rusage`, memory enforced by a poll every second, the background class on request (the `macos-native` scenarios' profile)",
    },
    Spec {
        profile: Profile::Site,
        settings: &[
            global("SelectType", "select/cons_tres"),
            global("SelectTypeParameters", "CR_Core_Memory"),
            MEM_PER_CPU,
            global("ProctrackType", "proctrack/cgroup"),
            global("TaskPlugin", "task/cgroup,task/affinity"),
            global("JobAcctGatherType", "jobacct_gather/cgroup"),
            global("AccountingStorageTRES", "gres/gpu"),
            REAL_MEMORY,
        ],
        purpose: "a typical Linux site's process plugins, with `cgroup.conf` `CgroupPlugin=autodetect`, as configless hands them to a Mac: on a darwin node each runs as its macOS plugin and cgroups as disabled (patch 0064, logged once by slurmd); native nodes run the cgroup plugins on the host's hierarchy (`site-mix-cgroup`, `--mix native=P1,darwin=P2`)",
    },
];

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Default => "default",
            Profile::Poc => "poc",
            Profile::Cpu => "cpu",
            Profile::MacosNative => "macos-native",
            Profile::Site => "site",
        }
    }

    /// The cluster's `cgroup.conf`: what a site writes under `site`, else no cgroups.
    pub fn cgroup_conf(self) -> &'static str {
        match self {
            Profile::Site => SITE_CGROUP_CONF,
            _ => CGROUP_CONF,
        }
    }

    /// This profile's row of [`TABLE`].
    pub fn spec(self) -> &'static Spec {
        // Every variant has a row: `table__one_row_per_profile` checks it.
        TABLE
            .iter()
            .find(|s| s.profile == self)
            .unwrap_or(&TABLE[0])
    }

    /// The profile's own lines of `slurm.conf` for a cluster of nodes with hardware `hw`.
    pub fn global_lines(self, hw: &[&NodeHw]) -> Vec<String> {
        self.lines(Place::Global, hw)
    }

    /// The parameters the profile adds to the `NodeName=` line of a node with `hw`.
    pub fn node_params(self, hw: &NodeHw) -> Vec<String> {
        self.lines(Place::Node, &[hw])
    }

    fn lines(self, place: Place, hw: &[&NodeHw]) -> Vec<String> {
        self.spec()
            .settings
            .iter()
            .filter(|s| s.place == place)
            .map(|s| format!("{}={}", s.key, value(s.value, hw)))
            .collect()
    }
}

/// A setting's value for nodes `hw` (the first node's memory; the smallest memory per CPU).
fn value(v: Value, hw: &[&NodeHw]) -> String {
    match v {
        Value::Fixed(s) => s.to_string(),
        Value::RealMemory => hw.first().map_or(1, |h| h.real_memory).to_string(),
        Value::MemPerCpu => hw
            .iter()
            .map(|h| h.real_memory / u64::from(h.cpus.max(1)))
            .min()
            .unwrap_or(1)
            .max(1)
            .to_string(),
    }
}

/// How a setting reads in the table: computed values are named, not shown.
fn shown(s: &Setting) -> String {
    let v = match s.value {
        Value::Fixed(v) => v,
        Value::RealMemory => "<slurmd -C>",
        Value::MemPerCpu => "<RealMemory / CPUs>",
    };
    match s.place {
        Place::Global => format!("`{}={v}`", s.key),
        Place::Node => format!("`{}={v}` (NodeName)", s.key),
    }
}

/// The table as Markdown (what `cargo xtask cluster profiles` prints and docs/CLUSTER.md holds).
pub fn markdown() -> String {
    let mut out = String::from("| profile | `slurm.conf` lines | what it is |\n|---|---|---|\n");
    for spec in TABLE {
        let lines: Vec<String> = spec.settings.iter().map(shown).collect();
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            spec.profile.name(),
            lines.join("<br>"),
            spec.purpose
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    /// docs/CLUSTER.md's markers around its copy of the table.
    const README_BEGIN: &str = "<!-- cluster-profiles:begin (cargo xtask cluster profiles) -->";
    const README_END: &str = "<!-- cluster-profiles:end -->";

    /// docs/CLUSTER.md's copy of the table (between the markers), if it has one.
    fn readme_copy(readme: &str) -> Option<&str> {
        let start = readme.find(README_BEGIN)? + README_BEGIN.len();
        let len = readme[start..].find(README_END)?;
        Some(readme[start..start + len].trim_start_matches('\n'))
    }

    fn hw(cpus: u32, real_memory: u64) -> NodeHw {
        NodeHw {
            cpus,
            boards: 1,
            sockets_per_board: 1,
            cores_per_socket: cpus,
            threads_per_core: 1,
            real_memory,
        }
    }

    #[test]
    fn table__one_row_per_profile() {
        for p in Profile::value_variants() {
            assert_eq!(TABLE.iter().filter(|s| s.profile == *p).count(), 1, "{p:?}");
            assert_eq!(p.spec().profile, *p);
            assert_eq!(
                p.to_possible_value().map(|v| v.get_name().to_string()),
                Some(p.name().to_string())
            );
        }
    }

    #[test]
    fn default__memory_is_consumable_and_every_job_gets_some() {
        let h = hw(8, 24105);
        let lines = Profile::Default.global_lines(&[&h]);
        driver_common::testing::assert_has_lines(
            &lines,
            &[
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core_Memory",
                "DefMemPerCPU=3013",
                "ProctrackType=proctrack/pgid",
                "TaskPlugin=task/none",
            ],
        );
        assert_eq!(Profile::Default.node_params(&h), ["RealMemory=24105"]);
    }

    #[test]
    fn mem_per_cpu__smallest_over_the_nodes() {
        let (a, b) = (hw(2, 24000), hw(4, 16000));
        let lines = Profile::Default.global_lines(&[&a, &b]);
        assert!(lines.iter().any(|l| l == "DefMemPerCPU=4000"), "{lines:?}");
    }

    #[test]
    fn poc__the_seed_lines_and_no_memory_default() {
        let h = hw(18, 131072);
        let lines = Profile::Poc.global_lines(&[&h]);
        driver_common::testing::assert_has_lines(
            &lines,
            &[
                "SelectType=select/cons_tres",
                "ProctrackType=proctrack/pgid",
                "JobAcctGatherType=jobacct_gather/none",
                "AccountingStorageTRES=gres/gpu,gres/gpu:apple",
            ],
        );
        assert!(
            !lines
                .iter()
                .any(|l| l.starts_with("DefMemPerCPU") || l.starts_with("SelectTypeParameters")),
            "{lines:?}"
        );
        assert_eq!(Profile::Poc.node_params(&h), ["RealMemory=131072"]);
    }

    #[test]
    fn cpu__no_memory_at_all() {
        let h = hw(2, 24105);
        assert!(Profile::Cpu.node_params(&h).is_empty());
        let lines = Profile::Cpu.global_lines(&[&h]);
        assert!(!lines.iter().any(|l| l.contains("Mem")), "{lines:?}");
    }

    #[test]
    fn macos_native__default_plus_the_darwin_plugins_and_overmemorykill() {
        let h = hw(8, 24105);
        let mine = Profile::MacosNative.global_lines(&[&h]);
        driver_common::testing::assert_has_lines(
            &mine,
            &[
                "ProctrackType=proctrack/darwin",
                "TaskPlugin=task/darwin",
                "JobAcctGatherType=jobacct_gather/darwin",
                "JobAcctGatherParams=OverMemoryKill",
                "JobAcctGatherFrequency=task=1",
            ],
        );
        // Everything else is `default`'s.
        let plugin = |l: &String| {
            ["ProctrackType=", "TaskPlugin=", "JobAcctGather"]
                .iter()
                .any(|k| l.starts_with(k))
        };
        let rest: Vec<&String> = mine.iter().filter(|l| !plugin(l)).collect();
        let default = Profile::Default.global_lines(&[&h]);
        let default_rest: Vec<&String> = default.iter().filter(|l| !plugin(l)).collect();
        assert_eq!(rest, default_rest);
        assert_eq!(Profile::MacosNative.node_params(&h), ["RealMemory=24105"]);
        assert_eq!(
            Profile::MacosNative
                .to_possible_value()
                .map(|v| v.get_name().to_string()),
            Some("macos-native".to_string())
        );
    }

    #[test]
    fn markdown__names_computed_values() {
        let t = markdown();
        assert!(t.contains("`DefMemPerCPU=<RealMemory / CPUs>`"), "{t}");
        assert!(t.contains("`RealMemory=<slurmd -C>` (NodeName)"), "{t}");
        assert_eq!(t.lines().count(), 2 + TABLE.len(), "{t}");
    }

    #[test]
    fn cluster_doc__holds_the_same_table() {
        let path = driver_common::project_root().join("docs/CLUSTER.md");
        let readme = std::fs::read_to_string(&path).unwrap();
        let copy = readme_copy(&readme).unwrap_or_else(|| {
            panic!(
                "docs/CLUSTER.md has no profile table between `{README_BEGIN}` and `{README_END}`"
            )
        });
        assert_eq!(
            copy,
            markdown(),
            "docs/CLUSTER.md's profile table differs from the driver's: paste `cargo xtask cluster profiles` between the markers"
        );
    }

    #[test]
    fn readme_copy__between_the_markers() {
        let text = format!("a\n{README_BEGIN}\n| x |\n{README_END}\nb");
        assert_eq!(readme_copy(&text), Some("| x |\n"));
        assert_eq!(readme_copy("nothing"), None);
    }
}
