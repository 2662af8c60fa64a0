//! slurmdbd down then up: jobs that end while it is down reach the database afterwards
//! (slurmctld queues the records), none lost.

use super::super::daemon::Daemon;
use super::client::{Ctx, JOB_TIMEOUT};
use driver_common::error::{Error, Result};
use std::time::Duration;

pub fn dbd_outage(ctx: &mut Ctx<'_>) -> Result<String> {
    let before = ctx.sbatch("before-outage", &["-n1"], "true\n")?;
    ctx.acct_final(before, JOB_TIMEOUT)?;
    ctx.cluster.stop(Daemon::Slurmdbd)?;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(ctx.sbatch(
            &format!("during-outage-{i}"),
            &["-n1"],
            &format!("exit {i}\n"),
        )?);
    }
    for &id in &ids {
        ctx.wait_state(id, &["COMPLETED", "FAILED"], JOB_TIMEOUT)?;
    }
    ctx.cluster.start(ctx.sh, Daemon::Slurmdbd)?;
    let mut seen = Vec::new();
    for (i, &id) in ids.iter().enumerate() {
        let acct = ctx.acct_final(id, Duration::from_secs(90))?;
        let want = if i == 0 { "COMPLETED" } else { "FAILED" };
        if acct.state != want || acct.exit_code != format!("{i}:0") {
            return Err(Error::Scenario(format!(
                "job {id}: sacct {} {}, expected {want} {i}:0",
                acct.state, acct.exit_code
            )));
        }
        seen.push(format!("{id} {} {}", acct.state, acct.exit_code));
    }
    Ok(format!(
        "slurmdbd stopped; jobs {} ended meanwhile; after its restart sacct has all: {}",
        ids.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
        seen.join(", ")
    ))
}
