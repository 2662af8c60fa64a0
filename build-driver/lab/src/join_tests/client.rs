//! `join --client` against a live loopback cluster: a 24.11.5 native controller, and a
//! submit-only "Mac" of the darwin personality (its own `/run` and host name `mac1`) whose
//! sackd is started with the command line of `join --client`'s plan, which is the sackd
//! LaunchDaemon's `ProgramArguments`. From that Mac, `sbatch`, `squeue` and `scancel` of the
//! darwin build, with no `SLURM_CONF`, run a job on the native node and cancel it.
//!
//! What differs from a Mac: the prefix is shared and read only, so the key goes to a
//! directory of the cluster and sackd gets `SLURM_SACK_KEY` naming it (on a Mac the key is
//! `<etc>/slurm.key`, where sackd looks without it); sackd runs as the test's child instead
//! of launchd's, and `/run` (`/var/run` of the darwin build) is the cluster's `mac1-run`.

use super::*;
use driver_common::util::process::bounded::{poll, run_bounded};
use slurm_mac::join::client::{ClientInputs, ClientPlan, preflight, put_files};
use std::process::Command;

const HOST: &str = "mac1";

/// The Mac's namespace: `run` on `/run`, its host name.
fn on_mac(cmd: &mut Command, run: &Path) {
    driver_common::util::process::spawn::private_run(
        cmd,
        std::ffi::CString::new(run.as_os_str().as_encoded_bytes()).unwrap(),
        Some(std::ffi::CString::new(HOST).unwrap()),
        Vec::new(),
    );
}

/// A client of the darwin build run on the Mac, in the cluster's jobs directory, without
/// `SLURM_CONF`: its stdout, or an error with what it said.
fn client(c: &Cluster, darwin: &Path, run: &Path, tool: &str, args: &[&str]) -> Result<String> {
    let mut cmd = Command::new(darwin.join("bin").join(tool));
    cmd.args(args)
        .current_dir(c.layout().jobs())
        .env_remove("SLURM_CONF")
        .env_remove("SLURM_SACK_KEY");
    on_mac(&mut cmd, run);
    let out = run_bounded(cmd, Duration::from_secs(60))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(Error::Scenario(format!(
            "{tool} {}: {}\n{text}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(text)
}

/// The plan `join --client` prints for this cluster, with the Mac's paths in the cluster.
fn plan_for(c: &Cluster, darwin: &Path, key: &Path) -> ClientPlan {
    let root = &c.layout().root;
    ClientPlan::new(&ClientInputs {
        prefix: darwin.to_path_buf(),
        etc: root.join("mac1-etc"),
        key: key.to_path_buf(),
        controller: Controller::parse(&format!("127.0.0.1:{}", c.state.ports.slurmctld)).unwrap(),
        log_dir: root.join("mac1-log"),
        launchd_dir: root.join("mac1-LaunchDaemons"),
        launchctl: None,
        run_dir: root.join("mac1-run/slurm"),
    })
}

/// sackd as the plan starts it; waits for its configuration copy and SACK socket.
fn start_sackd(c: &Cluster, plan: &ClientPlan, run: &Path) -> std::process::Child {
    let key = plan.installs[0].to.clone();
    let mut cmd = Command::new(&plan.sackd()[0]);
    cmd.args(&plan.sackd()[1..])
        .env("SLURM_SACK_KEY", &key)
        .env_remove("SLURM_CONF");
    on_mac(&mut cmd, run);
    let log = c.layout().root.join("mac1-sackd.out");
    let mut child = driver_common::util::process::spawn_logged(cmd, &log).unwrap();
    let ready = poll(
        "mac1's sackd: configuration copy and SACK socket",
        Duration::from_secs(60),
        Duration::from_millis(200),
        || {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(Error::Scenario(format!("mac1's sackd exited: {status}")));
            }
            let conf = run.join("slurm/conf/slurm.conf");
            Ok((conf.is_file() && run.join("slurm/sack.socket").exists()).then_some(()))
        },
    );
    if let Err(e) = ready {
        child.kill().ok();
        child.wait().ok();
        panic!(
            "{e}; sackd said:\n{}",
            driver_common::util::process::file_tail(&log, 20)
        );
    }
    child
}

#[test]
#[ignore = "needs root, MariaDB and built prefixes; see the module doc"]
fn join_client__planned_sackd_serves_sbatch_squeue_scancel_without_slurm_conf() {
    let Some(j) = darwin_and_controller_2411("joinclient") else {
        return;
    };
    let (c, darwin, key) = (&j.up.c, &j.darwin, &j.key);
    let plan = plan_for(c, darwin, key);
    preflight(&darwin.join("etc"), &plan.service.launchd_dir).unwrap();
    let source = Source::Configless(
        Controller::parse(plan.service.conf_server.as_deref().unwrap()).unwrap(),
    );
    check(darwin, &source, key, TIMEOUT).unwrap();
    print!("plan:\n{}", plan.render());
    assert!(!plan.render().contains("slurmd"), "{}", plan.render());
    // The plan's files, put in place by --apply's own code: the key (0600) and the run
    // directory (/run/slurm in the Mac's namespace).
    let run = plan.run_dir.parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&run).unwrap();
    put_files(&plan).unwrap();
    let started = std::time::Instant::now();
    let mut sackd = start_sackd(c, &plan, &run);
    println!("sackd ready in {:?}", started.elapsed());
    let result = submit_watch_cancel(c, darwin, &run);
    sackd.kill().ok();
    sackd.wait().ok();
    let (id, figures) = result.unwrap();
    println!("{figures}");
    assert!(id > 0);
    assert!(
        !plan.service.launchd_dir.exists(),
        "a LaunchDaemon directory was written"
    );
}

/// From the Mac: the cluster as sinfo sees it, a job submitted, seen, cancelled.
fn submit_watch_cancel(c: &Cluster, darwin: &Path, run: &Path) -> Result<(u32, String)> {
    let nodes = client(c, darwin, run, "sinfo", &["-h", "-N", "-o", "%N"])?;
    if nodes.trim() != "node1" {
        return Err(Error::Scenario(format!(
            "sinfo from mac1 shows {nodes:?}, expected node1 alone (no slurmd on the Mac)"
        )));
    }
    let id: u32 = client(
        c,
        darwin,
        run,
        "sbatch",
        &[
            "--parsable",
            "-N1",
            "-o",
            "/dev/null",
            "--wrap",
            "sleep 300",
        ],
    )?
    .trim()
    .parse()
    .map_err(|e| Error::Scenario(format!("sbatch's job id: {e}")))?;
    let jid = id.to_string();
    let squeue_until = |what: &str, args: &[&str], want: &str| {
        poll(
            what,
            Duration::from_secs(60),
            Duration::from_millis(500),
            || {
                let s = client(c, darwin, run, "squeue", args)?;
                Ok((s.trim() == want).then_some(s))
            },
        )
    };
    let seen = squeue_until(
        "the job running on node1, as squeue on mac1 says",
        &["-h", "-j", &jid, "-o", "%i %T %N"],
        &format!("{jid} RUNNING node1"),
    )?;
    client(c, darwin, run, "scancel", &[&jid])?;
    let state = squeue_until(
        "the job cancelled, as squeue on mac1 says",
        &["-h", "-t", "all", "-j", &jid, "-o", "%T"],
        "CANCELLED",
    )?;
    let mut q = c.tool("scontrol");
    q.args(["show", "job", &jid]);
    let ctl =
        String::from_utf8_lossy(&run_bounded(q, Duration::from_secs(20))?.stdout).into_owned();
    let alloc = ctl
        .split_whitespace()
        .find(|w| w.starts_with("AllocNode:Sid="))
        .unwrap_or("(no AllocNode)")
        .to_string();
    if !alloc.contains(HOST) || !ctl.contains("JobState=CANCELLED") {
        return Err(Error::Scenario(format!("the controller's record:\n{ctl}")));
    }
    let without = without_the_copy(c, darwin, run)?;
    Ok((
        id,
        format!(
            "sinfo from mac1: {}; squeue after sbatch: {}; after scancel: {}; controller: {alloc} JobState=CANCELLED\nwithout sackd's copy of the configuration, sinfo says: {without}",
            nodes.trim(),
            seen.trim(),
            state.trim(),
        ),
    ))
}

/// The clients read sackd's copy: with it moved away (sackd still running, no `SLURM_CONF`,
/// no `<etc>/slurm.conf`), `sinfo` fails. Its last line.
fn without_the_copy(c: &Cluster, darwin: &Path, run: &Path) -> Result<String> {
    let conf = run.join("slurm/conf");
    let aside = run.join("slurm/conf-aside");
    std::fs::rename(&conf, &aside).map_err(|e| Error::io(&conf, e))?;
    let r = client(c, darwin, run, "sinfo", &["-h"]);
    std::fs::rename(&aside, &conf).map_err(|e| Error::io(&aside, e))?;
    match r {
        Ok(out) => Err(Error::Scenario(format!(
            "sinfo worked without sackd's copy: it read another configuration\n{out}"
        ))),
        Err(e) => Ok(e
            .to_string()
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_string()),
    }
}
