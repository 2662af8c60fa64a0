//! The smoke jobs: a batch job with an output file, an `srun` step, and `scancel` of a
//! running job whose processes must disappear. Every wait is bounded.

use super::daemons::{poll, process_exists, read_bounded, run_bounded};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;
use xshell::{Shell, cmd};

/// How long a client command may take.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a short job may take from submission to completion.
const JOB_TIMEOUT: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(250);

/// The client side of a running cluster (SLURM_CONF is set in the shell's environment).
#[derive(Debug)]
pub struct Clients<'a> {
    pub sh: &'a Shell,
    /// `<prefix>/bin`.
    pub bin: PathBuf,
    /// Where job scripts and outputs go.
    pub jobs: PathBuf,
    pub node: String,
}

impl Clients<'_> {
    fn tool(&self, name: &str) -> PathBuf {
        self.bin.join(name)
    }

    /// `sbatch --parsable` → the job id.
    fn sbatch(&self, script: &Path, output: &Path, name: &str) -> Result<u32> {
        let sbatch = self.tool("sbatch");
        let sh = self.sh;
        let out = read_bounded(
            cmd!(sh, "{sbatch} --parsable -J {name} -o {output} {script}"),
            CLIENT_TIMEOUT,
        )?;
        parse_job_id(&out)
            .ok_or_else(|| Error::Cluster(format!("sbatch printed no job id: {out:?}")))
    }

    /// The job's state from `scontrol show job -o`.
    pub fn job_state(&self, id: u32) -> Result<String> {
        let scontrol = self.tool("scontrol");
        let sh = self.sh;
        let id = id.to_string();
        let out = read_bounded(cmd!(sh, "{scontrol} show job -o {id}"), CLIENT_TIMEOUT)?;
        parse_job_state(&out)
            .ok_or_else(|| Error::Cluster(format!("no JobState for job {id} in: {out:?}")))
    }

    /// Wait until the job is in one of `wanted`; a terminal state not wanted is an error.
    fn wait_state(&self, id: u32, wanted: &[&str], timeout: Duration) -> Result<String> {
        poll(
            &format!("job {id} to reach {}", wanted.join("|")),
            timeout,
            POLL,
            || {
                let state = self.job_state(id)?;
                if wanted.contains(&state.as_str()) {
                    return Ok(Some(state));
                }
                if is_terminal(&state) {
                    return Err(Error::Cluster(format!(
                        "job {id} ended in {state}, expected {}",
                        wanted.join("|")
                    )));
                }
                Ok(None)
            },
        )
    }

    /// A batch job writes a line naming its job id and node; it must complete and the
    /// output file must hold exactly that line.
    pub fn batch(&self) -> Result<()> {
        let script = self.jobs.join("batch.sh");
        let output = self.jobs.join("batch.out");
        write_script(
            &script,
            "echo \"batch-ok $SLURM_JOB_ID $SLURMD_NODENAME\"\n",
        )?;
        let id = self.sbatch(&script, &output, "smoke-batch")?;
        self.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
        let expected = format!("batch-ok {id} {}", self.node);
        // The output file is written by slurmstepd; it is complete once the job is COMPLETED.
        let text = std::fs::read_to_string(&output).map_err(|e| Error::io(&output, e))?;
        if text.trim_end() != expected {
            return Err(Error::Cluster(format!(
                "batch job {id}: output {text:?}, expected {expected:?}"
            )));
        }
        println!("  batch job {id}: COMPLETED, output {expected:?}");
        Ok(())
    }

    /// `srun -N1 /bin/echo hello` prints exactly `hello`.
    pub fn srun(&self) -> Result<()> {
        let srun = self.tool("srun");
        let sh = self.sh;
        let out = run_bounded(cmd!(sh, "{srun} -N1 -t 2 /bin/echo hello"), CLIENT_TIMEOUT)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || stdout.trim_end() != "hello" {
            return Err(Error::Cluster(format!(
                "srun: {}, stdout {stdout:?}, stderr {:?}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        println!("  srun -N1 /bin/echo hello: {:?}", stdout.trim_end());
        Ok(())
    }

    /// A job that records its shell's and its `sleep 300`'s PIDs is cancelled while
    /// RUNNING; it must end CANCELLED and both processes must be gone.
    pub fn cancel(&self) -> Result<()> {
        let script = self.jobs.join("cancel.sh");
        let pids_file = self.jobs.join("cancel.pids");
        let output = self.jobs.join("cancel.out");
        let body = format!(
            "echo $$ > {p}.tmp\nsleep 300 &\necho $! >> {p}.tmp\nmv {p}.tmp {p}\nwait\n",
            p = sh_quote(&pids_file.to_string_lossy())
        );
        write_script(&script, &body)?;
        let id = self.sbatch(&script, &output, "smoke-cancel")?;
        self.wait_state(id, &["RUNNING"], JOB_TIMEOUT)?;
        let pids = poll("the job to record its PIDs", JOB_TIMEOUT, POLL, || {
            Ok(std::fs::read_to_string(&pids_file)
                .ok()
                .and_then(|t| parse_pids(&t))
                .filter(|p| p.len() == 2))
        })?;
        if let Some(gone) = pids.iter().find(|&&p| !process_exists(self.sh, p)) {
            return Err(Error::Cluster(format!(
                "job {id}: process {gone} is not running before scancel"
            )));
        }
        let scancel = self.tool("scancel");
        let sh = self.sh;
        let sid = id.to_string();
        read_bounded(cmd!(sh, "{scancel} {sid}"), CLIENT_TIMEOUT)?;
        self.wait_state(id, &["CANCELLED"], JOB_TIMEOUT)?;
        poll(
            &format!("processes {pids:?} of job {id} to exit"),
            Duration::from_secs(30),
            POLL,
            || {
                Ok(pids
                    .iter()
                    .all(|&p| !process_exists(self.sh, p))
                    .then_some(()))
            },
        )?;
        println!("  scancel job {id}: CANCELLED, processes {pids:?} gone");
        Ok(())
    }

    /// Cancel whatever is left in the queue (after a failure) and wait briefly for it.
    pub fn cancel_all(&self) -> Result<()> {
        let (squeue, scancel, sh) = (self.tool("squeue"), self.tool("scancel"), self.sh);
        let ids = read_bounded(cmd!(sh, "{squeue} -h -o %i"), CLIENT_TIMEOUT)?;
        let ids: Vec<&str> = ids.split_whitespace().collect();
        if ids.is_empty() {
            return Ok(());
        }
        read_bounded(cmd!(sh, "{scancel} {ids...}"), CLIENT_TIMEOUT)?;
        poll("the queue to drain", Duration::from_secs(30), POLL, || {
            Ok(read_bounded(cmd!(sh, "{squeue} -h -o %i"), CLIENT_TIMEOUT)?
                .trim()
                .is_empty()
                .then_some(()))
        })
    }

    /// The job output files, for failure reports.
    pub fn outputs(&self) -> Vec<PathBuf> {
        ["batch.out", "cancel.out", "cancel.pids"]
            .iter()
            .map(|f| self.jobs.join(f))
            .collect()
    }
}

fn write_script(path: &Path, body: &str) -> Result<()> {
    std::fs::write(path, format!("#!/bin/sh\n{body}")).map_err(|e| Error::io(path, e))
}

/// Single-quote for /bin/sh.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn is_terminal(state: &str) -> bool {
    matches!(
        state,
        "COMPLETED"
            | "CANCELLED"
            | "FAILED"
            | "TIMEOUT"
            | "NODE_FAIL"
            | "PREEMPTED"
            | "BOOT_FAIL"
            | "DEADLINE"
            | "OUT_OF_MEMORY"
    )
}

/// `sbatch --parsable` prints `id` or `id;cluster`.
pub fn parse_job_id(out: &str) -> Option<u32> {
    out.trim().split(';').next()?.parse().ok()
}

/// `JobState=X` from `scontrol show job -o`.
pub fn parse_job_state(out: &str) -> Option<String> {
    out.split_whitespace()
        .find_map(|w| w.strip_prefix("JobState="))
        .map(str::to_string)
}

/// One PID per line; None if any line is not a PID.
pub fn parse_pids(text: &str) -> Option<Vec<u32>> {
    text.lines()
        .map(|l| l.trim().parse::<u32>().ok().filter(|&p| p > 1))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(non_snake_case)]
    use super::*;

    #[test]
    fn parse_job_id__plain_and_with_cluster() {
        assert_eq!(parse_job_id("17\n"), Some(17));
        assert_eq!(parse_job_id("18;xtask\n"), Some(18));
        assert_eq!(parse_job_id("sbatch: error: x\n"), None);
    }

    #[test]
    fn parse_job_state__reads_the_field() {
        let line = "JobId=3 JobName=smoke-batch UserId=root(0) JobState=RUNNING Reason=None Dependency=(null)\n";
        assert_eq!(parse_job_state(line).as_deref(), Some("RUNNING"));
        assert_eq!(
            parse_job_state("slurm_load_jobs error: Invalid job id specified"),
            None
        );
    }

    #[test]
    fn parse_pids__all_or_nothing() {
        assert_eq!(parse_pids("123\n456\n"), Some(vec![123, 456]));
        assert_eq!(parse_pids("123\nx\n"), None);
        assert_eq!(parse_pids("1\n"), None, "PID 1 is never a job process");
    }

    #[test]
    fn sh_quote__survives_quotes_in_paths() {
        let sh = Shell::new().unwrap();
        let q = sh_quote("it's here");
        let out = cmd!(sh, "sh -c {q}")
            .arg("--")
            .ignore_status()
            .output()
            .unwrap();
        // `sh -c "'it'\''s here'"` runs a command literally named "it's here": not found (127).
        assert_eq!(out.status.code(), Some(127));
        assert!(String::from_utf8_lossy(&out.stderr).contains("it's here"));
    }

    #[test]
    fn is_terminal__running_states_are_not() {
        assert!(!is_terminal("PENDING") && !is_terminal("RUNNING") && !is_terminal("COMPLETING"));
        assert!(is_terminal("COMPLETED") && is_terminal("CANCELLED") && is_terminal("FAILED"));
    }
}
