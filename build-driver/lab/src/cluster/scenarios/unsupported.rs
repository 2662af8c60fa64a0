//! What a Mac cannot do must be loud, never a silent success (SMD-301 to 305): CPU binding
//! (`task/affinity`, `--cpu-bind`), `proctrack/cgroup`, `task/cgroup` with cgroup v2 device
//! constraints, core specialization (`--core-spec`) and `--cpu-freq`. Each case configures
//! the node for the feature, makes Slurm use it, and classifies what happened:
//!
//! * refused: the command or the daemon failed, and its message (or the slurmd log lines
//!   written meanwhile) names the missing capability;
//! * not enforced, logged: it ran, and a message says the feature was not applied;
//! * enforced: it ran and the feature took effect (the native build on Linux);
//! * anything else (it ran, nothing applied, nothing said) fails the scenario.
//!
//! A "not enforced" said only once by slurmd at its start, not for the job, is reported as
//! GAP: loud for the administrator reading slurmd's log, silent for the job's user.
//!
//! On a darwin node the shim hides `/sys` and `/proc` as a Mac does (no cgroup file system,
//! no cpufreq), and `sched_setaffinity` fails with `ENOTSUP` for any mask narrower than all
//! CPUs (shim/src/cpuset.rs). Under profile `macos-native`, `--cpu-bind` goes to task/darwin,
//! which says "not enforced on macOS" itself (the `binding-not-enforced` scenario checks its
//! wording).

use super::super::daemon::Daemon;
use super::super::profile::Profile;
use super::client::{Ctx, LogMark};
use super::reconf::{self, Change};
use driver_common::error::{Error, Result};
use std::process::Output;

/// `UnkillableStepTimeout` while task/affinity is on (Slurm's default is 60 s).
const UNKILLABLE: u64 = 10;

/// How a case came out.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Refused(String),
    NotEnforced(String),
    Enforced(String),
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Refused(m) => write!(f, "refused: {m}"),
            Verdict::NotEnforced(m) => write!(f, "accepted, not enforced, logged: {m}"),
            Verdict::Enforced(m) => write!(f, "enforced: {m}"),
        }
    }
}

/// The first line of `text` that contains every word of one of `any` (case-insensitive).
pub fn line_naming<'t>(text: &'t str, any: &[&[&str]]) -> Option<&'t str> {
    text.lines().map(str::trim).find(|l| {
        let low = l.to_ascii_lowercase();
        any.iter()
            .any(|words| words.iter().all(|w| low.contains(w)))
    })
}

/// What a probing step showed: whether it succeeded, its output (stdout and stderr), and
/// that output with the slurmd log lines written since the mark.
struct Probe {
    ok: bool,
    output: String,
    text: String,
}

fn probe(ctx: &Ctx<'_>, log: &LogMark, args: &[&str]) -> Result<Probe> {
    let out: Output = ctx.run("srun", args)?;
    let output = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = format!("{output}\n{}", log.added());
    Ok(Probe {
        ok: out.status.success(),
        output,
        text,
    })
}

/// The first line naming `words`: a refusal if the step failed, else a "not enforced"
/// (a line that says "not enforced" is one either way). None: nothing was said.
fn said(p: &Probe, words: &[&[&str]]) -> Option<Verdict> {
    let l = line_naming(&p.text, words)?.to_string();
    Some(if p.ok || l.to_ascii_lowercase().contains("not enforced") {
        Verdict::NotEnforced(l)
    } else {
        Verdict::Refused(l)
    })
}

/// A silent outcome: the error of every case that found no message.
fn silent(what: &str, seen: &str) -> Error {
    Error::Scenario(format!(
        "{what}: no refusal, no \"not enforced\" message and no effect (a silent success); saw {:?}",
        seen.trim()
    ))
}

/// SMD-301: `--cpu-bind=map_cpu:0` for a one-task step: bound (Linux), or refused / said
/// to be not enforced, naming affinity or binding.
pub fn cpu_bind(ctx: &mut Ctx<'_>) -> Result<String> {
    // HOOK(task/darwin): under macos-native the profile's task/darwin answers --cpu-bind
    // ("not enforced on macOS"); elsewhere task/affinity is what a site would configure.
    let change = if ctx.cluster.profile() == Profile::MacosNative {
        Change::default()
    } else {
        Change {
            // A task that fails between fork and exec stalls its step this long (below).
            lines: vec![
                "TaskPlugin=task/affinity".into(),
                format!("UnkillableStepTimeout={UNKILLABLE}"),
            ],
            restart: Change::controller_and_nodes(ctx),
            ..Change::default()
        }
    };
    let log = LogMark::take(&ctx.cluster.log(Daemon::Slurmd(0)));
    reconf::with_change(ctx, &change, |ctx| {
        let node = ctx.first_node();
        let t = std::time::Instant::now();
        let p = probe(
            ctx,
            &log,
            &[
                "-n1",
                "-w",
                &node,
                "--cpu-bind=map_cpu:0",
                "/bin/sh",
                "-c",
                "grep Cpus_allowed_list /proc/self/status",
            ],
        )?;
        let words: &[&[&str]] = &[
            &["not enforced"],
            &["sched_setaffinity"],
            &["affinity", "fail"],
            &["bind", "not supported"],
        ];
        let allowed = p
            .output
            .lines()
            .find_map(|l| l.split_once("Cpus_allowed_list:").map(|(_, v)| v.trim()));
        let v = if p.ok && allowed == Some("0") {
            Verdict::Enforced("the task's Cpus_allowed_list is 0".into())
        } else {
            said(&p, words).ok_or_else(|| silent("srun --cpu-bind=map_cpu:0", &p.text))?
        };
        stalled(ctx, &v, t.elapsed().as_secs(), &node)?;
        Ok(format!(
            "--cpu-bind=map_cpu:0 with {}: {v}",
            task_plugin(ctx)
        ))
    })
}

/// A refused step that failed only after UnkillableStepTimeout, and drained the node
/// ("Kill task failed"): the task's child exits before exec, and proctrack/pgid waits for
/// its process group, which the unreaped child keeps alive (a build without patch 0069;
/// `launch-refused-no-drain` is its scenario). Reported as GAP; the node is resumed.
fn stalled(ctx: &mut Ctx<'_>, v: &Verdict, took: u64, node: &str) -> Result<()> {
    if took >= UNKILLABLE / 2 {
        // slurmctld drains the node when the step's completion reaches it.
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    let drained = ctx.resume_if_drained(node)?;
    if matches!(v, Verdict::Refused(_)) && (took >= UNKILLABLE / 2 || drained.is_some()) {
        ctx.gap = Some(format!(
            "the refused step failed after {took} s and the node was {}: the task's child exits before exec and proctrack/pgid waits on its unreaped process group until UnkillableStepTimeout ({UNKILLABLE} s here, 60 s by default)",
            drained.map_or("left up".to_string(), |r| format!("drained ({r}; resumed)"))
        ));
    }
    Ok(())
}

fn task_plugin(ctx: &Ctx<'_>) -> &'static str {
    if ctx.cluster.profile() == Profile::MacosNative {
        "task/darwin"
    } else {
        "task/affinity"
    }
}

/// SMD-302: `ProctrackType=proctrack/cgroup`.
pub fn proctrack_cgroup(ctx: &mut Ctx<'_>) -> Result<String> {
    cgroup_case(
        ctx,
        "ProctrackType=proctrack/cgroup",
        "CgroupPlugin=autodetect\n",
        &[],
    )
}

/// SMD-303: `TaskPlugin=task/cgroup` with `ConstrainDevices=yes` (cgroup v2 device
/// constraints: the eBPF device program of cgroup/v2).
pub fn task_cgroup_devices(ctx: &mut Ctx<'_>) -> Result<String> {
    cgroup_case(
        ctx,
        "TaskPlugin=task/cgroup",
        "CgroupPlugin=autodetect\nConstrainDevices=yes\n",
        // The node's GPU is the `File=/dev/null` placeholder: a step without it is denied
        // /dev/null, which slurmstepd opens for the task's unused stdin, and the step waits
        // out its I/O timeout. With the GPU allocated the device is the task's to open.
        &["--gres=gpu:1"],
    )
}

/// A cgroup plugin configured on the node: slurmd refuses to start naming cgroups (a
/// Mac), or starts and puts a job's task in a cgroup of its own (Linux).
fn cgroup_case(
    ctx: &mut Ctx<'_>,
    line: &str,
    cgroup_conf: &str,
    srun_extra: &[&str],
) -> Result<String> {
    let change = Change {
        lines: vec![line.to_string()],
        cgroup_conf: Some(cgroup_conf.to_string()),
        ..Change::default()
    };
    let what = format!("{line} ({})", cgroup_conf.trim().replace('\n', ", "));
    reconf::with_change(ctx, &change, |ctx| {
        let d = Daemon::Slurmd(0);
        let log = LogMark::take(&ctx.cluster.log(d));
        ctx.cluster.stop(d)?;
        let v = match ctx.cluster.start(ctx.sh, d) {
            Err(e) => {
                let text = format!("{}\n{e}", log.added());
                match line_naming(&text, &[&["cgroup"]]) {
                    Some(l) => Verdict::Refused(format!("slurmd did not start: {l}")),
                    None => return Err(silent(&what, &text)),
                }
            }
            Ok(()) => match macos_plugin_instead(ctx, d, line) {
                Some(l) => Verdict::Refused(format!("slurmd runs the macOS plugin instead: {l}")),
                None => in_own_cgroup(ctx, srun_extra)?,
            },
        };
        // Stopped, so that putting the configuration back starts it as `up` did.
        ctx.cluster.stop(d)?;
        Ok(format!("{what}: {v}"))
    })
}

/// On macOS (patch 0064) slurmd runs the macOS plugin for a cgroup one and says so on its
/// stderr (it reads slurm.conf before it opens its log): that line, naming `line`.
fn macos_plugin_instead(ctx: &Ctx<'_>, d: Daemon, line: &str) -> Option<String> {
    let err = std::fs::read_to_string(ctx.cluster.log(d).with_extension("out")).ok()?;
    err.lines()
        .rev()
        .find(|l| l.contains(&format!("macOS: {line}")) && l.contains("instead"))
        .map(|l| l.trim().to_string())
}

/// slurmd started with a cgroup plugin: a task's `/proc/self/cgroup` must name the job
/// (`extra`: more srun options).
fn in_own_cgroup(ctx: &Ctx<'_>, extra: &[&str]) -> Result<Verdict> {
    let node = ctx.first_node();
    let mut args = vec!["-n1", "-w", &node];
    args.extend_from_slice(extra);
    args.extend(["/bin/cat", "/proc/self/cgroup"]);
    let out = ctx.srun_stdout("srun under a cgroup plugin", &args)?;
    match out.lines().find(|l| l.contains("job_")) {
        Some(l) => Ok(Verdict::Enforced(format!("the task is in {}", l.trim()))),
        None => Err(silent("slurmd started with a cgroup plugin", &out)),
    }
}

/// SMD-304: `CoreSpecCount=1` on the node, `AllowSpecResourcesUsage=yes`, a step with
/// `--core-spec=1`.
pub fn core_spec(ctx: &mut Ctx<'_>) -> Result<String> {
    let change = Change {
        lines: vec!["AllowSpecResourcesUsage=yes".into()],
        node_params: vec![(ctx.first_node(), "CoreSpecCount=1".into())],
        restart: Change::controller_and_nodes(ctx),
        ..Change::default()
    };
    let words: &[&[&str]] = &[
        &["core_spec", "not supported"],
        &["resource spec", "unable"],
        &["specialization", "disabled"],
        &["core", "spec", "invalid"],
    ];
    let enforced = "Resource spec: Reserved abstract CPU IDs";
    step_with(ctx, &change, "--core-spec=1", words, Some(enforced))
}

/// SMD-305: `srun --cpu-freq=Low`. slurmd says whether it can set frequencies when it
/// starts: it is restarted to see that.
pub fn cpu_freq(ctx: &mut Ctx<'_>) -> Result<String> {
    // HOOK(task/darwin): the task plugin tells the job "--cpu-freq is not enforced on
    // macOS" (0044); macos-native runs it already, elsewhere task/affinity (what a site
    // configures) runs as task/darwin on a Mac (0064) and binds on Linux.
    let change = if ctx.cluster.profile() == Profile::MacosNative {
        Change {
            restart: vec![Daemon::Slurmd(0)],
            ..Change::default()
        }
    } else {
        Change {
            lines: vec!["TaskPlugin=task/affinity".into()],
            restart: Change::controller_and_nodes(ctx),
            ..Change::default()
        }
    };
    // The job's own line first: the job output precedes slurmd's log in the probe's text.
    let words: &[&[&str]] = &[
        &["cpu-freq", "not enforced"],
        &["cpu frequency", "not configured"],
        &["cpu_freq", "not supported"],
        &["cpu-freq", "invalid"],
    ];
    step_with(ctx, &change, "--cpu-freq=Low", words, None)
}

/// Apply `change`, run a one-task step with `option` on the first node, and judge it by
/// `words` in its output and in slurmd's log since before the change; `enforced` is what
/// slurmd logs when it applied the feature.
fn step_with(
    ctx: &mut Ctx<'_>,
    change: &Change,
    option: &str,
    words: &[&[&str]],
    enforced: Option<&str>,
) -> Result<String> {
    let log = LogMark::take(&ctx.cluster.log(Daemon::Slurmd(0)));
    reconf::with_change(ctx, change, |ctx| {
        let node = ctx.first_node();
        let p = probe(ctx, &log, &["-n1", "-w", &node, option, "/bin/true"])?;
        let v = match (said(&p, words), enforced) {
            (Some(v), _) => v,
            (None, Some(m)) if p.ok && p.text.contains(m) => {
                Verdict::Enforced(format!("slurmd logged {m:?}"))
            }
            _ => return Err(silent(&format!("srun {option}"), &p.text)),
        };
        only_at_start(ctx, &v, &p.output, option);
        Ok(format!("{option}: {v}"))
    })
}

/// A "not enforced" that only slurmd's log said (not the job's output): a GAP.
fn only_at_start(ctx: &mut Ctx<'_>, v: &Verdict, job_output: &str, what: &str) {
    if let Verdict::NotEnforced(l) = v {
        if !job_output.contains(l.as_str()) {
            ctx.gap = Some(format!(
                "{what}: the job is told nothing; only slurmd's log (at its start) says it is not applied"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_naming__all_words_of_one_set_case_insensitive() {
        let text = "a\n[x] error: _core_spec_init: not supported on macOS\nb";
        assert_eq!(
            line_naming(text, &[&["core_spec", "not supported"]]),
            Some("[x] error: _core_spec_init: not supported on macOS")
        );
        assert_eq!(line_naming(text, &[&["core_spec", "invalid"]]), None);
        assert_eq!(
            line_naming(
                "CPU frequency setting NOT CONFIGURED",
                &[&["x"], &["not configured"]]
            ),
            Some("CPU frequency setting NOT CONFIGURED")
        );
    }
}
