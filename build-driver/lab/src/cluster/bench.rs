//! `cargo xtask cluster bench --native P1 --darwin P2`: benchmarks, not tests, of a native and a
//! darwin-personality build of one release, side by side.
//!
//! Two modes, each running one cluster at a time (lab.rs, in the private mount namespace), the
//! builds' order alternating between rounds so neither always runs on a warmer machine, with
//! the load average printed beside every figure (the figures are only as quiet as the machine):
//!
//! * batch (default, [`batch`]): `--jobs` trivial batch jobs submitted by `--clients`
//!   concurrent submitters; time to drain, jobs/s and submit-to-start latency.
//! * step launch (`--launch`, [`launch`]): `srun -n1 /bin/true` and `srun -n4 /bin/true` wall
//!   time (`--runs` each), `--steps` `srun` steps inside one `salloc -n1`; per build the CPU
//!   time of slurmd and of slurmstepd per step ([`cpu`]) and, for the darwin build, the shim's
//!   calls per step by API ([`shim_counts`]).
//!
//! Both run the daemons without the shim's emulation log ([`no_emulation_log`]): it is the
//! lab's diagnostic, which no Mac runs, and with it each new process of the darwin build
//! resolves its first reports' call sites with `dladdr` (about 2 ms a batch job).

mod batch;
mod cpu;
mod launch;
mod shim_counts;

use super::private_ns::{self, Entered};
use super::profile::Profile;
pub use crate::cli::BenchArgs;
use driver_common::error::{Error, Result};
use std::path::{Path, PathBuf};
use xshell::Shell;

/// The daemons' environment entry that turns the shim's emulation log off (an empty
/// `SLURM_SHIM_EMULATION_LOG`: shim/src/emulate/report.rs, `log_wanted`).
pub fn no_emulation_log() -> (String, String) {
    (super::config::EMULATION_LOG_ENV.to_string(), String::new())
}

/// The partition every benchmark job goes to.
const PARTITION: &str = "bench";

pub fn run(sh: &Shell, _root: &Path, args: BenchArgs) -> Result<()> {
    if private_ns::enter(sh, "cluster bench", &argv(&args))? == Entered::Done {
        return Ok(());
    }
    if args.rounds == 0 {
        return Err(Error::Usage("--rounds must be at least 1".into()));
    }
    let builds = [
        Build::new("native", &args.native)?,
        Build::new("darwin", &args.darwin)?,
    ];
    if args.launch {
        launch::run(sh, &builds, &args)
    } else {
        batch::run(sh, &builds, &args)
    }
}

/// The launch mode with tiny counts (CI's step: seconds of work, so the command cannot rot;
/// its figures are not judged, only that every series ran and was measured).
pub fn ci_launch(sh: &Shell, root: &Path, native: &Path, darwin: &Path) -> Result<()> {
    let args = BenchArgs {
        native: native.to_path_buf(),
        darwin: darwin.to_path_buf(),
        rounds: 1,
        jobs: 1,
        clients: 1,
        launch: true,
        runs: 3,
        steps: 3,
        profile: Profile::Default,
    };
    run(sh, root, args)
}

/// The command line that runs `args` again (inside the private mount namespace).
fn argv(args: &BenchArgs) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = vec!["cluster".into(), "bench".into()];
    v.extend(["--native".into(), args.native.clone().into_os_string()]);
    v.extend(["--darwin".into(), args.darwin.clone().into_os_string()]);
    for (k, n) in [
        ("rounds", args.rounds),
        ("jobs", args.jobs),
        ("clients", args.clients),
        ("runs", args.runs),
        ("steps", args.steps),
    ] {
        v.push(format!("--{k}={n}").into());
    }
    if args.launch {
        v.push("--launch".into());
    }
    v.push(format!("--profile={}", args.profile.name()).into());
    v
}

/// One build under test.
#[derive(Debug, Clone)]
pub struct Build {
    pub name: &'static str,
    pub prefix: PathBuf,
}

impl Build {
    fn new(name: &'static str, prefix: &Path) -> Result<Build> {
        let prefix = std::path::absolute(prefix).map_err(|e| Error::io(prefix, e))?;
        super::host::check_prefix(&prefix)?;
        Ok(Build { name, prefix })
    }
}

/// The builds' indices in `round`: native first in even rounds, darwin first in odd ones.
pub fn order(round: usize) -> [usize; 2] {
    if round % 2 == 0 { [0, 1] } else { [1, 0] }
}

/// The benchmark's `slurm.conf` lines on top of the profile: CPUs (not memory) consumable, no
/// scheduler delay (with the defaults a one-node cluster on 2 CPUs starts 2 trivial jobs every
/// 3 s: a timer would be measured, not the daemons), room for `jobs` jobs (MinJobAge keeps
/// finished ones for 300 s, lab.rs), and the partition `bench` with 16 jobs per CPU.
pub fn conf_lines(jobs: usize) -> Vec<String> {
    vec![
        "SelectTypeParameters=CR_CPU".to_string(),
        "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0".to_string(),
        format!("MaxJobCount={}", jobs * 2 + 100),
        format!(
            "PartitionName={PARTITION} Nodes={} OverSubscribe=FORCE:16 MaxTime=INFINITE State=UP",
            super::nodes::node_name(0)
        ),
    ]
}

/// Nearest-rank percentile (`p` in 0..=100) of a non-empty sample.
pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// The median (the mean of the middle two for an even count); `v` must not be empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub(super) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

pub(super) fn work_dir() -> Result<PathBuf> {
    driver_common::util::fs::new_work_dir("xtask-bench", 0o755)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile__nearest_rank() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        v.reverse();
        assert_eq!(percentile(&mut v, 50.0), 50.0);
        assert_eq!(percentile(&mut v, 99.0), 99.0);
        assert_eq!(percentile(&mut v, 100.0), 100.0);
        assert_eq!(percentile(&mut [7.0], 99.0), 7.0);
        assert_eq!(percentile(&mut [1.0, 2.0, 3.0], 0.0), 1.0);
    }

    #[test]
    fn median__odd_and_even() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn argv__round_trips_through_the_cli() {
        use clap::Parser;
        let args = BenchArgs {
            native: "/n".into(),
            darwin: "/d".into(),
            rounds: 3,
            jobs: 40,
            clients: 4,
            launch: true,
            runs: 7,
            steps: 5,
            profile: Profile::Poc,
        };
        let mut line: Vec<std::ffi::OsString> = vec!["cargo xtask".into()];
        line.extend(argv(&args));
        let cli = crate::cli::ClusterCli::try_parse_from(line).unwrap();
        let crate::cli::ClusterCommand::Cluster(c) = cli.command;
        let crate::cli::ClusterAction::Bench(b) = c.action else {
            panic!("not bench")
        };
        assert_eq!(
            (
                b.native, b.darwin, b.rounds, b.jobs, b.clients, b.launch, b.runs, b.steps
            ),
            (args.native, args.darwin, 3, 40, 4, true, 7, 5)
        );
        assert_eq!(b.profile.name(), "poc");
    }

    #[test]
    fn order__alternates_by_round() {
        assert_eq!(order(0), [0, 1]);
        assert_eq!(order(1), [1, 0]);
        assert_eq!(order(2), [0, 1]);
    }
}
