//! gpu/apple (patches 0050, 0051) on the darwin personality's modelled Mac: `AutoDetect=apple`
//! finds no GPU on the default Mac (one gpu/apple line says so), finds the GPU of a
//! hardware file ("Apple M4 Max", 40 GPU cores), and a node whose slurm.conf names the
//! detected type registers `gres/gpu:apple_m4_max:1` and runs a GPU job. The cluster's
//! configuration and modelled Mac are restored afterwards, whatever happened.
//!
//! The IOKit calls are gpu/apple's own C code (patch 0050's apple_iokit.c); the shim answers
//! them from the cluster's hardware file (`Layout::mac_hardware`, shim/src/emulate/iokit.rs).

use super::super::daemon::Daemon;
use super::super::render::MAC_HARDWARE;
use super::client::{Ctx, JOB_TIMEOUT, q};
use driver_common::error::{Error, Result};
use slurm_mac::gres_conf::{self, Source};
use std::path::PathBuf;
use std::time::Duration;

/// The modelled Mac with a GPU.
const M4_MAX: &str = "machdep.cpu.brand_string = Apple M4 Max\n\
    hw.perflevel0.physicalcpu = 12\nhw.perflevel1.physicalcpu = 4\n\
    agx.0.IOClass = AGXAcceleratorG16X\nagx.0.model = Apple M4 Max\nagx.0.gpu-core-count = 40\n";
/// The GRES type gpu/apple derives from the model.
const TYPE: &str = "apple_m4_max";

/// Whether the prefix has gpu/apple (macOS and darwin-personality builds of the series).
pub fn has_gpu_apple(ctx: &Ctx<'_>) -> bool {
    ctx.cluster
        .state
        .prefix
        .join("lib/slurm/gpu_apple.so")
        .is_file()
}

/// The files the scenario changes, as they were.
struct Saved {
    files: Vec<(PathBuf, Vec<u8>)>,
}

impl Saved {
    fn take(paths: &[PathBuf]) -> Result<Saved> {
        let mut files = Vec::new();
        for p in paths {
            files.push((p.clone(), std::fs::read(p).map_err(|e| Error::io(p, e))?));
        }
        Ok(Saved { files })
    }

    /// Writes the files back and restarts slurmctld and slurmd with them.
    fn restore(self, ctx: &mut Ctx<'_>) -> Result<()> {
        for (p, bytes) in &self.files {
            std::fs::write(p, bytes).map_err(|e| Error::io(p, e))?;
        }
        restart_controller_and_node(ctx)?;
        ctx.wait_node_idle(Duration::from_secs(60))
    }
}

fn restart_controller_and_node(ctx: &mut Ctx<'_>) -> Result<()> {
    ctx.cluster.stop(Daemon::Slurmd(0))?;
    ctx.cluster.stop(Daemon::Slurmctld)?;
    ctx.cluster.start(ctx.sh, Daemon::Slurmctld)?;
    ctx.cluster.start(ctx.sh, Daemon::Slurmd(0))
}

/// The whole check (see the module documentation).
pub fn autodetect(ctx: &mut Ctx<'_>) -> Result<String> {
    if !has_gpu_apple(ctx) {
        return ctx.not_run(
            "gpu/apple is built for macOS and the darwin personality only (patch 0050); this prefix has no lib/slurm/gpu_apple.so",
        );
    }
    let l = ctx.cluster.layout();
    let hw = l.mac_hardware();
    let prefix = ctx.cluster.state.prefix.clone();

    // The default Mac: no GPU, and gpu/apple says so once.
    std::fs::write(&hw, MAC_HARDWARE).map_err(|e| Error::io(&hw, e))?;
    let none = gres_conf::report(&prefix, &Source::Seam(Some(hw.clone())))?;
    if none.gpu.is_some() || none.node_line.contains("Gres=") || none.gpu_apple_lines.len() != 1 {
        return Err(Error::Scenario(format!(
            "default Mac (no GPU): slurmd -C reported {:?}, gpu/apple said {:?}; want no Gres and one line",
            none.node_line, none.gpu_apple_lines
        )));
    }
    let no_gpu_line = none.no_gpu.clone().ok_or_else(|| {
        Error::Scenario(format!(
            "no GPU, but gpu/apple's line does not say so: {:?}",
            none.gpu_apple_lines
        ))
    })?;

    let saved = Saved::take(&[l.conf(), l.gres_conf(), hw.clone()])?;
    let result = with_gpu(ctx, &prefix, &hw);
    let restored = saved.restore(ctx);
    let detail = result?;
    restored?;
    let gres = ctx.node_field("Gres")?;
    if gres != "gpu:apple:1" {
        return Err(Error::Scenario(format!(
            "after the restore the node has Gres={gres}, expected the cluster's gpu:apple:1"
        )));
    }
    Ok(format!(
        "no GPU: {:?}; {detail}; restored to gpu:apple:1",
        no_gpu_line
    ))
}

/// The Mac with a GPU: slurmd -C, then the node registered with AutoDetect=apple, a GPU job.
fn with_gpu(ctx: &mut Ctx<'_>, prefix: &std::path::Path, hw: &std::path::Path) -> Result<String> {
    let found = detect_m4_max(prefix, hw)?;
    let (registered, detected) = register_with_autodetect(ctx)?;
    let (id, alloc_tres) = gpu_job(ctx)?;
    Ok(format!(
        "hardware file Apple M4 Max: slurmd -C {}; node registered Gres={registered}; slurmd.log {:?}; job {id} --gres=gpu:{TYPE}:1 COMPLETED, SLURM_JOB_GPUS=0, AllocTRES={alloc_tres}",
        found
            .node_line
            .split_whitespace()
            .find(|w| w.starts_with("Gres="))
            .unwrap_or_default(),
        gres_conf::autodetect_text(&detected).unwrap_or(&detected),
    ))
}

/// `slurmd -C` and gpu/apple on the M4 Max hardware file: the GPU, its cores, its type.
fn detect_m4_max(prefix: &std::path::Path, hw: &std::path::Path) -> Result<gres_conf::Report> {
    std::fs::write(hw, M4_MAX).map_err(|e| Error::io(hw, e))?;
    let found = gres_conf::report(prefix, &Source::Seam(Some(hw.to_path_buf())))?;
    let gpu = found.gpu.clone().ok_or_else(|| {
        Error::Scenario(format!(
            "hardware file with a GPU: gpu/apple found none ({:?})",
            found.gpu_apple_lines
        ))
    })?;
    if gpu.model != "Apple M4 Max"
        || gpu.cores != Some(40)
        || gpu.gres_type != TYPE
        || !found.node_line.contains(&format!("Gres=gpu:{TYPE}:1"))
    {
        return Err(Error::Scenario(format!(
            "slurmd -C: {:?}, gpu/apple: {gpu:?}; want Apple M4 Max, 40 cores, gpu:{TYPE}:1",
            found.node_line
        )));
    }
    Ok(found)
}

/// The node with gres.conf AutoDetect=apple and slurm.conf naming the detected type: the
/// Gres it registers and slurmd.log's gpu/apple line since the restart.
fn register_with_autodetect(ctx: &mut Ctx<'_>) -> Result<(String, String)> {
    let l = ctx.cluster.layout();
    let conf = std::fs::read_to_string(l.conf()).map_err(|e| Error::io(l.conf(), e))?;
    let typed = conf.replace(" Gres=gpu:apple:1 ", &format!(" Gres=gpu:{TYPE}:1 "));
    if typed == conf {
        return Err(Error::Scenario(
            "slurm.conf has no ` Gres=gpu:apple:1 ` node entry to retype".into(),
        ));
    }
    std::fs::write(l.conf(), typed).map_err(|e| Error::io(l.conf(), e))?;
    let gres_conf =
        "# gpu-autodetect scenario: gpu/apple finds the GPU (IOKit)\nAutoDetect=apple\n";
    std::fs::write(l.gres_conf(), gres_conf).map_err(|e| Error::io(l.gres_conf(), e))?;
    let log = ctx.cluster.log(Daemon::Slurmd(0));
    let log_from = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    restart_controller_and_node(ctx)?;
    ctx.wait_node_idle(Duration::from_secs(60))?;
    let registered = ctx.node_field("Gres")?;
    if registered != format!("gpu:{TYPE}:1") {
        return Err(Error::Scenario(format!(
            "with AutoDetect=apple the node registered Gres={registered}, expected gpu:{TYPE}:1"
        )));
    }
    let text = std::fs::read(&log).map_err(|e| Error::io(&log, e))?;
    let new = String::from_utf8_lossy(text.get(log_from as usize..).unwrap_or_default());
    let detected = new
        .lines()
        .find(|line| {
            gres_conf::autodetect_text(line)
                .is_some_and(|t| t.starts_with("AutoDetect=apple: Apple M4 Max, 40 GPU cores"))
        })
        .ok_or_else(|| {
            Error::Scenario(format!(
                "slurmd.log has no gpu/apple line for the Apple M4 Max (since its restart: {} lines)",
                new.lines().count()
            ))
        })?;
    Ok((registered, detected.to_string()))
}

/// A job on the detected type: SLURM_JOB_GPUS=0 and gres/gpu=1 in its AllocTRES.
fn gpu_job(ctx: &mut Ctx<'_>) -> Result<(u32, String)> {
    let id = ctx.sbatch(
        "apple-gpu",
        &["-n1", &format!("--gres=gpu:{TYPE}:1")],
        "echo \"gpus=$SLURM_JOB_GPUS\"\n",
    )?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let out = ctx.wait_lines(&ctx.path("apple-gpu.out"), 1, JOB_TIMEOUT)?;
    if out[0] != "gpus=0" {
        return Err(Error::Scenario(format!(
            "job {id}: {:?}, expected SLURM_JOB_GPUS=0 ({})",
            out[0],
            q(&ctx.path("apple-gpu.out"))
        )));
    }
    let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
    if !acct.alloc_tres.split(',').any(|t| t == "gres/gpu=1") {
        return Err(Error::Scenario(format!(
            "job {id}: AllocTRES {:?} lacks gres/gpu=1",
            acct.alloc_tres
        )));
    }
    Ok((id, acct.alloc_tres))
}
