//! Bad states must not be silent: a daemon that dies, a port already taken, a MariaDB that
//! will not start and a cluster still running from an earlier run each give a clear error;
//! the cluster is put back in shape afterwards.

use super::super::daemon::Daemon;
use super::super::lifecycle::{self, UpOptions};
use super::client::Ctx;
use driver_common::error::{Error, Result};
use std::net::TcpListener;

/// slurmd killed behind the harness's back: the daemon check names it, with its log tail;
/// a restart brings the node back.
pub fn daemon_dies(ctx: &mut Ctx<'_>) -> Result<String> {
    let rec = ctx
        .cluster
        .record(Daemon::Slurmd(0))
        .cloned()
        .ok_or_else(|| Error::Scenario("slurmd not recorded".into()))?;
    rec.signal(nix::sys::signal::Signal::SIGKILL)?;
    rec.wait_gone(std::time::Duration::from_secs(10));
    let err = match ctx.cluster.check_daemons() {
        Ok(()) => {
            return Err(Error::Scenario(
                "slurmd was killed but the daemon check passed".into(),
            ));
        }
        Err(e) => e.to_string(),
    };
    if !(err.contains("slurmd")
        && err.contains(&rec.pid.to_string())
        && err.contains("slurmd-node1.log"))
    {
        return Err(Error::Scenario(format!(
            "unclear message for a dead slurmd: {err}"
        )));
    }
    ctx.cluster.start(ctx.sh, Daemon::Slurmd(0))?;
    ctx.srun_expect(&["-N1", "/bin/echo", "back"], "back")?;
    Ok(format!(
        "reported: {:?}; slurmd restarted, srun ran",
        first_line(&err)
    ))
}

/// slurmd's port held by another process: `start` refuses with the port and daemon named.
pub fn port_taken(ctx: &mut Ctx<'_>) -> Result<String> {
    let port = ctx.cluster.port(Daemon::Slurmd(0))?;
    ctx.cluster.stop(Daemon::Slurmd(0))?;
    let err = error_while_port_taken(port, "slurmd", || {
        ctx.cluster.start(ctx.sh, Daemon::Slurmd(0))
    })?;
    ctx.cluster.start(ctx.sh, Daemon::Slurmd(0))?;
    if !(err.contains(&port.to_string()) && err.contains("slurmd") && err.contains("taken")) {
        return Err(Error::Scenario(format!(
            "unclear message for a taken port: {err}"
        )));
    }
    ctx.srun_expect(&["-N1", "/bin/echo", "back"], "back")?;
    Ok(format!(
        "reported: {:?}; started once free",
        first_line(&err)
    ))
}

/// mariadbd that cannot bind its port (held by another process, our own check skipped)
/// dies at start: the error names it and shows its error log. Freed, it starts, slurmdbd is
/// restarted and sacct works.
pub fn mariadb_fails(ctx: &mut Ctx<'_>) -> Result<String> {
    let port = ctx.cluster.state.ports.mariadb;
    ctx.cluster.stop(Daemon::Slurmdbd)?;
    ctx.cluster.stop(Daemon::MariaDb)?;
    let err = error_while_port_taken(port, "mariadbd", || {
        ctx.cluster.start_unchecked(ctx.sh, Daemon::MariaDb)
    })?;
    ctx.cluster.start(ctx.sh, Daemon::MariaDb)?;
    ctx.cluster.start(ctx.sh, Daemon::Slurmdbd)?;
    if !(err.contains("mariadb") && err.to_lowercase().contains("address already in use")) {
        return Err(Error::Scenario(format!(
            "unclear message for a MariaDB that does not start: {err}"
        )));
    }
    let id = ctx.sbatch("after-mariadb", &["-n1"], "true\n")?;
    ctx.acct_final(id, super::client::JOB_TIMEOUT)?;
    Ok(format!(
        "reported: {:?} with its log; restarted, job {id} accounted",
        first_line(&err)
    ))
}

/// `up` on the directory of the running cluster refuses, naming `down`; the running cluster
/// is untouched.
pub fn leftover(ctx: &mut Ctx<'_>) -> Result<String> {
    let s = &ctx.cluster.state;
    let err = match lifecycle::up(
        ctx.sh,
        &UpOptions::new(s.prefix.clone(), s.name.clone(), s.root.clone()),
    ) {
        Ok(_) => {
            return Err(Error::Scenario(
                "a second `up` on a running cluster succeeded".into(),
            ));
        }
        Err(e) => e.to_string(),
    };
    if !(err.contains("still runs") && err.contains("cluster down")) {
        return Err(Error::Scenario(format!(
            "unclear message for a leftover cluster: {err}"
        )));
    }
    ctx.cluster.check_daemons()?;
    ctx.srun_expect(&["-N1", "/bin/echo", "untouched"], "untouched")?;
    Ok(format!(
        "reported: {:?}; running cluster untouched",
        first_line(&err)
    ))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Runs `start` (of the program `what`) while this process holds `port` on 127.0.0.1: the
/// error it must report; that it started anyway is the scenario's failure.
fn error_while_port_taken(
    port: u16,
    what: &str,
    start: impl FnOnce() -> Result<()>,
) -> Result<String> {
    let holder = TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| Error::io(format!("port {port} on 127.0.0.1"), e))?;
    let result = start();
    drop(holder);
    match result {
        Ok(()) => Err(Error::Scenario(format!(
            "{what} started although port {port} was taken"
        ))),
        Err(e) => Ok(e.to_string()),
    }
}
