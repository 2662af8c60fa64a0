//! Identities (SMD-101, 102): two users sharing a supplementary group, each job with its own
//! identity and files; a user whose UID/GID on the node differ from the controller's; a user
//! in more than 16 groups (macOS's `setgroups` limit).
//!
//! The test users are local accounts made for this (`slurmsmd1`, `slurmsmd2`, `slurmalien`,
//! `slurmmany`, groups `slurmsmd`, `slurmg01`..`slurmg20`), created once and kept, like the
//! harness's `slurmtest`. "Differ between controller and node" on one machine: the node's
//! mount namespace gets its own `/etc/passwd` and `/etc/group` (node_view.rs), in which
//! `slurmalien` has other numbers; the controller and the clients keep the real ones.

use super::super::daemon::Daemon;
use super::super::handle::NodeMount;
use super::super::user::{TestUser, ensure_test_user, ensure_user, group_gid};
use super::client::{CLIENT_TIMEOUT, Ctx, JOB_TIMEOUT, LogMark, q};
use super::node_view::with_node_mounts;
use driver_common::error::{Error, Result};
use driver_common::personality::Personality;
use driver_common::util::process::bounded::{read_bounded, run_bounded};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The supplementary group the two users of SMD-101 share.
const SHARED_GROUP: &str = "slurmsmd";

/// A user's job for SMD-101: prints `uid gid groups`, makes its own directory (0700) with a
/// marker (0600), then tries to read `other`'s marker and to write into `other`'s directory.
fn identity_body(own: &Path, other: &Path) -> String {
    format!(
        "echo \"$(id -u) $(id -g) $(id -G)\"\n\
         mkdir -m 700 {own} && echo secret > {own}/marker && chmod 600 {own}/marker\n\
         if [ -d {other} ]; then\n\
         \x20 cat {other}/marker >/dev/null 2>&1 && echo read:allowed || echo read:denied\n\
         \x20 touch {other}/intruder 2>/dev/null && echo write:allowed || echo write:denied\n\
         fi\n",
        own = q(own),
        other = q(other)
    )
}

/// Check one SMD-101 job's output and files.
fn check_user_job(
    ctx: &Ctx<'_>,
    id: u32,
    user: &TestUser,
    shared: u32,
    stem: &str,
    own: &Path,
    expect_denials: bool,
) -> Result<()> {
    let out = ctx.path(&format!("{stem}.out"));
    let lines = ctx.wait_lines(&out, if expect_denials { 3 } else { 1 }, JOB_TIMEOUT)?;
    let ids: Vec<&str> = lines[0].split_whitespace().collect();
    let groups: Vec<u32> = ids.iter().skip(2).filter_map(|g| g.parse().ok()).collect();
    if ids.first() != Some(&user.uid.to_string().as_str())
        || ids.get(1) != Some(&user.gid.to_string().as_str())
        || !groups.contains(&shared)
    {
        return Err(Error::Scenario(format!(
            "job {id} of {} printed {:?}, expected uid {} gid {} with group {shared}",
            user.name, lines[0], user.uid, user.gid
        )));
    }
    if expect_denials && lines[1..] != ["read:denied", "write:denied"] {
        return Err(Error::Scenario(format!(
            "job {id} of {} reached the other user's files: {:?}",
            user.name,
            &lines[1..]
        )));
    }
    let marker = own.join("marker");
    for (p, mode) in [
        (out.clone(), None),
        (own.to_path_buf(), Some(0o700)),
        (marker, Some(0o600)),
    ] {
        let m = std::fs::metadata(&p).map_err(|e| Error::io(&p, e))?;
        let bad_mode = mode.is_some_and(|want| m.permissions().mode() & 0o777 != want);
        if m.uid() != user.uid || bad_mode {
            return Err(Error::Scenario(format!(
                "{}: owner {}:{} mode {:o}, expected {}:{}{}",
                p.display(),
                m.uid(),
                m.gid(),
                m.permissions().mode() & 0o777,
                user.uid,
                user.gid,
                mode.map(|x| format!(" mode {x:o}")).unwrap_or_default()
            )));
        }
    }
    Ok(())
}

/// SMD-101: two users in one supplementary group. Each job runs with its user's uid,
/// primary gid and the shared group; its output, directory (0700) and marker (0600) belong
/// to it; each user's job is refused the other's marker and directory; sacct records each
/// user.
pub fn two_users(ctx: &mut Ctx<'_>) -> Result<String> {
    let a = ensure_user("slurmsmd1", &[SHARED_GROUP])?;
    let b = ensure_user("slurmsmd2", &[SHARED_GROUP])?;
    let shared = group_gid(SHARED_GROUP)?
        .ok_or_else(|| Error::Scenario(format!("group {SHARED_GROUP} vanished")))?;
    let (dir_a, dir_b) = (ctx.path("a-private"), ctx.path("b-private"));
    let none = ctx.path("nothing-yet");
    let j1 = ctx.sbatch_as(&a.name, "user-a", &["-n1"], &identity_body(&dir_a, &none))?;
    ctx.wait_state(j1, &["COMPLETED"], JOB_TIMEOUT)?;
    let j2 = ctx.sbatch_as(&b.name, "user-b", &["-n1"], &identity_body(&dir_b, &dir_a))?;
    ctx.wait_state(j2, &["COMPLETED"], JOB_TIMEOUT)?;
    let j3 = ctx.sbatch_as(
        &a.name,
        "user-a-again",
        &["-n1"],
        &identity_body(&ctx.path("a-second"), &dir_b),
    )?;
    ctx.wait_state(j3, &["COMPLETED"], JOB_TIMEOUT)?;
    check_user_job(ctx, j1, &a, shared, "user-a", &dir_a, false)?;
    check_user_job(ctx, j2, &b, shared, "user-b", &dir_b, true)?;
    check_user_job(
        ctx,
        j3,
        &a,
        shared,
        "user-a-again",
        &ctx.path("a-second"),
        true,
    )?;
    for (id, u) in [(j1, &a), (j2, &b), (j3, &a)] {
        let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
        if acct.user != u.name || acct.exit_code != "0:0" {
            return Err(Error::Scenario(format!(
                "sacct: job {id} user {} exit {}, expected {} 0:0",
                acct.user, acct.exit_code, u.name
            )));
        }
    }
    Ok(format!(
        "{} ({}:{}) and {} ({}:{}) with group {SHARED_GROUP} ({shared}): jobs {j1}, {j2}, {j3} ran as their users, files owned by them (0700/0600), each refused the other's files, sacct users right",
        a.name, a.uid, a.gid, b.name, b.uid, b.gid
    ))
}

/// The personality of node 1's build.
fn node_personality(ctx: &Ctx<'_>) -> Result<Personality> {
    let node = ctx
        .cluster
        .nodes()
        .first()
        .ok_or_else(|| Error::Scenario("the cluster has no node".into()))?;
    Ok(driver_common::staging::Manifest::read(&node.prefix)?.personality)
}

/// The lowest id from `from` on that no line of `db` (passwd or group text) uses in its
/// third field.
fn free_id(db: &str, from: u32) -> u32 {
    let used: std::collections::BTreeSet<u32> = db
        .lines()
        .filter_map(|l| l.split(':').nth(2)?.parse().ok())
        .collect();
    (from..).find(|i| !used.contains(i)).unwrap_or(from)
}

/// `db` with the id fields of `name`'s line replaced: field 3 by `id`, and in a passwd line
/// (which has 7 fields) field 4 by `gid`.
fn renumber(db: &str, name: &str, id: u32, gid: u32) -> String {
    db.lines()
        .map(|l| {
            let mut f: Vec<String> = l.split(':').map(str::to_string).collect();
            if f.first().map(String::as_str) == Some(name) && f.len() >= 3 {
                f[2] = id.to_string();
                if f.len() >= 7 {
                    f[3] = gid.to_string();
                }
            }
            f.join(":")
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The node's own `/etc/passwd` and `/etc/group`, in which `user` has `uid`:`gid`.
fn node_user_db(dir: &Path, user: &str, uid: u32, gid: u32) -> Result<Vec<NodeMount>> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut mounts = Vec::new();
    for (file, id) in [("passwd", uid), ("group", gid)] {
        let real = PathBuf::from("/etc").join(file);
        let text = std::fs::read_to_string(&real).map_err(|e| Error::io(&real, e))?;
        let copy = dir.join(file);
        driver_common::util::fs::write_atomic(
            &copy,
            renumber(&text, user, id, gid).as_bytes(),
            0o644,
        )?;
        mounts.push(NodeMount::Bind {
            source: copy,
            target: real,
        });
    }
    Ok(mounts)
}

/// What `slurmalien`'s srun step and batch job did on a node that gives it other numbers.
struct AlienRun {
    step: std::process::ExitStatus,
    stdout: String,
    stderr: String,
    step_marker: PathBuf,
    batch_marker: PathBuf,
    job: u32,
    job_state: String,
    reason: String,
    node_reason: String,
    /// slurmd's log line that refuses the user (patch 0060), if any.
    refusal: Option<String>,
}

/// Run `alien`'s srun step (it prints its ids and leaves a marker) and batch job (the
/// same), each refused or not; the batch job is cancelled once it ran or failed to launch.
fn run_alien(ctx: &mut Ctx<'_>, alien: &TestUser) -> Result<AlienRun> {
    let log = ctx.cluster.log(Daemon::Slurmd(0));
    let mark = LogMark::take(&log);
    let step_marker = ctx.path("step-payload-ran");
    let mut c = ctx.tool_as(&alien.name, "srun");
    c.args(["-N1", "sh", "-c"])
        .arg(format!("touch {}; echo $(id -u):$(id -g)", q(&step_marker)));
    let step = run_bounded(c, CLIENT_TIMEOUT)?;
    let batch_marker = ctx.path("batch-payload-ran");
    let job = ctx.sbatch_as(
        &alien.name,
        "alien-batch",
        &["-n1"],
        &format!("touch {}; echo $(id -u):$(id -g)\n", q(&batch_marker)),
    )?;
    let job_state = batch_outcome(ctx, job)?;
    let reason = ctx.job_field(job, "Reason")?.unwrap_or_default();
    let node_reason = ctx.node_field("Reason").unwrap_or_default();
    ctx.read("scancel", &[&job.to_string()]).ok();
    let refusal = mark
        .added()
        .lines()
        .find(|l| l.contains(&alien.name) && l.contains("this node"))
        .map(|l| l.trim().to_string());
    Ok(AlienRun {
        stdout: String::from_utf8_lossy(&step.stdout).trim().to_string(),
        stderr: String::from_utf8_lossy(&step.stderr).trim().to_string(),
        step: step.status,
        step_marker,
        batch_marker,
        job,
        job_state,
        reason,
        node_reason,
        refusal,
    })
}

/// A user whose numbers agree on both sides still runs on the node, as itself.
fn same_numbers_run(ctx: &Ctx<'_>, user: &TestUser) -> Result<()> {
    let mut c = ctx.tool_as(&user.name, "srun");
    c.args(["-N1", "id", "-u"]);
    let out = read_bounded(c, CLIENT_TIMEOUT)?;
    if out.trim() != user.uid.to_string() {
        return Err(Error::Scenario(format!(
            "{} (same numbers on both sides) ran as {:?}",
            user.name,
            out.trim()
        )));
    }
    Ok(())
}

/// Darwin: nothing of `alien` ran, srun failed, slurmd logged the refusal.
fn darwin_refused(r: &AlienRun, alien: &TestUser, node_ids: &str) -> Result<String> {
    let credential = format!("{}:{}", alien.uid, alien.gid);
    let ran: Vec<String> = [&r.step_marker, &r.batch_marker]
        .iter()
        .filter(|m| m.exists())
        .map(|m| m.display().to_string())
        .collect();
    if r.step.success() || !ran.is_empty() || r.refusal.is_none() {
        return Err(Error::Scenario(format!(
            "darwin: {} is {credential} on the controller and {node_ids} on the node, yet: srun {} (stdout {:?}), payloads that ran: {ran:?}, refusal logged: {:?}",
            alien.name, r.step, r.stdout, r.refusal
        )));
    }
    Ok(format!(
        "darwin: {} ({credential} on the controller, {node_ids} on the node) refused before the payload: srun {} ({:?}); batch job {} {} ({}; node reason {:?}); slurmd: {:?}",
        alien.name,
        r.step,
        r.stderr,
        r.job,
        r.job_state,
        r.reason,
        r.node_reason,
        r.refusal.as_deref().unwrap_or_default()
    ))
}

/// Native (Linux, Slurm's design): both payloads ran as the credential's numbers.
fn native_trusted(r: &AlienRun, alien: &TestUser, node_ids: &str) -> Result<String> {
    let credential = format!("{}:{}", alien.uid, alien.gid);
    if r.job_state != "COMPLETED" {
        return Err(Error::Scenario(format!(
            "native: batch job {} of {} ended {} ({}), expected COMPLETED",
            r.job, alien.name, r.job_state, r.reason
        )));
    }
    if !r.step.success() || r.stdout != credential || !r.step_marker.exists() {
        return Err(Error::Scenario(format!(
            "native: srun of {} {} printed {:?} ({:?}), expected it to run as the credential's {credential} (Slurm's design on Linux)",
            alien.name, r.step, r.stdout, r.stderr
        )));
    }
    let owner = std::fs::metadata(&r.step_marker)
        .map_err(|e| Error::io(&r.step_marker, e))?
        .uid();
    Ok(format!(
        "native (Linux, upstream design): {} is {credential} on the controller and {node_ids} on the node; the payload ran as the credential's {} (marker owned by uid {owner}); batch job {} {}",
        alien.name, r.stdout, r.job, r.job_state
    ))
}

/// How long the slurmstepd of SMD-102's jobs may take to exit once they were refused (or ran).
const REFUSED_EXIT: std::time::Duration = std::time::Duration::from_secs(20);

/// SMD-102: `slurmalien` is `U:G` on the controller and `U2:G2` on the node (the node's own
/// user database). In the darwin personality the step and the batch job are refused before
/// their payload runs (patches/*/0060, macOS only: the credential's user is looked up on the
/// node, a different UID or primary GID is an error that names both), and a user whose
/// numbers agree still runs. On Linux (native build) Slurm trusts the credential by design:
/// the payload runs as `U:G`, a uid the node does not know; that is what is checked there.
pub fn uid_mismatch(ctx: &mut Ctx<'_>) -> Result<String> {
    let alien = ensure_user("slurmalien", &[])?;
    let ok_user = ensure_test_user()?;
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| Error::io("/etc/passwd", e))?;
    let group = std::fs::read_to_string("/etc/group").map_err(|e| Error::io("/etc/group", e))?;
    let (uid2, gid2) = (
        free_id(&passwd, alien.uid + 1000),
        free_id(&group, alien.gid + 1000),
    );
    let dir = ctx.cluster.layout().node_dir(&ctx.first_node()).join("etc");
    let mounts = node_user_db(&dir, &alien.name, uid2, gid2)?;
    let personality = node_personality(ctx)?;
    let node_ids = format!("{uid2}:{gid2}");
    with_node_mounts(ctx, &mounts, |ctx| {
        let run = run_alien(ctx, &alien)?;
        // A refused job's slurmstepd exits; it hung in conmgr_fini() before patch 0062.
        ctx.wait_no_job_processes(REFUSED_EXIT).map_err(|e| {
            Error::Scenario(format!(
                "after {}'s jobs: {e} (a refused job's slurmstepd must exit: patch 0062)",
                alien.name
            ))
        })?;
        same_numbers_run(ctx, &ok_user)?;
        let verdict = match personality {
            Personality::Darwin => darwin_refused(&run, &alien, &node_ids)?,
            Personality::Native => native_trusted(&run, &alien, &node_ids)?,
        };
        Ok(format!(
            "{verdict}; {} ({}) still runs",
            ok_user.name, ok_user.uid
        ))
    })
}

/// Where a batch job of SMD-102 ends: COMPLETED or FAILED, or requeued and held after its
/// launch failed (PENDING with `Restarts` above 0).
fn batch_outcome(ctx: &Ctx<'_>, id: u32) -> Result<String> {
    driver_common::util::process::bounded::poll(
        &format!("batch job {id} to run or fail to launch"),
        JOB_TIMEOUT,
        super::client::POLL,
        || {
            let state = ctx.job_state(id)?;
            let restarts: u32 = ctx
                .job_field(id, "Restarts")?
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            Ok(
                (super::client::is_terminal(&state) || (state == "PENDING" && restarts > 0))
                    .then_some(state),
            )
        },
    )
}

/// How many groups the user of SMD-102's second part is in besides its own.
const MANY: usize = 20;

/// SMD-102, second part: a user in more than 16 groups (macOS's `setgroups` limit). Its job
/// must launch and read a file only its 20th group may read; the job prints its groups. On
/// the darwin personality patch 0030 takes the `initgroups()` branch (slurmd says so at
/// verbose level; here glibc's `initgroups` sets all of them, on a Mac the first 16 and the
/// directory answers for the rest); on Linux `setgroups` takes them all.
pub fn many_groups(ctx: &mut Ctx<'_>) -> Result<String> {
    let names: Vec<String> = (1..=MANY).map(|i| format!("slurmg{i:02}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let user = ensure_user("slurmmany", &refs)?;
    let last = group_gid(&names[MANY - 1])?
        .ok_or_else(|| Error::Scenario(format!("group {} vanished", names[MANY - 1])))?;
    let secret = ctx.path("group-20-only");
    driver_common::util::fs::write_atomic(&secret, b"for slurmg20\n", 0o640)?;
    nix::unistd::chown(
        &secret,
        Some(nix::unistd::Uid::from_raw(0)),
        Some(nix::unistd::Gid::from_raw(last)),
    )
    .map_err(|e| Error::io(&secret, std::io::Error::from(e)))?;
    let log = ctx.cluster.log(Daemon::Slurmd(0));
    let mark = LogMark::take(&log);
    let id = ctx.sbatch_as(
        &user.name,
        "many-groups",
        &["-n1"],
        &format!("id -G\ncat {}\n", q(&secret)),
    )?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let lines = ctx.wait_lines(&ctx.path("many-groups.out"), 2, JOB_TIMEOUT)?;
    let groups: Vec<&str> = lines[0].split_whitespace().collect();
    if lines[1] != "for slurmg20" {
        return Err(Error::Scenario(format!(
            "job {id} of {} could not read a file of its group {} ({last}): {lines:?}",
            user.name,
            names[MANY - 1]
        )));
    }
    let branch = mark
        .added()
        .lines()
        .find(|l| l.contains("setgroups_darwin"))
        .map(|l| l.trim().to_string());
    let personality = node_personality(ctx)?;
    match (personality, &branch) {
        (Personality::Darwin, None) => {
            return Err(Error::Scenario(format!(
                "darwin: job {id} of a user in {} groups ran, but slurmd logged no setgroups_darwin line (patch 0030's macOS branch did not run)",
                MANY + 1
            )));
        }
        (Personality::Native, Some(l)) => {
            return Err(Error::Scenario(format!(
                "native: the macOS branch ran on Linux: {l}"
            )));
        }
        _ => {}
    }
    Ok(format!(
        "{} ({} groups): job {id} COMPLETED and read a file of its 20th group; its groups in the job: {} ({}){}",
        user.name,
        MANY + 1,
        groups.len(),
        groups.join(" "),
        branch
            .map(|b| format!("; slurmd: {b:?}"))
            .unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = "root:x:0:0:root:/root:/bin/bash\nslurmalien:x:1005:1005::/home/slurmalien:/bin/sh\nother:x:2005:2005::/h:/bin/sh\n";

    #[test]
    fn renumber__only_the_named_user_and_both_ids_in_passwd() {
        let out = renumber(PASSWD, "slurmalien", 2006, 2007);
        assert!(
            out.contains("slurmalien:x:2006:2007::/home/slurmalien:/bin/sh\n"),
            "{out}"
        );
        assert!(out.contains("root:x:0:0:root:/root:/bin/bash\n"));
        assert!(out.contains("other:x:2005:2005::/h:/bin/sh\n"));
        let groups = renumber(
            "slurmalien:x:1005:\nusers:x:100:slurmalien\n",
            "slurmalien",
            2007,
            2007,
        );
        assert_eq!(groups, "slurmalien:x:2007:\nusers:x:100:slurmalien\n");
    }

    #[test]
    fn free_id__skips_used_ids() {
        assert_eq!(free_id(PASSWD, 2005), 2006);
        assert_eq!(free_id(PASSWD, 3000), 3000);
    }
}
