//! Which programs load a plugin, from its type.
//!
//! A plugin file is `<type>_<name>.so` (`.dylib`/`.so` on macOS); the type is the longest
//! entry of [`TYPES`] that the file name starts with, followed by `_`
//! (`acct_gather_energy_gpu.so` is `acct_gather_energy`, `job_container_tmpfs.so` is
//! `job_container`). Files in `lib/slurm/` that match no type (`libslurmfull.so`,
//! `libslurm_pmi.so`) are not plugins.
//!
//! How the table was derived (Slurm 24.11.5 sources): each type's loader is the function in
//! `src/interfaces/<type>.c` that calls `plugin_context_create` or `plugrack_create` (named in
//! `evidence`). Its callers were found with `grep -rw` over `src/`, then mapped to programs by
//! directory (`src/slurmd/slurmd` → slurmd, `src/slurmd/slurmstepd` → slurmstepd, `src/sinfo` →
//! sinfo, ...). Callers inside libslurmfull were followed one step: `slurm_init()`
//! (`src/api/init.c`) loads auth, hash, tls, accounting_storage, gres and cred in every client
//! ([`CLIENTS`]: the programs whose `main` calls `slurm_init`); `slurm_send_recv_msgs()` and
//! `api/topo_info.c` load topology in any client. A type reached only through another plugin
//! is listed with the programs that load that plugin (serializer: auth/slurm's `init()` calls
//! `serializer_required(MIME_TYPE_JSON)`, so every program with auth/slurm loads
//! serializer/json). Where a program only *may* load a type (depending on slurm.conf or a
//! command-line option), it is listed: the audit must hold for every configuration.
//!
//! The later lines, by the same method on their pinned sources (25.05.8, 25.11.7, 26.05.3 and
//! the 26.11 snapshot 284c3b95): 25.05 adds certgen and changes four rows (`changes`):
//! slurmd loads accounting_storage, sackd certmgr, only slurmctld select, and every program
//! tls (`conn_g_init`); 25.11 adds http_parser, metrics, namespace (replacing job_container)
//! and url_parser; 26.05 adds compress and http_auth, and slurmstepd loads certgen; 26.11 adds
//! runtime, and slurmrestd loads http_auth. Every other row is the same in all five lines
//! (callers of each loader compared per tag). The audit picks the line from the prefix's
//! `include/slurm/slurm_version.h`. A plugin of a type not listed here is reported as
//! unknown (and fails the audit) until the table is extended.
//!
//! The macOS process plugins (patches/*/0040-0044: `jobacct_gather_darwin`,
//! `proctrack_darwin`, `task_darwin`, built for macOS and the darwin personality) are of
//! existing types and are audited with those types' loaders (a test below pins them).

/// Programs that call `slurm_init()` (24.11.5: grep -rlw slurm_init src/*/*.c; 26.05 adds
/// swait) and therefore
/// load auth, hash, tls, accounting_storage, gres and cred through `src/api/init.c`.
pub const CLIENTS: &[&str] = &[
    "sacct",
    "sacctmgr",
    "salloc",
    "sattach",
    "sbatch",
    "sbcast",
    "scancel",
    "scontrol",
    "scrontab",
    "scrun",
    "sdiag",
    "sh5util",
    "sinfo",
    "slurmrestd",
    "sprio",
    "squeue",
    "sreport",
    "srun",
    "sshare",
    "sstat",
    "strigger",
    "sview",
    "swait",
];

/// The daemons that load plugins.
pub const DAEMONS: &[&str] = &["slurmctld", "slurmd", "slurmstepd", "slurmdbd", "sackd"];

/// Who loads a plugin type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loader {
    /// One program, by installed file name.
    Program(&'static str),
    /// Every program in [`CLIENTS`].
    Clients,
}

use Loader::{Clients, Program as P};
pub use driver_common::lines::Line;

#[derive(Debug)]
pub struct PluginType {
    /// The file-name prefix (`topology` for the `topo` plugin_type string).
    pub name: &'static str,
    /// Who loads it in the first line that has the type (24.11 for most).
    pub loaders: &'static [Loader],
    /// From which later line on the loaders are different, oldest first: the row of a
    /// line is the last change at or before it, else `loaders`.
    pub changes: &'static [(Line, &'static [Loader])],
    /// The loading function(s) and where they are called (24.11.5 source paths, and the
    /// line that changed them).
    pub evidence: &'static str,
}

const CTLD_D_STEPD: &[Loader] = &[P("slurmctld"), P("slurmd"), P("slurmstepd")];
const D_STEPD: &[Loader] = &[P("slurmd"), P("slurmstepd")];
const CTLD: &[Loader] = &[P("slurmctld")];
const EVERY_PROGRAM: &[Loader] = &[
    Clients,
    P("slurmctld"),
    P("slurmd"),
    P("slurmstepd"),
    P("slurmdbd"),
    P("sackd"),
];

pub const TYPES: &[PluginType] = &[
    PluginType {
        name: "accounting_storage",
        loaders: &[Clients, P("slurmctld"), P("slurmstepd"), P("slurmdbd")],
        evidence: "acct_storage_g_init: api/init.c (slurm_init), slurmctld, slurmd/slurmstepd, slurmdbd, sacct; since 25.05 also slurmd/slurmd",
        changes: &[(
            Line::L25_05,
            &[
                Clients,
                P("slurmctld"),
                P("slurmd"),
                P("slurmstepd"),
                P("slurmdbd"),
            ],
        )],
    },
    PluginType {
        name: "acct_gather_energy",
        loaders: CTLD_D_STEPD,
        evidence: "acct_gather_energy_init via acct_gather_conf_init: slurmctld/controller.c, slurmd/slurmd.c, slurmstepd.c",
        changes: &[],
    },
    PluginType {
        name: "acct_gather_filesystem",
        loaders: CTLD_D_STEPD,
        evidence: "acct_gather_filesystem_init via acct_gather_conf_init (as acct_gather_energy)",
        changes: &[],
    },
    PluginType {
        name: "acct_gather_interconnect",
        loaders: CTLD_D_STEPD,
        evidence: "acct_gather_interconnect_init via acct_gather_conf_init (as acct_gather_energy)",
        changes: &[],
    },
    PluginType {
        name: "acct_gather_profile",
        loaders: CTLD_D_STEPD,
        evidence: "acct_gather_profile_init via acct_gather_conf_init, and slurmd/slurmstepd directly",
        changes: &[],
    },
    PluginType {
        name: "auth",
        loaders: EVERY_PROGRAM,
        evidence: "auth_g_init: api/init.c (slurm_init), slurmctld, slurmd, slurmstepd, slurmdbd, sackd",
        changes: &[],
    },
    PluginType {
        name: "burst_buffer",
        loaders: CTLD,
        evidence: "bb_g_init: slurmctld",
        changes: &[],
    },
    PluginType {
        name: "certmgr",
        loaders: &[P("slurmctld"), P("slurmd")],
        evidence: "certmgr_g_init: slurmctld, slurmd/slurmd; since 25.05 also sackd",
        changes: &[(Line::L25_05, &[P("slurmctld"), P("slurmd"), P("sackd")])],
    },
    PluginType {
        name: "cgroup",
        loaders: D_STEPD,
        evidence: "cgroup_g_init: slurmd/slurmd, slurmd/slurmstepd",
        changes: &[],
    },
    PluginType {
        name: "cli_filter",
        loaders: &[P("salloc"), P("sbatch"), P("scrontab"), P("srun")],
        evidence: "cli_filter_init: salloc, sbatch, scrontab, srun",
        changes: &[],
    },
    PluginType {
        name: "cred",
        loaders: &[Clients, P("slurmctld"), P("slurmd"), P("slurmstepd")],
        evidence: "cred_g_init: api/init.c (slurm_init), slurmctld, slurmd/slurmd, slurmd/slurmstepd",
        changes: &[],
    },
    PluginType {
        name: "data_parser",
        loaders: &[
            P("sacct"),
            P("sacctmgr"),
            P("scontrol"),
            P("sdiag"),
            P("sinfo"),
            P("squeue"),
            P("sshare"),
            P("slurmrestd"),
        ],
        evidence: "data_parser_g_new (DATA_DUMP_CLI for --json/--yaml): sacct, sacctmgr, scontrol, sdiag, sinfo, squeue, sshare, slurmrestd",
        changes: &[],
    },
    PluginType {
        name: "gpu",
        loaders: D_STEPD,
        evidence: "gpu_plugin_init from gres.c: gres_g_node_config_load (slurmd, also `slurmd -C` through gres_get_autodetected_gpus), gres_g_recv_stepd (slurmstepd); gpu/apple (patch 0050) is picked there by AutoDetect=apple (0051)",
        changes: &[],
    },
    PluginType {
        name: "gres",
        loaders: &[Clients, P("slurmctld"), P("slurmd"), P("slurmstepd")],
        evidence: "gres_init: api/init.c (slurm_init), slurmctld, slurmd/slurmd, slurmd/slurmstepd, stepmgr",
        changes: &[],
    },
    PluginType {
        name: "hash",
        loaders: EVERY_PROGRAM,
        evidence: "hash_g_init: api/init.c (slurm_init), slurmctld, slurmd, slurmstepd, slurmdbd, sackd",
        changes: &[],
    },
    PluginType {
        name: "job_container",
        loaders: D_STEPD,
        evidence: "job_container_init: slurmd/slurmd, slurmd/slurmstepd (24.11 and 25.05; namespace since 25.11)",
        changes: &[],
    },
    PluginType {
        name: "job_submit",
        loaders: CTLD,
        evidence: "job_submit_g_init: slurmctld",
        changes: &[],
    },
    PluginType {
        name: "jobacct_gather",
        loaders: CTLD_D_STEPD,
        evidence: "jobacct_gather_init: slurmctld, slurmd/slurmd, slurmd/slurmstepd",
        changes: &[],
    },
    PluginType {
        name: "jobcomp",
        loaders: &[P("slurmctld"), P("sacct")],
        evidence: "jobcomp_g_init: slurmctld; api/job_functions.c slurmdb_jobcomp_init (sacct/options.c)",
        changes: &[],
    },
    PluginType {
        name: "mcs",
        loaders: CTLD,
        evidence: "mcs_g_init: slurmctld",
        changes: &[],
    },
    PluginType {
        name: "mpi",
        loaders: &[P("srun"), P("slurmctld"), P("slurmd"), P("slurmstepd")],
        evidence: "mpi_g_client_init: srun, api/step_launch.c; mpi_g_daemon_init: slurmctld, slurmd; mpi_g_slurmstepd_prefork: slurmstepd/mgr.c",
        changes: &[],
    },
    PluginType {
        name: "node_features",
        loaders: &[P("slurmctld"), P("slurmd")],
        evidence: "node_features_g_init: slurmctld, slurmd/slurmd",
        changes: &[],
    },
    PluginType {
        name: "openapi",
        loaders: &[P("slurmrestd")],
        evidence: "plugrack(\"openapi\"): slurmrestd",
        changes: &[],
    },
    PluginType {
        name: "preempt",
        loaders: CTLD,
        evidence: "preempt_g_init: slurmctld",
        changes: &[],
    },
    PluginType {
        name: "prep",
        loaders: CTLD_D_STEPD,
        evidence: "prep_g_init: slurmctld, slurmd/slurmd, slurmd/slurmstepd",
        changes: &[],
    },
    PluginType {
        name: "priority",
        loaders: &[P("slurmctld"), P("sshare")],
        evidence: "priority_g_init: slurmctld, sshare",
        changes: &[],
    },
    PluginType {
        name: "proctrack",
        loaders: D_STEPD,
        evidence: "proctrack_g_init: slurmd/slurmd, slurmd/slurmstepd",
        changes: &[],
    },
    PluginType {
        name: "rest_auth",
        loaders: &[P("slurmrestd")],
        evidence: "plugrack_create(\"rest_auth\"): slurmrestd/slurmrestd.c",
        changes: &[],
    },
    PluginType {
        name: "sched",
        loaders: CTLD,
        evidence: "sched_g_init: slurmctld",
        changes: &[],
    },
    PluginType {
        name: "select",
        loaders: &[
            P("slurmctld"),
            P("slurmd"),
            P("slurmstepd"),
            P("scontrol"),
            P("sinfo"),
            P("squeue"),
            P("sview"),
        ],
        evidence: "select_g_init: slurmctld, slurmd/slurmd, slurmd/slurmstepd; api/node_info.c (slurm_load_node*: scontrol, sinfo, squeue, sview); since 25.05 slurmctld only",
        changes: &[(Line::L25_05, CTLD)],
    },
    PluginType {
        name: "serializer",
        loaders: EVERY_PROGRAM,
        evidence: "serializer_g_init: sacct, sacctmgr, scontrol, sdiag, sinfo, squeue, sshare, slurmctld, slurmstepd, ...; auth/slurm's init() requires serializer/json in every program",
        changes: &[],
    },
    PluginType {
        name: "site_factor",
        loaders: CTLD,
        evidence: "site_factor_g_init: priority/multifactor init(), only in slurmctld (other programs return early)",
        changes: &[],
    },
    PluginType {
        name: "spank",
        loaders: &[
            P("salloc"),
            P("sbatch"),
            P("scrontab"),
            P("scrun"),
            P("srun"),
            P("slurmd"),
            P("slurmstepd"),
        ],
        evidence: "spank_init*: salloc, sbatch, scrontab, scrun, srun, slurmstepd/mgr.c; spank_slurmd_exit: slurmd",
        changes: &[],
    },
    PluginType {
        name: "switch",
        loaders: &[P("slurmctld"), P("slurmd"), P("slurmstepd"), P("srun")],
        evidence: "switch_g_init: slurmctld, slurmd/slurmd, slurmd/slurmstepd, srun",
        changes: &[],
    },
    PluginType {
        name: "task",
        loaders: D_STEPD,
        evidence: "task_g_init: slurmd/slurmd, slurmd/slurmstepd",
        changes: &[],
    },
    PluginType {
        name: "tls",
        loaders: &[Clients, P("slurmctld"), P("slurmdbd")],
        evidence: "tls_g_init: api/init.c (slurm_init), slurmctld, slurmdbd; since 25.05 conn_g_init (interfaces/conn.c, plugin type tls): api/init.c, sackd, slurmctld, slurmd, slurmstepd, slurmdbd; also conmgr/tls.c, common/http_switch.c (25.11)",
        changes: &[(Line::L25_05, EVERY_PROGRAM)],
    },
    PluginType {
        name: "topology",
        loaders: &[Clients, P("slurmctld"), P("slurmd"), P("slurmstepd")],
        evidence: "topology_g_init (plugin_type \"topo\"): slurmctld, slurmd/slurmd, slurmd/slurmstepd; common/slurm_protocol_api.c slurm_send_recv_msgs and api/topo_info.c in any client",
        changes: &[],
    },
    PluginType {
        name: "certgen",
        loaders: &[Clients],
        evidence: "since 25.05: certgen_g_init: api/init.c (slurm_init); since 26.05 also slurmd/slurmstepd",
        changes: &[(Line::L26_05, &[Clients, P("slurmstepd")])],
    },
    PluginType {
        name: "compress",
        loaders: &[P("sbcast"), P("srun"), P("slurmd")],
        evidence: "since 26.05: compress_g_init: sbcast, srun, slurmd/slurmd",
        changes: &[],
    },
    PluginType {
        name: "http_auth",
        loaders: &[P("slurmctld"), P("slurmd")],
        evidence: "since 26.05: http_auth_g_init: slurmctld/http.c, slurmd/slurmd/http.c; 26.11 also slurmrestd/http.c",
        changes: &[(
            Line::L26_11,
            &[P("slurmctld"), P("slurmd"), P("slurmrestd")],
        )],
    },
    PluginType {
        name: "http_parser",
        loaders: &[P("slurmctld"), P("slurmd"), P("slurmrestd")],
        evidence: "since 25.11: http_parser_g_init: slurmrestd, common/http_switch.c (slurmctld, slurmd)",
        changes: &[],
    },
    PluginType {
        name: "metrics",
        loaders: CTLD,
        evidence: "since 25.11: metrics_g_init: slurmctld",
        changes: &[],
    },
    PluginType {
        name: "namespace",
        loaders: D_STEPD,
        evidence: "since 25.11 (replaces job_container): namespace_g_init: slurmd/slurmd, slurmd/slurmstepd",
        changes: &[],
    },
    PluginType {
        name: "runtime",
        loaders: &[P("slurmstepd")],
        evidence: "26.11 only (snapshot): runtime_g_init: slurmd/slurmstepd",
        changes: &[],
    },
    PluginType {
        name: "url_parser",
        loaders: EVERY_PROGRAM,
        evidence: "since 25.11: url_parser_g_init: conmgr/conmgr.c (every program with conmgr), common/http_switch.c, slurmrestd",
        changes: &[],
    },
];

/// The type of plugin file `file_name`, or `None` when it is not a plugin.
pub fn plugin_type(file_name: &str) -> Option<&'static PluginType> {
    TYPES
        .iter()
        .filter(|t| {
            file_name
                .strip_prefix(t.name)
                .is_some_and(|rest| rest.starts_with('_') && rest.len() > 1)
        })
        .max_by_key(|t| t.name.len())
}

/// The installed program names a type's loaders stand for in `line`.
pub fn programs(t: &PluginType, line: Line) -> Vec<&'static str> {
    let loaders = t
        .changes
        .iter()
        .rev()
        .find(|(since, _)| *since <= line)
        .map_or(t.loaders, |(_, l)| *l);
    let mut out: Vec<&'static str> = Vec::new();
    for l in loaders {
        match l {
            P(p) => out.push(p),
            Clients => out.extend_from_slice(CLIENTS),
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// File names in `lib/slurm/` that look like `<word>_<word>` but are libraries, not plugins.
pub fn is_library(file_name: &str) -> bool {
    file_name.starts_with("lib")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(f: &str) -> Option<&'static str> {
        plugin_type(f).map(|t| t.name)
    }

    #[test]
    fn plugin_type__examples_from_the_brief() {
        assert_eq!(ty("auth_slurm.so"), Some("auth"));
        assert_eq!(ty("cred_slurm.so"), Some("cred"));
        assert_eq!(ty("proctrack_pgid.so"), Some("proctrack"));
        assert_eq!(
            ty("accounting_storage_slurmdbd.so"),
            Some("accounting_storage")
        );
    }

    #[test]
    fn plugin_type__longest_prefix_wins_and_libraries_are_not_plugins() {
        assert_eq!(ty("acct_gather_energy_gpu.so"), Some("acct_gather_energy"));
        assert_eq!(ty("job_container_tmpfs.so"), Some("job_container"));
        assert_eq!(ty("job_submit_lua.so"), Some("job_submit"));
        assert_eq!(ty("jobacct_gather_linux.so"), Some("jobacct_gather"));
        assert_eq!(ty("jobcomp_script.so"), Some("jobcomp"));
        assert_eq!(ty("rest_auth_local.so"), Some("rest_auth"));
        assert_eq!(ty("data_parser_v0_0_42.dylib"), Some("data_parser"));
        assert_eq!(ty("libslurmfull.so"), None);
        assert_eq!(ty("libslurm_pmi.so"), None);
        assert_eq!(ty("auth_"), None);
        assert_eq!(ty("authx_slurm.so"), None);
        assert!(is_library("libslurmfull.dylib"));
    }

    #[test]
    fn programs__expand_clients_and_keep_daemons() {
        let auth = plugin_type("auth_slurm.so").unwrap();
        let p = programs(auth, Line::L24_11);
        for d in DAEMONS {
            assert!(p.contains(d), "auth misses {d}");
        }
        for c in CLIENTS {
            assert!(p.contains(c), "auth misses {c}");
        }
        let proctrack = programs(plugin_type("proctrack_pgid.so").unwrap(), Line::L24_11);
        assert_eq!(proctrack, ["slurmd", "slurmstepd"]);
        // The proof of concept's failure: topology and prep are loaded by slurmd, not only
        // by slurmctld.
        for t in ["topology_tree.so", "prep_script.so"] {
            let p = programs(plugin_type(t).unwrap(), Line::L24_11);
            assert!(
                p.contains(&"slurmd") && p.contains(&"slurmctld"),
                "{t}: {p:?}"
            );
        }
        assert_eq!(
            programs(plugin_type("sched_backfill.so").unwrap(), Line::L24_11),
            ["slurmctld"]
        );
    }

    #[test]
    fn programs__gpu_apple_is_loaded_by_slurmd_and_slurmstepd_in_both_lines() {
        let gpu = plugin_type("gpu_apple.so").unwrap();
        assert_eq!(gpu.name, "gpu");
        for line in [Line::L24_11, Line::L26_11] {
            assert_eq!(programs(gpu, line), ["slurmd", "slurmstepd"], "{line:?}");
        }
    }

    #[test]
    fn programs__the_darwin_plugins_have_their_types_loaders() {
        for line in [Line::L24_11, Line::L26_11] {
            let p = |f| programs(plugin_type(f).unwrap(), line);
            assert_eq!(
                p("jobacct_gather_darwin.dylib"),
                p("jobacct_gather_linux.so")
            );
            assert_eq!(p("proctrack_darwin.dylib"), ["slurmd", "slurmstepd"]);
            let task = p("task_darwin.so");
            assert!(
                task.contains(&"slurmd") && task.contains(&"slurmstepd"),
                "{task:?}"
            );
            assert!(p("jobacct_gather_darwin.so").contains(&"slurmstepd"));
        }
    }

    #[test]
    fn table__names_unique_and_loaders_known() {
        let mut names: Vec<_> = TYPES.iter().map(|t| t.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate type");
        for t in TYPES {
            assert!(
                !t.loaders.is_empty() && !t.evidence.is_empty(),
                "{}",
                t.name
            );
            for p in driver_common::lines::LINES
                .iter()
                .flat_map(|f| programs(t, f.line))
            {
                assert!(
                    CLIENTS.contains(&p) || DAEMONS.contains(&p),
                    "{}: unknown program {p}",
                    t.name
                );
            }
        }
    }

    #[test]
    fn programs__differ_by_line_from_the_line_that_changed_them() {
        let acct = plugin_type("accounting_storage_slurmdbd.so").unwrap();
        assert!(!programs(acct, Line::L24_11).contains(&"slurmd"));
        assert!(programs(acct, Line::L26_11).contains(&"slurmd"));
        let select = plugin_type("select_cons_tres.so").unwrap();
        assert!(programs(select, Line::L24_11).contains(&"slurmd"));
        assert_eq!(programs(select, Line::L26_11), ["slurmctld"]);
        // the change applies from its line on, not only to 26.11
        assert_eq!(programs(select, Line::L25_05), ["slurmctld"]);
        assert!(programs(acct, Line::L25_11).contains(&"slurmd"));
        let certgen = plugin_type("certgen_script.so").unwrap();
        assert!(!programs(certgen, Line::L25_11).contains(&"slurmstepd"));
        assert!(programs(certgen, Line::L26_05).contains(&"slurmstepd"));
        assert!(programs(certgen, Line::L26_11).contains(&"slurmstepd"));
        let http_auth = plugin_type("http_auth_jwt.so").unwrap();
        assert!(!programs(http_auth, Line::L26_05).contains(&"slurmrestd"));
        assert!(programs(http_auth, Line::L26_11).contains(&"slurmrestd"));
    }

    /// Every plugin family directory in each fetched line's source (src/plugins/<type>/)
    /// has a row.
    #[test]
    fn table__covers_every_plugin_directory() {
        for v in ["24.11.5", "25.05.8", "25.11.7", "26.05.3", "26.11-snapshot"] {
            covers_plugin_directories(v);
        }
    }

    /// Changes are in release order, and each says something new.
    #[test]
    fn table__changes_in_release_order() {
        for t in TYPES {
            let mut prev = (None, t.loaders);
            for (line, l) in t.changes {
                assert!(prev.0.is_none_or(|p| p < *line), "{}: order", t.name);
                assert_ne!(prev.1, *l, "{}: change to {line:?} changes nothing", t.name);
                prev = (Some(*line), l);
            }
        }
    }

    fn covers_plugin_directories(version: &str) {
        let dir = crate::project_root().join(format!("slurm-src/{version}/src/plugins"));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            println!(
                "SKIPPED for {version}: {} absent (run `cargo xtask fetch --version {version}`)",
                dir.display()
            );
            return;
        };
        let mut missing = Vec::new();
        for e in entries.flatten() {
            if !e.path().is_dir() {
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            if !TYPES.iter().any(|t| t.name == name) {
                missing.push(name);
            }
        }
        assert!(
            missing.is_empty(),
            "plugin families without a row: {missing:?}"
        );
    }
}
