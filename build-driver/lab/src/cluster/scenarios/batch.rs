//! sbatch: stdout and stderr files, exit codes 0, 1 and 255 as slurmctld and sacct see them.
//!
//! 24.11's sacct prints exit codes of 128 and more minus 128 (upstream src/sacct/print.c,
//! ExitCode: `if (tmp_int >= 128) tmp_int -= 128;`), so exit 255 shows as `127:0` there while
//! slurmctld says `255:0`; the 26.11 snapshot's sacct prints `255:0`. slurmctld's value is
//! checked exactly, sacct's against either form.

use super::client::{Ctx, JOB_TIMEOUT};
use driver_common::error::{Error, Result};

/// Three jobs write to stdout and stderr and exit 0, 1 and 255: the files hold what they
/// wrote; slurmctld records ExitCode 0:0, 1:0, 255:0; sacct COMPLETED 0:0, FAILED 1:0 and
/// FAILED 127:0 (see the module doc).
pub fn exit_codes(ctx: &mut Ctx<'_>) -> Result<String> {
    let mut jobs = Vec::new();
    for code in [0u8, 1, 255] {
        let stem = format!("exit{code}");
        let body =
            format!("echo \"out $SLURM_JOB_ID\"\necho \"err $SLURM_JOB_ID\" >&2\nexit {code}\n");
        jobs.push((code, stem.clone(), ctx.sbatch(&stem, &[], &body)?));
    }
    let mut seen = Vec::new();
    for (code, stem, id) in &jobs {
        let acct = ctx.acct_final(*id, JOB_TIMEOUT)?;
        let (want_state, want_exit) = match code {
            0 => ("COMPLETED", "0:0".to_string()),
            c if *c >= 128 => ("FAILED", format!("{}:0", c - 128)),
            c => ("FAILED", format!("{c}:0")),
        };
        let ctld_exit = ctx.job_field(*id, "ExitCode")?;
        if ctld_exit != Some(format!("{code}:0")) {
            return Err(Error::Scenario(format!(
                "job {id} (exit {code}): slurmctld ExitCode {ctld_exit:?}, expected {code}:0"
            )));
        }
        // 24.11's sacct prints codes >= 128 minus 128; the 26.11 snapshot prints them as they are.
        let exact = format!("{code}:0");
        if acct.state != want_state || (acct.exit_code != want_exit && acct.exit_code != exact) {
            return Err(Error::Scenario(format!(
                "job {id} (exit {code}): sacct says {} {}, expected {want_state} {want_exit}",
                acct.state, acct.exit_code
            )));
        }
        for (ext, word) in [("out", "out"), ("err", "err")] {
            let f = ctx.path(&format!("{stem}.{ext}"));
            let text = std::fs::read_to_string(&f).map_err(|e| Error::io(&f, e))?;
            if text.trim_end() != format!("{word} {id}") {
                return Err(Error::Scenario(format!(
                    "job {id}: {} holds {text:?}, expected \"{word} {id}\"",
                    f.display()
                )));
            }
        }
        seen.push(format!(
            "{id}: ExitCode {code}:0, sacct {} {}",
            acct.state, acct.exit_code
        ));
    }
    Ok(format!(
        "{}; stdout/stderr files exact (sacct shows exit codes >= 128 minus 128, upstream)",
        seen.join(", ")
    ))
}
