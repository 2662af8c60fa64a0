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
mod environment;
mod gres;
mod hooks;
mod macos_native;
mod memory;
mod processes;
mod pty;
mod restarts;
mod sack;
mod steps;

use super::handle::{Cluster, DAEMONS, NODE};
use super::profile::Profile;
use super::procs::Liveness;
use crate::error::Result;
use client::Ctx;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use xshell::Shell;

type Run = fn(&mut Ctx<'_>) -> Result<String>;

/// Every scenario, in run order.
pub const ALL: &[(&str, Run)] = &[
    ("batch-exit-codes", batch::exit_codes),
    ("srun", steps::srun),
    ("srun-multi-task", steps::multi_task),
    ("salloc-srun", steps::salloc),
    ("srun-pty", pty::srun_pty),
    ("environment", environment::propagation),
    ("user-identity", environment::identity),
    ("signal", processes::signal),
    ("cancel-process-tree", processes::cancel_tree),
    ("setsid-escape", processes::setsid_escape),
    ("launch-failures", steps::launch_failures),
    ("memory-allocation", memory::allocation),
    ("time-limit", processes::time_limit),
    ("gres-serialise", gres::serialise),
    ("gres-release", gres::release),
    ("gres-accounting", gres::accounting),
    ("prolog-epilog", hooks::prolog_epilog),
    ("prolog-failure", hooks::prolog_failure),
    ("epilog-failure", hooks::epilog_failure),
    ("slurmd-restart-idle", restarts::slurmd_idle),
    ("slurmd-restart-running", restarts::slurmd_running),
    ("slurmctld-restart", restarts::slurmctld),
    ("sack-replace", sack::replacement_keeps_socket),
    ("slurmdbd-outage", accounting::dbd_outage),
    ("churn", churn::churn),
    ("bad-daemon-dies", bad_states::daemon_dies),
    ("bad-port-taken", bad_states::port_taken),
    ("bad-mariadb", bad_states::mariadb_fails),
    ("bad-leftover", bad_states::leftover),
    // The macOS process plugins (profile `macos-native` only, see `runs_under`).
    ("accounting-accuracy", macos_native::accounting_accuracy),
    ("memory-oom-kill", macos_native::memory_oom_kill),
    ("reparented-setsid", macos_native::reparented_setsid),
    ("double-fork-escape", macos_native::double_fork_escape),
    ("background-class", macos_native::background_class),
    ("binding-not-enforced", macos_native::binding_not_enforced),
];

/// Scenarios that need the `macos-native` profile's plugins.
pub const MACOS_NATIVE_ONLY: &[&str] = &[
    "accounting-accuracy",
    "memory-oom-kill",
    "reparented-setsid",
    "double-fork-escape",
    "background-class",
    "binding-not-enforced",
];

/// What CI runs under `macos-native` (the darwin personality): its own scenarios plus the
/// process-tree ones of every profile, with proctrack/darwin doing the tracking.
pub const MACOS_NATIVE_CI: &[&str] = &[
    "srun",
    "cancel-process-tree",
    "memory-allocation",
    "time-limit",
    "accounting-accuracy",
    "memory-oom-kill",
    "reparented-setsid",
    "double-fork-escape",
    "background-class",
    "binding-not-enforced",
];

/// Whether scenario `name` applies to a cluster of `profile`: the `macos-native` ones need
/// its plugins; `setsid-escape` shows proctrack/pgid's limit, which `macos-native`'s
/// proctrack/darwin does not have (`reparented-setsid` checks that instead).
pub fn runs_under(name: &str, profile: Profile) -> bool {
    let native = profile == Profile::MacosNative;
    if MACOS_NATIVE_ONLY.contains(&name) {
        return native;
    }
    !(native && name == "setsid-escape")
}

/// One scenario's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub name: &'static str,
    pub passed: bool,
    /// Passed as far as the build allows, with a documented gap (printed as GAP).
    pub gap: Option<String>,
    pub seconds: f64,
}

/// Whether `name` is selected by `only` (empty: all; else a prefix match).
pub fn selected(name: &str, only: &[String]) -> bool {
    only.is_empty() || only.iter().any(|o| name.starts_with(o.as_str()))
}

/// Run the selected scenarios in order.
pub fn run_all(sh: &Shell, cluster: &mut Cluster, only: &[String]) -> Vec<Outcome> {
    let mut results = Vec::new();
    let profile = cluster.state.profile;
    let elsewhere: Vec<&str> = ALL
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| selected(n, only) && !runs_under(n, profile))
        .collect();
    if !elsewhere.is_empty() {
        println!(
            "not for profile `{}` (they need another profile's plugins): {}",
            profile.name(),
            elsewhere.join(", ")
        );
    }
    for &(name, run) in ALL
        .iter()
        .filter(|(n, _)| selected(n, only) && runs_under(n, profile))
    {
        let marks = LogMarks::take(cluster);
        let t = Instant::now();
        let mut gap = None;
        let result = cluster
            .check_daemons()
            .and_then(|()| Ctx::new(sh, cluster, name))
            .and_then(|mut ctx| {
                let r = run(&mut ctx);
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
            seconds,
        });
    }
    results
}

/// After a failure: restart dead daemons, cancel every job, clear the hook flags, resume the
/// node. Best effort, each problem printed.
fn recover(sh: &Shell, cluster: &mut Cluster) {
    for d in DAEMONS {
        if cluster
            .daemon(d)
            .is_some_and(|r| r.liveness() != Liveness::Running)
        {
            println!("  recover: restarting {d}");
            if let Err(e) = cluster.start(sh, d, false) {
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
    let state = ctx.node_state().map(|(s, _)| s).unwrap_or_default();
    if state != "IDLE" {
        println!("  recover: node {NODE} is {state}; resuming it");
        let resume = format!("NodeName={NODE}");
        ctx.run("scontrol", &["update", &resume, "State=RESUME"])
            .ok();
        if let Err(e) = ctx.wait_node_idle(Duration::from_secs(30)) {
            println!("  recover: {e}");
        }
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
    fn runs_under__macos_native_scenarios_need_the_profile() {
        for n in MACOS_NATIVE_ONLY {
            assert!(ALL.iter().any(|(a, _)| a == n), "{n} is not a scenario");
            assert!(runs_under(n, Profile::MacosNative) && !runs_under(n, Profile::Default));
        }
        for n in MACOS_NATIVE_CI {
            assert!(ALL.iter().any(|(a, _)| a == n), "{n} is not a scenario");
            assert!(runs_under(n, Profile::MacosNative), "{n}");
        }
        assert!(!runs_under("setsid-escape", Profile::MacosNative));
        assert!(runs_under("setsid-escape", Profile::Default));
    }

    #[test]
    fn all__names_unique() {
        let mut names: Vec<&str> = ALL.iter().map(|(n, _)| *n).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len());
    }
}
