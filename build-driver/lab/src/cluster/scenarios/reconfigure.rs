//! `scontrol reconfigure` with a changed local setting (SMD-012, first half; the second half,
//! an in-place slurmd replacement keeping the SACK socket, is sack.rs).
//!
//! slurmd re-executes itself on reconfigure (`_try_to_reconfig`: `execve` of its own binary,
//! which on macOS it finds with `proc_pidpath()`, patches/*/0014), so its PID stays and its
//! log is reopened wherever `SlurmdLogFile` now says. On the PoC's Mac this path stalled for
//! 187 s in `closeall()` (POC-DEFECTS D13, patches/*/0027) and logged `EBADF` on conmgr's
//! interrupt pipe just before the exec (D14: [`repeated`], patches/26.11/0070).

use super::super::daemon::Daemon;
use super::client::{Ctx, JOB_TIMEOUT, LogMark};
use super::conf::ConfChange;
use driver_common::error::{Error, Result};
use std::time::Duration;

/// Whether slurmd's log text mentions job `id` (`job 12`, `JobId=12`, `StepId=12.0`,
/// `[12.batch]`), not a job whose id starts with the same digits.
pub fn mentions_job(text: &str, id: u32) -> bool {
    let id = id.to_string();
    ["job ", "JobId=", "StepId=", "["].iter().any(|prefix| {
        let needle = format!("{prefix}{id}");
        text.match_indices(needle.as_str()).any(|(at, _)| {
            let next = text[at + needle.len()..].chars().next();
            match *prefix {
                // `[12.batch]`, never a time stamp `[2026-...]`
                "[" => next == Some('.'),
                _ => !next.is_some_and(|c| c.is_ascii_digit()),
            }
        })
    })
}

/// SMD-012: `SlurmdLogFile` changed to another file and `scontrol reconfigure`d, a job run,
/// then the original `slurm.conf` put back (byte for byte) and reconfigured again, another
/// job run. slurmd keeps its PID through both; the first job is logged in the new file only,
/// the second in the original one again; nothing of either job is left on the node.
pub fn log_file_change(ctx: &mut Ctx<'_>) -> Result<String> {
    let layout = ctx.cluster.layout();
    let node = ctx.first_node();
    let main_log = ctx.cluster.log(Daemon::Slurmd(0));
    let alt_log = layout
        .logs()
        .join(format!("slurmd-{node}.reconfigured.log"));
    driver_common::util::fs::remove_optional(&alt_log)?;
    let conf_before = driver_common::util::fs::sha256_file(&layout.conf())?;
    let pid = ctx.cluster.record(Daemon::Slurmd(0)).map(|d| d.pid);
    let alt_setting = format!(
        "SlurmdLogFile={}",
        layout.logs().join("slurmd-%n.reconfigured.log").display()
    );
    let mark_main = LogMark::take(&main_log);
    let change = ConfChange::apply(ctx.cluster, &[alt_setting])?;
    let pid_alt = ctx.cluster.record(Daemon::Slurmd(0)).map(|d| d.pid);
    let a = ctx.sbatch("in-new-log", &["-n1"], "echo a\n")?;
    ctx.wait_state(a, &["COMPLETED"], JOB_TIMEOUT)?;
    let back = change.restore()?;
    let main_during = mark_main.added();
    let mark_main = LogMark::take(&main_log);
    let b = ctx.sbatch("in-old-log", &["-n1"], "echo b\n")?;
    ctx.wait_state(b, &["COMPLETED"], JOB_TIMEOUT)?;
    ctx.wait_no_job_processes(Duration::from_secs(30))?;
    let alt = std::fs::read_to_string(&alt_log).map_err(|e| Error::io(&alt_log, e))?;
    let main_after = mark_main.added();
    let conf_after = driver_common::util::fs::sha256_file(&layout.conf())?;
    let pid_after = ctx.cluster.record(Daemon::Slurmd(0)).map(|d| d.pid);
    let alive = ctx.cluster.is_running(Daemon::Slurmd(0));
    let checks = [
        (
            pid.is_some() && pid == pid_alt && pid == pid_after && alive,
            format!("slurmd PID {pid:?} -> {pid_alt:?} -> {pid_after:?} (running: {alive})"),
        ),
        (
            mentions_job(&alt, a) && !mentions_job(&main_during, a),
            format!(
                "job {a} logged in {} ({}) and not in the original log ({})",
                alt_log.display(),
                mentions_job(&alt, a),
                !mentions_job(&main_during, a)
            ),
        ),
        (
            mentions_job(&main_after, b) && !mentions_job(&alt, b),
            format!(
                "job {b} logged in the original log again ({}) and not in {} ({})",
                mentions_job(&main_after, b),
                alt_log.display(),
                !mentions_job(&alt, b)
            ),
        ),
        (
            conf_before == conf_after,
            format!("slurm.conf restored byte for byte ({conf_before} / {conf_after})"),
        ),
    ];
    super::client::all_hold("after two reconfigures", &checks)?;
    Ok(format!(
        "SlurmdLogFile changed and back, each by scontrol reconfigure (back in {back:.1?}); slurmd kept PID {}; job {a} logged in the new file only, job {b} in the original; slurm.conf restored byte for byte; nothing left",
        pid.unwrap_or(0)
    ))
}

/// How many times [`repeated`] reconfigures (on the 26.11 snapshot without 0072 one run of
/// five reconfigures in six lost slurmctld; ten make the race likelier to be reached).
const REPEATS: usize = 10;

/// The lines of `text` that tell of a descriptor used after it was closed; not 26.11's
/// debug line `fd_resolve_path: fcntl(N, F_GETPATH) failed: Bad file descriptor`, which a
/// slurmd logs at every start (a name lookup for its log, before any reconfigure).
pub fn bad_descriptor_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.contains("Bad file descriptor") && !l.contains("fd_resolve_path:"))
        .collect()
}

/// POC D14: `scontrol reconfigure` [`REPEATS`] times in a row, then a job. slurmd and
/// slurmctld (`-D`, not under systemd, so they do not fork) re-execute themselves in place each
/// time: both keep their PIDs, slurmd starts once per reconfigure and registers each time,
/// the job runs, and neither daemon's log (nor slurmd's standard error) says `Bad file
/// descriptor`. slurmctld's part is 0072's (26.11: it aborted with `fatal: this should
/// never happen read(4)=Bad file descriptor`). On the PoC's Mac (26.11) each reconfigure
/// logged `_handle_poll_event->_interrupt: [POLL] write(5) failed: Bad file descriptor`:
/// `closeall_except()` ran while conmgr's poll() thread, which 26.11's quiesce leaves
/// running, still watched and signalled the descriptors it closed.
pub fn repeated(ctx: &mut Ctx<'_>) -> Result<String> {
    let log = ctx.cluster.log(Daemon::Slurmd(0));
    let output = ctx.cluster.output(Daemon::Slurmd(0));
    let (mark_log, mark_out) = (LogMark::take(&log), LogMark::take(&output));
    let pid = ctx.cluster.record(Daemon::Slurmd(0)).map(|d| d.pid);
    let ctld_log = ctx.cluster.log(Daemon::Slurmctld);
    let mark_ctld = LogMark::take(&ctld_log);
    let ctld = ctx.cluster.record(Daemon::Slurmctld).map(|d| d.pid);
    let mut took = Vec::new();
    for _ in 0..REPEATS {
        took.push(super::conf::reconfigure(ctx.cluster)?);
    }
    let job = ctx.sbatch("after-reconfigures", &["-n1"], "echo ok\n")?;
    ctx.wait_state(job, &["COMPLETED"], JOB_TIMEOUT)?;
    let pid_after = ctx.cluster.record(Daemon::Slurmd(0)).map(|d| d.pid);
    let alive = ctx.cluster.is_running(Daemon::Slurmd(0));
    let ctld_after = ctx.cluster.record(Daemon::Slurmctld).map(|d| d.pid);
    let ctld_alive = ctx.cluster.is_running(Daemon::Slurmctld);
    let ctld_logged = mark_ctld.added();
    let bad_ctld = bad_descriptor_lines(&ctld_logged);
    let (logged, printed) = (mark_log.added(), mark_out.added());
    let starts = logged.matches("slurmd started on").count();
    // slurmd -D writes its log lines to standard error too: one event, a line in each
    let (bad_log, bad_out) = (
        bad_descriptor_lines(&logged),
        bad_descriptor_lines(&printed),
    );
    let checks = [
        (
            pid.is_some() && pid == pid_after && alive,
            format!("slurmd PID {pid:?} -> {pid_after:?} (running: {alive})"),
        ),
        (
            starts == REPEATS,
            format!("slurmd started {starts} times for {REPEATS} reconfigures"),
        ),
        (
            bad_log.is_empty() && bad_out.is_empty(),
            format!(
                "Bad file descriptor in slurmd's log {} time(s), in its standard error {} time(s): {}",
                bad_log.len(),
                bad_out.len(),
                bad_log
                    .iter()
                    .chain(&bad_out)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(" | ")
            ),
        ),
    ];
    let ctld_checks = [
        (
            ctld.is_some() && ctld == ctld_after && ctld_alive,
            format!("slurmctld PID {ctld:?} -> {ctld_after:?} (running: {ctld_alive})"),
        ),
        (
            bad_ctld.is_empty(),
            format!(
                "Bad file descriptor in slurmctld's log: {}",
                bad_ctld.join(" | ")
            ),
        ),
    ];
    super::client::all_hold("after the reconfigures (slurmd)", &checks)?;
    super::client::all_hold("after the reconfigures (slurmctld)", &ctld_checks)?;
    let secs: Vec<String> = took
        .iter()
        .map(|d| format!("{:.1}", d.as_secs_f64()))
        .collect();
    Ok(format!(
        "{REPEATS} reconfigures (registered again after {} s); slurmd kept PID {} and started {starts} times, slurmctld kept PID {}; job {job} ran; no Bad file descriptor in either log",
        secs.join(", "),
        pid.unwrap_or(0),
        ctld.unwrap_or(0)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_job__batch_and_step_forms_not_prefixes() {
        assert!(mentions_job(
            "debug:  Waiting for job 12's prolog to complete",
            12
        ));
        assert!(mentions_job("x [12.batch] done with step", 12));
        assert!(mentions_job("launch task StepId=12.0 request", 12));
        assert!(!mentions_job("[123.batch] done", 12));
        assert!(!mentions_job("job 123 ended", 12));
        assert!(!mentions_job("[2026-12-01T10:00:00.123] started", 2026));
    }

    #[test]
    fn bad_descriptor_lines__the_poc_line_and_nothing_else() {
        let log = "[2026-09-09T20:47:55.735] all threads complete\n\
                   [2026-09-09T20:47:55.773] error: _handle_poll_event->_interrupt: [POLL] write(5) failed: Bad file descriptor\n\
                   [2026-09-09T20:47:55.804] slurmd started on Wed, 09 Sep 2026\n";
        let bad = bad_descriptor_lines(log);
        assert_eq!(bad.len(), 1);
        assert!(bad[0].contains("write(5) failed"));
        assert!(bad_descriptor_lines("slurmd started on x\n").is_empty());
        let start = "debug:  fd_resolve_path: fcntl(10, F_GETPATH) failed: Bad file descriptor";
        assert!(bad_descriptor_lines(start).is_empty());
        let lane3 = "fatal: this should never happen read(4)=Bad file descriptor";
        assert_eq!(bad_descriptor_lines(lane3), vec![lane3]);
    }
}
