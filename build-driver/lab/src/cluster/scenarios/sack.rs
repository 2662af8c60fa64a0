//! The SACK socket survives a replacement slurmd (POC-DEFECTS D12, patch 0031, every OS).
//!
//! A new slurmd binds the SACK socket path (`/run/slurm/sack.socket`, the node's `run/`)
//! in `auth_g_init()` before it tells the old slurmd to stop; the old one's conmgr then
//! unlinked the path on its way out, and every client on the node failed with "failed to
//! connect to any sack sockets". Here a second slurmd is started while the first still
//! runs; once the first is gone the socket file must still be there (the new slurmd's:
//! another inode) and a client must authenticate through it.
//!
//! Where it can fail: 26.11 resolves the SACK listener's bound path (getsockname) and
//! unlinked it from the old slurmd: on the unpatched 26.11 snapshot (native, `--no-patches`)
//! this scenario fails with "SACK socket .../run/slurm/sack.socket: No such file or
//! directory", and passes with the series. 24.11.5 resolves no address for a listener handed to
//! conmgr by descriptor, so it never unlinked the SACK socket: there this scenario passes
//! with and without patch 0031 (seen on the pristine native build), and guards against a
//! regression of the behaviour rather than reproducing D12.

use super::super::daemon::Daemon;
use super::client::Ctx;
use driver_common::error::{Error, Result};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::time::{Duration, Instant};

const OLD_EXIT_TIMEOUT: Duration = Duration::from_secs(60);

pub fn replacement_keeps_socket(ctx: &mut Ctx<'_>) -> Result<String> {
    let sock = ctx.cluster.layout().node_sack_socket(&ctx.first_node());
    let ino = |what: &str| -> Result<u64> {
        let m = std::fs::symlink_metadata(&sock)
            .map_err(|e| Error::Scenario(format!("{what}: SACK socket {}: {e}", sock.display())))?;
        if !m.file_type().is_socket() {
            return Err(Error::Scenario(format!(
                "{what}: {} is not a socket",
                sock.display()
            )));
        }
        Ok(m.ino())
    };
    let before = ino("before")?;
    let old = ctx.slurmd_record()?;
    // the old slurmd still holds the port: start without the free-port check; the new
    // one stops the old one itself (its pid file) and is ready when it has the port
    ctx.cluster.start_unchecked(ctx.sh, Daemon::Slurmd(0))?;
    let new_pid = ctx.cluster.record(Daemon::Slurmd(0)).map(|d| d.pid);
    let t = Instant::now();
    while old.liveness() == super::super::procs::Liveness::Running {
        if t.elapsed() > OLD_EXIT_TIMEOUT {
            old.stop(Duration::from_secs(10))?;
            return Err(Error::Scenario(format!(
                "the old slurmd {} did not exit within {OLD_EXIT_TIMEOUT:?} after the new one started",
                old.pid
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let after = ino("after the old slurmd exited")?;
    if after == before {
        return Err(Error::Scenario(format!(
            "{} is still the old slurmd's socket (inode {before})",
            sock.display()
        )));
    }
    ctx.srun_expect(&["-N1", "/bin/echo", "sack-survived"], "sack-survived")?;
    Ok(format!(
        "slurmd {} replaced by {new_pid:?}; {} survived (inode {before} -> {after}); srun authenticated",
        old.pid,
        sock.display()
    ))
}
