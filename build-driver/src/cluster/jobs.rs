//! Parsing what Slurm's clients print about jobs.

/// `sbatch --parsable` prints `id` or `id;cluster`.
pub fn parse_job_id(out: &str) -> Option<u32> {
    out.trim().split(';').next()?.parse().ok()
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
