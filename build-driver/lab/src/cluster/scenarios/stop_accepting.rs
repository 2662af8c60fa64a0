//! slurmd stops when told to while connections arrive (patch 0073, every OS).
//!
//! A socket conmgr has accepted is not "connected" until `poll()` reports it, and a
//! conmgr that is shutting down no longer polls. 24.11's `_handle_connection()` waited for
//! that report even after the shutdown had closed the new connection's input, so a slurmd
//! told to stop (SIGTERM) while it accepted a connection never ended: its watch thread
//! queued a poll that returned at once, again and again, using a whole core until SIGKILL.
//! Upstream fixed it in 26.05 (commit 2f28cabc6f); 0073 is the same condition for 24.11,
//! 25.05 and 25.11.
//!
//! To reach it every time, slurmd is stopped (SIGSTOP) while connections queue on its port,
//! then sent SIGTERM and continued: it handles the signal and the pending accepts in the
//! same round. Without 0073 the darwin and native 24.11.5 builds kept running in 4 of 6 and
//! 3 of 5 such tries (one round each), never with it.

use super::super::daemon::Daemon;
use super::client::Ctx;
use driver_common::error::{Error, Result};
use nix::sys::signal::Signal;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Stops per run: one without 0073 kept slurmd running about one try in two.
const ROUNDS: usize = 5;
/// Connections queued while slurmd is stopped.
const CONNECTIONS: usize = 64;
/// A slurmd that stops cleanly is gone within a second here; 0073's failure never ends.
const EXIT_TIMEOUT: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

pub fn sigterm_while_accepting(ctx: &mut Ctx<'_>) -> Result<String> {
    let node = ctx
        .cluster
        .nodes()
        .first()
        .ok_or_else(|| Error::Scenario("the cluster has no node".into()))?;
    let addr = SocketAddr::from((node.addr, node.port));
    let mut slowest = Duration::ZERO;
    let mut queued = 0;
    for round in 1..=ROUNDS {
        let rec = ctx.slurmd_record()?;
        rec.signal(Signal::SIGSTOP)?;
        let conns: Vec<TcpStream> = (0..CONNECTIONS)
            .filter_map(|_| TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).ok())
            .collect();
        rec.signal(Signal::SIGTERM)?;
        rec.signal(Signal::SIGCONT)?;
        let t = Instant::now();
        let gone = rec.wait_gone(EXIT_TIMEOUT);
        let ran = t.elapsed();
        let connected = conns.len();
        drop(conns);
        if !gone {
            // the harness's stop (SIGTERM again, then SIGKILL after its grace) and a new slurmd
            ctx.cluster.restart(ctx.sh, Daemon::Slurmd(0))?;
            return Err(Error::Scenario(format!(
                "round {round}: slurmd {} still ran {EXIT_TIMEOUT:?} after SIGTERM, sent while \
                 {connected} connections waited to be accepted (conmgr's shutdown loop: a \
                 connection closed before poll() saw it connected is waited on for ever; \
                 patch 0073)",
                rec.pid,
            )));
        }
        slowest = slowest.max(ran);
        queued += connected;
        ctx.cluster.start(ctx.sh, Daemon::Slurmd(0))?;
    }
    ctx.srun_expect(&["-N1", "/bin/echo", "after-stops"], "after-stops")?;
    Ok(format!(
        "{ROUNDS} rounds: slurmd stopped, connections queued on {addr}, SIGTERM, continued: \
         it exited each time (slowest {slowest:.1?}; {queued} connections in all); the \
         restarted slurmd ran srun"
    ))
}
