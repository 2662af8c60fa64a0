//! srun, multi-task srun, salloc + srun, and launch failures (missing command, no execute
//! permission, bad --chdir) that must give clear reasons and leave the node usable.

use super::client::Ctx;
use driver_common::error::{Error, Result};
use std::time::Duration;

/// `srun /bin/echo hello` prints hello; `srun sh -c 'exit 3'` exits 3.
pub fn srun(ctx: &mut Ctx<'_>) -> Result<String> {
    ctx.srun_expect(&["-N1", "/bin/echo", "hello"], "hello")?;
    let out = ctx.srun(&["-N1", "sh", "-c", "exit 3"])?;
    if out.status.code() != Some(3) {
        return Err(Error::Scenario(format!(
            "srun sh -c 'exit 3' exited {}, expected 3; stderr {:?}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok("echo hello → \"hello\"; exit 3 → srun exit 3".into())
}

/// `srun -n2` runs two tasks with SLURM_PROCID 0 and 1 in the same job step.
pub fn multi_task(ctx: &mut Ctx<'_>) -> Result<String> {
    let out = ctx.srun(&[
        "-N1",
        "-n2",
        "-l",
        "sh",
        "-c",
        "echo $SLURM_PROCID/$SLURM_NTASKS/$SLURM_STEP_ID",
    ])?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<&str> = stdout.lines().map(str::trim).collect();
    lines.sort();
    let ok = out.status.success()
        && lines.len() == 2
        && lines[0].starts_with("0: 0/2/")
        && lines[1].starts_with("1: 1/2/")
        && lines[0][3..].split('/').nth(2) == lines[1][3..].split('/').nth(2);
    if !ok {
        return Err(Error::Scenario(format!(
            "srun -n2: {}, stdout {stdout:?}, stderr {:?}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(format!("two tasks: {}", lines.join(", ")))
}

/// `salloc -N1 srun ...`: the step runs inside salloc's allocation (same job id).
pub fn salloc(ctx: &mut Ctx<'_>) -> Result<String> {
    let srun = ctx.cluster.bin("srun");
    let srun = srun.to_string_lossy();
    let out = ctx.run(
        "salloc",
        &[
            "-N1",
            "-t",
            "2",
            &srun,
            "sh",
            "-c",
            "echo step-of-$SLURM_JOB_ID",
        ],
    )?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let granted = stderr
        .lines()
        .find_map(|l| l.split("Granted job allocation ").nth(1))
        .map(|s| s.trim().to_string());
    match granted {
        Some(id) if out.status.success() && stdout.trim() == format!("step-of-{id}") => {
            Ok(format!("allocation {id}, step printed {:?}", stdout.trim()))
        }
        _ => Err(Error::Scenario(format!(
            "salloc + srun: {}, stdout {stdout:?}, stderr {stderr:?}",
            out.status
        ))),
    }
}

/// Launch failures: a missing command, a file without execute permission and a missing
/// --chdir directory each fail with a message that names the problem; the node stays idle and
/// the next step runs.
pub fn launch_failures(ctx: &mut Ctx<'_>) -> Result<String> {
    let noexec = ctx.path("not-executable");
    driver_common::util::fs::write_atomic(&noexec, b"#!/bin/sh\necho never\n", 0o644)?;
    let noexec = noexec.to_string_lossy().into_owned();
    let missing_dir = ctx.path("no-such-dir");
    let chdir = format!("--chdir={}", missing_dir.display());
    let cases: [(&str, Vec<&str>, &str); 3] = [
        (
            "missing command",
            vec!["-N1", "/no/such/command"],
            "No such file or directory",
        ),
        (
            "no execute permission",
            vec!["-N1", &noexec],
            "Permission denied",
        ),
        (
            "bad --chdir",
            vec!["-N1", &chdir, "/bin/pwd"],
            "no-such-dir",
        ),
    ];
    let mut seen = Vec::new();
    for (what, args, needle) in cases {
        let out = ctx.srun(&args)?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && what != "bad --chdir" {
            return Err(Error::Scenario(format!(
                "{what}: srun succeeded; stdout {stdout:?}"
            )));
        }
        let line = stderr.lines().find(|l| l.contains(needle)).ok_or_else(|| {
            Error::Scenario(format!(
                "{what}: srun {} ({}) says nothing with {needle:?}: stderr {stderr:?}",
                args.join(" "),
                out.status
            ))
        })?;
        seen.push(format!(
            "{what}: exit {:?}, {:?}",
            out.status.code(),
            line.trim()
        ));
        ctx.wait_node_idle(Duration::from_secs(20))?;
    }
    ctx.srun_expect(&["-N1", "/bin/echo", "still-usable"], "still-usable")?;
    Ok(format!("{}; node idle, next srun ran", seen.join("; ")))
}
