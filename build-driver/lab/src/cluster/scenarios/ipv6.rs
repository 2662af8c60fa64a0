//! IPv6 on `::1` end to end (SMD-406): `CommunicationParameters=EnableIPv6` in `slurm.conf`
//! and `slurmdbd.conf`, slurmctld at `SlurmctldHost=<host>(::1)`, every node at
//! `NodeAddr=::1` (one address, each node its own port), slurmdbd at `::1`
//! (`AccountingStorageHost`, `DbdAddr`). Each daemon then reaches the others only over IPv6:
//! a node registers with slurmctld at `[::1]`, slurmctld and srun reach slurmd at `[::1]`,
//! slurmctld sends accounting to `[::1]`. Checked on top of that: `::1` binds here and the
//! nodes' namespaces share this network namespace (they are UTS and mount namespaces
//! only); the tasks' `SLURM_LAUNCH_NODE_IPADDR` (the address slurmd saw srun's launch come
//! from, unpacked from the launch message) is `::1` on every node; slurmctld holds an IPv6
//! connection to slurmdbd (`/proc/net/tcp6`, not an IPv4-mapped one).
//!
//! On macOS patch 0029 maps `AF_INET6` (30 there) to Linux's 10 on the wire. The darwin
//! personality compiles that `__APPLE__` branch, so every address packed here goes through
//! it; glibc's `AF_INET6` is 10, so the mapping itself is the identity here (its
//! translation is tested by the driver's af_wire test, the Mach-O lane compiles it).

use super::super::daemon::Daemon;
use super::client::{Ctx, JOB_TIMEOUT};
use super::reconf::{self, Change};
use driver_common::error::{Error, Result};
use std::net::{Ipv6Addr, TcpListener};

/// `::1` binds, and node `i`'s slurmd shares the harness's network namespace.
fn loopback_v6_usable(ctx: &Ctx<'_>) -> Result<String> {
    let l = TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).map_err(|e| {
        Error::Scenario(format!("cannot bind [::1]: {e}; IPv6 loopback is off here"))
    })?;
    drop(l);
    let ours =
        std::fs::read_link("/proc/self/ns/net").map_err(|e| Error::io("/proc/self/ns/net", e))?;
    for i in 0..ctx.cluster.nodes().len() {
        let Some(rec) = ctx.cluster.record(Daemon::Slurmd(i)) else {
            continue;
        };
        let p = format!("/proc/{}/ns/net", rec.pid);
        let theirs = std::fs::read_link(&p).map_err(|e| Error::io(&p, e))?;
        if theirs != ours {
            return Err(Error::Scenario(format!(
                "{}'s slurmd is in another network namespace ({}), where ::1 is not ours",
                ctx.cluster.nodes()[i].name,
                theirs.display()
            )));
        }
    }
    Ok(format!(
        "[::1] binds; the nodes share this network namespace ({})",
        ours.display()
    ))
}

/// Whether `/proc/net/tcp6` has an established connection between `::1` addresses with
/// `port` at one end.
fn v6_connection_to(port: u16) -> Result<bool> {
    let text =
        std::fs::read_to_string("/proc/net/tcp6").map_err(|e| Error::io("/proc/net/tcp6", e))?;
    Ok(tcp6_has(&text, port))
}

/// `::1` in `/proc/net/tcp6`'s notation (four host-order 32-bit words in hex).
const LOOPBACK6: &str = "00000000000000000000000001000000";

/// The `/proc/net/tcp6` table has an ESTABLISHED (`01`) row between `::1` addresses whose
/// remote port is `port`.
pub fn tcp6_has(table: &str, port: u16) -> bool {
    let want = format!("{LOOPBACK6}:{port:04X}");
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[1].starts_with(LOOPBACK6) && f[2] == want && f[3] == "01"
    })
}

/// Every daemon at `::1`, IPv6 enabled in slurm.conf and slurmdbd.conf.
fn ipv6_change(ctx: &Ctx<'_>) -> Change {
    let host = ctx.cluster.state.hostname.clone();
    let mut restart = vec![Daemon::Slurmdbd];
    restart.extend(Change::controller_and_nodes(ctx));
    Change {
        remove: vec!["SlurmctldHost"],
        lines: vec![
            format!("SlurmctldHost={host}(::1)"),
            "CommunicationParameters=EnableIPv6".into(),
            "AccountingStorageHost=::1".into(),
        ],
        node_params: ctx
            .cluster
            .nodes()
            .iter()
            .map(|n| (n.name.clone(), "NodeAddr=::1".to_string()))
            .collect(),
        dbd_lines: vec![
            "DbdAddr=::1".into(),
            "CommunicationParameters=EnableIPv6".into(),
        ],
        restart,
        ..Change::default()
    }
}

pub fn loopback_end_to_end(ctx: &mut Ctx<'_>) -> Result<String> {
    let usable = loopback_v6_usable(ctx)?;
    let change = ipv6_change(ctx);
    reconf::with_change(ctx, &change, |ctx| {
        for n in ctx.cluster.nodes().to_vec() {
            let addr = ctx.node_value(&n.name, "NodeAddr")?;
            if addr != "::1" {
                return Err(Error::Scenario(format!(
                    "{} registered with NodeAddr={addr:?}, expected ::1",
                    n.name
                )));
            }
        }
        launched_from_v6(ctx)?;
        let n = ctx.cluster.nodes().len().to_string();
        let id = ctx.sbatch("ipv6", &["-N", &n, "--ntasks-per-node=1"], "hostname\n")?;
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
        let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
        let dbd = ctx.cluster.state.ports.slurmdbd;
        if !v6_connection_to(dbd)? {
            return Err(Error::Scenario(format!(
                "no IPv6 connection between ::1 and slurmdbd's port {dbd} (/proc/net/tcp6): accounting did not go over IPv6"
            )));
        }
        Ok(format!(
            "{usable}; every node registered at ::1; srun's tasks saw SLURM_LAUNCH_NODE_IPADDR=::1; job {id} {} in sacct (AllocTRES {}); slurmctld-slurmdbd connection on [::1]:{dbd}",
            acct.state, acct.alloc_tres
        ))
    })
}

/// A step on every node: each task saw its launch come from `::1`.
fn launched_from_v6(ctx: &Ctx<'_>) -> Result<()> {
    let n = ctx.cluster.nodes().len().to_string();
    let text = ctx.srun_stdout(
        "srun over IPv6",
        &[
            "-N",
            &n,
            "--ntasks-per-node=1",
            "-l",
            "/bin/sh",
            "-c",
            "echo $SLURMD_NODENAME $SLURM_LAUNCH_NODE_IPADDR",
        ],
    )?;
    for node in ctx.cluster.nodes() {
        let want = format!("{} ::1", node.name);
        if !text.lines().any(|l| l.trim_end().ends_with(&want)) {
            return Err(Error::Scenario(format!(
                "no task on {} saw its launch come from ::1 (SLURM_LAUNCH_NODE_IPADDR): {text:?}",
                node.name
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp6_has__established_loopback_rows_only() {
        let table = "  sl  local_address                         remote_address                        st\n\
   0: 00000000000000000000000001000000:A1B2 00000000000000000000000001000000:1F90 01 0\n\
   1: 0000000000000000FFFF00000100007F:C000 0000000000000000FFFF00000100007F:1F91 01 0\n\
   2: 00000000000000000000000001000000:1F92 00000000000000000000000000000000:0000 0A 0\n";
        assert!(tcp6_has(table, 0x1F90));
        assert!(
            !tcp6_has(table, 0x1F91),
            "an IPv4-mapped connection is not IPv6"
        );
        assert!(!tcp6_has(table, 0x1F92));
        assert!(!tcp6_has(table, 0));
    }
}
