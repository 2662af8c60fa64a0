//! TaskProlog and TaskEpilog (SMD-123): slurmstepd runs them around every task, as the job's
//! user; the TaskProlog's `export NAME=value`, `unset NAME` and `print text` lines change the
//! task's environment and output (slurm.conf(5), "TaskProlog").

use super::super::user::ensure_test_user;
use super::client::{CLIENT_TIMEOUT, Ctx, JOB_TIMEOUT, no_faults, q, succeeded};
use super::conf::ConfChange;
use driver_common::error::Result;
use driver_common::util::process::bounded::run_bounded;
use std::path::Path;

/// The TaskProlog and TaskEpilog: each appends `task-prolog|task-epilog JOB STEP TASK UID
/// GID` to `events`; the prolog also prints `export`, `unset` and `print` lines.
fn hook_scripts(ctx: &mut Ctx<'_>, events: &Path) -> Result<Vec<String>> {
    let prolog = ctx.script(
        "task-prolog",
        &format!(
            "echo \"task-prolog $SLURM_JOB_ID $SLURM_STEP_ID $SLURM_PROCID $(id -u) $(id -g)\" >> {e}\n\
             echo \"export XT_FROM_PROLOG=task$SLURM_PROCID\"\n\
             echo \"unset XT_DROPPED\"\n\
             echo \"print printed-by-task-prolog-$SLURM_PROCID\"\n",
            e = q(events)
        ),
    )?;
    let epilog = ctx.script(
        "task-epilog",
        &format!(
            "echo \"task-epilog $SLURM_JOB_ID $SLURM_STEP_ID $SLURM_PROCID $(id -u) $(id -g)\" >> {e}\n",
            e = q(events)
        ),
    )?;
    Ok(vec![
        format!("TaskProlog={}", prolog.display()),
        format!("TaskEpilog={}", epilog.display()),
    ])
}

/// A two-task srun of `user` with `XT_DROPPED` set; each task logs a `task` event and
/// prints `TASK XT_FROM_PROLOG XT_DROPPED`. Returns its output.
fn two_tasks(ctx: &Ctx<'_>, user: &str, events: &Path) -> Result<String> {
    let mut c = ctx.tool_as(user, "srun");
    c.env("XT_DROPPED", "from-the-submitter")
        .args(["-N1", "-n2", "sh", "-c"])
        .arg(format!(
            "echo \"task $SLURM_JOB_ID $SLURM_STEP_ID $SLURM_PROCID $(id -u) $(id -g)\" >> {e}; echo \"$SLURM_PROCID ${{XT_FROM_PROLOG:-none}} ${{XT_DROPPED:-gone}}\"",
            e = q(events)
        ));
    succeeded("srun -n2 with task hooks", &run_bounded(c, CLIENT_TIMEOUT)?)
}

/// What is wrong with the tasks' output: each task saw the prolog's export and not the
/// unset variable, and the prolog's `print` line is there.
fn output_faults(stdout: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for t in 0..2 {
        let want = format!("{t} task{t} gone");
        if !stdout.lines().any(|l| l.trim() == want) {
            bad.push(format!("task {t} printed no {want:?}"));
        }
        let printed = format!("printed-by-task-prolog-{t}");
        if !stdout.lines().any(|l| l.trim() == printed) {
            bad.push(format!("no {printed:?} in the output"));
        }
    }
    bad
}

/// What is wrong with the event log: per task exactly prolog, task, epilog, all as `ids`.
fn event_faults(log: &[String], ids: &str, user: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for t in ["0", "1"] {
        let kinds: Vec<&str> = log
            .iter()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 6 && f[3] == t).then_some(f[0])
            })
            .collect();
        if kinds != ["task-prolog", "task", "task-epilog"] {
            bad.push(format!(
                "task {t}: events {kinds:?}, expected task-prolog, task, task-epilog"
            ));
        }
    }
    if let Some(l) = log.iter().find(|l| !l.ends_with(ids)) {
        bad.push(format!("{l:?} did not run as {user} ({ids})"));
    }
    bad
}

/// SMD-123: `TaskProlog` and `TaskEpilog` set for a two-task `srun` of the test user. Each
/// runs once per task (task ids 0 and 1), as the user, before and after its task (one shared
/// event log keeps the order); the prolog's `export` reaches the task, its `unset` removes a
/// variable the submitter set, its `print` line is in the task's output. `slurm.conf` is
/// restored afterwards.
pub fn task_prolog_epilog(ctx: &mut Ctx<'_>) -> Result<String> {
    let user = ensure_test_user()?;
    let events = ctx.path("task-events.log");
    driver_common::util::fs::write_atomic(&events, b"", 0o666)?;
    let lines = hook_scripts(ctx, &events)?;
    let change = ConfChange::apply(ctx.cluster, &lines)?;
    let ran = two_tasks(ctx, &user.name, &events);
    change.restore()?;
    let stdout = ran?;
    let log = ctx.wait_lines(&events, 6, JOB_TIMEOUT)?;
    let ids = format!("{} {}", user.uid, user.gid);
    let mut bad = output_faults(&stdout);
    bad.extend(event_faults(&log, &ids, &user.name));
    no_faults(&bad, &format!("output {stdout:?}; events {log:?}"))?;
    Ok(format!(
        "srun -n2 of {}: TaskProlog and TaskEpilog once per task as {ids}, in order around each task; export, unset and print took effect; slurm.conf restored",
        user.name
    ))
}
