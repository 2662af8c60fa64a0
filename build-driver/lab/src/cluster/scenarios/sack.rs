//! The SACK socket survives a replacement slurmd (POC-DEFECTS D12, patch 0031, every OS).
//!
//! A new slurmd binds the SACK socket path (`/run/slurm/sack.socket`, the node's `run/`)
//! in `auth_g_init()` before it tells the old slurmd to stop; the old one's conmgr then
//! unlinked the path on its way out, and every client on the node failed with "failed to
//! connect to any sack sockets". Here a second slurmd is started while the first still
//! runs; once the first is gone the socket file must still be there (the new slurmd's:
//! another inode) and a client must authenticate through it.
//!
//! Whether the race is reached is read from the old slurmd's own account: it runs with
//! `SLURM_DEBUG_FLAGS=CONMGR` (the replacement without), so with 0031 its `close_con()`
//! logs "not unlinking <path>: no longer our socket" for the SACK listener when it reached
//! the unlink with the new slurmd's file in place. Since 25.05 (upstream commit
//! "Resolve new socket address in add_connection()", first in slurm-25-05-0-1)
//! `add_connection()` resolves the bound path of a listener handed over by descriptor, so
//! the old slurmd reaches it: without 0031 the path is unlinked and this scenario fails
//! ("SACK socket .../sack.socket: No such file or directory", seen on the unpatched 26.11
//! snapshot and on 25.05.8 without 0031), and with 0031 a missing "not unlinking" line
//! fails it too (the scenario no longer reaches the race). 24.11 resolves no address for
//! such a listener and never unlinks the SACK socket: there the race does not exist, the
//! scenario passes with and without 0031 and says so. No other listener of the programs a
//! 24.11.5 build for a Mac installs has a path either (docs/PATCHES.md, 0031).

use super::super::daemon::Daemon;
use super::client::{Ctx, LogMark};
use driver_common::error::{Error, Result};
use driver_common::lines::Line;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::time::{Duration, Instant};

const OLD_EXIT_TIMEOUT: Duration = Duration::from_secs(60);

/// 0031's `close_con()` line for a listener path that is no longer the file it bound.
const DECLINED: &str = "not unlinking";
/// conmgr's line for a listener path it unlinked.
const UNLINKED: &str = "] unlinked ";
/// The SACK socket's file name in every line (`SLURM_SACK_SOCKET`).
const SACK_FILE: &str = "sack.socket";

pub fn replacement_keeps_socket(ctx: &mut Ctx<'_>) -> Result<String> {
    let sock = ctx.cluster.layout().node_sack_socket(&ctx.first_node());
    let line = node_line(ctx)?;
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
    // a slurmd SIGTERMed a fraction of a second after its first start (`cluster test --only`
    // right after `up`) could be accepting a connection then, and spun in conmgr's watch loop
    // until SIGKILL (15 s, the harness's grace) on lines without patch 0073 (docs/RESULTS.md;
    // slurmd-sigterm-while-accepting tests that): one job through it first lets it settle
    ctx.srun_expect(&["-N1", "/bin/echo", "sack-before"], "sack-before")?;
    // the slurmd to be replaced logs conmgr's decisions; its replacement does not
    ctx.cluster
        .set_slurmd_env(0, &[("SLURM_DEBUG_FLAGS", "CONMGR")])?;
    let restarted = ctx.cluster.restart(ctx.sh, Daemon::Slurmd(0));
    ctx.cluster.set_slurmd_env(0, &[])?;
    restarted?;
    let before = ino("before")?;
    let old = ctx.slurmd_record()?;
    let log = LogMark::take(&ctx.cluster.log(Daemon::Slurmd(0)));
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
    let race = race_seen(line, &log.added())?;
    Ok(format!(
        "slurmd {} replaced by {new_pid:?}; {} survived (inode {before} -> {after}); srun authenticated; {race}",
        old.pid,
        sock.display()
    ))
}

/// The release line of the node's build.
fn node_line(ctx: &Ctx<'_>) -> Result<Line> {
    let prefix = &ctx.cluster.nodes()[0].prefix;
    let m = driver_common::staging::Manifest::read(prefix)?;
    Line::from_name(&m.line, "the node's build")
}

/// Whether the old slurmd reached the unlink race, from what it logged (with
/// `DebugFlags=CONMGR`) between the replacement's start and its own exit: a line for the
/// SACK path saying it declined (0031), or none. Since 25.05 none means the scenario no
/// longer tests what it is for; in 24.11 none is expected (the listener has no address).
fn race_seen(line: Line, log: &str) -> Result<String> {
    let sack = |l: &&str| l.contains(SACK_FILE);
    if let Some(l) = log.lines().filter(sack).find(|l| l.contains(DECLINED)) {
        return Ok(format!(
            "race reached, the old slurmd left the path: `{}`",
            l.trim()
        ));
    }
    if let Some(l) = log.lines().filter(sack).find(|l| l.contains(UNLINKED)) {
        // the path was checked to be the new slurmd's file after the old one exited, so
        // this can only be seen if something bound it again in between: never a pass
        return Err(Error::Scenario(format!(
            "the old slurmd unlinked the SACK path on its way out: `{}`",
            l.trim()
        )));
    }
    if line >= Line::L25_05 {
        return Err(Error::Scenario(format!(
            "the old slurmd logged no unlink decision for its SACK listener (CONMGR): since \
             25.05 conmgr resolves that listener's path and reaches the unlink, so this \
             {} build no longer exercises the race the scenario is for",
            line.name()
        )));
    }
    Ok(format!(
        "race not reached: {} conmgr resolves no address for a listener handed over by \
         descriptor and never unlinks the SACK socket (guards a regression only)",
        line.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECLINED_LINE: &str = "[2026-12-04T21:50:01.123] CONMGR: close_con: [unix:/run/slurm/sack.socket] not unlinking /run/slurm/sack.socket: no longer our socket";
    const UNLINKED_LINE: &str =
        "[2026-12-04T21:50:01.123] CONMGR: close_con: [fd:5] unlinked /run/slurm/sack.socket";

    #[test]
    fn race_seen__declined_line_passes_on_every_line() {
        for l in [Line::L24_11, Line::L25_05, Line::L26_11] {
            let got = race_seen(l, &format!("x\n{DECLINED_LINE}\ny\n")).unwrap();
            assert!(got.starts_with("race reached"), "{got}");
        }
    }

    #[test]
    fn race_seen__unlinked_line_fails() {
        let err = race_seen(Line::L25_05, UNLINKED_LINE)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unlinked the SACK path"), "{err}");
    }

    #[test]
    fn race_seen__silence_fails_since_25_05_and_passes_on_24_11() {
        let quiet = "[2026-12-04T21:50:01.123] CONMGR: close_con: [fd:5] closing input\n";
        assert!(race_seen(Line::L25_05, quiet).is_err());
        assert!(race_seen(Line::L26_11, quiet).is_err());
        let got = race_seen(Line::L24_11, quiet).unwrap();
        assert!(got.starts_with("race not reached: 24.11"), "{got}");
    }

    #[test]
    fn race_seen__lines_of_other_paths_do_not_count() {
        let other = "CONMGR: close_con: [x] not unlinking /tmp/other.socket: no longer our socket";
        assert!(race_seen(Line::L25_05, other).is_err());
    }
}
