//! The seed's verification matrix as scenarios, one file per area. Each scenario gets its own
//! directory under `jobs/`, returns a one-line account of what it saw, and is timed; on
//! failure the runner prints the daemon log lines written while it ran, then puts the
//! cluster back in shape (cancel everything, resume the node, restart a dead daemon) so one
//! failure does not cascade.
//!
//! Scenarios named `smd-NNN-...` are items of the proof of concept's test plan on a real Mac
//! (`SMD-NNN`, ../shared/docs/POC-DEFECTS.md section C; docs/PARITY.md maps every ID). A
//! scenario is in every run (`cargo xtask cluster test` without `--only`, and so in CI)
//! unless it is marked [`Scenario::local`]: those take minutes and run only when `--only`
//! names them (`--only smd-010`, or `--only smd-` for all of the plan).

mod accounting;
mod accuracy;
mod after_failure;
mod allocation;
mod apple_gpu;
mod bad_states;
mod batch;
mod churn;
pub(super) mod client;
mod conf;
mod configless;
mod container;
mod diskfull;
mod dynamic;
mod environment;
mod extern_adopt;
mod failover;
mod fixtures;
mod gpu_node;
mod gres;
mod health;
mod hooks;
mod identities;
mod ipv6;
mod launch_refused;
mod limits;
mod logrotate;
mod macos_native;
mod memory;
mod mix;
mod node_metrics;
mod node_view;
mod nodes;
mod pmi2;
mod power;
mod proc_access;
mod processes;
mod pty;
mod reconf;
mod reconfigure;
mod recovery;
mod restarts;
mod sack;
mod site;
mod spank;
mod sstat_live;
mod steps;
mod stop_accepting;
mod task_hooks;
mod tls;
mod unsupported;
mod upgrade;
mod workdirs;

use super::handle::Cluster;
use super::profile::Profile;
use client::Ctx;
use driver_common::error::Result;
use std::path::PathBuf;
use std::time::Instant;
use xshell::Shell;

type Run = fn(&mut Ctx<'_>) -> Result<String>;

/// What a scenario needs of the cluster; unmet, it is skipped with the reason printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Written for a cluster of one node (node states, its slurmd, its GPU).
    OneNode,
    /// At least this many nodes.
    Nodes(usize),
    /// Nodes of at least two builds (`--mix`).
    Mix,
    /// One node and the `macos-native` profile's plugins (patches 0040-0044).
    MacosNative,
    /// One node tracked by process group: `setsid-escape` shows proctrack/pgid's limit,
    /// which `macos-native`'s proctrack/darwin does not have (`reparented-setsid` checks that).
    PgidTracking,
    /// A newer build to upgrade to (`cluster test --upgrade-to P2`).
    UpgradeTo,
    /// At least one node of a darwin-personality build (the shim's emulation log).
    DarwinNode,
    /// One node under profile `site` (a cgroup site's plugins, patch 0064).
    Site,
    /// Profile `site` on nodes of two builds, one of them darwin (`--mix native=P1,darwin=P2`).
    SiteMix,
    /// One node of a native build on Linux: task/affinity applies CPU bindings there (a
    /// darwin node runs it as task/darwin, which does not bind).
    NativeLinux,
    /// A cluster started with `--tls` (Slurm's tls/s2n, 25.05 and later).
    Tls,
}

impl Needs {
    /// Why the cluster does not meet this, if it does not.
    pub fn unmet(self, cluster: &Cluster) -> Option<String> {
        let n = cluster.nodes().len();
        let builds: std::collections::BTreeSet<&std::path::Path> =
            cluster.nodes().iter().map(|x| x.prefix.as_path()).collect();
        match self {
            Needs::OneNode if n != 1 => Some(format!(
                "written for one node, the cluster has {n} (run it with --nodes 1)"
            )),
            Needs::Nodes(k) if n < k => Some(format!(
                "needs {k} nodes, the cluster has {n} (run it with --nodes {k})"
            )),
            Needs::Mix if builds.len() < 2 => Some(
                "needs nodes of two builds (run it with --mix native=P1,darwin=P2)".to_string(),
            ),
            Needs::MacosNative | Needs::PgidTracking if n != 1 => Some(format!(
                "written for one node, the cluster has {n} (run it with --nodes 1)"
            )),
            Needs::MacosNative if cluster.profile() != Profile::MacosNative => Some(format!(
                "needs the macOS process plugins, the cluster's profile is `{}` (run it with \
                 --profile macos-native on a darwin-personality build)",
                cluster.profile().name()
            )),
            Needs::SiteMix if cluster.profile() != Profile::Site || builds.len() < 2 => Some(
                "needs profile `site` on nodes of two builds (run it with --mix \
                 native=P1,darwin=P2 --profile site)"
                    .to_string(),
            ),
            Needs::Site if cluster.profile() != Profile::Site => Some(format!(
                "needs profile `site` (a cgroup site's plugins) on a darwin-personality build, the cluster's is `{}`",
                cluster.profile().name()
            )),
            Needs::PgidTracking
                if matches!(cluster.profile(), Profile::MacosNative | Profile::Site) =>
            {
                Some(
                    "shows proctrack/pgid's limit; profiles `macos-native` and `site` (on a Mac) \
                     track by ancestry (its scenario is reparented-setsid)"
                        .to_string(),
                )
            }
            Needs::DarwinNode
                if !cluster.nodes().iter().any(|x| {
                    driver_common::staging::Manifest::read(&x.prefix).is_ok_and(|m| {
                        m.personality == driver_common::personality::Personality::Darwin
                    })
                }) =>
            {
                Some("needs a node of a darwin-personality build (a native build has no shim and logs nothing)".to_string())
            }
            Needs::NativeLinux if n != 1 => Some(format!(
                "written for one node, the cluster has {n} (run it with --nodes 1)"
            )),
            Needs::NativeLinux
                if !cfg!(target_os = "linux")
                    || !cluster.nodes().iter().all(|x| {
                        driver_common::staging::Manifest::read(&x.prefix).is_ok_and(|m| {
                            m.personality == driver_common::personality::Personality::Native
                        })
                    }) =>
            {
                Some("needs a native build on Linux: elsewhere task/affinity runs as task/darwin, which does not bind (smd-301-cpu-bind shows it)".to_string())
            }
            Needs::Tls if !cluster.state.tls => Some(
                "needs Slurm's TLS (run it with --tls on builds made with `build-slurm --with-s2n`, Slurm 25.05 or later)".to_string(),
            ),
            Needs::UpgradeTo if cluster.state.upgrade_to.is_none() => Some(
                "needs a newer build to upgrade to (run it with --prefix P1 --upgrade-to P2, P2 at most three major releases after P1)".to_string(),
            ),
            _ => None,
        }
    }
}

/// One scenario: its name (`--only` matches a prefix), what it needs, what it runs, and
/// whether it is in every run.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub name: &'static str,
    pub needs: Needs,
    pub run: Run,
    /// Run only when `--only` names it: why (how long it takes). None: in every run (CI).
    pub local: Option<&'static str>,
    /// In CI's `macos-native` run (unless [`Scenario::local`]): the profile's own scenarios and
    /// the process-tree ones of every profile, with proctrack/darwin doing the tracking.
    pub macos_ci: bool,
}

const fn one(name: &'static str, run: Run) -> Scenario {
    with(name, Needs::OneNode, run)
}

/// A scenario of the first node of a cluster of any size.
const fn node1(name: &'static str, run: Run) -> Scenario {
    with(name, Needs::Nodes(1), run)
}

/// A scenario of the macOS process plugins (profile `macos-native` only).
const fn native(name: &'static str, run: Run) -> Scenario {
    with(name, Needs::MacosNative, run).macos_ci()
}

const fn with(name: &'static str, needs: Needs, run: Run) -> Scenario {
    Scenario {
        name,
        needs,
        run,
        local: None,
        macos_ci: false,
    }
}

impl Scenario {
    /// Kept out of the default run (and CI): runs only when `--only` names it.
    const fn local(self, why: &'static str) -> Scenario {
        Scenario {
            local: Some(why),
            ..self
        }
    }

    /// Also in CI's `macos-native` run.
    const fn macos_ci(self) -> Scenario {
        Scenario {
            macos_ci: true,
            ..self
        }
    }
}

/// Every scenario, in run order.
pub const ALL: &[Scenario] = &[
    one("batch-exit-codes", batch::exit_codes),
    one("srun", steps::srun).macos_ci(),
    one("srun-multi-task", steps::multi_task).macos_ci(),
    one("salloc-srun", steps::salloc),
    one("srun-pty", pty::srun_pty).macos_ci(),
    one("environment", environment::propagation),
    one("user-identity", environment::identity),
    one("signal", processes::signal),
    one("cancel-process-tree", processes::cancel_tree).macos_ci(),
    with(
        "setsid-escape",
        Needs::PgidTracking,
        processes::setsid_escape,
    ),
    one("launch-failures", steps::launch_failures),
    with(
        "launch-refused-no-drain",
        Needs::NativeLinux,
        launch_refused::no_drain,
    ),
    one("memory-allocation", memory::allocation).macos_ci(),
    one("time-limit", processes::time_limit).macos_ci(),
    one("gres-serialise", gres::serialise),
    one("gres-release", gres::release),
    one("gres-accounting", gres::accounting),
    one("gpu-autodetect", apple_gpu::autodetect),
    one("node-metrics", node_metrics::extra_and_features),
    one("prolog-epilog", hooks::prolog_epilog),
    one("smd-121-prolog-failure", hooks::prolog_failure),
    one("smd-122-epilog-failure", hooks::epilog_failure),
    one("slurmd-restart-idle", restarts::slurmd_idle),
    one("slurmd-restart-running", restarts::slurmd_running),
    one(
        "slurmd-sigterm-while-accepting",
        stop_accepting::sigterm_while_accepting,
    ),
    one("slurmctld-restart", restarts::slurmctld),
    one("slurmdbd-outage", accounting::dbd_outage),
    // The proof of concept's test plan (SMD IDs; docs/PARITY.md).
    one("smd-009-slurmd-sigkill", recovery::slurmd_sigkill),
    one("smd-010-controller-pause", recovery::controller_pause)
        .local("two 60 s controller outages, about 3 minutes"),
    one("smd-012-reconfigure", reconfigure::log_file_change),
    one("smd-012-reconfigure-repeated", reconfigure::repeated),
    one("smd-012-sack-replace", sack::replacement_keeps_socket),
    one("smd-013-stale-spool", recovery::stale_spool),
    one("smd-101-two-users", identities::two_users),
    one("smd-102-uid-mismatch", identities::uid_mismatch),
    one("smd-102-groups-over-16", identities::many_groups),
    one("smd-103-workdirs", workdirs::workdirs),
    one("smd-104-env-values", environment::values),
    one("smd-105-umask", workdirs::umask),
    one("smd-107-six-steps", allocation::six_steps),
    one("smd-108-cpu-request", allocation::cpu_request),
    one("smd-109-orphans", processes::orphans),
    one("smd-110-ulimits", limits::ulimits),
    one("smd-111-churn", churn::churn),
    one("smd-112-memory-pressure", memory::pressure),
    one("smd-113-spool-full", diskfull::spool_full),
    one("smd-113-log-full", diskfull::log_full),
    one("registration-log-full", diskfull::registration_log_full),
    one("smd-121-prolog-timeout", hooks::prolog_timeout)
        .local("waits out PrologEpilogTimeout and the drain, about 15 s"),
    one("smd-122-epilog-timeout", hooks::epilog_timeout)
        .local("waits out PrologEpilogTimeout and the drain, about 15 s"),
    one("smd-123-task-prolog", task_hooks::task_prolog_epilog),
    one("smd-124-spank", spank::callbacks),
    one("smd-125-health-check", health::drain_and_recover)
        .local("several 5 s health check intervals, about 30 s"),
    one("smd-125-health-timeout", health::timeout)
        .local("a health check killed after slurmd's 60 s limit"),
    one("smd-127-log-rotate", logrotate::rename_and_reopen),
    with("nodes-span", Needs::Nodes(2), nodes::span),
    with("nodes-one-down", Needs::Nodes(2), nodes::one_down),
    with(
        "nodes-never-registers",
        Needs::Nodes(2),
        nodes::never_registers,
    ),
    with("mix-span", Needs::Mix, mix::span),
    with("mix-clients", Needs::Mix, mix::clients),
    // The macOS process plugins (profile `macos-native` only).
    native("accounting-accuracy", accuracy::accounting_accuracy),
    native("memory-oom-kill", macos_native::memory_oom_kill),
    native("reparented-setsid", macos_native::reparented_setsid),
    native("double-fork-escape", macos_native::double_fork_escape),
    native("background-class", macos_native::background_class),
    native("binding-not-enforced", macos_native::binding_not_enforced),
    native("extern-adopted-orphan", extern_adopt::adopted_orphan),
    // The proof of concept's test plan (../shared/docs/POC-DEFECTS.md section C), by its
    // SMD ID; docs/PARITY.md maps every ID.
    node1("smd-204-gres-beside-gpu", gpu_node::beside_gpu_job),
    node1("smd-205-gres-fewer-gpus", gpu_node::fewer_gpus),
    node1("smd-206-gres-slurmd-restart", gpu_node::slurmd_restart),
    node1("smd-301-cpu-bind", unsupported::cpu_bind),
    node1("smd-302-proctrack-cgroup", unsupported::proctrack_cgroup),
    node1(
        "smd-303-task-cgroup-devices",
        unsupported::task_cgroup_devices,
    ),
    node1("smd-304-sstat-running-step", sstat_live::running_step).macos_ci(),
    node1("core-spec", unsupported::core_spec),
    node1("smd-305-cpu-freq", unsupported::cpu_freq),
    with("smd-401-pmi2-kvs", Needs::Nodes(2), pmi2::across_nodes),
    with("smd-402-pmi2-mixed-builds", Needs::Mix, pmi2::across_builds),
    with(
        "smd-403-container-refused",
        Needs::DarwinNode,
        container::refused,
    ),
    node1("smd-404-configless", configless::fetches_config),
    with("site-plugins-mapped", Needs::Site, site::plugins_mapped),
    with("site-mix-cgroup", Needs::SiteMix, site::mix_cgroup),
    node1("smd-405-backup-controller", failover::backup_takes_over),
    node1("smd-405-takeover-requested", failover::requested_takeover)
        .local("a backup controller and a requested takeover, about a minute; PoC D27"),
    node1("smd-406-ipv6-loopback", ipv6::loopback_end_to_end),
    with("smd-407-tls", Needs::Tls, tls::smd_407),
    node1("smd-408-dynamic-node", dynamic::register_delete_register),
    one("smd-409-power-save", power::suspend_then_resume)
        .local("about a minute: SuspendTime, slurmctld's power-save passes, a 20 s wake"),
    one("bad-daemon-dies", bad_states::daemon_dies),
    one("bad-port-taken", bad_states::port_taken),
    one("bad-mariadb", bad_states::mariadb_fails),
    one("bad-leftover", bad_states::leftover),
    // After every other scenario: what they made Slurm try on a darwin node.
    with(
        "smd-306-no-proc-access",
        Needs::DarwinNode,
        proc_access::only_accepted_sites,
    ),
    // Last: the cluster stays on the newer build.
    with(
        "smd-410-upgrade",
        Needs::UpgradeTo,
        upgrade::controller_then_nodes,
    ),
];

/// What CI runs under `macos-native` (the darwin personality): the scenarios marked
/// [`Scenario::macos_ci`] that are not [`Scenario::local`].
pub fn macos_native_ci() -> Vec<&'static str> {
    ALL.iter()
        .filter(|s| s.macos_ci && s.local.is_none())
        .map(|s| s.name)
        .collect()
}

/// The `macos-native` scenarios CI leaves out (marked [`Scenario::local`]), with why: CI
/// prints them, and `--only NAME` runs them.
pub fn macos_native_local() -> impl Iterator<Item = (&'static str, &'static str)> {
    ALL.iter()
        .filter(|s| s.needs == Needs::MacosNative)
        .filter_map(|s| s.local.map(|why| (s.name, why)))
}

/// The local scenarios (marked [`Scenario::local`]) a one-node darwin cluster under
/// `profile` runs: those written for one node (or its first), by process group or of a darwin
/// node under `default`, the profile's own under `macos-native`; none under the others.
pub fn local_for(profile: Profile) -> Vec<&'static str> {
    ALL.iter()
        .filter(|s| s.local.is_some())
        .filter(|s| match profile {
            Profile::MacosNative => s.needs == Needs::MacosNative,
            Profile::Default => matches!(
                s.needs,
                Needs::OneNode | Needs::Nodes(1) | Needs::PgidTracking | Needs::DarwinNode
            ),
            Profile::Site | Profile::Poc | Profile::Cpu => false,
        })
        .map(|s| s.name)
        .collect()
}

/// One scenario's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub name: &'static str,
    pub passed: bool,
    /// Passed as far as the build allows, with a documented gap (printed as GAP), or not
    /// run because the cluster does not have what it needs (SKIP); the reason.
    pub gap: Option<String>,
    /// Not run: the reason.
    pub skipped: Option<String>,
    pub seconds: f64,
}

/// Whether `name` is selected by `only` (empty: all; else a prefix match).
pub fn selected(name: &str, only: &[String]) -> bool {
    only.is_empty() || only.iter().any(|o| name.starts_with(o.as_str()))
}

/// Why a [`Scenario::local`] one is skipped: it runs only when `--only` names it.
fn local_skip(sc: &Scenario, only: &[String]) -> Option<String> {
    sc.local
        .filter(|_| only.is_empty())
        .map(|why| format!("local only ({why}): run it with --only {}", sc.name))
}

/// Run the selected scenarios in order.
pub fn run_all(sh: &Shell, cluster: &mut Cluster, only: &[String]) -> Vec<Outcome> {
    let mut results = Vec::new();
    for sc in ALL.iter().filter(|s| selected(s.name, only)) {
        let name = sc.name;
        if let Some(why) = local_skip(sc, only).or_else(|| sc.needs.unmet(cluster)) {
            println!("SKIP {name}: {why}");
            results.push(Outcome {
                name,
                passed: true,
                gap: None,
                skipped: Some(why),
                seconds: 0.0,
            });
            continue;
        }
        let marks = LogMarks::take(cluster);
        let t = Instant::now();
        let mut gap = None;
        let result = cluster
            .check_daemons()
            .and_then(|()| Ctx::new(sh, cluster, name))
            .and_then(|mut ctx| {
                let r = (sc.run)(&mut ctx);
                gap = ctx.gap.take();
                r
            });
        let seconds = t.elapsed().as_secs_f64();
        match (&result, &gap) {
            (Ok(detail), Some(why)) => println!("GAP  {name} ({seconds:.1}s): {why}; {detail}"),
            (Ok(detail), None) => println!("PASS {name} ({seconds:.1}s): {detail}"),
            (Err(e), _) => {
                println!("FAIL {name} ({seconds:.1}s): {e}");
                marks.print_new();
                after_failure::recover(sh, cluster);
            }
        }
        results.push(Outcome {
            name,
            passed: result.is_ok(),
            gap,
            skipped: None,
            seconds,
        });
    }
    results
}

/// Sizes of the daemon logs when a scenario starts, to print what it added on failure.
struct LogMarks(Vec<(PathBuf, u64)>);

impl LogMarks {
    fn take(cluster: &Cluster) -> LogMarks {
        let logs = cluster.layout().logs();
        let mut v: Vec<(PathBuf, u64)> = std::fs::read_dir(&logs)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "log" || x == "out"))
                    .map(|p| {
                        let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
                        (p, len)
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        LogMarks(v)
    }

    /// The lines each log gained: warnings and errors first, then the last lines.
    fn print_new(&self) {
        for (path, from) in &self.0 {
            let Ok(bytes) = std::fs::read(path) else {
                continue;
            };
            let Some(new) = bytes.get(*from as usize..) else {
                continue;
            };
            let text = String::from_utf8_lossy(new);
            let lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() {
                continue;
            }
            let errors: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| l.contains("error:") || l.contains("fatal:") || l.contains("[ERROR]"))
                .collect();
            println!("  ---- {} ({} new lines) ----", path.display(), lines.len());
            for l in errors.iter().rev().take(15).rev() {
                println!("  ! {l}");
            }
            for l in lines.iter().skip(lines.len().saturating_sub(15)) {
                println!("  | {l}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README's figures that a command produces agree with their source: the scenario count
    /// with this table, every `N.NNx` ratio with a run recorded in docs/RESULTS.md.
    #[test]
    fn readme__figures_match_the_table_and_the_recorded_results() {
        let root = driver_common::project_root();
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        let results = std::fs::read_to_string(root.join("docs/RESULTS.md")).unwrap();
        let count = format!("{} scenarios", ALL.len());
        assert!(readme.contains(&count), "README.md does not say `{count}`");
        let words: Vec<&str> = readme
            .split(|c: char| c.is_whitespace() || c == ',' || c == '(')
            .collect();
        let ratios: Vec<&str> = words
            .iter()
            .map(|w| w.trim_end_matches([')', '.', ':', ';']))
            .filter(|w| {
                w.strip_suffix('x')
                    .is_some_and(|n| n.contains('.') && n.parse::<f64>().is_ok())
            })
            .collect();
        assert!(ratios.len() >= 3, "README's ratios: {ratios:?}");
        for r in ratios {
            assert!(
                results.contains(r),
                "README.md says {r}, which docs/RESULTS.md does not record"
            );
        }
    }

    #[test]
    fn selected__prefix_filter() {
        assert!(selected("gres-release", &[]));
        assert!(selected("gres-release", &["gres".into()]));
        assert!(!selected("churn", &["gres".into(), "srun".into()]));
    }

    #[test]
    fn macos_native_ci__native_ones_and_process_trees_nothing_more_by_prefix() {
        let ci: Vec<String> = macos_native_ci().iter().map(|n| n.to_string()).collect();
        for sc in ALL {
            // `--only` matches prefixes: CI's names select exactly the marked scenarios.
            assert_eq!(
                selected(sc.name, &ci),
                ci.contains(&sc.name.to_string()),
                "{}",
                sc.name
            );
            assert!(
                !sc.macos_ci || sc.needs != Needs::PgidTracking,
                "{} cannot run under macos-native",
                sc.name
            );
        }
        // Every `macos-native` scenario is run by CI or printed as left out, with its reason.
        for sc in ALL.iter().filter(|s| s.needs == Needs::MacosNative) {
            let local = macos_native_local().any(|(l, why)| l == sc.name && !why.is_empty());
            assert!(ci.contains(&sc.name.to_string()) != local, "{}", sc.name);
        }
    }

    #[test]
    fn local_skip__only_without_only() {
        let sc = ALL
            .iter()
            .find(|s| s.local.is_some())
            .expect("a local scenario");
        let why = local_skip(sc, &[]).unwrap();
        assert!(why.contains("--only") && why.contains(sc.name), "{why}");
        assert_eq!(local_skip(sc, &["smd-".into()]), None);
        assert!(
            ALL.iter()
                .filter(|s| s.local.is_none())
                .all(|s| local_skip(s, &[]).is_none())
        );
    }

    #[test]
    fn all__smd_names_carry_a_three_digit_id() {
        for s in ALL.iter().filter(|s| s.name.starts_with("smd-")) {
            let id = &s.name[4..];
            assert!(
                id.len() > 4 && id[..3].bytes().all(|b| b.is_ascii_digit()) && &id[3..4] == "-",
                "{}",
                s.name
            );
        }
    }

    #[test]
    fn all__names_unique() {
        let mut names: Vec<&str> = ALL.iter().map(|s| s.name).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len());
    }
}
