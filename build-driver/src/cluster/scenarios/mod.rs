//! The seed's verification matrix as scenarios, one file per area. Each scenario gets its own
//! directory under `jobs/`, returns a one-line account of what it saw, and is timed; on
//! failure the runner prints the daemon log lines written while it ran, then puts the
//! cluster back in shape (cancel everything, resume the node, restart a dead daemon) so one
//! failure does not cascade.

mod accounting;
mod bad_states;
mod batch;
mod churn;
mod client;
mod configless;
mod dynamic;
mod environment;
mod failover;
mod gpu_node;
mod gres;
mod hooks;
mod ipv6;
mod memory;
mod mix;
mod nodes;
mod pmi2;
mod proc_access;
mod processes;
mod pty;
mod reconf;
mod restarts;
mod sack;
mod steps;
mod upgrade;

use super::handle::Cluster;
use crate::error::Result;
use client::Ctx;
use std::path::PathBuf;
use std::time::{Duration, Instant};
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
    /// A newer build to upgrade to (`cluster test --upgrade-to P2`).
    UpgradeTo,
    /// At least one node of a darwin-personality build (the shim's emulation log).
    DarwinNode,
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
            Needs::DarwinNode
                if !cluster.nodes().iter().any(|x| {
                    crate::staging::Manifest::read(&x.prefix).is_ok_and(|m| {
                        m.personality == crate::personality::Personality::Darwin
                    })
                }) =>
            {
                Some("needs a node of a darwin-personality build (a native build has no shim and logs nothing)".to_string())
            }
            Needs::UpgradeTo if cluster.state.upgrade_to.is_none() => Some(
                "needs a newer build to upgrade to (run it with --prefix P1 --upgrade-to P2, P2 at most three major releases after P1)".to_string(),
            ),
            _ => None,
        }
    }
}

/// One scenario: its name (`--only` matches a prefix), what it needs, what it runs.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub name: &'static str,
    pub needs: Needs,
    pub run: Run,
}

const fn one(name: &'static str, run: Run) -> Scenario {
    Scenario {
        name,
        needs: Needs::OneNode,
        run,
    }
}

const fn with(name: &'static str, needs: Needs, run: Run) -> Scenario {
    Scenario { name, needs, run }
}

/// Every scenario, in run order.
pub const ALL: &[Scenario] = &[
    one("batch-exit-codes", batch::exit_codes),
    one("srun", steps::srun),
    one("srun-multi-task", steps::multi_task),
    one("salloc-srun", steps::salloc),
    one("srun-pty", pty::srun_pty),
    one("environment", environment::propagation),
    one("user-identity", environment::identity),
    one("signal", processes::signal),
    one("cancel-process-tree", processes::cancel_tree),
    one("setsid-escape", processes::setsid_escape),
    one("launch-failures", steps::launch_failures),
    one("memory-allocation", memory::allocation),
    one("time-limit", processes::time_limit),
    one("gres-serialise", gres::serialise),
    one("gres-release", gres::release),
    one("gres-accounting", gres::accounting),
    one("prolog-epilog", hooks::prolog_epilog),
    one("prolog-failure", hooks::prolog_failure),
    one("epilog-failure", hooks::epilog_failure),
    one("slurmd-restart-idle", restarts::slurmd_idle),
    one("slurmd-restart-running", restarts::slurmd_running),
    one("slurmctld-restart", restarts::slurmctld),
    one("sack-replace", sack::replacement_keeps_socket),
    one("slurmdbd-outage", accounting::dbd_outage),
    one("churn", churn::churn),
    with("nodes-span", Needs::Nodes(2), nodes::span),
    with("nodes-one-down", Needs::Nodes(2), nodes::one_down),
    with(
        "nodes-never-registers",
        Needs::Nodes(2),
        nodes::never_registers,
    ),
    with("mix-span", Needs::Mix, mix::span),
    with("mix-clients", Needs::Mix, mix::clients),
    // The proof of concept's test plan (../shared/docs/POC-DEFECTS.md section C), by its
    // SMD ID; docs/PARITY.md maps every ID.
    with("smd-204-gres-beside-gpu", Needs::Nodes(1), gpu_node::beside_gpu_job),
    with("smd-205-gres-fewer-gpus", Needs::Nodes(1), gpu_node::fewer_gpus),
    with("smd-206-gres-slurmd-restart", Needs::Nodes(1), gpu_node::slurmd_restart),
    with("smd-401-pmi2-kvs", Needs::Nodes(2), pmi2::across_nodes),
    with("smd-402-pmi2-mixed-builds", Needs::Mix, pmi2::across_builds),
    with("smd-404-configless", Needs::Nodes(1), configless::fetches_config),
    with("smd-405-backup-controller", Needs::Nodes(1), failover::backup_takes_over),
    with("smd-406-ipv6-loopback", Needs::Nodes(1), ipv6::loopback_end_to_end),
    with(
        "smd-408-dynamic-node",
        Needs::Nodes(1),
        dynamic::register_delete_register,
    ),
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

/// Run the selected scenarios in order.
pub fn run_all(sh: &Shell, cluster: &mut Cluster, only: &[String]) -> Vec<Outcome> {
    let mut results = Vec::new();
    for sc in ALL.iter().filter(|s| selected(s.name, only)) {
        let name = sc.name;
        if let Some(why) = sc.needs.unmet(cluster) {
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
                recover(sh, cluster);
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

/// After a failure: restart dead daemons (a paused one is resumed first), cancel every job,
/// clear the hook flags, resume every node that is not idle. Best effort, each problem
/// printed.
fn recover(sh: &Shell, cluster: &mut Cluster) {
    cluster.ready_timeout = super::handle::READY_TIMEOUT;
    for d in cluster.daemons() {
        cluster.resume(d).ok();
        if cluster.record(d).is_some() && !cluster.is_running(d) {
            println!("  recover: restarting {d}");
            if let Err(e) = cluster.start(sh, d) {
                println!("  recover: {d}: {e}");
            }
        }
    }
    let layout = cluster.layout();
    for f in ["prolog", "epilog"] {
        std::fs::remove_file(layout.fail_flag(f)).ok();
    }
    let ctx = match Ctx::new(sh, cluster, "recover") {
        Ok(c) => c,
        Err(e) => {
            println!("  recover: {e}");
            return;
        }
    };
    if let Err(e) = ctx.cancel_all() {
        println!("  recover: cancel: {e}");
    }
    for n in ctx.cluster.nodes() {
        let state = ctx.state_of(&n.name).map(|(s, _)| s).unwrap_or_default();
        if state != "IDLE" {
            println!("  recover: node {} is {state}; resuming it", n.name);
            let resume = format!("NodeName={}", n.name);
            ctx.run("scontrol", &["update", &resume, "State=RESUME"])
                .ok();
        }
    }
    if let Err(e) = ctx.wait_node_idle(Duration::from_secs(30)) {
        println!("  recover: {e}");
    }
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
    #![allow(non_snake_case)]
    use super::*;

    #[test]
    fn selected__prefix_filter() {
        assert!(selected("gres-release", &[]));
        assert!(selected("gres-release", &["gres".into()]));
        assert!(!selected("churn", &["gres".into(), "srun".into()]));
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
