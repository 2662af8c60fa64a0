//! PoC plan item SMD-304 as the PoC meant it: `sstat` of a running batch step. The PoC's
//! Mac printed `AveCPU` as `213503982334-14:25:51` (its defect D16): with no CPU figure for
//! the step, Slurm answers the sentinel INFINITE64 and sstat printed it as a time (patch
//! 0063 prints it blank, as sstat's other fields do). Under `jobacct_gather/none` (profiles
//! `default`, `poc`, `cpu`) the step has no figure: AveCPU must be blank. Under
//! `jobacct_gather/darwin` (`macos-native`) it is the step's CPU time so far: a time of
//! seconds, never days.

use super::accuracy::parse_elapsed;
use super::client::{Ctx, JOB_TIMEOUT, POLL};
use crate::cluster::profile::Profile;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use std::time::Duration;

/// The job: a few seconds of CPU, then a wait long enough for sstat.
const BODY: &str =
    "end=$(( $(date +%s) + 2 ))\nwhile [ \"$(date +%s)\" -lt \"$end\" ]; do :; done\nsleep 60\n";

/// What AveCPU must look like for a job that has run for seconds.
fn judge(ave_cpu: &str, measured: bool) -> std::result::Result<String, String> {
    let v = ave_cpu.trim();
    match (measured, v.is_empty()) {
        (false, true) => Ok("AveCPU blank (no figure under jobacct_gather/none)".into()),
        (false, false) => Err(format!(
            "AveCPU {v:?} where jobacct_gather/none has no figure: the no-data sentinel printed as a time (PoC D16; patch 0063)"
        )),
        (true, true) => {
            Err("AveCPU blank under jobacct_gather/darwin, which measures the step".into())
        }
        (true, false) => match parse_elapsed(v) {
            Some(s) if s < 3600.0 => Ok(format!("AveCPU {v} ({s:.0} s)")),
            _ => Err(format!(
                "AveCPU {v:?} is not the CPU time of a job that ran for seconds"
            )),
        },
    }
}

pub fn running_step(ctx: &mut Ctx<'_>) -> Result<String> {
    // `site`'s jobacct_gather/cgroup runs as jobacct_gather/darwin on a Mac (patch 0064)
    let measured = matches!(ctx.cluster.profile(), Profile::MacosNative | Profile::Site);
    let id = ctx.sbatch("sstat-live", &["-N1", "-n1"], BODY)?;
    ctx.wait_state(id, &["RUNNING"], JOB_TIMEOUT)?;
    let step = format!("{id}.batch");
    // the step registers with slurmd a moment after RUNNING; and a measured figure needs a poll
    let line = poll(
        &format!("sstat of {step}"),
        Duration::from_secs(30),
        POLL,
        || {
            let out = ctx.read("sstat", &["-n", "-P", "-j", &step, "-o", "JobID,AveCPU"])?;
            let line = out.lines().next().unwrap_or("").to_string();
            let ready = line.starts_with(&step)
                && (!measured || line.split('|').nth(1).is_some_and(|c| !c.is_empty()));
            Ok(ready.then_some(line))
        },
    );
    ctx.cancel(id)?;
    let line = line?;
    let ave_cpu = line.split('|').nth(1).unwrap_or("");
    judge(ave_cpu, measured)
        .map_err(|e| Error::Scenario(format!("sstat {step}: {e}; line {line:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge__the_sentinel_fails_blank_and_seconds_pass() {
        assert!(
            judge("213503982334-14:25:51", false)
                .unwrap_err()
                .contains("D16")
        );
        assert!(judge("", false).is_ok());
        assert!(judge("00:00:02", true).is_ok());
        assert!(judge("", true).is_err());
        assert!(judge("213503982334-14:25:51", true).is_err());
    }
}
