//! No `/proc` access by Slurm's code on any path the scenarios drove (SMD-306), on a darwin
//! node: in the darwin personality every path call Slurm compiles goes through the shim,
//! which refuses `/proc`, `/sys`, `/run` and `/dev/shm` as a Mac's file system does and logs
//! each refusal once per call site, with the path, to the cluster's emulation log (the
//! harness gives every daemon and client `SLURM_SHIM_EMULATION_LOG`; shim/src/emulate/
//! hidden_paths.rs). Run after the other scenarios, this one reads the log: each refused
//! access must be a known site, accepted with its reason in
//! `ci/expectations/proc-access-<line>.toml`; anything else fails, naming the path, the
//! function and the object. The shim's own Linux seams (its sysctl and libproc answers
//! read procfs) are not Slurm's code and never reach the log.

use super::super::config;
use super::client::Ctx;
use crate::expectations::proc_access::{self, Accepted, Seen};
use driver_common::error::{Error, Result};
use driver_common::personality::Personality;

pub fn only_accepted_sites(ctx: &mut Ctx<'_>) -> Result<String> {
    let mut darwin = None;
    for n in ctx.cluster.nodes() {
        let m = driver_common::staging::Manifest::read(&n.prefix)?;
        if m.personality == Personality::Darwin {
            darwin = Some((m.line, n.prefix.clone()));
        }
    }
    let (line, prefix) = darwin.ok_or_else(|| {
        Error::Scenario("no darwin node: nothing logs /proc accesses on a native build".into())
    })?;
    let root = driver_common::project_root();
    let expect_file = proc_access::path(&root, &line);
    let accepted = Accepted::load(&expect_file)?;
    let log = config::emulation_log(&ctx.cluster.layout());
    let text = driver_common::util::fs::read_optional(&log)?.ok_or_else(|| {
        Error::Scenario(format!(
            "no emulation log at {}: the darwin programs were not given SLURM_SHIM_EMULATION_LOG",
            log.display()
        ))
    })?;
    let seen = proc_access::name_static_sites(proc_access::parse_log(&text), &prefix);
    let (ok, bad): (Vec<&Seen>, Vec<&Seen>) = seen
        .iter()
        .partition(|s| crate::expectations::proc_access::find(&accepted, s).is_some());
    if !bad.is_empty() {
        return Err(Error::Scenario(format!(
            "{} access(es) to paths a Mac does not have, not accepted in {}: {}",
            bad.len(),
            expect_file.display(),
            bad.iter()
                .map(|s| format!("{} {} in {} ({})", s.call, s.path, s.function, s.object))
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    let lines = text.lines().count();
    Ok(format!(
        "{} distinct refused accesses in {lines} log lines, each an accepted site: {}",
        ok.len(),
        if ok.is_empty() {
            "none".to_string()
        } else {
            ok.iter()
                .map(|s| format!("{} {}", s.function, s.path))
                .collect::<Vec<_>>()
                .join(", ")
        }
    ))
}
