//! `cargo xtask cluster up|status|exec|test|down`: a live one-node Slurm cluster on loopback
//! from an installed prefix, with accounting in a private MariaDB, and the seed's
//! verification matrix as scenarios.
//!
//! - Daemons: a private `mariadbd` (own data directory, socket and port; never the system
//!   service), slurmdbd (accounting_storage/mysql), slurmctld and slurmd, all started detached
//!   (`-D` in their own session) and recorded with PID and start time in `cluster.toml`, so
//!   `down` stops exactly them, from another command and after a crash of the harness, and
//!   never a reused PID (see `procs.rs`, `state.rs`, `lifecycle.rs`).
//! - Everything lives in one directory (`--dir`, default `<tmp>/slurm-cluster-<name>`):
//!   `etc/` (generated `slurm.conf`, `gres.conf`, `slurmdbd.conf`, prolog/epilog, the
//!   auth/slurm key: 1024 random bytes, 0600), `state/`, `spool/`, `log/`, `pid/`, `jobs/`,
//!   `mysql/`, `run/`.
//! - Ports: four free ports on 127.0.0.1 picked at `up`.
//! - Side by side: Slurm 24.11's auth/slurm has fixed SACK socket paths under `/run`
//!   (DARWIN-CATALOG B2), and every client asks a SACK socket for its credential (only the
//!   daemons read the key; auth_slurm.c `run_in_daemon`). As root, each daemon and each client
//!   command runs in a private mount namespace with the cluster's `run/` bind-mounted on
//!   `/run`; `cargo xtask cluster exec --name N -- CMD` runs any command that way. Without
//!   root, there is no isolation: one cluster at a time, and the two `/run` directories must
//!   exist and belong to the user.
//! - GRES: `gres.conf` is `Name=gpu Type=apple File=/dev/null`, the documented placeholder:
//!   Slurm counts and allocates the GPU, nothing is isolated.
//! - `test` is `up`, the scenarios (`scenarios/`, one file per area; `--only NAME` filters),
//!   then `down`. Each scenario prints PASS/FAIL with its time and, on failure, the daemon log
//!   lines written while it ran.

mod bench;
mod bench_acct;
mod config;
pub mod daemon;
pub mod gaps;
pub mod handle;
mod host;
mod jobs;
mod lab;
pub mod lifecycle;
mod lock;
mod mariadb;
pub mod nodes;
pub mod peer;
mod private_ns;
mod procs;
pub mod profile;
mod render;
pub(crate) mod scenarios;
mod soak;
mod start;
mod state;
mod tls;
mod upgrade;
pub mod user;

pub use bench::ci_launch as launch_bench_smoke;
#[cfg(test)]
pub use config::free_ports;
pub use lifecycle::{UpOptions, default_dir, down, up};

use crate::cli::{ClusterAction, ClusterArgs, ClusterTarget, ProfileArg, ShapeArgs};
use driver_common::error::{Error, Result};
use driver_common::staging::name_part;
use std::path::{Path, PathBuf};
use std::time::Instant;
use xshell::Shell;

pub fn run(sh: &Shell, root: &Path, args: ClusterArgs) -> Result<()> {
    match args.action {
        ClusterAction::Peer(args) => peer::run(sh, root, args),
        ClusterAction::Soak(args) => soak::run(sh, args),
        ClusterAction::Bench(args) => bench::run(sh, root, args),
        ClusterAction::BenchAcct(args) => bench_acct::run(sh, args),
        ClusterAction::Up {
            shape,
            target,
            profile,
        } => {
            let opts = shape.up_options_of(&target, "default", &profile)?;
            up(sh, &opts).map(|_| ())
        }
        ClusterAction::Profiles => {
            print!("{}", profile::markdown());
            Ok(())
        }
        ClusterAction::Status { target } => lifecycle::status(&target.resolve("default")?.1),
        ClusterAction::Down { target } => down(&target.resolve("default")?.1),
        ClusterAction::Exec {
            target,
            node,
            command,
        } => {
            let code = lifecycle::exec(&target.resolve("default")?.1, node.as_deref(), &command)?;
            if code == 0 {
                Ok(())
            } else {
                Err(Error::Scenario(format!(
                    "command exited with status {code}"
                )))
            }
        }
        ClusterAction::Test {
            shape,
            target,
            only,
            keep,
            profile,
            upgrade_to,
        } => {
            let mut up = shape.up_options_of(&target, "test", &profile)?;
            up.upgrade_to = upgrade_to;
            test(sh, &TestOptions { up, only, keep })
        }
    }
}

impl ShapeArgs {
    /// `up_options` for the cluster `target` names (`default_name` when it names none), with
    /// `--profile`.
    fn up_options_of(
        &self,
        target: &ClusterTarget,
        default_name: &str,
        profile: &ProfileArg,
    ) -> Result<UpOptions> {
        let (name, dir) = target.resolve(default_name)?;
        let mut opts = self.up_options(name, dir)?;
        opts.profile = profile.profile;
        Ok(opts)
    }

    /// `up`'s options for cluster `name` in `dir`: one build or the `--mix`, and the nodes.
    pub fn up_options(&self, name: String, dir: PathBuf) -> Result<UpOptions> {
        let mut opts = match (&self.prefix, &self.mix) {
            (Some(p), None) => UpOptions::new(p.clone(), name, dir),
            (None, Some(mix)) => {
                let mut o = UpOptions::new(PathBuf::new(), name, dir);
                o.builds = nodes::parse_mix(mix)?;
                o
            }
            _ => {
                return Err(Error::Usage(
                    "give either --prefix P or --mix LABEL=PREFIX,... (not both)".into(),
                ));
            }
        };
        opts.nodes = self.nodes;
        opts.tls = self.tls;
        Ok(opts)
    }
}

impl ClusterTarget {
    /// (name, directory): `--dir` wins, else the default directory of `--name` (or `default`).
    pub fn resolve(&self, default_name: &str) -> Result<(String, PathBuf)> {
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| default_name.to_string());
        check_name(&name)?;
        let dir = self.dir.clone().unwrap_or_else(|| default_dir(&name));
        Ok((name, dir))
    }
}

/// A cluster name becomes Slurm's ClusterName and MariaDB table names: lowercase letters,
/// digits and `_`, starting with a letter.
fn check_name(name: &str) -> Result<()> {
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 40;
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "cluster name `{name}`: use lowercase letters, digits and `_`, starting with a letter (it becomes Slurm's ClusterName and MariaDB table names)"
        )))
    }
}

/// What `cluster test` runs.
#[derive(Debug, Clone)]
pub struct TestOptions {
    /// The cluster: builds, nodes, name, directory, profile.
    pub up: UpOptions,
    /// Scenario names (or name prefixes) to run; empty: all.
    pub only: Vec<String>,
    /// Leave the cluster running afterwards.
    pub keep: bool,
}

/// Hold the cluster's lock, stop what an earlier run left running in its directory (said
/// so), and start it: what `test` and `soak` begin with.
pub fn fresh_up(
    sh: &Shell,
    opts: &UpOptions,
) -> Result<(nix::fcntl::Flock<std::fs::File>, handle::Cluster)> {
    let (name, dir) = (&opts.name, &opts.dir);
    let lock = lock::lock(name, dir)?;
    if let Some(old) = state::State::load(dir)? {
        let running = old.running();
        if !running.is_empty() {
            println!(
                "cluster `{}` from an earlier run still runs in {} ({}); stopping it first",
                old.name,
                dir.display(),
                running
                    .iter()
                    .map(|d| format!("{} pid {}", d.name, d.pid))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            down(dir)?;
        }
    }
    Ok((lock, up(sh, opts)?))
}

/// `down`, or with `keep` the command that will stop the cluster later.
pub fn down_unless_kept(dir: &Path, keep: bool) -> Result<()> {
    if keep {
        println!(
            "cluster kept running (--keep): `cargo xtask cluster down --dir {}`",
            dir.display()
        );
        Ok(())
    } else {
        down(dir)
    }
}

/// The verdict of `cluster test` on its scenarios: the failures, and with them what the
/// expected-gaps check found, in one error.
fn failures_and_gaps(failed: usize, dir: &Path, gaps: Result<()>) -> Result<()> {
    if failed == 0 {
        return gaps;
    }
    let mut message = format!(
        "{failed} scenario(s) failed; files kept in {}",
        dir.display()
    );
    if let Err(e) = gaps {
        message.push_str(&format!("\n{e}"));
    }
    Err(Error::Scenario(message))
}

/// `up`, the scenarios, `down`. A cluster left running in the directory by an earlier run is
/// stopped first (said so). The directory is removed when everything passed.
pub fn test(sh: &Shell, opts: &TestOptions) -> Result<()> {
    let start = Instant::now();
    let dir = &opts.up.dir;
    gaps::check_darwin_builds(opts.up.builds.iter().map(|b| b.prefix.as_path()))?;
    let (_lock, mut cluster) = fresh_up(sh, &opts.up)?;
    let results = scenarios::run_all(sh, &mut cluster, &opts.only);
    let down_result = down_unless_kept(dir, opts.keep);
    let failed = print_results(&cluster, &results, start);
    down_result?;
    // Judged even when a scenario failed, so an unlisted gap is not hidden behind it.
    let gaps = gaps::check_cluster(&cluster, &results);
    failures_and_gaps(failed, dir, gaps)?;
    if results.iter().all(|r| r.skipped.is_some()) {
        return Err(Error::Usage(format!(
            "no scenario ran: none matches --only {:?} and this cluster ({} node(s))",
            opts.only,
            cluster.nodes().len()
        )));
    }
    if !opts.keep {
        std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(())
}

/// The table of scenario results and the closing `N passed, N failed, N skipped` line;
/// returns the number that failed.
fn print_results(
    cluster: &handle::Cluster,
    results: &[scenarios::Outcome],
    start: Instant,
) -> usize {
    let failed = results.iter().filter(|r| !r.passed).count();
    let skipped = results
        .iter()
        .filter(|r| r.passed && (r.gap.is_some() || r.skipped.is_some()))
        .count();
    let passed = results.len() - failed - skipped;
    let s = &cluster.state;
    println!(
        "\ncluster test `{}` ({}, {} node(s), profile `{}`):",
        cluster.name(),
        s.prefix.display(),
        s.nodes.len(),
        s.profile.name()
    );
    for r in results {
        println!(
            "  {:<4} {:<28} {:>6.1}s",
            match (r.passed, &r.gap, &r.skipped) {
                (false, _, _) => "FAIL",
                (true, _, Some(_)) => "SKIP",
                (true, Some(_), None) => "GAP",
                (true, None, None) => "PASS",
            },
            r.name,
            r.seconds
        );
    }
    println!("  total {:.1}s", start.elapsed().as_secs_f64());
    for r in results.iter().filter(|r| r.passed) {
        if let Some(why) = &r.gap {
            println!("  skipped as a documented gap: {}: {why}", r.name);
        }
        if let Some(why) = &r.skipped {
            println!("  skipped: {}: {why}", r.name);
        }
    }
    println!("scenarios: {passed} passed, {failed} failed, {skipped} skipped");
    failed
}

/// The scenarios of `smoke`.
const SMOKE: [&str; 3] = ["batch-exit-codes", "srun", "cancel-process-tree"];

/// The quick live-cluster check `cargo xtask ci` runs on a built prefix (batch job with exit
/// codes in sacct, srun, cancel of a process tree), in a cluster named after the prefix's
/// staged build (so native and darwin do not collide). `test` runs every scenario.
pub fn smoke(sh: &Shell, _root: &Path, prefix: &Path) -> Result<()> {
    test(sh, &ci_options(prefix, &SMOKE)?)
}

/// Every scenario on a built prefix, as `cargo xtask cluster test` runs them, in a cluster
/// named after the prefix's staged build (what `cargo xtask ci` runs on the darwin
/// personality).
pub fn scenarios(sh: &Shell, prefix: &Path) -> Result<()> {
    test(sh, &ci_options(prefix, &[])?)
}

/// The `macos-native` profile's CI scenarios (the macOS process plugins of patches
/// 0040-0044) on a built darwin-personality prefix, in the same named cluster as
/// [`scenarios`] (one after the other, never together).
pub fn macos_native_scenarios(sh: &Shell, prefix: &Path) -> Result<()> {
    for (name, why) in scenarios::macos_native_local() {
        println!("SKIP {name} (not in CI): {why}; run it with --only {name}");
    }
    let mut opts = ci_options(prefix, &scenarios::macos_native_ci())?;
    opts.up.profile = profile::Profile::MacosNative;
    test(sh, &opts)
}

/// The scenarios CI leaves out (marked local: minutes of waiting each) that a cluster of one
/// darwin node runs, under `profile` (`default` or `macos-native`), in the same named cluster
/// as [`scenarios`]: what `cargo xtask lines verify` adds to CI's lanes. Ok without running
/// anything when the profile has none.
pub fn local_scenarios(sh: &Shell, prefix: &Path, profile: profile::Profile) -> Result<()> {
    let only = scenarios::local_for(profile);
    if only.is_empty() {
        println!("no local scenario under profile `{}`", profile.name());
        return Ok(());
    }
    let mut opts = ci_options(prefix, &only)?;
    opts.up.profile = profile;
    test(sh, &opts)
}

/// The scenarios CI runs under profile `site` (a cgroup site's slurm.conf and cgroup.conf,
/// as configless hands them to a Mac; patch 0064): slurmd starts and says what it runs
/// instead, batch, srun, cancel, sstat, accounting, and a configless node.
pub const SITE_CI: [&str; 7] = [
    "site-plugins-mapped",
    "batch-exit-codes",
    "srun-multi-task",
    "cancel-process-tree",
    "memory-allocation",
    "smd-304-sstat-running-step",
    "smd-404-configless",
];

/// [`SITE_CI`] on a darwin-personality install.
pub fn site_scenarios(sh: &Shell, prefix: &Path) -> Result<()> {
    let only: Vec<&str> = SITE_CI.to_vec();
    let mut opts = ci_options(prefix, &only)?;
    opts.up.profile = profile::Profile::Site;
    test(sh, &opts)
}

/// The multi-node scenarios CI runs: a cluster of 3 nodes, the first two of the native build
/// (with slurmctld and slurmdbd), the third of the darwin personality; with PMI-2 across
/// them (smd-401, smd-402: under a second together).
pub fn multi_node_smoke(sh: &Shell, native: &Path, darwin: &Path) -> Result<()> {
    let mut up = native_and_darwin(&line_name("ci_multi_node", darwin)?, native, darwin);
    up.nodes = Some(3);
    test(
        sh,
        &TestOptions {
            up,
            only: vec![
                "nodes-".into(),
                "mix-".into(),
                "smd-401".into(),
                "smd-402".into(),
            ],
            keep: false,
        },
    )
}

/// A cluster name of `what` for the version `prefix` holds (`ci_soak_25_05_8`), so that two
/// `lines verify` runs of different lines at once do not refuse each other's cluster.
fn line_name(what: &str, prefix: &Path) -> Result<String> {
    let version = driver_common::staging::Manifest::read(prefix)?.version;
    Ok(format!("{what}_{}", name_part(&version)))
}

/// `up`'s options for cluster `name`: a native head and darwin nodes (`--mix native=..,darwin=..`).
fn native_and_darwin(name: &str, native: &Path, darwin: &Path) -> UpOptions {
    let mut up = UpOptions::new(PathBuf::new(), name.to_string(), default_dir(name));
    up.builds = [("native", native), ("darwin", darwin)]
        .into_iter()
        .map(|(label, prefix)| nodes::Build {
            label: label.into(),
            prefix: prefix.to_path_buf(),
        })
        .collect();
    up
}

/// Slurm's TLS between a native head and a darwin node (`lines verify` on 25.05 and later;
/// both builds made with `build-slurm --with-s2n`): smd-407 and the mix scenarios on a
/// two-node `--tls` cluster.
pub fn tls_mix(sh: &Shell, native: &Path, darwin: &Path) -> Result<()> {
    let mut up = native_and_darwin(&line_name("tls_mix", darwin)?, native, darwin);
    up.nodes = Some(2);
    up.tls = true;
    test(
        sh,
        &TestOptions {
            up,
            only: vec!["smd-407".into(), "mix-".into()],
            keep: false,
        },
    )
}

/// The short soak CI runs: 300 jobs, 2 faults, a fixed seed (a failure repeats with it).
/// slurmd's flatness decides; slurmctld's series is printed, not judged: its RSS rises for
/// minutes after every start, on the native build as on the darwin one (docs/CLUSTER.md, "Soak"), so
/// a two-minute run cannot tell a leak from that rise; the local 10,000-job run judges it.
pub fn short_soak(sh: &Shell, prefix: &Path) -> Result<()> {
    soak::run(sh, short_soak_args(prefix, &line_name("ci_soak", prefix)?)?)
}

/// The short soak's arguments, through the command line (so they stay what docs/CLUSTER.md says).
fn short_soak_args(prefix: &Path, name: &str) -> Result<crate::cli::SoakArgs> {
    use clap::Parser;
    let line = [
        "cargo xtask",
        "cluster",
        "soak",
        "--name",
        name,
        "--jobs",
        "300",
        "--faults",
        "--fault-count",
        "2",
        "--seed",
        "20261201",
        "--judge",
        "slurmd",
    ];
    let mut args: Vec<std::ffi::OsString> = line.iter().map(Into::into).collect();
    args.extend(["--prefix".into(), prefix.as_os_str().to_owned()]);
    let cli = crate::cli::ClusterCli::try_parse_from(args)
        .map_err(|e| Error::Usage(format!("the CI soak's own command line: {e}")))?;
    match cli.command {
        crate::cli::ClusterCommand::Cluster(ClusterArgs {
            action: ClusterAction::Soak(a),
        }) => Ok(a),
        _ => Err(Error::Usage(
            "the CI soak's command line is not `cluster soak`".into(),
        )),
    }
}

/// `cluster test` options for CI: a cluster named after the prefix's staged build
/// (`ci_<version>_<personality>`, so native and darwin do not collide).
fn ci_options(prefix: &Path, only: &[&str]) -> Result<TestOptions> {
    let name = format!(
        "ci_{}",
        driver_common::staging::Manifest::read(prefix)?.slug()
    );
    let dir = default_dir(&name);
    Ok(TestOptions {
        up: UpOptions::new(prefix.to_path_buf(), name, dir),
        only: only.iter().map(|s| s.to_string()).collect(),
        keep: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_and_gaps__a_failure_does_not_hide_an_unlisted_gap() {
        let dir = Path::new("/c");
        let gap = || Err(Error::Scenario("GAP x is not an expected gap".into()));
        let e = failures_and_gaps(1, dir, gap()).unwrap_err().to_string();
        assert!(
            e.contains("1 scenario(s) failed") && e.contains("GAP x is not"),
            "{e}"
        );
        let e = failures_and_gaps(0, dir, gap()).unwrap_err().to_string();
        assert!(!e.contains("failed") && e.contains("GAP x"), "{e}");
        let e = failures_and_gaps(2, dir, Ok(())).unwrap_err().to_string();
        assert!(e.contains("2 scenario(s) failed; files kept in /c"), "{e}");
        assert!(failures_and_gaps(0, dir, Ok(())).is_ok());
    }

    #[test]
    fn short_soak_args__parse_with_faults_and_a_fixed_seed() {
        let a = short_soak_args(Path::new("/p"), "ci_soak_24_11_5").unwrap();
        assert_eq!(
            (a.jobs, a.faults, a.fault_count, a.seed),
            (300, true, Some(2), Some(20261201))
        );
        assert_eq!(a.shape.prefix.as_deref(), Some(Path::new("/p")));
        assert_eq!(a.judge, "slurmd");
        assert_eq!(a.target.name.as_deref(), Some("ci_soak_24_11_5"));
    }

    /// Each line's clusters of a `lines verify` have their own names (two lines verified at
    /// once refused each other's `ci_soak` and `ci_multi_node` before), and every such name is
    /// one Slurm and SQL accept.
    #[test]
    fn name_part__distinct_per_line_and_a_valid_cluster_name() {
        let versions = ["24.11.5", "25.05.8", "25.11.7", "26.05.3", "26.11-snapshot"];
        let slugs: std::collections::BTreeSet<String> =
            versions.iter().map(|v| name_part(v)).collect();
        assert_eq!(slugs.len(), versions.len(), "{slugs:?}");
        assert_eq!(name_part("26.11-snapshot"), "26_11_snapshot");
        for what in ["ci_soak", "ci_multi_node", "tls_mix"] {
            for s in &slugs {
                check_name(&format!("{what}_{s}")).unwrap();
            }
        }
    }

    #[test]
    fn check_name__slurm_and_sql_safe() {
        for good in ["native", "darwin", "ci_24_11_5_darwin", "test2"] {
            check_name(good).unwrap();
        }
        for bad in ["", "2x", "Native", "a-b", "a b", "a/b"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
