//! Which files of a Slurm tree the lint scans: the code a macOS compute node runs.
//!
//! * libslurm/libslurmfull and what links into them: `src/common`, `src/api`,
//!   `src/conmgr`, `src/interfaces`, `src/bcast` (file broadcast: sbcast, srun, slurmd);
//! * the node's daemons: `src/slurmd` (slurmd, slurmstepd, their common code),
//!   `src/stepmgr` (linked into slurmstepd), `src/sackd`;
//! * the client commands: the audit's [`CLIENTS`] (every program that calls `slurm_init()`)
//!   that have a directory, less `slurmrestd` (a REST daemon, not a client command),
//!   `sview` (a GTK program this project does not build) and `scrun` (the OCI runtime
//!   front end: it drives crun/runc in Linux namespaces; macOS has no OCI runtime);
//! * the plugin types slurmd, slurmstepd, sackd or a client loads, from the audit's loader
//!   table ([`TYPES`], with the tree's line's rows), each `src/plugins/<type>/`, less
//!   the plugin directories of [`EXCLUDED`] (not built for macOS, or a macOS node must not
//!   configure them), which the report lists with their reason.
//!
//! A directory is a Slurm tree when it has `META` and `src/common/fd.c`.

use crate::audit::loaders::{CLIENTS, Line, TYPES, programs};
use driver_common::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Plugin directories (below `src/plugins/`) left out, and why.
pub const EXCLUDED: &[(&str, &str)] = &[
    (
        "accounting_storage/mysql",
        "loaded by slurmdbd only (AccountingStorageType of slurmdbd.conf), never on a compute node",
    ),
    (
        "cgroup",
        "Linux cgroup filesystem; loaded only for proctrack/task/jobacct_gather cgroup, which are built only `if WITH_CGROUP` (auxdir/x_ac_cgroup.m4: false on darwin)",
    ),
    (
        "proctrack/cgroup",
        "built only `if WITH_CGROUP` (false on darwin)",
    ),
    (
        "task/cgroup",
        "built only `if WITH_CGROUP` (false on darwin)",
    ),
    (
        "jobacct_gather/cgroup",
        "built only `if WITH_CGROUP` (false on darwin)",
    ),
    (
        "job_container/tmpfs",
        "built only `if LINUX_BUILD` (Linux mount namespaces)",
    ),
    (
        "namespace",
        "since 25.11: Linux mount namespaces (built only `if LINUX_BUILD`)",
    ),
    (
        "switch/nvidia_imex",
        "built only `if LINUX_BUILD` (NVIDIA IMEX channels under /proc/devices)",
    ),
    (
        "switch/hpe_slingshot",
        "built only `if WITH_SWITCH_HPE_SLINGSHOT` (HPE's Linux fabric libraries)",
    ),
    (
        "jobacct_gather/linux",
        "reads /proc only; a macOS node leaves JobAcctGatherType unset (catalog D9)",
    ),
    (
        "jobacct_gather/common",
        "linked only into jobacct_gather/linux and jobacct_gather/cgroup (both out of scope)",
    ),
    (
        "proctrack/linuxproc",
        "walks /proc only; macOS nodes use proctrack/pgid (catalog D9)",
    ),
    (
        "acct_gather_energy/rapl",
        "Intel RAPL through /sys and msr devices (catalog D9)",
    ),
    (
        "acct_gather_energy/ibmaem",
        "IBM Active Energy Manager's Linux hwmon driver under /sys",
    ),
    (
        "acct_gather_energy/pm_counters",
        "HPE/Cray power counters under /sys/cray",
    ),
    (
        "acct_gather_interconnect/sysfs",
        "Linux /sys network counters only (catalog D9)",
    ),
    (
        "acct_gather_filesystem/lustre",
        "Lustre's Linux /proc interface only (catalog D9)",
    ),
    (
        "gpu/nvidia",
        "NVIDIA GPUs (Linux /proc/driver/nvidia, /dev/nvidia*); Apple silicon has none",
    ),
    (
        "gpu/nvml",
        "NVML (NVIDIA, Linux); built only `if BUILD_NVML`",
    ),
    (
        "gpu/rsmi",
        "ROCm SMI (AMD, Linux); built only `if BUILD_RSMI`",
    ),
    (
        "gpu/oneapi",
        "oneAPI Level Zero (Intel, Linux); built only `if BUILD_ONEAPI`",
    ),
    ("gpu/nrt", "AWS Neuron devices under /sys (Linux)"),
    (
        "node_features/knl_generic",
        "Intel Knights Landing (Linux /sys, libnuma); 24.11 and 25.05 only",
    ),
];

/// Single files (below `src/`) left out, and why.
pub const EXCLUDED_FILES: &[(&str, &str)] = &[(
    "conmgr/epoll.c",
    "built only `if HAVE_EPOLL` (src/conmgr/Makefile.am); macOS has no epoll and uses poll.c",
)];

/// Program directories (below `src/`) besides the clients.
const CORE: &[&str] = &[
    "common",
    "api",
    "conmgr",
    "interfaces",
    "bcast",
    "slurmd",
    "stepmgr",
    "sackd",
];

/// Clients of the table that are not scanned (the module doc says why).
const NOT_CLIENT_COMMANDS: &[&str] = &["slurmrestd", "sview", "scrun"];

pub struct Scope {
    pub files: Vec<PathBuf>,
    pub excluded: Vec<(String, &'static str)>,
}

/// The release line of the tree, from `META` (`Major:`, `Minor:`).
pub fn line(root: &Path) -> Result<Line> {
    let meta = root.join("META");
    let text = std::fs::read_to_string(&meta).map_err(|e| Error::NotASource {
        path: root.to_path_buf(),
        detail: format!(
            "cannot read {}: {e} (pass the top of an unpacked Slurm tree)",
            meta.display()
        ),
    })?;
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .and_then(|v| v.trim().parse::<u32>().ok())
            .ok_or_else(|| Error::NotASource {
                path: root.to_path_buf(),
                detail: format!("{} has no `{key}` line", meta.display()),
            })
    };
    Line::from_version(
        field("Major:")?,
        field("Minor:")?,
        &meta.display().to_string(),
    )
}

pub fn files(root: &Path) -> Result<Scope> {
    if !root.join("src/common/fd.c").is_file() {
        return Err(Error::NotASource {
            path: root.to_path_buf(),
            detail: "no src/common/fd.c (pass the top of an unpacked Slurm tree, e.g. slurm-src/24.11.5)"
                .into(),
        });
    }
    let line = line(root)?;
    let mut dirs: Vec<PathBuf> = CORE.iter().map(|d| root.join("src").join(d)).collect();
    for c in CLIENTS {
        if !NOT_CLIENT_COMMANDS.contains(c) {
            dirs.push(root.join("src").join(c));
        }
    }
    let node = ["slurmd", "slurmstepd", "sackd"];
    for t in TYPES {
        let on_node = programs(t, line)
            .iter()
            .any(|p| node.contains(p) || (CLIENTS.contains(p) && !NOT_CLIENT_COMMANDS.contains(p)));
        if on_node {
            dirs.push(root.join("src/plugins").join(t.name));
        }
    }
    let mut excluded = Vec::new();
    let excluded_dirs: Vec<(PathBuf, &str, &'static str)> = EXCLUDED
        .iter()
        .map(|(d, why)| (root.join("src/plugins").join(d), *d, *why))
        .collect();
    for (p, d, why) in &excluded_dirs {
        if p.exists() && dirs.iter().any(|s| p.starts_with(s)) {
            excluded.push((format!("src/plugins/{d}"), *why));
        }
    }
    let mut excluded_dirs = excluded_dirs;
    for (f, why) in EXCLUDED_FILES {
        let p = root.join("src").join(f);
        if p.exists() {
            excluded.push((format!("src/{f}"), *why));
            excluded_dirs.push((p, f, why));
        }
    }
    let mut files = Vec::new();
    dirs.sort();
    dirs.dedup();
    for d in &dirs {
        if d.is_dir() {
            walk(d, &excluded_dirs, &mut files)?;
        }
    }
    files.sort();
    Ok(Scope { files, excluded })
}

fn walk(dir: &Path, excluded: &[(PathBuf, &str, &str)], out: &mut Vec<PathBuf>) -> Result<()> {
    if excluded.iter().any(|(p, _, _)| p == dir) {
        return Ok(());
    }
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut entries = Vec::new();
    for e in rd {
        entries.push(e.map_err(|e| Error::io(dir, e))?.path());
    }
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, excluded, out)?;
        } else if p.extension().is_some_and(|x| x == "c" || x == "h")
            && !excluded.iter().any(|(x, _, _)| *x == p)
        {
            out.push(p);
        }
    }
    Ok(())
}
