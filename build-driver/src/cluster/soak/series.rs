//! The daemons' descriptors, threads and RSS over a soak, and whether they stayed flat.
//!
//! A sample is taken every few seconds of every slurmctld and slurmd (from the cluster record
//! on disk, so restarts by the faults are followed). A restarted daemon is a new process whose
//! figures start afresh, so each process (daemon and PID) is judged on its own samples, after
//! its first [`WARMUP_S`] seconds (start-up: plugins loaded, caches filled, state recovered):
//! flat when the median of the last tenth is within 5 % of the median of the first tenth
//! (RSS; threads too, but at least two threads: each RPC in flight holds a thread, as it holds
//! a descriptor, and 5 % of a slurmd's 13 threads is less than one; CI's short soak saw a
//! leak-free slurmd at 14 -> 16) and within 2 (descriptors). A tenth is at least
//! [`MIN_TENTH`] samples, so one busy moment does not make a median. A process with fewer
//! than [`MIN_SAMPLES`] judged samples is printed but not judged (it did not live long
//! enough to show a trend).

use std::fmt::Write as _;

/// Fewer samples than this (after the warm-up): not judged.
pub const MIN_SAMPLES: usize = 20;
/// Seconds of a process's start that are not judged.
pub const WARMUP_S: f64 = 30.0;
/// Allowed change of the median, RSS and threads.
pub const PERCENT: f64 = 5.0;
/// Allowed change of the thread count's median, at least (threads in flight).
pub const THREADS: f64 = 2.0;
/// The fewest samples a "tenth" holds (short runs).
pub const MIN_TENTH: usize = 5;
/// Allowed change of the median, descriptors.
pub const FDS: f64 = 2.0;

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

/// Flat when the medians differ by at most `percent` % of the first, and at least by
/// `absolute`.
fn trend(v: &[f64], percent: f64, absolute: f64) -> Trend {
    let (first, last) = (tenth_median(v, false), tenth_median(v, true));
    let bound = (first.abs() * percent / 100.0).max(absolute);
    Trend {
        first,
        last,
        flat: (last - first).abs() <= bound,
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
            .position(|s| s.t >= first.t + WARMUP_S)
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
        match self.verdict() {
            None => {
                let _ = writeln!(
                    out,
                    "    not judged: fewer than {MIN_SAMPLES} samples after its first {WARMUP_S:.0} s (a short run, or restarted by a fault)"
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
                    "    first/last tenth medians after {WARMUP_S:.0} s: {}; {}; {}",
                    line("fds", v.fds, "within 2"),
                    line("threads", v.threads, "within 5 %, at least 2"),
                    line("rss", v.rss, "within 5 %")
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
    #![allow(non_snake_case)]
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
        let mut s = series(|_| (20, 5, 10_000), 100);
        for (i, x) in s.samples.iter_mut().enumerate() {
            x.t = i as f64;
            if i < 30 {
                x.rss_kb = 5_000 + i as u64 * 100;
            }
        }
        assert!(s.verdict().unwrap().flat(), "{:?}", s.verdict());
        assert_eq!(s.judged().len(), 70);
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
        let mut s = series(|i| (12, T[i], 13_000), T.len());
        for (i, x) in s.samples.iter_mut().enumerate() {
            x.t = 2.0 * i as f64;
        }
        assert_eq!(s.judged().len(), 21);
        assert!(s.verdict().unwrap().threads.flat, "{:?}", s.verdict());
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
}
