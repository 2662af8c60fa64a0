//! Signals, cancel of a process tree, the limit of proctrack/pgid (a `setsid` escape), a
//! time limit ending in TIMEOUT with every process gone, and (SMD-109) orphans, a zombie and
//! a child that ignores SIGTERM.

use super::super::procs::{processes_where, state_parent_group};
use super::client::{Ctx, JOB_TIMEOUT, q};
use crate::cluster::profile::Profile;
use driver_common::error::{Error, Result};
use driver_common::util::signal::process_exists;
use std::time::Duration;

/// `scancel --signal=USR1 --batch` reaches the batch shell's trap; `scancel --signal=USR2` (steps
/// only) reaches a step's trap; the job then finishes normally.
pub fn signal(ctx: &mut Ctx<'_>) -> Result<String> {
    let (got, ready) = (ctx.path("got"), ctx.path("ready"));
    let srun = ctx.cluster.bin("srun");
    let body = format!(
        "trap 'echo batch-USR1 >> {got}' USR1\n\
         {srun} -n1 sh -c 'trap \"echo step-USR2 >> {got}; exit 0\" USR2; echo step > {ready}; while :; do sleep 0.1; done' &\n\
         while [ ! -s {got} ]; do sleep 0.1; done\n\
         wait\n",
        got = q(&got),
        ready = q(&ready),
        srun = q(&srun)
    );
    let id = ctx.sbatch("signal", &["-n1"], &body)?;
    ctx.wait_state(id, &["RUNNING"], JOB_TIMEOUT)?;
    ctx.wait_lines(&ready, 1, JOB_TIMEOUT)?;
    let sid = id.to_string();
    ctx.read("scancel", &["--signal=USR1", "--batch", &sid])?;
    ctx.wait_lines(&got, 1, JOB_TIMEOUT)?;
    ctx.read("scancel", &["--signal=USR2", &sid])?;
    let lines = ctx.wait_lines(&got, 2, JOB_TIMEOUT)?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    if lines != ["batch-USR1", "step-USR2"] {
        return Err(Error::Scenario(format!(
            "job {id}: traps recorded {lines:?}"
        )));
    }
    Ok(format!(
        "job {id}: USR1 → batch shell trap, USR2 → step trap, then COMPLETED"
    ))
}

/// A batch job with a child, a grandchild and background processes (one `nohup`) is
/// cancelled: all of them are gone afterwards.
pub fn cancel_tree(ctx: &mut Ctx<'_>) -> Result<String> {
    let (id, pids) = ctx.sbatch_pids(
        "tree",
        "echo $$ > $p.tmp\n\
         sleep 300 & echo $! >> $p.tmp\n\
         nohup sleep 301 >/dev/null 2>&1 & echo $! >> $p.tmp\n\
         sh -c 'sleep 302 & echo $! >> \"$1\"; wait' sh $p.grand &\n\
         echo $! >> $p.tmp\n\
         while [ ! -s $p.grand ]; do sleep 0.1; done\n\
         cat $p.grand >> $p.tmp\n",
        5,
    )?;
    if let Some(p) = pids.iter().find(|&&p| !process_exists(p)) {
        return Err(Error::Scenario(format!(
            "job {id}: process {p} is not running before scancel"
        )));
    }
    ctx.cancel(id)?;
    ctx.wait_gone(&pids, Duration::from_secs(30))?;
    Ok(format!(
        "job {id} CANCELLED; shell, child, nohup child, subshell and grandchild {pids:?} all gone"
    ))
}

/// The documented limit of proctrack/pgid: a process that leaves the job's process group and
/// session with `setsid` is not tracked, so it survives the cancel. The scenario passes when
/// it sees exactly that (and then kills the escapee itself); a tracked sibling must be gone.
pub fn setsid_escape(ctx: &mut Ctx<'_>) -> Result<String> {
    let (id, pids) = ctx.sbatch_pids(
        "escape",
        "sleep 300 & echo $! > $p.tmp\n\
         setsid sh -c 'echo $$ >> \"$1\"; exec sleep 303' sh $p.esc &\n\
         while [ ! -s $p.esc ]; do sleep 0.1; done\n\
         cat $p.esc >> $p.tmp\n",
        2,
    )?;
    let (tracked, escaped) = (pids[0], pids[1]);
    ctx.cancel(id)?;
    ctx.wait_gone(&[tracked], Duration::from_secs(30))?;
    // Give the step's cleanup time to (not) reach it.
    std::thread::sleep(Duration::from_secs(3));
    let survived = process_exists(escaped);
    if survived {
        // The PID our job reported, while it still exists.
        driver_common::util::signal::kill(escaped, nix::sys::signal::Signal::SIGKILL);
        ctx.wait_gone(&[escaped], Duration::from_secs(10))?;
        Ok(format!(
            "job {id}: tracked child {tracked} gone; LIMIT (documented): `setsid` child {escaped} survived the cancel (proctrack/pgid follows process groups only); killed by the harness"
        ))
    } else {
        Err(Error::Scenario(format!(
            "job {id}: the `setsid` child {escaped} was killed too: proctrack/pgid is documented not to track it; the documentation (or the plugin) changed, check which"
        )))
    }
}

/// `-t 1` with `--gres=gpu:apple:1`: the job ends TIMEOUT, its processes (child included)
/// are gone, and the GPU is free again (a GPU job runs right after).
pub fn time_limit(ctx: &mut Ctx<'_>) -> Result<String> {
    let pids = ctx.path("pids");
    let body = format!(
        "echo $$ > {p}.tmp; sleep 600 & echo $! >> {p}.tmp; mv {p}.tmp {p}; wait\n",
        p = q(&pids)
    );
    let id = ctx.sbatch("timeout", &["-n1", "-t", "1", "--gres=gpu:apple:1"], &body)?;
    let pids = ctx.wait_pids(&pids, 2)?;
    // One minute of limit, checked by slurmctld about every 30 s.
    ctx.wait_state(id, &["TIMEOUT"], Duration::from_secs(150))?;
    ctx.wait_gone(&pids, Duration::from_secs(30))?;
    let next = ctx.sbatch(
        "after-timeout",
        &["-n1", "--gres=gpu:apple:1"],
        "echo gpu=$SLURM_JOB_GPUS\n",
    )?;
    ctx.wait_state(next, &["COMPLETED"], JOB_TIMEOUT)?;
    let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
    if acct.state != "TIMEOUT" {
        return Err(Error::Scenario(format!(
            "sacct: job {id} {}, expected TIMEOUT",
            acct.state
        )));
    }
    Ok(format!(
        "job {id} TIMEOUT (sacct too), processes {pids:?} gone; GPU job {next} ran after it"
    ))
}

fn state_and_group(pid: u32) -> Option<(char, u32)> {
    state_parent_group(pid).map(|(s, _, g)| (s, g))
}

/// The processes SMD-109's job recorded (`<name> <pid>` lines).
#[derive(Clone, Copy)]
struct Tree {
    plain: u32,
    ignoring: u32,
    parent: u32,
    orphan: u32,
    escaped: u32,
}

impl Tree {
    fn read(p: &std::path::Path, id: u32, lines: &[String]) -> Result<Tree> {
        let mut named = std::collections::BTreeMap::new();
        for l in lines {
            let (what, pid) = l
                .split_once(' ')
                .and_then(|(w, n)| Some((w.to_string(), n.trim().parse::<u32>().ok()?)))
                .ok_or_else(|| Error::Scenario(format!("{}: bad line {l:?}", p.display())))?;
            named.insert(what, pid);
        }
        let pid = |w: &str| {
            named.get(w).copied().ok_or_else(|| {
                Error::Scenario(format!("job {id} recorded no {w} process: {lines:?}"))
            })
        };
        Ok(Tree {
            plain: pid("plain")?,
            ignoring: pid("term-ignoring")?,
            parent: pid("zombie-parent")?,
            orphan: pid("orphan")?,
            escaped: pid("escaped")?,
        })
    }

    /// Before the cancel: all but the `setsid` one share the job's process group.
    fn check_groups(&self, id: u32) -> Result<()> {
        let group = state_and_group(self.plain).map(|(_, g)| g);
        let in_group: Vec<u32> = [self.plain, self.ignoring, self.parent, self.orphan]
            .into_iter()
            .filter(|&x| state_and_group(x).map(|(_, g)| g) == group)
            .collect();
        if in_group.len() != 4 || state_and_group(self.escaped).map(|(_, g)| g) == group {
            return Err(Error::Scenario(format!(
                "job {id}: unexpected process groups before the cancel: group {group:?}, members {in_group:?} of plain {}, term-ignoring {}, zombie parent {}, orphan {}; escaped {} in {:?}",
                self.plain,
                self.ignoring,
                self.parent,
                self.orphan,
                self.escaped,
                state_and_group(self.escaped)
            )));
        }
        Ok(())
    }
}

/// SMD-109: a batch job starts a plain child, a child that ignores SIGTERM, a zombie (a child
/// whose parent never reaps it), a double-forked orphan that stays in the job's process group,
/// and one that leaves it with `setsid`. After `scancel` everything in the job's process
/// group is gone (the TERM-ignoring child by SIGKILL after KillWait, the zombie with its
/// parent); what remains is exactly the `setsid` orphan, proctrack/pgid's documented limit,
/// which is shown and then killed by the harness. Under `macos-native` proctrack/darwin
/// tracks the orphan by ancestry, and nothing may remain.
pub fn orphans(ctx: &mut Ctx<'_>) -> Result<String> {
    let p = ctx.path("pids");
    let body = format!(
        "p={p}\n\
         sleep 300 & echo plain $! >> $p.tmp\n\
         sh -c 'trap \"\" TERM; while :; do sleep 1; done' & echo term-ignoring $! >> $p.tmp\n\
         sh -c 'sleep 0.2 & exec sleep 300' & echo zombie-parent $! >> $p.tmp\n\
         sh -c 'sleep 301 & echo orphan $! >> \"$1\"' sh $p.tmp\n\
         setsid sh -c 'echo escaped $$ >> \"$1\"; exec sleep 302' sh $p.tmp &\n\
         while [ $(wc -l < $p.tmp) -lt 5 ]; do sleep 0.1; done\n\
         mv $p.tmp $p\n\
         wait\n",
        p = q(&p)
    );
    let id = ctx.sbatch("orphans", &["-n1"], &body)?;
    let lines = ctx.wait_lines(&p, 5, JOB_TIMEOUT)?;
    let t = Tree::read(&p, id, &lines)?;
    let Tree {
        plain,
        ignoring,
        parent,
        orphan,
        escaped,
    } = t;
    // The zombie: the exec'd `sleep 300` never reaps its `sleep 0.2` child.
    let zombie = driver_common::util::process::bounded::poll(
        "the zombie child to appear",
        Duration::from_secs(10),
        super::client::POLL,
        || {
            Ok(processes_where(|_, s, pp, _| s == 'Z' && pp == parent)
                .first()
                .copied())
        },
    )?;
    t.check_groups(id)?;
    // proctrack/darwin (profile `macos-native`) follows ancestry, so the setsid orphan is
    // the job's too; proctrack/pgid follows the process group and cannot reach it.
    let by_ancestry = ctx.cluster.profile() == Profile::MacosNative;
    let mut gone = vec![plain, ignoring, parent, orphan, zombie];
    if by_ancestry {
        gone.push(escaped);
    }
    ctx.cancel(id)?;
    ctx.wait_gone(&gone, Duration::from_secs(30))?;
    std::thread::sleep(Duration::from_secs(3));
    let left: Vec<u32> = ctx.cluster.node_leftovers().iter().map(|r| r.pid).collect();
    let expected: &[u32] = if by_ancestry { &[] } else { &[escaped] };
    if left != expected {
        return Err(Error::Scenario(format!(
            "job {id}: after the cancel the node holds {left:?}; expected {expected:?} ({})",
            if by_ancestry {
                "nothing: proctrack/darwin tracks the setsid orphan by ancestry"
            } else {
                "only the setsid orphan: proctrack/pgid's limit"
            }
        )));
    }
    let all = format!(
        "job {id} CANCELLED: plain {plain}, TERM-ignoring {ignoring}, zombie {zombie} (and its parent {parent}), double-forked orphan {orphan}"
    );
    if by_ancestry {
        ctx.wait_no_job_processes(Duration::from_secs(10))?;
        return Ok(format!(
            "{all} and the setsid orphan {escaped} all gone (proctrack/darwin: by ancestry); nothing left"
        ));
    }
    driver_common::util::signal::kill(escaped, nix::sys::signal::Signal::SIGKILL);
    ctx.wait_gone(&[escaped], Duration::from_secs(10))?;
    ctx.wait_no_job_processes(Duration::from_secs(10))?;
    Ok(format!(
        "{all} all gone; left: only the setsid orphan {escaped} (LIMIT of proctrack/pgid, documented), killed by the harness"
    ))
}
