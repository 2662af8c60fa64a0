//! A Mac joining a cgroup site (profile `site`): the site's slurm.conf names
//! proctrack/cgroup, task/cgroup,task/affinity and jobacct_gather/cgroup, its cgroup.conf
//! `CgroupPlugin=autodetect`. Without patch 0064 slurmd stops at start ("Unable to initialize
//! cgroup plugin"); with it slurmd starts and says, once each, which macOS plugin stands for
//! which of the site's. The jobs themselves are the ordinary scenarios run under `site`
//! (CI: `cluster::site_scenarios`).

use super::super::daemon::Daemon;
use super::client::Ctx;
use driver_common::error::{Error, Result};

/// What slurmd must have logged: the site's choice and the macOS plugin it runs as.
const MAPPED: [(&str, &str); 4] = [
    ("ProctrackType=proctrack/cgroup", "proctrack/darwin"),
    ("TaskPlugin=task/cgroup,task/affinity", "task/darwin"),
    (
        "JobAcctGatherType=jobacct_gather/cgroup",
        "jobacct_gather/darwin",
    ),
    ("CgroupPlugin=autodetect", "CgroupPlugin=disabled"),
];

/// The mapping lines of `log` that are missing (each must appear: `macOS: <site's> ...
/// <macOS plugin>`).
fn missing(log: &str) -> Vec<String> {
    MAPPED
        .iter()
        .filter(|(site, mac)| {
            !log.lines()
                .any(|l| l.contains(&format!("macOS: {site} ")) && l.contains(mac))
        })
        .map(|(site, mac)| format!("{site} -> {mac}"))
        .collect()
}

pub fn plugins_mapped(ctx: &mut Ctx<'_>) -> Result<String> {
    // slurmd reads slurm.conf before it opens its log file: those lines go to its stderr
    // (`.out` here, the LaunchDaemon's StandardErrorPath on a Mac); cgroup's to the log.
    let path = ctx.cluster.log(Daemon::Slurmd(0));
    let mut log = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let err = path.with_extension("out");
    log += &std::fs::read_to_string(&err).map_err(|e| Error::io(&err, e))?;
    let gone = missing(&log);
    if !gone.is_empty() {
        return Err(Error::Scenario(format!(
            "slurmd started under the site's cgroup plugins but did not say which macOS plugin runs instead: {gone:?} (patch 0064); see {} and {}",
            path.display(),
            err.display()
        )));
    }
    let id = ctx.sbatch("site", &["-N1"], "echo site-ok\n")?;
    let acct = ctx.acct_final(id, super::client::JOB_TIMEOUT)?;
    if acct.state != "COMPLETED" {
        return Err(Error::Scenario(format!(
            "job {id} under the site's plugins: {acct:?}"
        )));
    }
    Ok(format!(
        "slurmd runs {} for the site's choices; job {id} COMPLETED",
        MAPPED.map(|(_, m)| m).join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing__names_each_unsaid_mapping() {
        let all = "[t] macOS: ProctrackType=proctrack/cgroup needs cgroups or /proc, which macOS does not have; this node runs proctrack/darwin instead\n\
            [t] macOS: TaskPlugin=task/cgroup,task/affinity needs ...; this node runs task/darwin instead\n\
            [t] macOS: JobAcctGatherType=jobacct_gather/cgroup needs ...; this node runs jobacct_gather/darwin instead\n\
            [t] macOS: CgroupPlugin=autodetect needs cgroups, ...; this node runs with CgroupPlugin=disabled\n";
        assert!(missing(all).is_empty());
        let some: String = all.lines().skip(1).map(|l| format!("{l}\n")).collect();
        assert_eq!(
            missing(&some),
            ["ProctrackType=proctrack/cgroup -> proctrack/darwin"]
        );
    }
}
