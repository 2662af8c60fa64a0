//! SMD-409: power saving with the node tool as slurm.conf's `SuspendProgram` and
//! `ResumeProgram` (`cargo xtask power`, the same code as `slurm-mac power`), on loopback.
//!
//! slurmctld runs two recording wrappers around `power suspend|resume "$1" --map MAP`. The
//! map gives the node a MAC address, a suspend command that writes the node's name to a
//! file, and a broadcast address that is this scenario's UDP socket on 127.0.0.1. The
//! scenario plays the Mac: when the suspend command has run it stops the node's slurmd (the
//! Mac asleep); when the magic packet of the node's MAC arrives it starts slurmd again (the
//! Mac awake: slurmd starts again, the boot time unchanged). It checks that the idle node is suspended
//! (called with its name, `POWERED_DOWN` in scontrol, `~` in sinfo) and that a job for the
//! node has it resumed (called with its name, the packet's 102 bytes). Then the job should
//! run once slurmd registers; in 24.11 slurmctld ignores the registration ("Still waiting
//! for boot of node ...": `waiting_for_node_boot()` wants a boot after the resume request,
//! and a Mac woken from sleep keeps its `kern.boottime`), which the scenario reports as a
//! GAP, cancelling the job. Either way it ends by checking that, with power saving off
//! again, the node is idle and runs a step.

use super::super::daemon::Daemon;
use super::client::{Ctx, LogMark, file_lines};
use super::reconf::{self, Change};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::poll;
use slurm_mac::power::mac::Mac;
use slurm_mac::power::wol::packet;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// The node's MAC address in the map (locally administered, never a real card's).
const MAC: Mac = Mac([0x02, 0x00, 0x00, 0x00, 0x04, 0x09]);

/// `SuspendTime`: idle seconds before slurmctld suspends the node (kept short).
const SUSPEND_TIME: u64 = 5;

/// How long each power transition may take here (suspend after idle, resume after submit).
const STEP: Duration = Duration::from_secs(60);

/// How long the woken node's slurmd gets to register (well within `ResumeTimeout`).
const WAKE: Duration = Duration::from_secs(20);

const POLL: Duration = Duration::from_millis(250);

fn io(what: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Scenario(format!("{what}: {e}"))
}

/// The idle node suspended, a job's submission resumes it, the job runs.
pub fn suspend_then_resume(ctx: &mut Ctx<'_>) -> Result<String> {
    let node = ctx.first_node();
    let wol = UdpSocket::bind("127.0.0.1:0").map_err(io("a loopback UDP socket"))?;
    wol.set_nonblocking(true)
        .map_err(io("a non-blocking UDP socket"))?;
    let port = wol
        .local_addr()
        .map_err(io("the UDP socket's address"))?
        .port();
    let asleep = ctx.path("asleep");
    let calls = ctx.path("calls");
    let map = ctx.path("power.toml");
    let text = format!(
        "broadcast = \"127.0.0.1:{port}\"\n\n[node.{node}]\nmac = \"{MAC}\"\n\
         suspend = [\"sh\", \"-c\", \"echo {node} >> {}\"]\n",
        asleep.display()
    );
    std::fs::write(&map, text).map_err(|e| Error::io(&map, e))?;
    let driver = std::env::current_exe().map_err(io("the driver's own path"))?;
    let scontrol = ctx.cluster.bin("scontrol");
    let mut wrapper = |action: &str| {
        ctx.script(
            action,
            &format!(
                "echo \"{action} $*\" >> {calls}\nexec {driver} power {action} \"$1\" --map {map} \
                 --scontrol {scontrol} >> {calls} 2>&1\n",
                calls = calls.display(),
                driver = driver.display(),
                map = map.display(),
                scontrol = scontrol.display(),
            ),
        )
    };
    let suspend = wrapper("suspend")?;
    let resume = wrapper("resume")?;
    let change = Change {
        lines: vec![
            format!("SuspendProgram={}", suspend.display()),
            format!("ResumeProgram={}", resume.display()),
            format!("SuspendTime={SUSPEND_TIME}"),
            "SuspendTimeout=5".into(),
            "ResumeTimeout=60".into(),
        ],
        restart: vec![Daemon::Slurmctld],
        ..Change::default()
    };
    let detail = reconf::with_change(ctx, &change, |ctx| body(ctx, &node, &wol, &asleep, &calls))?;
    // slurmctld, restarted without power saving, must let the node work again.
    let (state, _) = ctx.state_of(&node)?;
    let cleared = if state.contains("POWER") {
        forget_power_state(ctx)?
    } else {
        String::new()
    };
    ctx.wait_node_idle(STEP)?;
    ctx.srun_expect(&["-w", &node, "hostname"], &node)?;
    Ok(format!(
        "{detail}; without power saving again: {state}{cleared}, then idle and ran a step"
    ))
}

/// Since 26.05 (upstream 53be38cdc7, "Make power save thread always be running") slurmctld no
/// longer clears a recovered node's power flags when it starts without power saving, so the
/// woken node stays POWERING_UP until ResumeTimeout, then DOWN+POWERED_DOWN, and without a
/// ResumeProgram nothing can power it up ("Invalid power action"; 24.11 cleared the flags in
/// load_all_node_state). The clean-up an admin has: slurmctld started without its node state
/// (no job runs at this point), so the node registers afresh. Returns what was done.
fn forget_power_state(ctx: &mut Ctx<'_>) -> Result<String> {
    ctx.cluster.stop(Daemon::Slurmctld)?;
    let state = ctx.cluster.layout().state();
    for f in ["node_state", "node_state.old"] {
        driver_common::util::fs::remove_optional(&state.join(f))?;
    }
    ctx.cluster.start(ctx.sh, Daemon::Slurmctld)?;
    Ok(" (kept across slurmctld's restart, as 26.05 does: its node state removed and slurmctld started again)".into())
}

fn body(
    ctx: &mut Ctx<'_>,
    node: &str,
    wol: &UdpSocket,
    asleep: &std::path::Path,
    calls: &std::path::Path,
) -> Result<String> {
    let t = Instant::now();
    poll(
        &format!("slurmctld to run SuspendProgram for the idle {node}"),
        STEP,
        POLL,
        || Ok(file_lines(asleep).iter().any(|l| l == node).then_some(())),
    )
    .map_err(|e| Error::Scenario(format!("{e}; calls: {:?}", file_lines(calls))))?;
    let suspended_after = t.elapsed().as_secs_f64();
    ctx.cluster.stop(Daemon::Slurmd(0))?;
    let state = ctx.wait_node_value(node, "State", "the node POWERED_DOWN", |s| {
        s.contains("POWERED_DOWN") && !s.contains("POWERING_DOWN")
    })?;
    let sinfo = ctx
        .read("sinfo", &["-h", "-n", node, "-o", "%t"])?
        .trim()
        .to_string();
    if !sinfo.ends_with('~') {
        return Err(Error::Scenario(format!(
            "sinfo shows the powered-down {node} as `{sinfo}`, not with `~`"
        )));
    }
    if let Some(p) = datagram(wol) {
        return Err(Error::Scenario(format!(
            "a packet ({} bytes) arrived before any job asked for the node",
            p.len()
        )));
    }
    let out = ctx.path("woken.out");
    let t = Instant::now();
    let id = ctx.sbatch_wrap(&["-w", node, "-o", &out.display().to_string()], "hostname")?;
    let got = poll(
        &format!("the magic packet for {node} after job {id} was submitted"),
        STEP,
        POLL,
        || Ok(datagram(wol)),
    )
    .map_err(|e| Error::Scenario(format!("{e}; calls: {:?}", file_lines(calls))))?;
    let resumed_after = t.elapsed().as_secs_f64();
    if got != packet(MAC) {
        return Err(Error::Scenario(format!(
            "the packet is not {MAC}'s magic packet: {} bytes {:02x?}",
            got.len(),
            &got[..got.len().min(24)]
        )));
    }
    let log = file_lines(calls);
    for want in [format!("suspend {node}"), format!("resume {node}")] {
        if !log.contains(&want) {
            return Err(Error::Scenario(format!(
                "no `{want}` call recorded: {log:?}"
            )));
        }
    }
    let ctld = LogMark::take(&ctx.cluster.log(Daemon::Slurmctld));
    let woke = wake(ctx);
    let waiting = format!("Still waiting for boot of node {node}");
    let ignored = ctld.added().lines().any(|l| l.contains(&waiting));
    let head = format!(
        "{node} suspended {suspended_after:.1} s after the restart ({state}, sinfo `{sinfo}`), \
         woken by its {}-byte magic packet {resumed_after:.1} s after job {id}'s submission",
        got.len()
    );
    match woke {
        Ok(()) => {
            ctx.wait_state(id, &["COMPLETED"], STEP)?;
            let ran_on = file_lines(&out).join("\n");
            if ran_on != node {
                return Err(Error::Scenario(format!(
                    "job {id} printed {ran_on:?}, not {node}"
                )));
            }
            Ok(format!("{head}; job {id} then COMPLETED on it"))
        }
        Err(e) if ignored => {
            ctx.cancel(id)?;
            ctx.gap = Some(format!(
                "slurmd came back without a boot, as a Mac woken from sleep does, and slurmctld \
                 ignored its registration (\"{waiting}\"): slurmctld's power saving (24.11 to 26.11) waits for a boot \
                 after the resume (node_mgr.c waiting_for_node_boot(): boot time before the \
                 resume request), and a Mac's kern.boottime does not change on wake ({})",
                e.to_string()
                    .lines()
                    .next()
                    .and_then(|l| l.split("; last lines").next())
                    .unwrap_or_default()
            ));
            Ok(format!("{head}; job {id} cancelled"))
        }
        Err(e) => Err(e),
    }
}

/// The Mac wakes: its slurmd starts again (without a boot) and must register within
/// [`WAKE`].
fn wake(ctx: &mut Ctx<'_>) -> Result<()> {
    let keep = ctx.cluster.ready_timeout;
    ctx.cluster.ready_timeout = WAKE;
    let started = ctx.cluster.start(ctx.sh, Daemon::Slurmd(0));
    ctx.cluster.ready_timeout = keep;
    started
}

/// One datagram waiting on the non-blocking socket, if any.
fn datagram(socket: &UdpSocket) -> Option<Vec<u8>> {
    let mut buf = [0u8; 512];
    socket.recv(&mut buf).ok().map(|n| buf[..n].to_vec())
}
