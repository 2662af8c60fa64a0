//! `srun` from a scenario, and the checks of a job's or a step's outcome that many scenarios
//! share (its state, its accounting record, the host names its tasks ran on).

use super::*;

impl Ctx<'_> {
    /// `srun ARGS` with a deadline.
    pub fn srun(&self, args: &[&str]) -> Result<Output> {
        self.run("srun", args)
    }

    /// `srun ARGS` must succeed: its stdout; else an error naming `what`, the status and
    /// stderr.
    pub fn srun_stdout(&self, what: &str, args: &[&str]) -> Result<String> {
        let out = self.srun(args)?;
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = || String::from_utf8_lossy(&out.stderr).trim().to_string();
        match out.status.success() {
            true => Ok(stdout),
            false => Err(Error::Scenario(format!(
                "{what}: {}, stdout {stdout:?}, stderr {:?}",
                out.status,
                stderr()
            ))),
        }
    }

    /// Job `id` is in state `want` now; else an error saying `when`.
    pub fn expect_state(&self, id: u32, want: &str, when: &str) -> Result<()> {
        match self.job_state(id)? {
            s if s == want => Ok(()),
            s => Err(Error::Scenario(format!(
                "job {id} is {s} {when}, expected {want}"
            ))),
        }
    }

    /// Job `id` pends (for `reason`, when given) within `JOB_TIMEOUT`; any other state is an
    /// error saying `when` (as [`Ctx::expect_state`]).
    pub fn wait_pending(&self, id: u32, reason: Option<&str>, when: &str) -> Result<()> {
        poll(
            &format!("job {id} to pend on {}", reason.unwrap_or("anything")),
            JOB_TIMEOUT,
            POLL,
            || {
                self.expect_state(id, "PENDING", when)?;
                let r = self.job_field(id, "Reason")?;
                Ok(reason
                    .is_none_or(|want| r.as_deref() == Some(want))
                    .then_some(()))
            },
        )
    }

    /// As [`Ctx::wait_pending`], and job `id` still pends two seconds later.
    pub fn stays_pending(&self, id: u32, reason: Option<&str>, when: &str) -> Result<()> {
        self.wait_pending(id, reason, when)?;
        std::thread::sleep(Duration::from_secs(2));
        self.expect_state(id, "PENDING", when)
    }

    /// sacct has job `id` finished in state `want` (within `JOB_TIMEOUT`); its record.
    pub fn expect_acct(&self, id: u32, want: &str) -> Result<Acct> {
        let a = self.acct_final(id, JOB_TIMEOUT)?;
        if a.state != want {
            return Err(Error::Scenario(format!(
                "sacct: job {id} {}, expected {want}",
                a.state
            )));
        }
        Ok(a)
    }

    /// Every node's host name, sorted.
    pub fn hostnames(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .cluster
            .nodes()
            .iter()
            .map(|n| n.hostname.clone())
            .collect();
        v.sort();
        v
    }

    /// `srun ARGS` must succeed and print exactly `expected`.
    pub fn srun_expect(&self, args: &[&str], expected: &str) -> Result<()> {
        let out = self.srun(args)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || stdout.trim_end() != expected {
            return Err(Error::Scenario(format!(
                "srun {}: {}, stdout {stdout:?}, stderr {:?}; expected {expected:?}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    }

    /// Cancel whatever is queued and wait for the queue to drain.
    pub fn cancel_all(&self) -> Result<()> {
        let ids = self.read("squeue", &["-h", "-o", "%i"])?;
        let ids: Vec<&str> = ids.split_whitespace().collect();
        if !ids.is_empty() {
            self.read("scancel", &ids)?;
        }
        poll("the queue to drain", Duration::from_secs(60), POLL, || {
            Ok(self
                .read("squeue", &["-h", "-o", "%i"])?
                .trim()
                .is_empty()
                .then_some(()))
        })
    }
}
