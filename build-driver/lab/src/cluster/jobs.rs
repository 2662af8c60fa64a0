//! Parsing what Slurm's clients print about jobs.

use super::config::CLIENT_TIMEOUT;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::read_bounded;
use std::process::Command;

/// `sbatch --parsable` prints `id` or `id;cluster`.
pub fn parse_job_id(out: &str) -> Option<u32> {
    out.trim().split(';').next()?.parse().ok()
}

/// Runs an `sbatch --parsable` (bounded by the clients' timeout) and returns the id it
/// printed; a run that printed none is an error showing what it printed.
pub fn sbatch_id(sbatch: impl Into<Command>) -> Result<u32> {
    let out = read_bounded(sbatch, CLIENT_TIMEOUT)?;
    parse_job_id(&out).ok_or_else(|| Error::Scenario(format!("sbatch printed no job id: {out:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_job_id__plain_and_with_cluster() {
        assert_eq!(parse_job_id("17\n"), Some(17));
        assert_eq!(parse_job_id("18;xtask\n"), Some(18));
        assert_eq!(parse_job_id("sbatch: error: x\n"), None);
    }
}
