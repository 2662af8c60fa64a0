//! The proof of concept's SMD-407: Slurm's TLS (`tls/s2n`, 25.05 and later) between every
//! program, on a cluster started with `--tls` (tls.rs), for example a darwin node joined
//! to a native controller (`--mix native=P1,darwin=P2 --tls`).
//!
//! - Every Slurm daemon loaded tls/s2n (its log says so at debug level).
//! - Every listener speaks TLS with a certificate of the cluster's CA: `openssl s_client`
//!   to slurmctld, slurmdbd and each slurmd verifies the chain (a plain-text listener, or
//!   one with another certificate, fails this).
//! - On each node a batch job completes and is accounted (slurmctld to slurmdbd over TLS),
//!   and a running job is cancelled.
//! - `srun` on each node, from every build's clients, with a LibreSSL-like `openssl` first
//!   on its PATH: srun's I/O listener needs a self-signed certificate, which certgen/script
//!   makes by running its embedded scripts (D22: a script path that can be run on macOS,
//!   patch 0015's temporary file in the darwin personality; D23: `req -new -x509`, patch
//!   0065, which macOS's LibreSSL needs). Without 0065 this srun fails ("Expecting:
//!   CERTIFICATE REQUEST").

use super::client::{Ctx, JOB_TIMEOUT};
use crate::cluster::daemon::Daemon;
use crate::cluster::tls;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::run_bounded;
use std::process::Command;

/// What tls/s2n's `init()` logs (debug; tls.shtml's "tls/s2n loaded" is not what 26.05.3 prints).
const LOADED: &str = "Initialized tls/s2n";

pub fn smd_407(ctx: &mut Ctx<'_>) -> Result<String> {
    let loaded = daemons_loaded(ctx)?;
    let verified = listeners_verified(ctx)?;
    let bin = ctx.path("libressl-bin");
    tls::libressl_like(ctx.sh, &bin)?;
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut runs = Vec::new();
    for i in 0..ctx.cluster.nodes().len() {
        let node = ctx.cluster.nodes()[i].clone();
        let id = ctx.sbatch(
            &format!("batch-{}", node.name),
            &["-w", &node.name],
            "hostname\n",
        )?;
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
        let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
        if acct.state != "COMPLETED" {
            return Err(Error::Scenario(format!(
                "batch job {id} on {}: accounted as {}, expected COMPLETED",
                node.name, acct.state
            )));
        }
        // srun from the head's clients and from the node's own build's.
        let mut from = vec![("head".to_string(), ctx.tool("srun"))];
        if node.prefix != ctx.cluster.nodes()[0].prefix {
            let mut c = ctx.cluster.tool_on(i, "srun")?;
            c.current_dir(&ctx.dir);
            from.push((format!("{} build", node.build), c));
        }
        for (who, mut c) in from {
            c.env("PATH", &path)
                .args(["-w", &node.name, "-N1", "-n1", "/bin/echo", "tls-step-io"]);
            let out = run_bounded(c, super::client::CLIENT_TIMEOUT)?;
            let stdout = String::from_utf8_lossy(&out.stdout);
            if !out.status.success() || stdout.trim() != "tls-step-io" {
                return Err(Error::Scenario(format!(
                    "srun on {} ({who}'s srun, LibreSSL-like openssl first on PATH): {}, \
                     stdout {:?}, stderr {:?} (certgen/script must make srun's certificate \
                     with macOS's openssl: patches 0015, 0065)",
                    node.name,
                    out.status,
                    stdout.trim(),
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            runs.push(format!("{}<-{who}", node.name));
        }
        let long = ctx.sbatch(
            &format!("cancel-{}", node.name),
            &["-w", &node.name],
            "sleep 300\n",
        )?;
        ctx.wait_state(long, &["RUNNING"], JOB_TIMEOUT)?;
        ctx.cancel(long)?;
        ctx.wait_state(long, &["CANCELLED"], JOB_TIMEOUT)?;
    }
    Ok(format!(
        "tls/s2n loaded by {loaded}; TLS verified against the cluster CA on {verified}; per node a batch job completed and accounted, a job cancelled; srun step I/O with a LibreSSL-like openssl: {}",
        runs.join(", ")
    ))
}

/// Every Slurm daemon's log has tls/s2n's load line: their names.
fn daemons_loaded(ctx: &Ctx<'_>) -> Result<String> {
    let mut names = Vec::new();
    for d in ctx.cluster.daemons() {
        if d == Daemon::MariaDb {
            continue;
        }
        let log = ctx.cluster.log(d);
        let text = std::fs::read_to_string(&log).map_err(|e| Error::io(&log, e))?;
        if !text.contains(LOADED) {
            return Err(Error::Scenario(format!(
                "{}: no \"{LOADED}\" in {} (is TLSType=tls/s2n in its configuration?)",
                d.name(),
                log.display()
            )));
        }
        names.push(d.name());
    }
    Ok(names.join(", "))
}

/// `openssl s_client` to every listener verifies a certificate of the cluster's CA.
fn listeners_verified(ctx: &Ctx<'_>) -> Result<String> {
    let ports = ctx.cluster.state.ports;
    let mut targets = vec![
        (
            "slurmctld".to_string(),
            format!("127.0.0.1:{}", ports.slurmctld),
        ),
        (
            "slurmdbd".to_string(),
            format!("127.0.0.1:{}", ports.slurmdbd),
        ),
    ];
    for n in ctx.cluster.nodes() {
        targets.push((
            format!("slurmd {}", n.name),
            format!("{}:{}", n.addr, n.port),
        ));
    }
    let ca = tls::ca_cert(&ctx.cluster.layout());
    let mut seen = Vec::new();
    for (who, addr) in targets {
        let mut c = Command::new("openssl");
        c.args([
            "s_client",
            "-brief",
            "-verify_return_error",
            "-connect",
            &addr,
            "-CAfile",
        ])
        .arg(&ca)
        .stdin(std::process::Stdio::null());
        let out = run_bounded(c, super::client::CLIENT_TIMEOUT)?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if !text.contains("Verification: OK") {
            return Err(Error::Scenario(format!(
                "{who} at {addr}: no TLS handshake verified against the cluster's CA: {}",
                text.trim()
            )));
        }
        seen.push(who);
    }
    Ok(seen.join(", "))
}
