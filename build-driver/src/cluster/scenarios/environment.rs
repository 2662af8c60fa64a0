//! Environment propagation into batch jobs and steps, and a non-root user's job running with
//! that user's uid and gid.

use super::super::user::ensure_test_user;
use super::client::{Ctx, JOB_TIMEOUT};
use crate::error::{Error, Result};

/// `--export=ALL` carries the submitter's variables, `--export=NONE` does not (Slurm's own
/// variables are still set), and `srun --export=ALL,VAR=value` sets one for the step.
pub fn propagation(ctx: &mut Ctx<'_>) -> Result<String> {
    let body = "echo \"X=${XTASK_PROBE:-unset} ID=${SLURM_JOB_ID:-unset} N=${SLURM_NTASKS:-unset} SUB=${SLURM_SUBMIT_DIR:-unset}\"\n";
    let mut ids = Vec::new();
    for (stem, export) in [
        ("export-all", "--export=ALL"),
        ("export-none", "--export=NONE"),
    ] {
        let script = ctx.script(stem, body)?;
        let mut c = ctx.tool("sbatch");
        c.env("XTASK_PROBE", "carried")
            .args(["--parsable", "-J", stem, export, "-n1"])
            .arg("-o")
            .arg(ctx.path(&format!("{stem}.out")))
            .arg(&script);
        let out = crate::util::process::bounded::read_bounded(c, super::client::CLIENT_TIMEOUT)?;
        let id = super::client::parse_job_id(&out)
            .ok_or_else(|| Error::Scenario(format!("sbatch printed no job id: {out:?}")))?;
        ids.push((stem, id));
    }
    let dir = ctx.dir.display().to_string();
    let mut seen = Vec::new();
    for (stem, id) in ids {
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
        let f = ctx.path(&format!("{stem}.out"));
        let text = ctx.wait_lines(&f, 1, JOB_TIMEOUT)?.join("\n");
        let want_x = if stem == "export-all" {
            "carried"
        } else {
            "unset"
        };
        let want = format!("X={want_x} ID={id} N=1 SUB={dir}");
        if text.trim() != want {
            return Err(Error::Scenario(format!(
                "job {id} ({stem}) printed {text:?}, expected {want:?}"
            )));
        }
        seen.push(format!("{stem}: X={want_x}"));
    }
    let mut c = ctx.tool("srun");
    c.env("XTASK_PROBE", "from-submitter").args([
        "-N1",
        "--export=ALL,XTASK_STEP=set-by-srun",
        "sh",
        "-c",
        "echo $XTASK_PROBE $XTASK_STEP",
    ]);
    let out = crate::util::process::bounded::run_bounded(c, super::client::CLIENT_TIMEOUT)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || stdout.trim() != "from-submitter set-by-srun" {
        return Err(Error::Scenario(format!(
            "srun --export: {}, stdout {stdout:?}",
            out.status
        )));
    }
    seen.push("srun --export=ALL,VAR=value: both seen".into());
    Ok(seen.join("; "))
}

/// A job submitted by the unprivileged test user runs with its uid, gid and name; sacct
/// records the user; the output file belongs to it.
pub fn identity(ctx: &mut Ctx<'_>) -> Result<String> {
    let user = ensure_test_user()?;
    let id = ctx.sbatch_as(
        &user.name,
        "identity",
        &["-n1"],
        "echo \"$(id -u) $(id -g) $(id -un) $SLURM_JOB_USER $SLURM_JOB_UID\"\n",
    )?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let f = ctx.path("identity.out");
    let line = ctx.wait_lines(&f, 1, JOB_TIMEOUT)?.join("");
    let want = format!(
        "{} {} {} {} {}",
        user.uid, user.gid, user.name, user.name, user.uid
    );
    if line.trim() != want {
        return Err(Error::Scenario(format!(
            "job {id} as {} printed {line:?}, expected {want:?}",
            user.name
        )));
    }
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&f).map_err(|e| Error::io(&f, e))?;
    if meta.uid() != user.uid {
        return Err(Error::Scenario(format!(
            "{} belongs to uid {}, expected {}",
            f.display(),
            meta.uid(),
            user.uid
        )));
    }
    let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
    if acct.user != user.name {
        return Err(Error::Scenario(format!(
            "sacct: job {id} user {:?}, expected {:?}",
            acct.user, user.name
        )));
    }
    Ok(format!(
        "job {id} ran as uid {} gid {} ({}); output file owned by it; sacct User={}",
        user.uid, user.gid, user.name, acct.user
    ))
}
