//! The `macos-native` profile's scenarios (patches/*/0040-0044: `jobacct_gather/darwin`,
//! `proctrack/darwin`, `task/darwin`, `OverMemoryKill` with a poll every second). They run
//! only under that profile (`Needs::MacosNative`; otherwise skipped with the reason).
//!
//! * `accounting-accuracy`: a job whose tree burns 2 s of CPU, touches 300 MiB and writes
//!   64 MiB (fsynced, to the disk-backed scenario directory) in two processes, one of them
//!   re-parented to init after it was seen; sstat while it runs and sacct afterwards show
//!   CPU, MaxRSS and written bytes within 10 % of what the processes measured themselves.
//! * `memory-oom-kill`: `--mem=256M`, touches 1 GiB and holds it: OUT_OF_MEMORY, killed
//!   within two poll intervals of crossing the limit; prints the peak it reached.
//! * `reparented-setsid`: a `setsid` child whose parent exits after the child was seen is
//!   killed by `scancel` (the proof of concept's SMD-109 fixture, and its re-parented form).
//! * `double-fork-escape`: what can still escape: a double fork completed between two scans.
//! * `background-class`: `SLURM_DARWIN_BACKGROUND=1` puts the task and its children in
//!   macOS's background class; a malformed value stops the task with a message naming it.
//! * `binding-not-enforced`: `--cpu-bind`/`--mem-bind` run, with "not enforced on macOS" on
//!   the task's stderr.

use super::client::{Ctx, JOB_TIMEOUT, POLL, q};
use crate::error::{Error, Result};
use crate::util::process::bounded::poll;
use crate::util::signal::process_exists;
use std::path::Path;
use std::time::Duration;

/// One poll interval of the profile (`JobAcctGatherFrequency=task=1`).
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Seconds in a Slurm elapsed time: `[D-][HH:]MM:SS[.mmm]`.
pub fn parse_elapsed(s: &str) -> Option<f64> {
    let s = s.trim();
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (d.parse::<f64>().ok()?, r),
        None => (0.0, s),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let nums: Vec<f64> = parts
        .iter()
        .map(|p| p.parse::<f64>().ok())
        .collect::<Option<_>>()?;
    let secs = match nums.as_slice() {
        [m, s] => m * 60.0 + s,
        [h, m, s] => h * 3600.0 + m * 60.0 + s,
        _ => return None,
    };
    Some(days * 86400.0 + secs)
}

/// Bytes in a Slurm size (`312345K`, `64M`, `1.50G`, `67108864`).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let factor = match unit {
        "" => 1.0,
        "K" => 1024.0,
        "M" => 1024.0 * 1024.0,
        "G" => 1024.0 * 1024.0 * 1024.0,
        "T" => 1024.0f64.powi(4),
        _ => return None,
    };
    Some((n * factor).round() as u64)
}

/// One `name=value` of a TRES string (`cpu=00:00:02,fs/disk=67108864,mem=312M`).
pub fn tres_value<'a>(tres: &'a str, name: &str) -> Option<&'a str> {
    tres.split(',')
        .find_map(|t| t.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
}

/// Whether `got` is within `pct` percent of `want`.
pub fn within(got: f64, want: f64, pct: f64) -> bool {
    (got - want).abs() <= want.abs() * pct / 100.0
}

/// The figures the job's processes reported about themselves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Truth {
    pub cpu_s: f64,
    pub maxrss: u64,
    pub written: u64,
}

/// Sums the `cpu maxrss written` lines the job's processes wrote (`ru_maxrss` in bytes).
pub fn parse_truth(lines: &[String]) -> Option<Truth> {
    let mut t = Truth {
        cpu_s: 0.0,
        maxrss: 0,
        written: 0,
    };
    for l in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        let [cpu, rss, written] = f.as_slice() else {
            return None;
        };
        t.cpu_s += cpu.parse::<f64>().ok()?;
        t.maxrss += rss.parse::<u64>().ok()?;
        t.written += written.parse::<u64>().ok()?;
    }
    Some(t)
}

/// Fails when the scenario directory is on tmpfs, where nothing reaches a disk.
fn require_disk_backed(dir: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        let st = nix::sys::statfs::statfs(dir).map_err(|e| Error::io(dir, e.into()))?;
        if st.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC {
            return Err(Error::Scenario(format!(
                "{} is on tmpfs: written bytes would never reach a disk; run the cluster with TMPDIR on a disk-backed file system",
                dir.display()
            )));
        }
    }
    let _ = dir;
    Ok(())
}

/// The job of `accounting-accuracy`: P forks I, I forks W and exits 2.5 s later (W is then
/// re-parented to init, after the tracker saw it); each of P and W burns 1 s of CPU, touches
/// 150 MiB and writes 32 MiB with fsync, reports `cpu maxrss written`, and both hold until the
/// scenario has read sstat.
const ACCURACY: &str = r#"
import os, resource, sys, time
d = sys.argv[1]
def work(name):
    t0 = time.process_time()
    while time.process_time() - t0 < 1.0:
        pass
    mem = bytearray(b'\x01') * (150 << 20)
    with open(os.path.join(d, name + '.data'), 'wb') as f:
        chunk = b'\x02' * (1 << 20)
        for _ in range(32):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    ru = resource.getrusage(resource.RUSAGE_SELF)
    # ru_maxrss: KiB on Linux, bytes on macOS
    rss = ru.ru_maxrss * (1 if sys.platform == 'darwin' else 1024)
    with open(os.path.join(d, name + '.truth'), 'w') as f:
        f.write('%.3f %d %d\n' % (ru.ru_utime + ru.ru_stime, rss, 32 << 20))
    return mem
def wait_for(name):
    while not os.path.exists(os.path.join(d, name)):
        time.sleep(0.05)
if os.fork() == 0:               # I
    if os.fork() == 0:           # W
        os.setsid()
        mem = work('w')
        wait_for('done')
        os._exit(0)
    time.sleep(2.5)
    os._exit(0)
os.wait()                        # I is gone: W now belongs to init
mem = work('p')
wait_for('w.truth')
with open(os.path.join(d, 'ready'), 'w') as f:
    f.write('%d\n' % os.getpid())
wait_for('done')
"#;

pub fn accounting_accuracy(ctx: &mut Ctx<'_>) -> Result<String> {
    require_disk_backed(&ctx.dir)?;
    let dir = ctx.dir.clone();
    let py = ctx.path("accuracy.py");
    std::fs::write(&py, ACCURACY).map_err(|e| Error::io(&py, e))?;
    let body = format!("exec python3 {} {}\n", q(&py), q(&dir));
    let id = ctx.sbatch("accuracy", &["-n1", "--mem=1G"], &body)?;
    ctx.wait_lines(&ctx.path("ready"), 1, JOB_TIMEOUT)?;
    // Two polls after the last process finished its work: the figures are settled.
    std::thread::sleep(2 * POLL_INTERVAL + Duration::from_millis(200));
    let truth = read_truth(ctx)?;
    let step = format!("{id}.batch");
    let (live_cpu_shown, live_rss, live_written) = live_figures(ctx, &step, &truth)?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let (final_cpu, final_rss, final_written) = final_figures(ctx, &step, &truth)?;
    Ok(format!(
        "job {id}: the processes measured {:.2} s CPU, {} MiB MaxRSS, {} MiB written; sstat {live_cpu_shown}, {} MiB, {} MiB; sacct {final_cpu:.2} s, {} MiB, {} MiB (one worker re-parented to init)",
        truth.cpu_s,
        truth.maxrss >> 20,
        truth.written >> 20,
        live_rss >> 20,
        live_written >> 20,
        final_rss >> 20,
        final_written >> 20,
    ))
}

/// `tool -n -P --noconvert -j step -o fields`: the step's figures, exact and unconverted.
fn step_fields(ctx: &Ctx<'_>, tool: &str, step: &str, fields: &str) -> Result<String> {
    ctx.read(tool, &["-n", "-P", "--noconvert", "-j", step, "-o", fields])
}

/// sstat while the job runs (then the job is told it is `done`): the CPU as shown, RSS and
/// bytes written, checked against the processes' own figures.
fn live_figures(ctx: &Ctx<'_>, step: &str, truth: &Truth) -> Result<(String, u64, u64)> {
    let live = step_fields(ctx, "sstat", step, "AveCPU,MaxRSS,TRESUsageOutTot")?;
    std::fs::write(ctx.path("done"), "").map_err(|e| Error::io(ctx.path("done"), e))?;
    let live = live.lines().next().unwrap_or("").to_string();
    let f: Vec<&str> = live.split('|').collect();
    let [cpu, rss, out] = f.as_slice() else {
        return Err(Error::Scenario(format!("sstat {step}: {live:?}")));
    };
    let (live_cpu, live_rss, live_written) = figures(step, cpu, rss, out)?;
    // sstat prints whole seconds (truncated): the job's own figure, to the second.
    if live_cpu > truth.cpu_s + 0.01 || live_cpu < truth.cpu_s.floor() - 0.01 {
        return Err(Error::Scenario(format!(
            "sstat {step}: AveCPU {cpu} while the processes measured {:.2} s (sstat prints whole seconds)",
            truth.cpu_s
        )));
    }
    check_close("sstat", step, live_rss, live_written, truth)?;
    Ok((cpu.trim().to_string(), live_rss, live_written))
}

/// sacct once the step is recorded COMPLETED: CPU within 10 %, RSS and bytes written.
fn final_figures(ctx: &Ctx<'_>, step: &str, truth: &Truth) -> Result<(f64, u64, u64)> {
    let acct = poll(
        &format!("sacct to record {step}"),
        JOB_TIMEOUT,
        POLL,
        || {
            let out = step_fields(ctx, "sacct", step, "State,TotalCPU,MaxRSS,TRESUsageOutTot")?;
            Ok(out
                .lines()
                .next()
                .filter(|l| l.starts_with("COMPLETED"))
                .map(str::to_string))
        },
    )?;
    let f: Vec<&str> = acct.split('|').collect();
    let [_, cpu, rss, out] = f.as_slice() else {
        return Err(Error::Scenario(format!("sacct {step}: {acct:?}")));
    };
    let (final_cpu, final_rss, final_written) = figures(step, cpu, rss, out)?;
    if !within(final_cpu, truth.cpu_s, 10.0) {
        return Err(Error::Scenario(format!(
            "sacct {step}: TotalCPU {cpu} ({final_cpu:.2} s), the processes measured {:.2} s: not within 10 % (Mach units not converted? re-parented worker not counted?)",
            truth.cpu_s
        )));
    }
    check_close("sacct", step, final_rss, final_written, truth)?;
    Ok((final_cpu, final_rss, final_written))
}

fn read_truth(ctx: &Ctx<'_>) -> Result<Truth> {
    let mut lines = Vec::new();
    for who in ["p", "w"] {
        lines.extend(ctx.wait_lines(&ctx.path(&format!("{who}.truth")), 1, JOB_TIMEOUT)?);
    }
    parse_truth(&lines).ok_or_else(|| Error::Scenario(format!("job's own figures: {lines:?}")))
}

/// CPU seconds, MaxRSS bytes and written bytes of an sstat/sacct line's fields.
fn figures(step: &str, cpu: &str, rss: &str, out: &str) -> Result<(f64, u64, u64)> {
    let bad = |what: &str, v: &str| Error::Scenario(format!("{step}: {what} {v:?} not understood"));
    let cpu_s = parse_elapsed(cpu).ok_or_else(|| bad("CPU", cpu))?;
    let rss_b = parse_size(rss).ok_or_else(|| bad("MaxRSS", rss))?;
    let written = tres_value(out, "fs/disk")
        .and_then(parse_size)
        .ok_or_else(|| bad("TRESUsageOutTot", out))?;
    Ok((cpu_s, rss_b, written))
}

fn check_close(tool: &str, step: &str, rss: u64, written: u64, truth: &Truth) -> Result<()> {
    if !within(rss as f64, truth.maxrss as f64, 10.0) {
        return Err(Error::Scenario(format!(
            "{tool} {step}: MaxRSS {} MiB, the processes' peaks sum to {} MiB: not within 10 %",
            rss >> 20,
            truth.maxrss >> 20
        )));
    }
    if !within(written as f64, truth.written as f64, 10.0) {
        return Err(Error::Scenario(format!(
            "{tool} {step}: {} bytes written (fs/disk), the processes wrote {} with fsync: not within 10 %",
            written, truth.written
        )));
    }
    Ok(())
}

/// The job of `memory-oom-kill`: touches 64 MiB at a time up to 1 GiB, appending
/// `<wall time> <bytes touched>` after each step, then holds, appending a heartbeat every
/// 50 ms (the last one tells when it was killed).
const HOG: &str = r#"
import sys, time
log = open(sys.argv[1], 'a', buffering=1)
held = []
for i in range(16):
    held.append(bytearray(b'\x01') * (64 << 20))
    log.write('%.3f %d\n' % (time.time(), (i + 1) << 26))
while True:
    time.sleep(0.05)
    log.write('%.3f beat\n' % time.time())
"#;

pub fn memory_oom_kill(ctx: &mut Ctx<'_>) -> Result<String> {
    let py = ctx.path("hog.py");
    std::fs::write(&py, HOG).map_err(|e| Error::io(&py, e))?;
    let log = ctx.path("hog.log");
    let body = format!("exec python3 {} {}\n", q(&py), q(&log));
    let id = ctx.sbatch("hog", &["-n1", "--mem=256M"], &body)?;
    let state = ctx.wait_state(id, &["OUT_OF_MEMORY"], JOB_TIMEOUT)?;
    let text = std::fs::read_to_string(&log).map_err(|e| Error::io(&log, e))?;
    let limit = 256u64 << 20;
    let mut crossed = None;
    let mut last = None;
    let mut touched = 0u64;
    for l in text.lines() {
        let mut f = l.split_whitespace();
        let t: f64 = f.next().and_then(|v| v.parse().ok()).unwrap_or(0.0);
        last = Some(t);
        if let Some(bytes) = f.next().and_then(|v| v.parse::<u64>().ok()) {
            touched = bytes;
            if bytes > limit && crossed.is_none() {
                crossed = Some(t);
            }
        }
    }
    let (Some(crossed), Some(last)) = (crossed, last) else {
        return Err(Error::Scenario(format!(
            "job {id} ended {state} before it crossed 256 MiB: {text:?}"
        )));
    };
    let latency = last - crossed;
    let peak = ctx.read(
        "sacct",
        &[
            "-n",
            "-P",
            "--noconvert",
            "-j",
            &format!("{id}.batch"),
            "-o",
            "MaxRSS",
        ],
    )?;
    let peak = parse_size(peak.lines().next().unwrap_or("")).unwrap_or(0);
    // The poll that sees the crossing comes at most one interval later; the kill it sends
    // goes through slurmctld. Two intervals, plus the heartbeat's 50 ms.
    let bound = 2.0 * POLL_INTERVAL.as_secs_f64() + 0.05;
    if latency > bound {
        return Err(Error::Scenario(format!(
            "job {id}: killed {latency:.2} s after crossing 256 MiB, more than two poll intervals ({bound:.2} s)"
        )));
    }
    Ok(format!(
        "job {id} --mem=256M: {state}, killed {latency:.2} s after crossing the limit (bound {bound:.2} s); it had touched {} MiB; peak recorded (sacct MaxRSS) {} MiB",
        touched >> 20,
        peak >> 20
    ))
}

/// A batch job whose `setsid` child leaves the session; with `reparent`, the child's parent
/// (a subshell) exits 3 s after the child started, so the child belongs to init by the time
/// of the cancel.
fn setsid_fixture(ctx: &mut Ctx<'_>, stem: &str, reparent: bool) -> Result<(u32, Vec<u32>)> {
    let pids = ctx.path(&format!("{stem}-pids"));
    let spawn = if reparent {
        "sh -c 'setsid sh -c \"echo \\$\\$ > \\\"$1\\\"; exec sleep 303\" & sleep 3' sh $p.esc\n"
    } else {
        "setsid sh -c 'echo $$ > \"$1\"; exec sleep 303' sh $p.esc &\n"
    };
    let body = format!(
        "p={p}\n\
         sleep 300 & echo $! > $p.tmp\n\
         {spawn}\
         while [ ! -s $p.esc ]; do sleep 0.1; done\n\
         cat $p.esc >> $p.tmp\n\
         mv $p.tmp $p\n\
         wait\n",
        p = q(&pids)
    );
    let id = ctx.sbatch(stem, &["-n1"], &body)?;
    let pids = ctx.wait_pids(&pids, 2)?;
    Ok((id, pids))
}

/// The parent pid of a process (`ps`).
fn parent_of(pid: u32) -> Option<u32> {
    let out = std::process::Command::new("ps")
        .args(["-o", "ppid=", "-p", &pid.to_string()])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

pub fn reparented_setsid(ctx: &mut Ctx<'_>) -> Result<String> {
    let mut seen = Vec::new();
    for (stem, reparent) in [("smd109", false), ("smd109-reparented", true)] {
        let (id, pids) = setsid_fixture(ctx, stem, reparent)?;
        let (tracked, escaped) = (pids[0], pids[1]);
        let mut adopted = None;
        if reparent {
            // The subshell exits 3 s after the child started: under load it may be gone
            // (the child already adopted by init) by the time the pids are read.
            let first = parent_of(escaped);
            adopted = match first {
                Some(1) => first,
                _ => Some(poll(
                    &format!("the setsid child {escaped}'s parent {first:?} to exit"),
                    JOB_TIMEOUT,
                    POLL,
                    || Ok(parent_of(escaped).filter(|p| Some(*p) != first)),
                )?),
            };
        }
        ctx.cancel(id)?;
        if let Err(e) = ctx.wait_gone(&[tracked, escaped], Duration::from_secs(30)) {
            if process_exists(escaped) {
                crate::util::signal::kill(escaped, nix::sys::signal::Signal::SIGKILL);
            }
            return Err(Error::Scenario(format!(
                "job {id}: {e}: the setsid child {escaped}{} survived the cancel (proctrack/darwin should remember it)",
                adopted
                    .map(|p| format!(", re-parented to {p},"))
                    .unwrap_or_default()
            )));
        }
        seen.push(format!(
            "job {id}: setsid child {escaped}{} gone",
            adopted
                .map(|p| format!(" (re-parented to {p} after it was seen)"))
                .unwrap_or_default()
        ));
    }
    Ok(format!("{} after scancel", seen.join("; ")))
}

pub fn double_fork_escape(ctx: &mut Ctx<'_>) -> Result<String> {
    // The middle process lives a few milliseconds; a scan that lands in that window sees it
    // and the grandchild is then caught: try a few times.
    let mut caught = 0;
    for attempt in 1..=4 {
        let esc = ctx.path(&format!("escape-{attempt}"));
        let body = format!(
            "setsid sh -c 'sleep 305 & echo $! > \"$1\"' sh {e}\n\
             while [ ! -s {e} ]; do sleep 0.1; done\n\
             sleep 300\n",
            e = q(&esc)
        );
        let id = ctx.sbatch(&format!("double-fork-{attempt}"), &["-n1"], &body)?;
        let grandchild = ctx.wait_pids(&esc, 1)?[0];
        // Let the scans (every second) run a few times, then cancel.
        std::thread::sleep(3 * POLL_INTERVAL);
        ctx.cancel(id)?;
        std::thread::sleep(Duration::from_secs(3));
        if process_exists(grandchild) {
            crate::util::signal::kill(grandchild, nix::sys::signal::Signal::SIGKILL);
            ctx.wait_gone(&[grandchild], Duration::from_secs(10))?;
            return Ok(format!(
                "LIMIT (documented): job {id}'s grandchild {grandchild}, double-forked into a new session between two scans, survived scancel (killed by the harness){}",
                if caught > 0 {
                    format!("; {caught} earlier attempt(s) were caught by a scan inside the window")
                } else {
                    String::new()
                }
            ));
        }
        caught += 1;
    }
    Err(Error::Scenario(format!(
        "a double fork between two scans was caught {caught} times out of {caught}: the documented escape did not show; check the documentation against the plugin"
    )))
}

/// The scheduling class of a process: whether it runs in macOS's background class (Linux
/// backend: `SCHED_IDLE`, /proc/<pid>/stat field 41; macOS: `PROC_FLAG_DARWINBG`).
fn in_background(pid: u32) -> Result<bool> {
    #[cfg(target_os = "linux")]
    {
        let path = format!("/proc/{pid}/stat");
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(Path::new(&path), e))?;
        let rest = text
            .rsplit_once(')')
            .map(|(_, r)| r)
            .ok_or_else(|| Error::Scenario(format!("{path}: {text:?}")))?;
        // rest[0] is field 3: field 41 is index 38.
        let policy: u32 = rest
            .split_whitespace()
            .nth(38)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| Error::Scenario(format!("{path}: no policy field")))?;
        Ok(policy == libc::SCHED_IDLE as u32)
    }
    #[cfg(target_os = "macos")]
    {
        const PROC_FLAG_DARWINBG: u32 = 0x8000;
        // SAFETY: an all-zero proc_bsdinfo is valid to overwrite.
        let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
        // SAFETY: `info` is writable for `size` bytes.
        let n = unsafe {
            libc::proc_pidinfo(
                pid as libc::c_int,
                libc::PROC_PIDTBSDINFO,
                0,
                (&raw mut info).cast(),
                size,
            )
        };
        if n != size {
            return Err(Error::Scenario(format!("proc_pidinfo({pid}) failed")));
        }
        Ok(info.pbi_flags & PROC_FLAG_DARWINBG != 0)
    }
}

pub fn background_class(ctx: &mut Ctx<'_>) -> Result<String> {
    let mut seen = Vec::new();
    for (stem, value, want) in [("bg-on", "1", true), ("bg-off", "0", false)] {
        let pids = ctx.path(&format!("{stem}-pids"));
        let body = format!(
            "sleep 300 & echo $$ > {p}.tmp; echo $! >> {p}.tmp; mv {p}.tmp {p}; wait\n",
            p = q(&pids)
        );
        let env = [("SLURM_DARWIN_BACKGROUND", value)];
        let id = ctx.sbatch_env(stem, &["-n1"], &env, &body)?;
        let pids = ctx.wait_pids(&pids, 2)?;
        let classes: Vec<bool> = pids
            .iter()
            .map(|&p| in_background(p))
            .collect::<Result<_>>()?;
        ctx.cancel(id)?;
        if classes.iter().any(|&c| c != want) {
            return Err(Error::Scenario(format!(
                "job {id} with SLURM_DARWIN_BACKGROUND={value}: batch shell and child {pids:?} in the background class: {classes:?}, expected {want}"
            )));
        }
        seen.push(format!(
            "={value}: task and child {}",
            if want {
                "in the background class"
            } else {
                "normal"
            }
        ));
    }
    let id = ctx.sbatch_env(
        "bg-bad",
        &["-n1"],
        &[("SLURM_DARWIN_BACKGROUND", "yes")],
        "echo ran\n",
    )?;
    ctx.wait_state(id, &["FAILED"], JOB_TIMEOUT)?;
    let err = std::fs::read_to_string(ctx.path("bg-bad.err")).unwrap_or_default();
    if !err.contains("SLURM_DARWIN_BACKGROUND=yes") {
        return Err(Error::Scenario(format!(
            "job {id} with SLURM_DARWIN_BACKGROUND=yes: stderr does not name the variable: {err:?}"
        )));
    }
    seen.push(format!("=yes: job {id} FAILED, stderr: {}", err.trim()));
    Ok(seen.join("; "))
}

pub fn binding_not_enforced(ctx: &mut Ctx<'_>) -> Result<String> {
    let mut seen = Vec::new();
    for (flag, what) in [
        ("--cpu-bind=cores", "--cpu-bind is not enforced on macOS"),
        ("--mem-bind=local", "--mem-bind is not enforced on macOS"),
    ] {
        let out = ctx.srun(&["-n1", flag, "echo", "ran"])?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() || stdout.trim() != "ran" {
            return Err(Error::Scenario(format!(
                "srun {flag}: {}, stdout {stdout:?}, stderr {stderr:?}: the step must still run",
                out.status
            )));
        }
        if !stderr.contains(what) {
            return Err(Error::Scenario(format!(
                "srun {flag}: stderr {stderr:?} does not say {what:?} (silent success)"
            )));
        }
        seen.push(format!("{flag}: ran, stderr says so"));
    }
    let plain = ctx.srun(&["-n1", "echo", "ran"])?;
    let stderr = String::from_utf8_lossy(&plain.stderr);
    if stderr.contains("not enforced") {
        return Err(Error::Scenario(format!(
            "srun without binding options warns anyway: {stderr:?}"
        )));
    }
    seen.push("without them: no message".into());
    Ok(seen.join("; "))
}

#[cfg(test)]
mod tests {
    #![allow(non_snake_case)]
    use super::*;

    #[test]
    fn parse_elapsed__slurm_forms() {
        assert_eq!(parse_elapsed("00:02.123"), Some(2.123));
        assert_eq!(parse_elapsed("00:00:02"), Some(2.0));
        assert_eq!(parse_elapsed("01:00:00"), Some(3600.0));
        assert_eq!(parse_elapsed("1-00:00:01"), Some(86401.0));
        assert_eq!(parse_elapsed(""), None);
        assert_eq!(parse_elapsed("2s"), None);
    }

    #[test]
    fn parse_size__units_and_raw() {
        assert_eq!(parse_size("312345K"), Some(312345 * 1024));
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size("1.5G"), Some(3 << 29));
        assert_eq!(parse_size("67108864"), Some(67108864));
        assert_eq!(parse_size("12Q"), None);
    }

    #[test]
    fn tres_value__by_name() {
        let t = "cpu=00:00:02,energy=0,fs/disk=67108864,mem=312M";
        assert_eq!(tres_value(t, "fs/disk"), Some("67108864"));
        assert_eq!(tres_value(t, "mem"), Some("312M"));
        assert_eq!(tres_value(t, "gres/gpu"), None);
    }

    #[test]
    fn parse_truth__sums_processes() {
        let t = parse_truth(&[
            "1.010 167772160 33554432".into(),
            "1.000 167772160 33554432".into(),
        ])
        .unwrap();
        assert!((t.cpu_s - 2.01).abs() < 1e-9);
        assert_eq!((t.maxrss, t.written), (320 << 20, 64 << 20));
        assert_eq!(parse_truth(&["x".into()]), None);
    }

    #[test]
    fn within__percent() {
        assert!(within(2.19, 2.0, 10.0) && !within(2.21, 2.0, 10.0));
        assert!(within(1.81, 2.0, 10.0) && !within(1.79, 2.0, 10.0));
    }
}
