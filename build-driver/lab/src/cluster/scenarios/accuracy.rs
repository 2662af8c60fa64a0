//! `accounting-accuracy` (profile `macos-native`; patches/*/0042, 0045): a job whose tree
//! burns 2 s of CPU, touches 300 MiB and writes 64 MiB (fsynced, to the disk-backed scenario
//! directory) in two processes, one of them re-parented to init after it was seen; sstat
//! while it runs and sacct afterwards show CPU, MaxRSS and written bytes within 10 % of what
//! the processes measured themselves. It runs twice, once in each exit order, each process
//! outliving the other by more than a poll interval: the task first (the final poll, at its
//! reap, finds only the re-parented worker: the task's own figures must come from its last
//! poll), then the worker first (a poll finds it gone while the task runs: its figures must be
//! kept for the task). Before 2026-12-01 jobacct_gather/darwin lost the bytes of whichever
//! process ended first (`docs/MACOS-PLUGINS.md`).

use super::client::{Ctx, JOB_TIMEOUT, POLL, q};
use super::macos_native::{POLL_INTERVAL, parse_size};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use std::path::Path;
use std::time::Duration;

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
/// scenario has read sstat (the file `done`). Then the process named by the second argument
/// (`p` or `w`) exits at once, the other 1.5 s later (more than one poll interval).
const ACCURACY: &str = r#"
import os, resource, sys, time
d, first = sys.argv[1], sys.argv[2]
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
def leave(name):
    wait_for('done')
    if name != first:
        time.sleep(1.5)
if os.fork() == 0:               # I
    if os.fork() == 0:           # W
        os.setsid()
        mem = work('w')
        leave('w')
        os._exit(0)
    time.sleep(2.5)
    os._exit(0)
os.wait()                        # I is gone: W now belongs to init
mem = work('p')
wait_for('w.truth')
with open(os.path.join(d, 'ready'), 'w') as f:
    f.write('%d\n' % os.getpid())
leave('p')
"#;

pub fn accounting_accuracy(ctx: &mut Ctx<'_>) -> Result<String> {
    require_disk_backed(&ctx.dir)?;
    let py = ctx.path("accuracy.py");
    std::fs::write(&py, ACCURACY).map_err(|e| Error::io(&py, e))?;
    let mut seen = Vec::new();
    for (first, order) in [
        (
            "p",
            "the task exits first, the re-parented worker 1.5 s later",
        ),
        (
            "w",
            "the re-parented worker exits first, the task 1.5 s later",
        ),
    ] {
        seen.push(format!("{} ({order})", one_order(ctx, &py, first)?));
    }
    Ok(seen.join("; "))
}

/// One job of the scenario, in its own directory, `first` (`p`, `w`) exiting first.
fn one_order(ctx: &mut Ctx<'_>, py: &Path, first: &str) -> Result<String> {
    let dir = ctx.path(&format!("{first}-first"));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let body = format!("exec python3 {} {} {first}\n", q(py), q(&dir));
    let id = ctx.sbatch(&format!("accuracy-{first}"), &["-n1", "--mem=1G"], &body)?;
    ctx.wait_lines(&dir.join("ready"), 1, JOB_TIMEOUT)?;
    // Two polls after the last process finished its work: the figures are settled.
    std::thread::sleep(2 * POLL_INTERVAL + Duration::from_millis(200));
    let truth = read_truth(ctx, &dir)?;
    let step = format!("{id}.batch");
    let (live_cpu_shown, live_rss, live_written) = live_figures(ctx, &dir, &step, &truth)?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let (final_cpu, final_rss, final_written) = final_figures(ctx, &step, &truth)?;
    Ok(format!(
        "job {id}: the processes measured {:.2} s CPU, {} MiB MaxRSS, {} MiB written; sstat {live_cpu_shown}, {} MiB, {} MiB; sacct {final_cpu:.2} s, {} MiB, {} MiB",
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

/// sstat while the job runs (then the job is told it is `done`, in its directory `dir`): the
/// CPU as shown, RSS and bytes written, checked against the processes' own figures.
fn live_figures(
    ctx: &Ctx<'_>,
    dir: &Path,
    step: &str,
    truth: &Truth,
) -> Result<(String, u64, u64)> {
    let live = step_fields(ctx, "sstat", step, "AveCPU,MaxRSS,TRESUsageOutTot")?;
    let done = dir.join("done");
    std::fs::write(&done, "").map_err(|e| Error::io(&done, e))?;
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

fn read_truth(ctx: &Ctx<'_>, dir: &Path) -> Result<Truth> {
    let mut lines = Vec::new();
    for who in ["p", "w"] {
        lines.extend(ctx.wait_lines(&dir.join(format!("{who}.truth")), 1, JOB_TIMEOUT)?);
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn parse_elapsed__slurm_forms() {
        assert_eq!(parse_elapsed("00:02.123"), Some(2.123));
        assert_eq!(parse_elapsed("00:00:02"), Some(2.0));
        assert_eq!(parse_elapsed("01:00:00"), Some(3600.0));
        assert_eq!(parse_elapsed("1-00:00:01"), Some(86401.0));
        assert_eq!(parse_elapsed(""), None);
        assert_eq!(parse_elapsed("2s"), None);
    }

    #[test]
    fn tres_value__by_name() {
        let t = "cpu=00:00:02,energy=0,fs/disk=67108864,mem=312M";
        assert_eq!(tres_value(t, "fs/disk"), Some("67108864"));
        assert_eq!(tres_value(t, "mem"), Some("312M"));
        assert_eq!(tres_value(t, "gres/gpu"), None);
    }

    #[test]
    fn within__percent() {
        assert!(within(2.19, 2.0, 10.0) && !within(2.21, 2.0, 10.0));
        assert!(within(1.81, 2.0, 10.0) && !within(1.79, 2.0, 10.0));
    }
}
