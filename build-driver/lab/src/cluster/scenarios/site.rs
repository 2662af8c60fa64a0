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

/// Node `i`'s slurmd said, once each, which macOS plugin runs for each of the site's.
fn said_mapping(ctx: &Ctx<'_>, i: usize) -> Result<()> {
    // slurmd reads slurm.conf before it opens its log file: those lines go to its stderr
    // (`.out` here, the LaunchDaemon's StandardErrorPath on a Mac); cgroup's to the log.
    let path = ctx.cluster.log(Daemon::Slurmd(i));
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
    Ok(())
}

pub fn plugins_mapped(ctx: &mut Ctx<'_>) -> Result<String> {
    said_mapping(ctx, 0)?;
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

/// The cgroup lines of `/proc/self/cgroup` that name job `id` (`.../job_<id>/...`).
fn job_cgroups(proc_cgroup: &str, id: &str) -> Vec<String> {
    let want = format!("/job_{id}/");
    proc_cgroup
        .lines()
        .filter(|l| format!("{l}/").contains(&want))
        .map(str::to_string)
        .collect()
}

/// One srun step on `node` printing its job id and its `/proc/self/cgroup`: the lines that
/// name the job's cgroup.
fn step_cgroups(ctx: &Ctx<'_>, node: &str) -> Result<Vec<String>> {
    let out = ctx.srun_stdout(
        &format!("srun on {node}"),
        &[
            "-w",
            node,
            "-N1",
            "/bin/sh",
            "-c",
            "echo job=$SLURM_JOB_ID; cat /proc/self/cgroup",
        ],
    )?;
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("job="))
        .ok_or_else(|| Error::Scenario(format!("srun on {node} printed no job id: {out:?}")))?;
    Ok(job_cgroups(&out, id.trim()))
}

/// A Mac in a cgroup site, with Linux nodes that really are one (`--mix native=P1,darwin=P2
/// --profile site`): a step on a Linux node runs inside its job's cgroup (the site's
/// proctrack/task/jobacct_gather cgroup plugins, whatever `CgroupPlugin=autodetect` found);
/// the darwin node says which macOS plugin runs for each (patch 0064), its step is in no job
/// cgroup, and its jobs run, are cancelled and are accounted like the others.
pub fn mix_cgroup(ctx: &mut Ctx<'_>) -> Result<String> {
    let nodes = ctx.cluster.nodes().to_vec();
    let is_darwin = |n: &super::super::nodes::Node| {
        driver_common::staging::Manifest::read(&n.prefix)
            .is_ok_and(|m| m.personality == driver_common::personality::Personality::Darwin)
    };
    let (Some(mac), Some(linux)) = (
        nodes.iter().position(is_darwin),
        nodes.iter().position(|n| !is_darwin(n)),
    ) else {
        return Err(Error::Scenario(
            "needs a native node and a darwin node (--mix native=P1,darwin=P2)".into(),
        ));
    };
    said_mapping(ctx, mac)?;
    let on_linux = step_cgroups(ctx, &nodes[linux].name)?;
    if on_linux.is_empty() {
        return Err(Error::Scenario(format!(
            "a step on the Linux node {} is in no job cgroup: the site's cgroup plugins did not              run there",
            nodes[linux].name
        )));
    }
    let on_mac = step_cgroups(ctx, &nodes[mac].name)?;
    if !on_mac.is_empty() {
        return Err(Error::Scenario(format!(
            "a step on the darwin node {} is in a job cgroup ({on_mac:?}): the cgroup plugins              ran there instead of the macOS ones",
            nodes[mac].name
        )));
    }
    let w = ["-w", nodes[mac].name.as_str(), "-N1"];
    let done = ctx.sbatch("site-mac", &w, "echo site-mac-ok\n")?;
    let acct = ctx.acct_final(done, super::client::JOB_TIMEOUT)?;
    let long = ctx.sbatch("site-mac-long", &w, "sleep 300\n")?;
    ctx.wait_state(long, &["RUNNING"], super::client::JOB_TIMEOUT)?;
    ctx.cancel(long)?;
    let cancelled = ctx.acct_final(long, super::client::JOB_TIMEOUT)?;
    if acct.state != "COMPLETED" || !cancelled.state.starts_with("CANCELLED") {
        return Err(Error::Scenario(format!(
            "on the darwin node: job {done} {acct:?}, cancelled job {long} {cancelled:?}"
        )));
    }
    Ok(format!(
        "Linux node {}: step in {}; darwin node {}: the macOS plugins, no job cgroup, job {done} \
         COMPLETED, job {long} CANCELLED in sacct",
        nodes[linux].name, on_linux[0], nodes[mac].name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_cgroups__v1_and_v2_lines_of_the_job_only() {
        let v1 = "12:freezer:/slurm/uid_0/job_17/step_0\n4:memory:/slurm/uid_0/job_17/step_0/task_0\n1:name=systemd:/user.slice\n";
        assert_eq!(job_cgroups(v1, "17").len(), 2);
        assert!(job_cgroups(v1, "1").is_empty());
        let v2 = "0::/system.slice/slurmstepd.scope/job_5/step_0/user/task_0\n";
        assert_eq!(job_cgroups(v2, "5").len(), 1);
        assert!(job_cgroups("0::/user.slice/session-3.scope\n", "5").is_empty());
        assert_eq!(job_cgroups("0::/a/job_5\n", "5").len(), 1);
    }

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
