//! The shim's call counts (`SLURM_SHIM_CALL_COUNTS=<file>`, shim/src/count.rs): every process
//! of the darwin build appends `<program> <pid> <symbol> <calls>` lines at its exit. The
//! launch benchmark reads the lines a series added (from the file's length before it) and
//! divides by the series' steps.

use std::collections::BTreeMap;
use std::path::Path;

/// The environment variable the shim reads (shim/src/count.rs `ENV`).
pub const ENV: &str = "SLURM_SHIM_CALL_COUNTS";

/// Calls by API of one program's processes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Calls {
    /// Processes that wrote lines.
    pub processes: usize,
    /// Calls by API (the Linux name: the symbol without `slurm_shim_`).
    pub by_api: BTreeMap<String, u64>,
}

impl Calls {
    pub fn total(&self) -> u64 {
        self.by_api.values().sum()
    }

    /// The `n` most called APIs, per step: `api calls/step, ...`.
    pub fn top(&self, n: usize, steps: usize) -> String {
        let mut v: Vec<_> = self.by_api.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.into_iter()
            .take(n)
            .map(|(api, c)| format!("{api} {:.1}", *c as f64 / steps.max(1) as f64))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The lines of `program` in `text`.
pub fn calls_of(text: &str, program: &str) -> Calls {
    let mut calls = Calls::default();
    let mut pids = std::collections::BTreeSet::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [prog, pid, symbol, n] = f[..] else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        if prog != program {
            continue;
        }
        pids.insert(pid.to_string());
        let api = symbol.strip_prefix("slurm_shim_").unwrap_or(symbol);
        *calls.by_api.entry(api.to_string()).or_default() += n;
    }
    calls.processes = pids.len();
    calls
}

/// The file's length now (0 if it does not exist yet).
pub fn length(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// What the file holds from byte `from` on (empty if it does not exist).
pub fn read_from(path: &Path, from: u64) -> String {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(b.get(from as usize..).unwrap_or_default()).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn calls_of__sums_one_programs_processes() {
        let text = "slurmstepd 10 slurm_shim_sysctl 4\nslurmstepd 11 slurm_shim_sysctl 2\n\
                    slurmstepd 11 slurm_shim_pipe2 1\nslurmd 9 slurm_shim_sysctl 100\nbroken line\n";
        let c = calls_of(text, "slurmstepd");
        assert_eq!(c.processes, 2);
        assert_eq!(c.by_api.get("sysctl"), Some(&6));
        assert_eq!(c.total(), 7);
        assert_eq!(c.top(1, 2), "sysctl 3.0");
        assert_eq!(calls_of(text, "slurmd").total(), 100);
    }
}
