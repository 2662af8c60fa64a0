//! A SPANK plugin (SMD-124): fixtures/spank_marks.c, a no-op plugin built here with the
//! system C compiler against the installed `<prefix>/include/slurm/spank.h`, whose every
//! callback appends a mark (callback, context, uid, gid, pid, job, task) to a log.
//!
//! What runs where for one two-task `srun` (slurm/spank.h; the PoC counted the same 19 on its
//! Mac): `init` in slurmd's context when slurmd loads plugstack.conf (at its start or
//! reconfigure); in srun (local) `init`, `init_post_opt`, `local_user_init`, `exit`; in the
//! prolog/epilog (job_script) `job_prolog`, `job_epilog`; in slurmstepd (remote) `init`,
//! `init_post_opt`, `user_init`, `exit` once and `task_init_privileged`, `task_init`,
//! `task_post_fork`, `task_exit` per task; and `slurmd_exit` when slurmd shuts down.

use super::super::daemon::Daemon;
use super::client::{CLIENT_TIMEOUT, Ctx, JOB_TIMEOUT, file_lines, no_faults, succeeded};
use super::conf::ConfChange;
use super::fixtures::{self, Kind};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::{poll, run_bounded};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The marks one two-task step leaves: (callback, context) -> count.
const STEP_MARKS: [(&str, &str, usize); 14] = [
    ("init", "local", 1),
    ("init_post_opt", "local", 1),
    ("local_user_init", "local", 1),
    ("exit", "local", 1),
    ("job_prolog", "job_script", 1),
    ("job_epilog", "job_script", 1),
    ("init", "remote", 1),
    ("init_post_opt", "remote", 1),
    ("user_init", "remote", 1),
    ("task_init_privileged", "remote", 2),
    ("task_init", "remote", 2),
    ("task_post_fork", "remote", 2),
    ("task_exit", "remote", 2),
    ("exit", "remote", 1),
];

/// Count the marks by (callback, context).
fn count(lines: &[String]) -> BTreeMap<(String, String), usize> {
    let mut m = BTreeMap::new();
    for l in lines {
        let mut f = l.split_whitespace();
        if let (Some(cb), Some(ctx)) = (f.next(), f.next()) {
            *m.entry((cb.to_string(), ctx.to_string())).or_insert(0) += 1;
        }
    }
    m
}

/// How many marks of `cb` in context `cx`.
fn got(counts: &BTreeMap<(String, String), usize>, cb: &str, cx: &str) -> usize {
    counts
        .get(&(cb.to_string(), cx.to_string()))
        .copied()
        .unwrap_or(0)
}

/// Build the plugin, write the log it marks and a plugstack.conf naming both; returns the
/// log and the plugstack.conf.
fn plugin_stack(ctx: &Ctx<'_>) -> Result<(PathBuf, PathBuf)> {
    let plugin = fixtures::build(ctx, "spank_marks", fixtures::SPANK_MARKS, Kind::SlurmPlugin)?;
    let marks = ctx.path("spank-marks.log");
    driver_common::util::fs::write_atomic(&marks, b"", 0o666)?;
    let plugstack = ctx.path("plugstack.conf");
    driver_common::util::fs::write_atomic(
        &plugstack,
        format!("required {} log={}\n", plugin.display(), marks.display()).as_bytes(),
        0o644,
    )?;
    Ok((marks, plugstack))
}

/// A two-task srun of `user`, then its job's epilog marks; returns the job's id and the
/// marks by then.
fn marked_step(ctx: &Ctx<'_>, user: &str, marks: &Path) -> Result<(u32, Vec<String>)> {
    let mut c = ctx.tool_as(user, "srun");
    c.args(["-N1", "-n2", "true"]);
    succeeded(
        "srun -n2 with the SPANK plugin",
        &run_bounded(c, CLIENT_TIMEOUT)?,
    )?;
    let l = file_lines(marks);
    let job = l
        .iter()
        .filter_map(|x| x.split_whitespace().find_map(|w| w.strip_prefix("job=")))
        .filter_map(|j| j.parse().ok())
        .find(|&j| j > 0)
        .ok_or_else(|| Error::Scenario(format!("no mark names a job: {l:?}")))?;
    // job_epilog runs once the job is over.
    let after_step = poll(
        "the job's epilog marks",
        JOB_TIMEOUT,
        super::client::POLL,
        || {
            let l = file_lines(marks);
            Ok(l.iter().any(|x| x.starts_with("job_epilog ")).then_some(l))
        },
    )?;
    Ok((job, after_step))
}

/// What is wrong with the marks: slurmd's `init` at load, the step's [`STEP_MARKS`], the
/// restart's `slurmd_exit` and `init`, the task callbacks as `ids`, the job's id in the
/// remote ones.
fn mark_faults(
    at_load: &BTreeMap<(String, String), usize>,
    all: &[String],
    before_stop: usize,
    job: u32,
    ids: &str,
) -> Vec<String> {
    let counts = count(all);
    let mut bad = Vec::new();
    if got(at_load, "init", "slurmd") != 1 {
        bad.push(format!("slurmd's init at plugstack load: {at_load:?}"));
    }
    for (cb, cx, n) in STEP_MARKS {
        if got(&counts, cb, cx) != n {
            bad.push(format!(
                "{cb} in {cx}: {} (expected {n})",
                got(&counts, cb, cx)
            ));
        }
    }
    let (step, stop) = all.split_at(before_stop.min(all.len()));
    let stopped = count(stop);
    if got(&stopped, "slurmd_exit", "slurmd") != 1 || got(&stopped, "init", "slurmd") != 1 {
        bad.push(format!(
            "slurmd restart marks: {stop:?} (expected slurmd_exit, then init)"
        ));
    }
    for l in step {
        if l.starts_with("task_init ") && !l.contains(ids) {
            bad.push(format!("{l:?} did not run as {ids}"));
        }
        if l.contains(" remote ") && !l.contains(&format!("job={job}")) {
            bad.push(format!("{l:?} does not name job {job}"));
        }
    }
    bad
}

/// SMD-124: the plugin in `PlugStackConfig` (reconfigure: slurmd's `init`), a two-task srun
/// (the 14 kinds of marks above, 18 in all, with the job's id; the task callbacks as the
/// job's user), then slurmd stopped (its `slurmd_exit`) and started again (`init`). Nothing
/// crashes: srun succeeds, slurmd stops and starts cleanly. `slurm.conf` is restored.
pub fn callbacks(ctx: &mut Ctx<'_>) -> Result<String> {
    let (marks, plugstack) = plugin_stack(ctx)?;
    let mut change = ConfChange::apply(
        ctx.cluster,
        &[format!("PlugStackConfig={}", plugstack.display())],
    )?;
    let at_load = count(&file_lines(&marks));
    let user = super::super::user::ensure_test_user()?;
    let stepped = marked_step(ctx, &user.name, &marks).and_then(|(job, after)| {
        ctx.cluster.restart(ctx.sh, Daemon::Slurmd(0))?;
        Ok((job, after.len()))
    });
    change.refresh(ctx.cluster);
    change.restore()?;
    let (job, before_stop) = stepped?;
    let all = file_lines(&marks);
    let ids = format!("uid={} gid={}", user.uid, user.gid);
    let bad = mark_faults(&at_load, &all, before_stop, job, &ids);
    no_faults(&bad, &format!("marks {all:?}"))?;
    Ok(format!(
        "plugin loaded (slurmd init); job {job}: {} marks of the two-task srun ({} kinds, task callbacks as {ids}); slurmd restart: slurmd_exit then init; {} marks in all; slurm.conf restored",
        STEP_MARKS.iter().map(|(_, _, n)| n).sum::<usize>(),
        STEP_MARKS.len(),
        all.len()
    ))
}
