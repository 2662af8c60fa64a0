//! What every scenario uses: submitting jobs, reading their state from slurmctld and from
//! the accounting database, waiting for processes, all with bounded waits.

use super::super::handle::Cluster;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::{poll, read_bounded, run_bounded};
use driver_common::util::signal::process_exists;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;
use xshell::Shell;

mod node_state;
mod steps;

/// How long a client command may take.
pub use super::super::config::CLIENT_TIMEOUT;
/// How long a short job may take from submission to its end.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(60);
pub const POLL: Duration = Duration::from_millis(200);

/// One scenario's view of the cluster.
#[derive(Debug)]
pub struct Ctx<'a> {
    pub sh: &'a Shell,
    pub cluster: &'a mut Cluster,
    /// A fresh directory for this scenario's scripts and outputs (mode 1777).
    pub dir: PathBuf,
    counter: u32,
    /// Set by a scenario that met a documented gap of the build instead of a failure.
    pub gap: Option<String>,
}

/// A job's record in the accounting database (`sacct -X`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acct {
    pub state: String,
    pub exit_code: String,
    pub alloc_tres: String,
    pub user: String,
    pub start: String,
    pub end: String,
}

impl<'a> Ctx<'a> {
    /// The scenario met a documented gap of the build (`why`) and is not run: its result.
    pub fn not_run(&mut self, why: &str) -> Result<String> {
        self.gap = Some(why.into());
        Ok("not run".into())
    }

    pub fn new(sh: &'a Shell, cluster: &'a mut Cluster, name: &str) -> Result<Ctx<'a>> {
        let dir = cluster.layout().jobs().join(name);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777))
            .map_err(|e| Error::io(&dir, e))?;
        Ok(Ctx {
            sh,
            cluster,
            dir,
            counter: 0,
            gap: None,
        })
    }

    /// A Slurm client of the cluster, run in the scenario's directory.
    pub fn tool(&self, name: &str) -> Command {
        let mut c = self.cluster.tool(name);
        c.current_dir(&self.dir);
        c
    }

    /// A Slurm client run as `user`.
    pub fn tool_as(&self, user: &str, name: &str) -> Command {
        let mut c = self.cluster.tool_as(user, name);
        c.current_dir(&self.dir);
        c
    }

    /// A file in the scenario's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Write an executable `/bin/sh` script; returns its path.
    pub fn script(&mut self, stem: &str, body: &str) -> Result<PathBuf> {
        self.counter += 1;
        let p = self.dir.join(format!("{stem}-{}.sh", self.counter));
        driver_common::util::fs::write_atomic(&p, format!("#!/bin/sh\n{body}").as_bytes(), 0o755)?;
        Ok(p)
    }

    /// `sbatch --parsable ARGS SCRIPT` (script written from `body`), output to
    /// `<stem>.out`/`<stem>.err` in the scenario directory; returns the job id.
    pub fn sbatch(&mut self, stem: &str, args: &[&str], body: &str) -> Result<u32> {
        let script = self.script(stem, body)?;
        let mut c = self.tool("sbatch");
        self.sbatch_with(&mut c, stem, args, &script)
    }

    /// [`Ctx::sbatch`] with variables added to sbatch's own environment, which the job
    /// inherits (`--export=ALL,VAR=value` would also make slurmd load the user's login
    /// environment: sbatch sets `SLURM_GET_USER_ENV` for any `--export` but ALL/NIL).
    pub fn sbatch_env(
        &mut self,
        stem: &str,
        args: &[&str],
        env: &[(&str, &str)],
        body: &str,
    ) -> Result<u32> {
        let script = self.script(stem, body)?;
        let mut c = self.tool("sbatch");
        c.envs(env.iter().copied());
        self.sbatch_with(&mut c, stem, args, &script)
    }

    /// `sbatch` as another user.
    pub fn sbatch_as(&mut self, user: &str, stem: &str, args: &[&str], body: &str) -> Result<u32> {
        let script = self.script(stem, body)?;
        let mut c = self.tool_as(user, "sbatch");
        self.sbatch_with(&mut c, stem, args, &script)
    }

    /// `sbatch` through a prepared command `c` (a client with a umask or limits of its own),
    /// as [`Ctx::sbatch`] otherwise.
    pub fn sbatch_using(
        &mut self,
        mut c: Command,
        stem: &str,
        args: &[&str],
        body: &str,
    ) -> Result<u32> {
        let script = self.script(stem, body)?;
        self.sbatch_with(&mut c, stem, args, &script)
    }

    fn sbatch_with(
        &self,
        c: &mut Command,
        stem: &str,
        args: &[&str],
        script: &Path,
    ) -> Result<u32> {
        c.arg("--parsable")
            .arg("-J")
            .arg(stem)
            .arg("-o")
            .arg(self.path(&format!("{stem}.out")))
            .arg("-e")
            .arg(self.path(&format!("{stem}.err")))
            .arg(format!("--chdir={}", self.dir.display()))
            .args(args)
            .arg(script);
        let cmd = std::mem::replace(c, Command::new("true"));
        sbatch_id(cmd)
    }

    /// `sbatch --wrap` of a one-line command with output discarded (churn).
    pub fn sbatch_wrap(&self, args: &[&str], line: &str) -> Result<u32> {
        let mut c = self.tool("sbatch");
        c.args(["--parsable", "-o", "/dev/null", "-e", "/dev/null"])
            .args(args)
            .arg(format!("--wrap={line}"));
        sbatch_id(c)
    }

    /// Run a client with arguments, bounded; non-zero exit is in the Output.
    pub fn run(&self, tool: &str, args: &[&str]) -> Result<Output> {
        let mut c = self.tool(tool);
        c.args(args);
        run_bounded(c, CLIENT_TIMEOUT)
    }

    /// Run a client, requiring success; returns stdout.
    pub fn read(&self, tool: &str, args: &[&str]) -> Result<String> {
        let mut c = self.tool(tool);
        c.args(args);
        read_bounded(c, CLIENT_TIMEOUT)
    }

    /// `scontrol show job -o ID`, parsed into key=value pairs (None once slurmctld forgot it).
    pub fn job_fields(&self, id: u32) -> Result<Option<Vec<(String, String)>>> {
        let out = self.run("scontrol", &["show", "job", "-o", &id.to_string()])?;
        if !out.status.success() {
            return Ok(None);
        }
        Ok(Some(parse_fields(&String::from_utf8_lossy(&out.stdout))))
    }

    pub fn job_field(&self, id: u32, key: &str) -> Result<Option<String>> {
        Ok(self
            .job_fields(id)?
            .and_then(|f| f.into_iter().find(|(k, _)| k == key).map(|(_, v)| v)))
    }

    /// The job's state: from slurmctld, or from the accounting database once slurmctld
    /// purged it (MinJobAge).
    pub fn job_state(&self, id: u32) -> Result<String> {
        if let Some(s) = self.job_field(id, "JobState")? {
            return Ok(s);
        }
        match self.acct(id)? {
            Some(a) => Ok(a.state),
            None => Err(Error::Scenario(format!(
                "job {id} is unknown to slurmctld and sacct"
            ))),
        }
    }

    /// `scancel` job `id` and wait until it is CANCELLED.
    pub fn cancel(&self, id: u32) -> Result<()> {
        self.read("scancel", &[&id.to_string()])?;
        self.wait_state(id, &["CANCELLED"], JOB_TIMEOUT)?;
        Ok(())
    }

    /// Wait until the job is in one of `wanted`; an unwanted terminal state is an error.
    pub fn wait_state(&self, id: u32, wanted: &[&str], timeout: Duration) -> Result<String> {
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
                    return Err(Error::Scenario(format!(
                        "job {id} ended in {state}, expected {}{}",
                        wanted.join("|"),
                        self.job_field(id, "Reason")
                            .ok()
                            .flatten()
                            .map(|r| format!(" (Reason={r})"))
                            .unwrap_or_default()
                    )));
                }
                Ok(None)
            },
        )
    }

    /// The job's accounting record, None if slurmdbd has none (yet).
    pub fn acct(&self, id: u32) -> Result<Option<Acct>> {
        let out = self.read(
            "sacct",
            &[
                "-n",
                "-X",
                "-P",
                "-j",
                &id.to_string(),
                "-o",
                "State,ExitCode,AllocTRES,User,Start,End",
            ],
        )?;
        Ok(out.lines().next().and_then(parse_acct))
    }

    /// Wait until the accounting database has the job in a terminal state.
    pub fn acct_final(&self, id: u32, timeout: Duration) -> Result<Acct> {
        poll(
            &format!("sacct to record the end of job {id}"),
            timeout,
            POLL,
            || Ok(self.acct(id)?.filter(|a| is_terminal(&a.state))),
        )
    }

    /// Read a file the job writes, waiting until it has `lines` lines.
    pub fn wait_lines(&self, file: &Path, lines: usize, timeout: Duration) -> Result<Vec<String>> {
        poll(
            &format!("{} to hold {lines} line(s)", file.display()),
            timeout,
            POLL,
            || {
                Ok(std::fs::read_to_string(file)
                    .ok()
                    .map(|t| t.lines().map(str::to_string).collect::<Vec<_>>())
                    .filter(|l| l.len() >= lines))
            },
        )
    }

    /// PIDs a job wrote (one per line), waiting for `n` of them.
    pub fn wait_pids(&self, file: &Path, n: usize) -> Result<Vec<u32>> {
        let lines = self.wait_lines(file, n, JOB_TIMEOUT)?;
        lines
            .iter()
            .map(|l| {
                l.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|&p| p > 1)
                    .ok_or_else(|| Error::Scenario(format!("{}: not a PID: {l:?}", file.display())))
            })
            .collect()
    }

    /// A one-task batch job `stem` whose `script` appends PIDs to `$p.tmp` (`$p`: a file of
    /// the scenario's directory); the job then publishes them as `$p` and waits for its
    /// children. The job's id and the `n` PIDs it wrote.
    pub fn sbatch_pids(&mut self, stem: &str, script: &str, n: usize) -> Result<(u32, Vec<u32>)> {
        let pids = self.path(&format!("{stem}-pids"));
        let body = format!("p={}\n{script}mv $p.tmp $p\nwait\n", q(&pids));
        let id = self.sbatch(stem, &["-n1"], &body)?;
        Ok((id, self.wait_pids(&pids, n)?))
    }

    /// Wait until none of `pids` exists.
    pub fn wait_gone(&self, pids: &[u32], timeout: Duration) -> Result<()> {
        poll(
            &format!("processes {pids:?} to exit"),
            timeout,
            POLL,
            || Ok(pids.iter().all(|&p| !process_exists(p)).then_some(())),
        )
    }

    /// Wait until no process is left on the nodes but their slurmd (every job step and task
    /// has exited); an error lists what is still there.
    pub fn wait_no_job_processes(&self, timeout: Duration) -> Result<()> {
        let mut last = Vec::new();
        poll("the nodes' job processes to exit", timeout, POLL, || {
            last = self.cluster.node_leftovers();
            Ok(last.is_empty().then_some(()))
        })
        .map_err(|e| {
            let left: Vec<String> = last
                .iter()
                .map(|p| {
                    let cmd = std::fs::read(format!("/proc/{}/cmdline", p.pid))
                        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                        .unwrap_or_default();
                    format!("{} ({}: {})", p.pid, p.name, cmd.trim())
                })
                .collect();
            Error::Scenario(format!("{e}: still there: {}", left.join(", ")))
        })
    }
}

/// A job's final states (sacct and scontrol spell them alike).
const TERMINAL: &str =
    "COMPLETED CANCELLED FAILED TIMEOUT NODE_FAIL PREEMPTED BOOT_FAIL DEADLINE OUT_OF_MEMORY";
/// Where a log file ended when the mark was taken: [`LogMark::added`] is what it gained.
#[derive(Debug, Clone)]
pub struct LogMark {
    path: PathBuf,
    from: u64,
}

impl LogMark {
    pub fn take(path: &Path) -> LogMark {
        LogMark {
            path: path.to_path_buf(),
            from: std::fs::metadata(path).map_or(0, |m| m.len()),
        }
    }

    /// The text written to the log since the mark (lossy UTF-8; empty if unreadable).
    pub fn added(&self) -> String {
        let bytes = std::fs::read(&self.path).unwrap_or_default();
        String::from_utf8_lossy(bytes.get(self.from as usize..).unwrap_or_default()).into_owned()
    }
}

/// The lines of the file at `path` (none while it does not exist).
pub fn file_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

pub fn is_terminal(state: &str) -> bool {
    let first = state.split_whitespace().next().unwrap_or("");
    TERMINAL.split(' ').any(|t| t == first)
}

pub use super::super::jobs::{parse_job_id, sbatch_id};

/// `Key=Value` words of a one-line `scontrol show` record (values without spaces).
pub fn parse_fields(out: &str) -> Vec<(String, String)> {
    out.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The value of `key` among [`parse_fields`]'s fields; empty when it is absent.
pub fn field<'f>(fields: &'f [(String, String)], key: &str) -> &'f str {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .map_or("", |(_, v)| v.as_str())
}

/// A client's output that must have succeeded: its stdout, else an error naming `what`,
/// the exit status and stderr.
pub fn succeeded(what: &str, out: &Output) -> Result<String> {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(Error::Scenario(format!(
            "{what}: {}, stdout {stdout:?}, stderr {:?}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(stdout)
}

/// Every check must hold: else an error `what: failed: ...` naming the ones that did not.
pub fn all_hold(what: &str, checks: &[(bool, String)]) -> Result<()> {
    let failed: Vec<&str> = checks
        .iter()
        .filter(|(ok, _)| !ok)
        .map(|(_, w)| w.as_str())
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    Err(Error::Scenario(format!(
        "{what}: failed: {}",
        failed.join("; ")
    )))
}

/// No faults were found: else an error listing them (`; ` between them), followed by
/// `seen`, what they were found in (empty: nothing more).
pub fn no_faults(faults: &[String], seen: &str) -> Result<()> {
    if faults.is_empty() {
        return Ok(());
    }
    let mut message = faults.join("; ");
    if !seen.is_empty() {
        message.push_str("; ");
        message.push_str(seen);
    }
    Err(Error::Scenario(message))
}

/// One `sacct -P -o State,ExitCode,AllocTRES,User,Start,End` line. `CANCELLED by 0` keeps
/// only the first word of the state.
pub fn parse_acct(line: &str) -> Option<Acct> {
    let f: Vec<&str> = line.split('|').collect();
    if f.len() < 6 {
        return None;
    }
    Some(Acct {
        state: f[0].split_whitespace().next()?.to_string(),
        exit_code: f[1].to_string(),
        alloc_tres: f[2].to_string(),
        user: f[3].to_string(),
        start: f[4].to_string(),
        end: f[5].to_string(),
    })
}

/// A job script's lines that wait until file `go` exists, then run `then` (a job held
/// until the scenario lets it finish).
pub fn hold_until(go: &Path, then: &str) -> String {
    format!("while [ ! -e {} ]; do sleep 0.1; done\n{then}", q(go))
}

/// Single-quote for /bin/sh.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `sh_quote` of a path.
pub fn q(p: &Path) -> String {
    sh_quote(&p.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_fields__key_values() {
        let f = parse_fields("JobId=3 JobName=a UserId=root(0) JobState=RUNNING Reason=None\n");
        assert!(f.contains(&("JobState".into(), "RUNNING".into())));
        assert!(f.contains(&("UserId".into(), "root(0)".into())));
    }

    #[test]
    fn no_faults__lists_the_faults_then_what_they_were_found_in() {
        assert!(no_faults(&[], "marks []").is_ok());
        let faults = ["a missing".to_string(), "b twice".to_string()];
        let e = no_faults(&faults, "marks [x]").unwrap_err().to_string();
        assert!(e.ends_with("a missing; b twice; marks [x]"), "{e}");
        let e = no_faults(&faults, "").unwrap_err().to_string();
        assert!(e.ends_with("a missing; b twice"), "{e}");
    }

    #[test]
    fn parse_acct__cancelled_by_and_tres() {
        let a = parse_acct("CANCELLED by 0|0:15|billing=1,cpu=1,gres/gpu=1,node=1|root|2026-01-01T00:00:00|2026-01-01T00:00:05").unwrap();
        assert_eq!(a.state, "CANCELLED");
        assert_eq!(a.exit_code, "0:15");
        assert!(a.alloc_tres.contains("gres/gpu=1"));
        assert_eq!(parse_acct("x|y"), None);
    }

    #[test]
    fn is_terminal__running_states_are_not() {
        assert!(!is_terminal("PENDING") && !is_terminal("RUNNING") && !is_terminal("COMPLETING"));
        assert!(
            is_terminal("COMPLETED") && is_terminal("CANCELLED by 0") && is_terminal("TIMEOUT")
        );
        for s in [
            "FAILED",
            "NODE_FAIL",
            "PREEMPTED",
            "BOOT_FAIL",
            "DEADLINE",
            "OUT_OF_MEMORY",
        ] {
            assert!(is_terminal(s), "{s}");
        }
        assert!(!is_terminal("") && !is_terminal("COMPLETE"));
    }

    #[test]
    fn sh_quote__survives_quotes() {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", sh_quote("it's")))
            .output()
            .unwrap();
        assert_eq!(out.stdout, b"it's");
    }
}
