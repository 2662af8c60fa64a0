//! The daemons' descriptors, threads and RSS over a soak, and whether they stayed flat.
//!
//! A sample is taken every few seconds of every slurmctld and slurmd (from the cluster record
//! on disk, so restarts by the faults are followed). A restarted daemon is a new process whose
//! figures start afresh, so each process (daemon and PID) is judged on its own samples, after
//! its warm-up ([`warmup_s`]): [`STARTUP_S`] seconds for every daemon (plugins loaded, caches
//! filled, state recovered), and for slurmctld also the time its job table takes to reach its
//! steady size ([`job_table_fill_s`]: a finished job stays `MinJobAge` seconds, then up to one
//! purge interval). After that: flat when the median of the last tenth exceeds the median of
//! the first tenth by at most 5 %, a fall being no leak (RSS; threads too, but at least two
//! threads: each RPC in flight holds a thread, as it holds a descriptor, and 5 % of a
//! slurmd's 13 threads is less than one; CI's short soak saw a leak-free slurmd at 14 -> 16)
//! and at most 2 above (descriptors). A
//! tenth is at least [`MIN_TENTH`] samples, so one busy moment does not make a median. A
//! process with fewer than [`MIN_SAMPLES`] judged samples is printed but not judged (it did
//! not live long enough to show a trend).
//!
//! RSS is judged with glibc's malloc held to one arena and a fixed mmap threshold
//! ([`ALLOCATOR_ENV`], given to every Slurm daemon of the soak). With its default (8 arenas
//! per core), slurmctld (83 threads on 2 cores) has 15 arenas, each keeping the high-water
//! mark of what was ever allocated in it: in the soaks of 2026-12-01 its malloc_stats() showed
//! 22-26 MB taken from the system for 10-12 MB in use (native build; darwin 15-19 MB for
//! 8-10 MB). With one arena the gap was 3-4 MB (13 MB for 10 MB), but RSS still rose in steps
//! of a few MB (two soaks of 2026-12-01): glibc's mmap threshold is dynamic (mallopt(3)): once
//! an mmapped block of S bytes is freed, blocks up to S come from the heap, whose pages stay
//! below the small objects allocated beside them, so each larger pack buffer (a state save, a
//! big reply) lifts the heap for good. Fixing the threshold at its default
//! (`MALLOC_MMAP_THRESHOLD_`, with `MALLOC_TRIM_THRESHOLD_`: setting either ends the dynamic
//! adjustment) keeps such buffers mmapped and returned; `tests/heap-steps/heap_steps.c` shows
//! both (a test below). Then RSS follows the bytes in use, which is what a leak grows.
//! macOS's allocator (libmalloc's per-CPU magazines) is not glibc's, so the settings change
//! no behaviour the port depends on. Even so, slurmctld's bytes in use rose for its first
//! 5-6 minutes (7 -> 10 MB) and then levelled off, native and darwin builds alike, so its
//! warm-up is at least [`SLURMCTLD_SETTLE_S`]: judged from its start, a lifetime of a few
//! minutes is judged on that rise, and a leak is what keeps growing after it.

use std::fmt::Write as _;

/// Fewer samples than this (after the warm-up): not judged.
pub const MIN_SAMPLES: usize = 20;
/// Seconds of every process's start that are not judged (start-up).
pub const STARTUP_S: f64 = 30.0;
/// What every Slurm daemon of a soak runs with: glibc's malloc with one arena and its mmap
/// and trim thresholds fixed at their defaults, 128 KiB (module doc).
pub const ALLOCATOR_ENV: &[(&str, &str)] = &[
    ("MALLOC_ARENA_MAX", "1"),
    ("MALLOC_MMAP_THRESHOLD_", "131072"),
    ("MALLOC_TRIM_THRESHOLD_", "131072"),
];

/// `ALLOCATOR_ENV` as `K=V K=V ...`, for the report.
pub fn allocator_env_shown() -> String {
    let all: Vec<String> = ALLOCATOR_ENV
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    all.join(" ")
}
/// Allowed change of the median, RSS and threads.
pub const PERCENT: f64 = 5.0;
/// Allowed change of the thread count's median, at least (threads in flight).
pub const THREADS: f64 = 2.0;
/// The fewest samples a "tenth" holds (short runs).
pub const MIN_TENTH: usize = 5;
/// Allowed change of the median, descriptors.
pub const FDS: f64 = 2.0;

/// Seconds until slurmctld's job table is at its steady size, for a `MinJobAge` of
/// `min_job_age` s: a finished job stays that long, and slurmctld purges old jobs every
/// `MAX(10, MinJobAge)` s when MinJobAge is under 60 s, else every 60 s (24.11.5,
/// src/slurmctld/controller.c, `_slurmctld_background`, PURGE_JOB_INTERVAL).
pub fn job_table_fill_s(min_job_age: u64) -> f64 {
    let purge = if min_job_age < 60 {
        min_job_age.max(10)
    } else {
        60
    };
    (min_job_age + purge) as f64
}

/// Seconds a slurmctld's heap takes to settle under the soak's job stream: its bytes in use
/// (glibc's `malloc_stats()`) rose for its first 5-6 minutes and then levelled off, native
/// and darwin builds alike (soaks of 2026-12-01, module doc).
pub const SLURMCTLD_SETTLE_S: f64 = 360.0;

/// Seconds of a process of `daemon` (`slurmctld`, `slurmd-node1`, ...) that are not judged:
/// start-up, and for slurmctld its job table filling under the clusters' `MinJobAge` or its
/// heap settling ([`SLURMCTLD_SETTLE_S`]), whichever is longer.
pub fn warmup_s(daemon: &str) -> f64 {
    if daemon == "slurmctld" {
        (STARTUP_S + job_table_fill_s(crate::cluster::config::MIN_JOB_AGE_S))
            .max(SLURMCTLD_SETTLE_S)
    } else {
        STARTUP_S
    }
}

/// One sample of one process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Seconds since the soak started.
    pub t: f64,
    pub fds: u64,
    pub threads: u64,
    pub rss_kb: u64,
}

/// Every sample of one process.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub daemon: String,
    pub pid: u32,
    pub samples: Vec<Sample>,
}

/// The median of a tenth (at least one sample) of `v`, from the start or the end.
fn tenth_median(v: &[f64], last: bool) -> f64 {
    let n = (v.len() / 10).max(MIN_TENTH).min(v.len()).max(1);
    let part = if last { &v[v.len() - n..] } else { &v[..n] };
    crate::cluster::bench::median(part.to_vec())
}

/// One figure's verdict: first and last tenth's medians, and whether they are close enough.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    pub first: f64,
    pub last: f64,
    pub flat: bool,
}

/// Flat when the last median exceeds the first by at most `percent` % of the first, and at
/// least by `absolute`. A fall is no leak: a soak's first judged samples can catch RPCs in
/// flight, each holding a descriptor and a thread.
fn trend(v: &[f64], percent: f64, absolute: f64) -> Trend {
    let (first, last) = (tenth_median(v, false), tenth_median(v, true));
    let bound = (first.abs() * percent / 100.0).max(absolute);
    Trend {
        first,
        last,
        flat: last - first <= bound,
    }
}

/// The verdict on one process.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub fds: Trend,
    pub threads: Trend,
    pub rss: Trend,
}

impl Verdict {
    pub fn flat(&self) -> bool {
        self.fds.flat && self.threads.flat && self.rss.flat
    }
}

impl Series {
    /// The samples after the process's warm-up.
    pub fn judged(&self) -> &[Sample] {
        let Some(first) = self.samples.first() else {
            return &[];
        };
        let from = self
            .samples
            .iter()
            .position(|s| s.t >= first.t + warmup_s(&self.daemon))
            .unwrap_or(self.samples.len());
        &self.samples[from..]
    }

    /// None when the process has too few samples after its warm-up to judge.
    pub fn verdict(&self) -> Option<Verdict> {
        let judged = self.judged();
        if judged.len() < MIN_SAMPLES {
            return None;
        }
        let col =
            |f: fn(&Sample) -> u64| -> Vec<f64> { judged.iter().map(|s| f(s) as f64).collect() };
        Some(Verdict {
            fds: trend(&col(|s| s.fds), 0.0, FDS),
            threads: trend(&col(|s| s.threads), PERCENT, THREADS),
            rss: trend(&col(|s| s.rss_kb), PERCENT, 0.0),
        })
    }

    /// The series, at most `width` values per figure (evenly picked), and the verdict.
    pub fn report(&self, width: usize) -> String {
        let n = self.samples.len();
        let step = n.div_ceil(width.max(1)).max(1);
        let picked: Vec<&Sample> = self.samples.iter().step_by(step).collect();
        let row = |f: fn(&Sample) -> u64| {
            picked
                .iter()
                .map(|s| f(s).to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let span = match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) => format!("{:.0}-{:.0} s", a.t, b.t),
            _ => "no samples".into(),
        };
        let mut out = format!(
            "  {} pid {}: {n} samples ({span}, every {step}th shown)\n",
            self.daemon, self.pid
        );
        let _ = writeln!(out, "    fds     {}", row(|s| s.fds));
        let _ = writeln!(out, "    threads {}", row(|s| s.threads));
        let _ = writeln!(out, "    rss kB  {}", row(|s| s.rss_kb));
        let warmup = warmup_s(&self.daemon);
        match self.verdict() {
            None => {
                let _ = writeln!(
                    out,
                    "    not judged: fewer than {MIN_SAMPLES} samples after its first {warmup:.0} s (a short run, or restarted by a fault)"
                );
            }
            Some(v) => {
                let line = |name: &str, t: Trend, bound: &str| {
                    format!(
                        "{name} {:.0} -> {:.0} ({bound}) {}",
                        t.first,
                        t.last,
                        if t.flat { "flat" } else { "NOT FLAT" }
                    )
                };
                let _ = writeln!(
                    out,
                    "    first/last tenth medians after {warmup:.0} s: {}; {}; {}",
                    line("fds", v.fds, "at most 2 above"),
                    line("threads", v.threads, "at most 5 % above, at least 2"),
                    line("rss", v.rss, "at most 5 % above")
                );
            }
        }
        out
    }
}

/// Add one sample to the series of (`daemon`, `pid`), opening a new series for a new process.
pub fn push(all: &mut Vec<Series>, daemon: &str, pid: u32, s: Sample) {
    match all.iter_mut().find(|x| x.daemon == daemon && x.pid == pid) {
        Some(x) => x.samples.push(s),
        None => all.push(Series {
            daemon: daemon.to_string(),
            pid,
            samples: vec![s],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(values: impl Fn(usize) -> (u64, u64, u64), n: usize) -> Series {
        Series {
            daemon: "slurmd-node1".into(),
            pid: 7,
            samples: (0..n)
                .map(|i| {
                    let (fds, threads, rss_kb) = values(i);
                    Sample {
                        t: 30.0 + i as f64,
                        fds,
                        threads,
                        rss_kb,
                    }
                })
                .collect(),
        }
    }

    /// The series re-timed as CI's soak samples a slurmd: every 2 s from its start.
    fn every_2s_from_start(mut s: Series) -> Series {
        for (i, x) in s.samples.iter_mut().enumerate() {
            x.t = 2.0 * i as f64;
        }
        s
    }

    /// `n` samples one second apart from t = 0: RSS `from + i * step` kB for the first `until`
    /// seconds, then `level` kB.
    fn warming(n: usize, until: usize, (from, step): (u64, u64), level: u64) -> Series {
        let mut s = series(|_| (20, 5, level), n);
        for (i, x) in s.samples.iter_mut().enumerate() {
            x.t = i as f64;
            if i < until {
                x.rss_kb = from + i as u64 * step;
            }
        }
        s
    }

    #[test]
    fn verdict__flat_with_noise() {
        let s = series(
            |i| {
                (
                    20 + (i % 3) as u64,
                    5 + (i % 2) as u64,
                    10_000 + (i % 7) as u64 * 10,
                )
            },
            100,
        );
        let v = s.verdict().unwrap();
        assert!(v.flat(), "{v:?}");
    }

    #[test]
    fn verdict__leaks_are_caught() {
        let fd_leak = series(|i| (20 + i as u64 / 10, 5, 10_000), 100);
        assert!(!fd_leak.verdict().unwrap().fds.flat);
        let rss_growth = series(|i| (20, 5, 10_000 + i as u64 * 10), 100);
        let v = rss_growth.verdict().unwrap();
        assert!(!v.rss.flat && v.fds.flat, "{v:?}");
        let threads = series(|i| (20, 5 + i as u64 / 20, 10_000), 100);
        assert!(!threads.verdict().unwrap().threads.flat);
    }

    #[test]
    fn verdict__warm_up_not_judged() {
        // Growth only in the first 30 s, then flat.
        let s = warming(100, 30, (5_000, 100), 10_000);
        assert!(s.verdict().unwrap().flat(), "{:?}", s.verdict());
        assert_eq!(s.judged().len(), 70);
    }

    #[test]
    fn warmup__slurmctld_waits_for_its_job_table() {
        assert_eq!(job_table_fill_s(30), 60.0);
        assert_eq!(job_table_fill_s(5), 15.0);
        assert_eq!(job_table_fill_s(300), 360.0);
        assert_eq!(warmup_s("slurmd-node1"), STARTUP_S);
        let table = STARTUP_S + job_table_fill_s(crate::cluster::config::MIN_JOB_AGE_S);
        assert_eq!(warmup_s("slurmctld"), table.max(SLURMCTLD_SETTLE_S));
        assert!(warmup_s("slurmctld") >= SLURMCTLD_SETTLE_S);
    }

    #[test]
    fn verdict__slurmctld_heap_settling_not_judged() {
        // RSS grows for the first 330 s (job table, heap settling), then stays: flat for
        // slurmctld; the same figures from a slurmd (30 s warm-up) are not.
        let mut s = warming(600, 330, (20_000, 30), 30_000);
        s.daemon = "slurmctld".into();
        assert!(s.verdict().unwrap().flat(), "{:?}", s.verdict());
        assert_eq!(s.judged().len(), 600 - SLURMCTLD_SETTLE_S as usize);
        s.daemon = "slurmd-node1".into();
        assert!(!s.verdict().unwrap().rss.flat, "{:?}", s.verdict());
    }

    #[test]
    fn verdict__slurmctld_growing_past_its_warm_up_is_not_flat() {
        // A leak: RSS keeps growing after the heap should have settled.
        let mut s = warming(900, 900, (20_000, 20), 0);
        s.daemon = "slurmctld".into();
        assert!(!s.verdict().unwrap().rss.flat, "{:?}", s.verdict());
    }

    #[test]
    fn verdict__two_threads_more_are_flat_three_are_not() {
        let two = series(|i| (20, if i < 50 { 13 } else { 15 }, 10_000), 100);
        assert!(two.verdict().unwrap().threads.flat);
        let three = series(|i| (20, if i < 50 { 13 } else { 16 }, 10_000), 100);
        assert!(!three.verdict().unwrap().threads.flat);
    }

    #[test]
    fn verdict__ci_short_soak_slurmd_threads_are_flat() {
        // slurmd-node2's threads in CI's 300-job soak (seed 20261201): RPCs in flight, no leak.
        const T: [u64; 36] = [
            14, 13, 13, 13, 13, 15, 14, 14, 15, 13, 13, 13, 13, 13, 13, 15, 13, 13, 13, 18, 15, 13,
            14, 14, 17, 14, 14, 16, 14, 15, 14, 15, 17, 13, 14, 17,
        ];
        // Sampled every 2 s from its start, as there: 21 samples after the warm-up.
        let s = every_2s_from_start(series(|i| (12, T[i], 13_000), T.len()));
        assert_eq!(s.judged().len(), 21);
        assert!(s.verdict().unwrap().threads.flat, "{:?}", s.verdict());
    }

    #[test]
    fn verdict__falling_figures_are_not_a_leak() {
        // slurmd-node1's descriptors in a cold CI soak (2026-12-05, seed 20261201): 16 while
        // RPCs were in flight at the start of the judged part, 12 at the end.
        let s = every_2s_from_start(series(|i| (if i < 20 { 16 } else { 12 }, 13, 11_800), 44));
        let v = s.verdict().unwrap();
        assert_eq!((v.fds.first, v.fds.last), (16.0, 12.0), "{v:?}");
        assert!(v.flat(), "{v:?}");
        let shrinking = series(|i| (20, 5, 20_000 - i as u64 * 50), 100);
        assert!(shrinking.verdict().unwrap().rss.flat);
    }

    #[test]
    fn verdict__short_series_not_judged() {
        assert!(series(|_| (1, 1, 1), MIN_SAMPLES - 1).verdict().is_none());
        let r = series(|_| (1, 1, 1), 5).report(40);
        assert!(r.contains("not judged"), "{r}");
    }

    #[test]
    fn push__new_pid_opens_a_new_series() {
        let mut all = Vec::new();
        let s = Sample {
            t: 0.0,
            fds: 1,
            threads: 1,
            rss_kb: 1,
        };
        push(&mut all, "slurmctld", 1, s);
        push(&mut all, "slurmctld", 1, s);
        push(&mut all, "slurmctld", 2, s);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].samples.len(), 2);
    }

    #[test]
    fn report__at_most_width_values() {
        let r = series(|i| (i as u64, 1, 1), 100).report(10);
        let fds = r
            .lines()
            .find(|l| l.trim_start().starts_with("fds"))
            .unwrap();
        assert_eq!(fds.split_whitespace().count() - 1, 10, "{fds}");
    }

    /// Runs tests/heap-steps/heap_steps.c with `env` and returns how many kB its resident set
    /// grew.
    fn heap_growth_kb(env: &[(&str, &str)]) -> i64 {
        let sh = xshell::Shell::new().unwrap();
        let (_d, exe) = driver_common::testing::scratch("heap_steps");
        let src =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/heap-steps/heap_steps.c");
        driver_common::testing::cc(&sh, &["-o".as_ref(), exe.as_ref(), src.as_ref()]);
        let mut run = xshell::cmd!(sh, "{exe}").quiet();
        for (k, v) in env {
            run = run.env(k, v);
        }
        let out = run.read().unwrap();
        let kb: Vec<i64> = out.split_whitespace().map(|x| x.parse().unwrap()).collect();
        kb[1] - kb[0]
    }

    #[test]
    fn allocator_env__rss_follows_bytes_in_use_where_the_default_keeps_freed_buffers() {
        // 3,000 objects of 200 bytes stay in use (about 0.6 MB); 30 buffers of 1-8 MiB are
        // freed. glibc's default keeps the heap the buffers moved into (about 9 MB more).
        let default = heap_growth_kb(&[("MALLOC_ARENA_MAX", "1")]);
        let soak = heap_growth_kb(ALLOCATOR_ENV);
        assert!(
            default > 4096,
            "default: {default} kB (expected the freed buffers kept)"
        );
        assert!(
            soak < 2048,
            "{}: {soak} kB (expected about the 0.6 MB in use)",
            allocator_env_shown()
        );
    }
}
