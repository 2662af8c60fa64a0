//! SMD-403: an OCI container on a Mac must be refused, never run without the container.
//!
//! macOS has no OCI runtime (runc and crun need Linux namespaces and cgroups), so a Mac has
//! no `oci.conf`. Without one, 24.11's slurmstepd logs "OCI Container not configured.
//! Ignoring ..." at debug level and runs the step on the node itself: `srun
//! --container=BUNDLE` succeeded here on the darwin personality before patch 0068, the
//! bundle never used. With 0068, slurmd refuses the step ("Container support is not
//! configured", srun's error) and logs why. `scrun` is not in the Mac builds at all: it is
//! built only with Lua, which macOS targets switch off (`--without-lua`) and the darwin
//! personality's configure did not find; a site's scrun would submit the same kind of step.

use super::super::daemon::Daemon;
use super::client::{Ctx, LogMark};
use driver_common::error::{Error, Result};

/// What srun prints for ESLURM_CONTAINER_NOT_CONFIGURED.
const REFUSED: &str = "Container support is not configured";
/// Patch 0068's slurmd log line.
const WHY: &str = "containers cannot run on macOS";

/// The first node of a darwin-personality build: its index and name.
fn darwin_node(ctx: &Ctx<'_>) -> Result<(usize, String)> {
    use driver_common::personality::Personality;
    use driver_common::staging::Manifest;
    ctx.cluster
        .nodes()
        .iter()
        .enumerate()
        .find(|(_, n)| {
            Manifest::read(&n.prefix).is_ok_and(|m| m.personality == Personality::Darwin)
        })
        .map(|(i, n)| (i, n.name.clone()))
        .ok_or_else(|| Error::Scenario("no node of a darwin-personality build".into()))
}

pub fn refused(ctx: &mut Ctx<'_>) -> Result<String> {
    let (i, node) = darwin_node(ctx)?;
    let bundle = ctx.path("bundle");
    let rootfs = bundle.join("rootfs");
    std::fs::create_dir_all(&rootfs).map_err(|e| Error::io(&rootfs, e))?;
    let config = bundle.join("config.json");
    std::fs::write(
        &config,
        "{\"ociVersion\": \"1.0.2\", \"root\": {\"path\": \"rootfs\"}}\n",
    )
    .map_err(|e| Error::io(&config, e))?;
    let ran = ctx.path("ran-outside-the-container");
    let log = LogMark::take(&ctx.cluster.log(Daemon::Slurmd(i)));
    let container = format!("--container={}", bundle.display());
    let touch = format!("touch {}", ran.display());
    let out = ctx.run("srun", &["-w", &node, &container, "sh", "-c", &touch])?;
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if ran.exists() || out.status.success() {
        return Err(Error::Scenario(format!(
            "srun {container} ran the step on the Mac itself, without the container \
             ({}, step ran: {}; stderr {stderr:?}): a silent success",
            out.status,
            ran.exists()
        )));
    }
    let said = stderr
        .lines()
        .find(|l| l.contains(REFUSED))
        .ok_or_else(|| {
            Error::Scenario(format!(
                "srun failed ({}) without saying {REFUSED:?}: {stderr:?}",
                out.status
            ))
        })?;
    let logged = log.added();
    let why = logged
        .lines()
        .find(|l| l.contains(WHY))
        .ok_or_else(|| Error::Scenario(format!("slurmd's log does not say {WHY:?}")))?;
    let scrun = ctx.cluster.bin("scrun");
    Ok(format!(
        "refused on {node}, {}: srun said {:?}; slurmd: {:?}; scrun {}",
        out.status,
        said.trim(),
        why.trim(),
        if scrun.exists() {
            "is in this build"
        } else {
            "is not in this build (no Lua)"
        }
    ))
}
