//! Configless (SMD-404): with `SlurmctldParameters=enable_configless`, a node's slurmd is
//! started with `--conf-server 127.0.0.1:<port>` and no local `slurm.conf` (`SLURM_CONF`
//! names a file that does not exist, in a directory that holds only `slurm.key`: auth/slurm
//! looks for the key beside it, src/common/fetch_config.c). It must fetch the configuration,
//! keep it in its spool's `conf-cache`, register and run a job; a client on that node
//! without `SLURM_CONF` must find the configuration through slurmd's run-directory link
//! (`/run/slurm/conf` on Linux; patch 0011's `/var/run/slurm/conf` on macOS).
//!
//! On macOS (no `memfd_create`) the fetch writes the minimal configuration it fetches with
//! through `dump_to_memfd()`, which patch 0015 keeps as a real file, `/tmp/slurm-memfd-*`,
//! removed by an `atexit()` handler of the process that made it. This is where that branch
//! runs in the darwin personality; the scenario checks that no such file of this cluster is
//! left once the node's slurmd has stopped (the native build uses a memfd: none at all).

use super::super::daemon::Daemon;
use super::super::handle::SlurmdLaunch;
use super::client::{Ctx, JOB_TIMEOUT, LogMark};
use super::reconf::{self, Change};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::read_bounded;
use std::path::{Path, PathBuf};

/// Where patch 0015's temporary files go (its `mkostemp` template).
const MEMFD_DIR: &str = "/tmp";
const MEMFD_PREFIX: &str = "slurm-memfd-";
/// slurmd's link to the fetched configuration, in the node's namespace (macOS: patch
/// 0011's `/var/run/slurm/conf`; `/var/run` is `/run` on Linux).
const RUN_CONF: &str = "/run/slurm/conf";

/// The `/tmp/slurm-memfd-*` files that name this cluster's controller port (another
/// cluster's configless runs on this machine write their own).
fn memfd_files(port: u16) -> Vec<PathBuf> {
    let needle = format!(":{port}");
    let Ok(rd) = std::fs::read_dir(MEMFD_DIR) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(MEMFD_PREFIX))
        })
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(&needle)))
        .collect();
    v.sort();
    v
}

/// A directory for node `name` with only a copy of the cluster's `slurm.key` (mode 0600).
fn key_only_dir(ctx: &Ctx<'_>, name: &str) -> Result<PathBuf> {
    let l = ctx.cluster.layout();
    let dir = l.node_dir(name).join("configless");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let key = std::fs::read(l.key()).map_err(|e| Error::io(l.key(), e))?;
    driver_common::util::fs::write_atomic(&dir.join("slurm.key"), &key, 0o600)?;
    let conf = dir.join("slurm.conf");
    if conf.exists() {
        return Err(Error::Scenario(format!(
            "{} exists: a configless node must have no local slurm.conf",
            conf.display()
        )));
    }
    Ok(dir)
}

pub fn fetches_config(ctx: &mut Ctx<'_>) -> Result<String> {
    let change = Change {
        lines: vec!["SlurmctldParameters=enable_configless".into()],
        restart: vec![Daemon::Slurmctld],
        ..Change::default()
    };
    reconf::with_change(ctx, &change, |ctx| {
        let i = ctx.cluster.nodes().len() - 1;
        let result = configless_node(ctx, i);
        // Whatever happened: the node's slurmd started as `up` starts it.
        ctx.cluster.slurmd_launch.remove(&i);
        let back = ctx
            .cluster
            .stop(Daemon::Slurmd(i))
            .and_then(|_| ctx.cluster.start(ctx.sh, Daemon::Slurmd(i)));
        let detail = result?;
        back?;
        Ok(detail)
    })
}

fn configless_node(ctx: &mut Ctx<'_>, i: usize) -> Result<String> {
    let node = ctx.cluster.nodes()[i].clone();
    let port = ctx.cluster.state.ports.slurmctld;
    let before = memfd_files(port);
    let log = LogMark::take(&ctx.cluster.log(Daemon::Slurmd(i)));
    let cache = start_configless(ctx, i, port)?;
    check_fetched(ctx, &cache)?;
    let out = ctx.srun_stdout(
        &format!("srun on configless {}", node.name),
        &["-N1", "-w", &node.name, "/bin/sh", "-c", "hostname"],
    )?;
    if out.trim() != node.hostname {
        return Err(Error::Scenario(format!(
            "srun on configless {} ran on {:?}, expected {}",
            node.name,
            out.trim(),
            node.hostname
        )));
    }
    let client = client_without_conf(ctx, i)?;
    let id = ctx.sbatch("configless", &["-N1", "-w", &node.name], "true\n")?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    // The fetch's temporary files (macOS: patch 0015) must be gone once slurmd stopped.
    ctx.cluster.stop(Daemon::Slurmd(i))?;
    no_temp_left(port, &before, &node.name)?;
    if log
        .added()
        .lines()
        .any(|l| l.contains("config will load from file"))
    {
        return Err(Error::Scenario(format!(
            "{}'s slurmd read a local file instead of fetching its configuration",
            node.name
        )));
    }
    Ok(format!(
        "{} fetched slurm.conf and gres.conf from 127.0.0.1:{port} into {}, registered, ran srun and job {id}; {client}; no temporary file left",
        node.name,
        cache.display()
    ))
}

/// Node `i`'s slurmd started again with `--conf-server` and no local configuration, its
/// spool's `conf-cache` emptied first. The cache directory.
fn start_configless(ctx: &mut Ctx<'_>, i: usize, port: u16) -> Result<PathBuf> {
    let name = ctx.cluster.nodes()[i].name.clone();
    let dir = key_only_dir(ctx, &name)?;
    ctx.cluster.stop(Daemon::Slurmd(i))?;
    let cache = ctx.cluster.layout().node_spool(&name).join("conf-cache");
    if cache.exists() {
        std::fs::remove_dir_all(&cache).map_err(|e| Error::io(&cache, e))?;
    }
    ctx.cluster.slurmd_launch.insert(
        i,
        SlurmdLaunch {
            args: vec!["--conf-server".into(), format!("127.0.0.1:{port}")],
            slurm_conf: Some(dir.join("slurm.conf")),
        },
    );
    ctx.cluster.start(ctx.sh, Daemon::Slurmd(i))?;
    Ok(cache)
}

/// The configuration the node runs with is the controller's, from the cache it wrote.
fn check_fetched(ctx: &Ctx<'_>, cache: &Path) -> Result<()> {
    let l = ctx.cluster.layout();
    for f in ["slurm.conf", "gres.conf"] {
        let (ours, theirs) = (l.conf_dir().join(f), cache.join(f));
        if std::fs::read(&ours).ok() != std::fs::read(&theirs).ok() {
            return Err(Error::Scenario(format!(
                "{} is not the controller's {f} ({}): the node did not fetch it",
                theirs.display(),
                ours.display()
            )));
        }
    }
    Ok(())
}

/// No temporary file of this cluster's fetch is left beyond those in `before`.
fn no_temp_left(port: u16, before: &[PathBuf], node: &str) -> Result<()> {
    let left: Vec<String> = memfd_files(port)
        .into_iter()
        .filter(|p| !before.contains(p))
        .map(|p| p.display().to_string())
        .collect();
    if left.is_empty() {
        return Ok(());
    }
    Err(Error::Scenario(format!(
        "configless fetch left {} temporary file(s) behind after {node}'s slurmd stopped: {} (dump_to_memfd's macOS file, made in a child that _exit()s without its atexit handler)",
        left.len(),
        left.join(", ")
    )))
}

/// A client on the node with no `SLURM_CONF`: it must find the configuration slurmd
/// fetched through the run-directory link.
fn client_without_conf(ctx: &Ctx<'_>, i: usize) -> Result<String> {
    let mut c = ctx.cluster.tool_on(i, "scontrol")?;
    c.env_remove("SLURM_CONF")
        .current_dir(&ctx.dir)
        .args(["show", "config"]);
    let out = read_bounded(c, super::client::CLIENT_TIMEOUT).map_err(|e| {
        Error::Scenario(format!(
            "scontrol on {} without SLURM_CONF did not find the fetched configuration: {e}",
            ctx.cluster.nodes()[i].name
        ))
    })?;
    let name = &ctx.cluster.state.name;
    if !out
        .lines()
        .any(|l| l.starts_with("ClusterName") && l.trim_end().ends_with(&format!("= {name}")))
    {
        return Err(Error::Scenario(format!(
            "scontrol show config on the configless node does not name cluster {name}"
        )));
    }
    // Without SLURM_CONF a client reads the build's default file, else slurmd's link.
    let default = ctx.cluster.nodes()[i].prefix.join("etc/slurm.conf");
    if default.exists() {
        return Err(Error::Scenario(format!(
            "{} exists: the client may have read it instead of the fetched configuration",
            default.display()
        )));
    }
    let link = Path::new(RUN_CONF);
    let seen = ctx.cluster.seen_by(Daemon::Slurmd(i), link);
    if !seen.join("slurm.conf").is_file() {
        return Err(Error::Scenario(format!(
            "no {}/slurm.conf on the configless node ({}): slurmd made no run-directory link",
            link.display(),
            seen.display()
        )));
    }
    Ok(format!(
        "scontrol there without SLURM_CONF (and no {}) reached cluster {name} through {}",
        default.display(),
        link.display()
    ))
}
