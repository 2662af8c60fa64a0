//! What a soak does, decided up front from its seed: the job mix (which kind each job is) and
//! the faults (which daemon, at which point of the run, for how long). The same seed gives the
//! same plan, so a failing run can be repeated (`--seed S`); the timing of the machine is the
//! only thing that differs.

use std::time::Duration;

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, and the same sequence on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi` (`lo` when the range is empty).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo)
    }
}

/// One job of the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// `sbatch --wrap 'sleep <ms>'`.
    Batch { ms: u64 },
    /// `srun -N1` printing its job id, then `sleep <ms>`.
    Srun { ms: u64 },
    /// `sbatch --array=0-<last>`, each element `sleep <ms>`.
    Array { last: u64, ms: u64 },
    /// `sbatch --wrap 'sleep 300'`, cancelled `after_ms` after its submission.
    Cancel { after_ms: u64 },
    /// `sbatch --gres=gpu:1 --wrap 'sleep <ms>'`.
    Gpu { ms: u64 },
}

impl Job {
    pub fn kind(self) -> &'static str {
        match self {
            Job::Batch { .. } => "batch",
            Job::Srun { .. } => "srun",
            Job::Array { .. } => "array",
            Job::Cancel { .. } => "cancel",
            Job::Gpu { .. } => "gpu",
        }
    }
}

/// One fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL to node `node`'s slurmd (a crash), started again after `down`.
    KillSlurmd { node: usize, down: Duration },
    /// slurmctld stopped (SIGTERM: it saves its state) and started again after `down`.
    RestartSlurmctld { down: Duration },
    /// SIGKILL to slurmdbd, started again after `down` (slurmctld queues its records).
    KillSlurmdbd { down: Duration },
    /// SIGSTOP to slurmctld for `down`, then SIGCONT: the controller cut off.
    PauseSlurmctld { down: Duration },
}

impl Fault {
    pub fn describe(self) -> String {
        match self {
            Fault::KillSlurmd { node, down } => {
                format!("SIGKILL slurmd of node{} ({down:?} down)", node + 1)
            }
            Fault::RestartSlurmctld { down } => format!("restart slurmctld ({down:?} down)"),
            Fault::KillSlurmdbd { down } => format!("SIGKILL slurmdbd ({down:?} down)"),
            Fault::PauseSlurmctld { down } => format!("SIGSTOP slurmctld for {down:?}"),
        }
    }
}

/// The whole run: `jobs[i]` is submitted i-th; `faults` are `(after this many jobs were
/// submitted, fault)`, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub seed: u64,
    pub jobs: Vec<Job>,
    pub faults: Vec<(usize, Fault)>,
}

/// The mix, in percent: batch 50, srun 15, array 10, cancel 15, GPU 10.
pub fn job(rng: &mut Rng) -> Job {
    let ms = rng.range(0, 500);
    match rng.range(0, 100) {
        0..50 => Job::Batch { ms },
        50..65 => Job::Srun { ms },
        65..75 => Job::Array {
            last: rng.range(1, 6),
            ms: ms / 2,
        },
        75..90 => Job::Cancel {
            after_ms: rng.range(100, 3000),
        },
        _ => Job::Gpu { ms },
    }
}

/// One fault for a cluster of `nodes` nodes.
pub fn fault(rng: &mut Rng, nodes: usize) -> Fault {
    let down = Duration::from_millis(rng.range(1000, 6000));
    match rng.range(0, 4) {
        0 => Fault::KillSlurmd {
            node: rng.range(0, nodes.max(1) as u64) as usize,
            down,
        },
        1 => Fault::RestartSlurmctld { down },
        2 => Fault::KillSlurmdbd { down },
        // Shorter than MessageTimeout (10 s): clients wait, they do not give up.
        _ => Fault::PauseSlurmctld {
            down: Duration::from_millis(rng.range(1000, 8000)),
        },
    }
}

impl Plan {
    /// `jobs` jobs and `faults` faults spread over the middle of the run (after the first
    /// 5 % and before the last 10 % of the submissions, so the run starts and ends calm).
    pub fn new(seed: u64, jobs: usize, faults: usize, nodes: usize) -> Plan {
        let mut rng = Rng::new(seed);
        let list = (0..jobs).map(|_| job(&mut rng)).collect();
        let (lo, hi) = (jobs as u64 / 20, jobs as u64 * 9 / 10);
        let mut at: Vec<usize> = (0..faults)
            .map(|_| rng.range(lo, hi.max(lo + 1)) as usize)
            .collect();
        at.sort_unstable();
        let faults = at
            .into_iter()
            .map(|a| (a, fault(&mut rng, nodes)))
            .collect();
        Plan {
            seed,
            jobs: list,
            faults,
        }
    }

    /// How many jobs of each kind (array elements counted one by one).
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        let mut out: Vec<(&'static str, usize)> = Vec::new();
        for j in &self.jobs {
            let n = match j {
                Job::Array { last, .. } => *last as usize + 1,
                _ => 1,
            };
            match out.iter_mut().find(|(k, _)| *k == j.kind()) {
                Some((_, c)) => *c += n,
                None => out.push((j.kind(), n)),
            }
        }
        out
    }
}

/// A seed from the clock, when none is given.
pub fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan__same_seed_same_plan_other_seed_other_plan() {
        let a = Plan::new(7, 500, 4, 3);
        assert_eq!(a, Plan::new(7, 500, 4, 3));
        assert_ne!(a, Plan::new(8, 500, 4, 3));
        assert_eq!(a.jobs.len(), 500);
        assert_eq!(a.faults.len(), 4);
    }

    #[test]
    fn plan__faults_in_the_middle_in_order_nodes_in_range() {
        let p = Plan::new(42, 1000, 50, 3);
        assert!(p.faults.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(
            p.faults.iter().all(|(at, _)| (50..900).contains(at)),
            "{:?}",
            p.faults
        );
        for (_, f) in &p.faults {
            if let Fault::KillSlurmd { node, .. } = f {
                assert!(*node < 3);
            }
        }
        let kinds: std::collections::HashSet<_> = p
            .faults
            .iter()
            .map(|(_, f)| std::mem::discriminant(f))
            .collect();
        assert_eq!(kinds.len(), 4, "all four kinds in 50 faults");
    }

    #[test]
    fn job__mix_near_its_shares() {
        let mut rng = Rng::new(1);
        let jobs: Vec<Job> = (0..10_000).map(|_| job(&mut rng)).collect();
        let share = |k: &str| jobs.iter().filter(|j| j.kind() == k).count() as f64 / 100.0;
        for (k, pct) in [
            ("batch", 50.0),
            ("srun", 15.0),
            ("array", 10.0),
            ("cancel", 15.0),
            ("gpu", 10.0),
        ] {
            assert!((share(k) - pct).abs() < 2.0, "{k}: {}", share(k));
        }
    }

    #[test]
    fn counts__array_elements_one_by_one() {
        let p = Plan {
            seed: 0,
            jobs: vec![Job::Array { last: 3, ms: 0 }, Job::Batch { ms: 0 }],
            faults: vec![],
        };
        assert_eq!(p.counts(), [("array", 4), ("batch", 1)]);
    }

    #[test]
    fn rng__range_bounds() {
        let mut r = Rng::new(3);
        assert!((0..1000).all(|_| (5..9).contains(&r.range(5, 9))));
        assert_eq!(r.range(4, 4), 4);
    }
}
