//! Per-thread CPU time of a process, sampled: each thread's
//! `/proc/<pid>/task/<tid>/schedstat` (its first field: nanoseconds on a CPU), read every
//! [`EVERY`], and the bursts of growth in it (one accounting poll each).

use driver_common::error::{Error, Result};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The sampling period.
pub const EVERY: Duration = Duration::from_millis(10);

/// One thread's cumulative CPU time at each sample.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadSeries {
    pub tid: u32,
    /// (time since the first sample, nanoseconds on a CPU).
    pub samples: Vec<(Duration, u64)>,
}

/// A run of growth: the CPU time it added and the time from its first to its last growth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burst {
    pub cpu_ns: u64,
    pub span: Duration,
}

impl Burst {
    pub fn cpu_ms(&self) -> f64 {
        self.cpu_ns as f64 / 1e6
    }
}

impl ThreadSeries {
    pub fn total_ns(&self) -> u64 {
        match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) => b.1.saturating_sub(a.1),
            _ => 0,
        }
    }

    /// The bursts of growth separated by at least `gap` without any; a burst still growing
    /// at the last sample is not closed and not returned.
    pub fn bursts(&self, gap: Duration) -> Vec<Burst> {
        let mut out = Vec::new();
        let mut open: Option<(Duration, Duration, u64)> = None; // first, last growth, cpu
        for w in self.samples.windows(2) {
            let ((_, a), (t, b)) = (w[0], w[1]);
            if let Some((first, last, cpu)) = open {
                if t.saturating_sub(last) >= gap && b == a {
                    out.push(Burst {
                        cpu_ns: cpu,
                        span: last - first,
                    });
                    open = None;
                }
            }
            if b > a {
                open = Some(match open {
                    Some((first, _, cpu)) => (first, t, cpu + (b - a)),
                    None => (t, t, b - a),
                });
            }
        }
        out
    }
}

/// The first field of a schedstat file.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

fn read_threads(pid: u32) -> Result<BTreeMap<u32, u64>> {
    let dir = format!("/proc/{pid}/task");
    let entries = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
    let mut now = BTreeMap::new();
    for e in entries.flatten() {
        let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let f = e.path().join("schedstat");
        if let Some(ns) = std::fs::read_to_string(&f)
            .ok()
            .as_deref()
            .and_then(parse_schedstat)
        {
            now.insert(tid, ns);
        }
    }
    Ok(now)
}

/// Samples every thread of `pid` until the busiest one has closed `bursts` bursts (checked
/// every second), or fails after `limit_s` seconds.
pub fn until_bursts(pid: u32, bursts: usize, limit_s: u64) -> Result<Vec<ThreadSeries>> {
    let t0 = Instant::now();
    let mut by_tid: BTreeMap<u32, Vec<(Duration, u64)>> = BTreeMap::new();
    let mut checked = Duration::ZERO;
    loop {
        let at = t0.elapsed();
        for (tid, ns) in read_threads(pid)? {
            by_tid.entry(tid).or_default().push((at, ns));
        }
        if at >= checked + Duration::from_secs(1) {
            checked = at;
            let series = collect(&by_tid);
            let most = series.iter().max_by_key(|s| s.total_ns());
            if most.is_some_and(|s| s.bursts(Duration::from_millis(300)).len() >= bursts) {
                return Ok(series);
            }
            if at >= Duration::from_secs(limit_s) {
                return Err(Error::TimedOut {
                    waiting_for: format!("{bursts} accounting polls of slurmstepd {pid}"),
                    after: at,
                });
            }
        }
        std::thread::sleep(EVERY);
    }
}

fn collect(by_tid: &BTreeMap<u32, Vec<(Duration, u64)>>) -> Vec<ThreadSeries> {
    by_tid
        .iter()
        .map(|(&tid, s)| ThreadSeries {
            tid,
            samples: s.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(points: &[(u64, u64)]) -> ThreadSeries {
        ThreadSeries {
            tid: 7,
            samples: points
                .iter()
                .map(|&(ms, ns)| (Duration::from_millis(ms), ns))
                .collect(),
        }
    }

    #[test]
    fn bursts__split_at_idle_gaps_and_drop_the_open_one() {
        // Two polls of 30 and 5 units, the second ending 400 ms before a third that is
        // still growing at the last sample.
        let s = series(&[
            (0, 100),
            (10, 110),
            (20, 130),
            (30, 130),
            (500, 130),
            (1000, 135),
            (1010, 135),
            (1500, 135),
            (2000, 140),
        ]);
        let b = s.bursts(Duration::from_millis(300));
        assert_eq!(
            b,
            [
                Burst {
                    cpu_ns: 30,
                    span: Duration::from_millis(10)
                },
                Burst {
                    cpu_ns: 5,
                    span: Duration::ZERO
                }
            ]
        );
        assert_eq!(s.total_ns(), 40);
    }

    #[test]
    fn bursts__a_short_pause_does_not_split() {
        let s = series(&[(0, 0), (10, 5), (100, 5), (110, 9), (600, 9)]);
        assert_eq!(
            s.bursts(Duration::from_millis(300)),
            [Burst {
                cpu_ns: 9,
                span: Duration::from_millis(100)
            }]
        );
    }

    #[test]
    fn parse_schedstat__first_field() {
        assert_eq!(parse_schedstat("123456 789 10\n"), Some(123456));
        assert_eq!(parse_schedstat(""), None);
        assert_eq!(parse_schedstat("x 1 2"), None);
    }
}
