//! TaskProlog and TaskEpilog (SMD-123): slurmstepd runs them around every task, as the job's
//! user; the TaskProlog's `export NAME=value`, `unset NAME` and `print text` lines change the
//! task's environment and output (slurm.conf(5), "TaskProlog").

use super::super::user::ensure_test_user;
use super::client::{CLIENT_TIMEOUT, Ctx, JOB_TIMEOUT, q};
use super::conf::ConfChange;
use crate::error::{Error, Result};
use crate::util::process::bounded::run_bounded;

/// SMD-123: `TaskProlog` and `TaskEpilog` set for a two-task `srun` of the test user. Each
/// runs once per task (task ids 0 and 1), as the user, before and after its task (one shared
/// event log keeps the order); the prolog's `export` reaches the task, its `unset` removes a
/// variable the submitter set, its `print` line is in the task's output. `slurm.conf` is
/// restored afterwards.
pub fn task_prolog_epilog(ctx: &mut Ctx<'_>) -> Result<String> {
    let user = ensure_test_user()?;
    let events = ctx.path("task-events.log");
    crate::util::fs::write_atomic(&events, b"", 0o666)?;
    let prolog = ctx.script(
        "task-prolog",
        &format!(
            "echo \"task-prolog $SLURM_JOB_ID $SLURM_STEP_ID $SLURM_PROCID $(id -u) $(id -g)\" >> {e}\n\
             echo \"export XT_FROM_PROLOG=task$SLURM_PROCID\"\n\
             echo \"unset XT_DROPPED\"\n\
             echo \"print printed-by-task-prolog-$SLURM_PROCID\"\n",
            e = q(&events)
        ),
    )?;
    let epilog = ctx.script(
        "task-epilog",
        &format!(
            "echo \"task-epilog $SLURM_JOB_ID $SLURM_STEP_ID $SLURM_PROCID $(id -u) $(id -g)\" >> {e}\n",
            e = q(&events)
        ),
    )?;
    let change = ConfChange::apply(
        ctx.cluster,
        &[
            format!("TaskProlog={}", prolog.display()),
            format!("TaskEpilog={}", epilog.display()),
        ],
    )?;
    let mut c = ctx.tool_as(&user.name, "srun");
    c.env("XT_DROPPED", "from-the-submitter").args([
        "-N1",
        "-n2",
        "sh",
        "-c",
    ])
    .arg(format!(
        "echo \"task $SLURM_JOB_ID $SLURM_STEP_ID $SLURM_PROCID $(id -u) $(id -g)\" >> {e}; echo \"$SLURM_PROCID ${{XT_FROM_PROLOG:-none}} ${{XT_DROPPED:-gone}}\"",
        e = q(&events)
    ));
    let out = run_bounded(c, CLIENT_TIMEOUT)?;
    change.restore()?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        return Err(Error::Scenario(format!(
            "srun -n2 with task hooks: {}, {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
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
    let log = ctx.wait_lines(&events, 6, JOB_TIMEOUT)?;
    let ids = format!("{} {}", user.uid, user.gid);
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
    if let Some(l) = log.iter().find(|l| !l.ends_with(&ids)) {
        bad.push(format!("{l:?} did not run as {} ({ids})", user.name));
    }
    if !bad.is_empty() {
        return Err(Error::Scenario(format!(
            "{}; output {stdout:?}; events {log:?}",
            bad.join("; ")
        )));
    }
    Ok(format!(
        "srun -n2 of {}: TaskProlog and TaskEpilog once per task as {ids}, in order around each task; export, unset and print took effect; slurm.conf restored",
        user.name
    ))
}
