//! Steps inside one allocation and CPU requests against the node's size (SMD-107, 108).

use super::client::{Ctx, JOB_TIMEOUT, q};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use std::time::Duration;

/// `sacct -j ID -P -o JobID,State,ExitCode`: (step id, state, exit code) per line.
fn steps_of(ctx: &Ctx<'_>, id: u32) -> Result<Vec<(String, String, String)>> {
    let out = ctx.read(
        "sacct",
        &[
            "-n",
            "-P",
            "-j",
            &id.to_string(),
            "-o",
            "JobID,State,ExitCode",
        ],
    )?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            (f.len() >= 3).then(|| {
                (
                    f[0].to_string(),
                    f[1].split_whitespace().next().unwrap_or("").to_string(),
                    f[2].to_string(),
                )
            })
        })
        .collect())
}

/// The batch script of SMD-107: steps 0 and 1 in sequence, 2 and 3 at once (each waits
/// until the other runs), 4 exits 7, 5 waits to be cancelled. Each step asks for its one CPU
/// only (`--exact`: without it a step is given every CPU of the node in the allocation) and
/// a slice of the job's memory (without `--mem` it is given all of it): else the second of
/// two concurrent steps waits for the first (srun(1), `--exact`, `--mem`).
fn six_steps_body(ctx: &Ctx<'_>) -> String {
    let d = ctx.dir.clone();
    let f = |name: &str| q(&d.join(name));
    format!(
        "S=\"{srun} -n1 --exact --mem=64M\"\n\
         $S sh -c 'echo $SLURM_STEP_ID' > {o0}\n\
         $S sh -c 'echo $SLURM_STEP_ID' > {o1}\n\
         $S sh -c 'touch {r2}; while [ ! -e {r3} ]; do sleep 0.1; done; echo $SLURM_STEP_ID' > {o2} &\n\
         $S sh -c 'touch {r3}; while [ ! -e {r2} ]; do sleep 0.1; done; echo $SLURM_STEP_ID' > {o3} &\n\
         wait\n\
         $S sh -c 'echo $SLURM_STEP_ID; exit 7' > {o4}\n\
         echo \"step4 exit $?\" > {rc4}\n\
         $S sh -c 'echo $SLURM_STEP_ID; touch {r5}; sleep 300' > {o5}\n\
         echo \"step5 exit $?\" > {rc5}\n\
         echo after-cancel\n",
        srun = ctx.cluster.bin("srun").display(),
        o0 = f("step0.out"),
        o1 = f("step1.out"),
        o2 = f("step2.out"),
        o3 = f("step3.out"),
        o4 = f("step4.out"),
        o5 = f("step5.out"),
        r2 = f("step2.ready"),
        r3 = f("step3.ready"),
        r5 = f("step5.ready"),
        rc4 = f("step4.rc"),
        rc5 = f("step5.rc"),
    )
}

/// What the six steps wrote: the batch script went on after the cancel, each step printed
/// its own id, srun of step 4 returned 7.
fn check_step_outputs(ctx: &Ctx<'_>, id: u32) -> Result<()> {
    let out = ctx.wait_lines(&ctx.path("six-steps.out"), 1, JOB_TIMEOUT)?;
    if out.last().map(String::as_str) != Some("after-cancel") {
        return Err(Error::Scenario(format!(
            "job {id}: the batch script did not go on after step 5 was cancelled: {out:?}"
        )));
    }
    let mut printed = Vec::new();
    for s in 0..6 {
        let lines = ctx.wait_lines(&ctx.path(&format!("step{s}.out")), 1, JOB_TIMEOUT)?;
        printed.push(lines[0].trim().to_string());
    }
    // The two concurrent steps take ids 2 and 3 in whichever order slurmctld creates them.
    let mut together = [printed[2].clone(), printed[3].clone()];
    together.sort();
    let others = [0, 1, 4, 5].iter().all(|&s| printed[s] == s.to_string());
    if !others || together != ["2", "3"] {
        return Err(Error::Scenario(format!(
            "the steps printed {printed:?} (each its own step id: 0..5, 2 and 3 in either order)"
        )));
    }
    let rc4 = ctx.wait_lines(&ctx.path("step4.rc"), 1, JOB_TIMEOUT)?;
    if rc4 != ["step4 exit 7"] {
        return Err(Error::Scenario(format!("srun of step 4 returned {rc4:?}")));
    }
    Ok(())
}

/// sacct's record of the six steps: 0-3 COMPLETED, 4 FAILED 7:0, 5 CANCELLED, the batch
/// step and the job COMPLETED 0:0.
fn check_step_records(ctx: &Ctx<'_>, id: u32) -> Result<()> {
    let ok = Some("0:0");
    let want: [(String, &str, Option<&str>); 8] = [
        (id.to_string(), "COMPLETED", ok),
        (format!("{id}.batch"), "COMPLETED", ok),
        (format!("{id}.0"), "COMPLETED", ok),
        (format!("{id}.1"), "COMPLETED", ok),
        (format!("{id}.2"), "COMPLETED", ok),
        (format!("{id}.3"), "COMPLETED", ok),
        (format!("{id}.4"), "FAILED", Some("7:0")),
        (format!("{id}.5"), "CANCELLED", None),
    ];
    let steps = poll(
        &format!("sacct to record the six steps of job {id}"),
        JOB_TIMEOUT,
        super::client::POLL,
        || {
            let s = steps_of(ctx, id)?;
            let done = want.iter().all(|(w, _, _)| {
                s.iter()
                    .any(|(j, st, _)| j == w && super::client::is_terminal(st))
            });
            Ok(done.then_some(s))
        },
    )?;
    let bad: Vec<String> = want
        .iter()
        .filter_map(|(w, state, code)| {
            let got = steps.iter().find(|(j, _, _)| j == w);
            let ok = got.is_some_and(|(_, st, ec)| st == state && code.is_none_or(|c| c == ec));
            (!ok).then(|| format!("{w}: {got:?}, expected {state} {}", code.unwrap_or("")))
        })
        .collect();
    if !bad.is_empty() {
        return Err(Error::Scenario(format!("sacct: {}", bad.join("; "))));
    }
    Ok(())
}

/// SMD-107: six steps in one two-CPU allocation: two in sequence, two at once, one that
/// exits 7, and one the harness cancels alone (`scancel ID.5`) while the batch script waits
/// for it. Each step prints its own step id to its own file; sacct has 0-3 COMPLETED, 4
/// FAILED 7:0, 5 CANCELLED, the batch step and the job COMPLETED: the failure and the cancel
/// stay inside their steps.
pub fn six_steps(ctx: &mut Ctx<'_>) -> Result<String> {
    let body = six_steps_body(ctx);
    let id = ctx.sbatch("six-steps", &["-n2", "-N1"], &body)?;
    ctx.wait_lines(&ctx.path("step5.ready"), 0, JOB_TIMEOUT)?;
    ctx.read("scancel", &[&format!("{id}.5")])?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    check_step_outputs(ctx, id)?;
    check_step_records(ctx, id)?;
    Ok(format!(
        "job {id}: steps 0,1 in sequence, 2+3 together, 4 exited 7 (FAILED 7:0), 5 cancelled alone (CANCELLED); each printed its own id; batch script went on; job COMPLETED 0:0"
    ))
}

/// SMD-108: CPU requests below (`-n1`), equal to (`-n<CPUs>`) and above (`-n<CPUs+1>`) the
/// node's CPUs. The first two run with that many tasks (srun inside counts them) and that
/// many CPUs allocated (sacct AllocTRES); the third never runs its payload: it is refused at
/// submission or stays PENDING, and is cancelled.
pub fn cpu_request(ctx: &mut Ctx<'_>) -> Result<String> {
    let cpus = ctx
        .cluster
        .nodes()
        .first()
        .map(|n| n.hw.cpus)
        .ok_or_else(|| Error::Scenario("the cluster has no node".into()))?;
    let srun = ctx.cluster.bin("srun");
    let mut seen = Vec::new();
    for n in [1, cpus] {
        let stem = format!("cpus-{n}");
        let body = format!(
            "{} sh -c 'echo $SLURM_PROCID' | sort -n | tr '\\n' ' '; echo\n",
            q(&srun)
        );
        let id = ctx.sbatch(&stem, &["-N1", &format!("-n{n}")], &body)?;
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
        let out = ctx.wait_lines(&ctx.path(&format!("{stem}.out")), 1, JOB_TIMEOUT)?;
        let ranks: Vec<&str> = out[0].split_whitespace().collect();
        let want: Vec<String> = (0..n).map(|r| r.to_string()).collect();
        let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
        let alloc = acct
            .alloc_tres
            .split(',')
            .find_map(|t| t.strip_prefix("cpu="))
            .unwrap_or("")
            .to_string();
        if ranks != want || alloc != n.to_string() {
            return Err(Error::Scenario(format!(
                "-n{n}: job {id} ran tasks {ranks:?} with AllocTRES {} (expected ranks 0..{n} and cpu={n})",
                acct.alloc_tres
            )));
        }
        seen.push(format!("-n{n}: {n} task(s), cpu={alloc}"));
    }
    let over = cpus + 1;
    let marker = ctx.path("over-ran");
    let script = ctx.script("cpus-over", &format!("touch {}\n", q(&marker)))?;
    let mut c = ctx.tool("sbatch");
    c.args(["--parsable", "-N1", &format!("-n{over}"), "-o", "/dev/null"])
        .arg(&script);
    let out = driver_common::util::process::bounded::run_bounded(c, super::client::CLIENT_TIMEOUT)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let what = match super::client::parse_job_id(&stdout) {
        None if !out.status.success() => format!(
            "-n{over}: refused at submission ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        None => {
            return Err(Error::Scenario(format!(
                "-n{over}: sbatch succeeded without a job id: {stdout:?}"
            )));
        }
        Some(id) => {
            // It must stay pending (never start) for a while.
            let t = std::time::Instant::now();
            while t.elapsed() < Duration::from_secs(5) {
                let state = ctx.job_state(id)?;
                if state != "PENDING" {
                    return Err(Error::Scenario(format!(
                        "-n{over} on a {cpus}-CPU node: job {id} became {state}"
                    )));
                }
                std::thread::sleep(Duration::from_millis(500));
            }
            let reason = ctx.job_field(id, "Reason")?.unwrap_or_default();
            ctx.read("scancel", &[&id.to_string()])?;
            format!("-n{over}: job {id} stayed PENDING ({reason}) and was cancelled")
        }
    };
    if marker.exists() {
        return Err(Error::Scenario(format!(
            "-n{over} on a {cpus}-CPU node: its payload ran"
        )));
    }
    seen.push(what);
    ctx.wait_node_idle(Duration::from_secs(30))?;
    Ok(format!("{}-CPU node: {}", cpus, seen.join("; ")))
}
