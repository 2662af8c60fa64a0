//! `cargo xtask lines verify --version V`: CI's Slurm lanes at full scope
//! ([`super::slurm_lanes`] with [`Scope::Full`]: every local scenario too) for one pinned
//! release, then the line's row ([`crate::lines::record`]). docs/RELEASE-LINES.md.

use super::CiArgs;
use crate::lines::row::{self, Scope};
use crate::lines::{LinesVerifyArgs, record};
use crate::report::Report;
use driver_common::error::Result;
use std::path::Path;
use xshell::Shell;

pub fn run(sh: &Shell, root: &Path, args: LinesVerifyArgs) -> Result<()> {
    // Every check that needs no build first: an unknown version, a line without a series,
    // a source not fetched yet (named with the command that fetches it).
    precheck(root, &args.version)?;
    let start = row::Checkout::of(root);
    let mut report = Report::default();
    let ci_args = CiArgs {
        version: args.version.clone(),
        source: None,
        shim_only: false,
        keep_builds: args.keep_builds,
    };
    super::slurm_lanes(sh, root, &ci_args, Scope::Full, &mut report);
    println!("\n{}", report.table());
    println!("{}", report.counts());
    let command = format!("cargo xtask lines verify --version {}", args.version);
    let run = row::RunInfo {
        version: &args.version,
        scope: Scope::Full,
        command: &command,
        start: &start,
    };
    let written = record(root, &run, &report)?;
    println!("lines verify: row written: {}", written.display());
    report.result()
}

/// Refuses, before anything runs: a version that is not pinned, a line with no series, a
/// source (or the Python suite its pin names) that `cargo xtask fetch` has not unpacked.
pub fn precheck(root: &Path, version: &str) -> Result<()> {
    let pins = driver_common::pins::Pins::load(root)?;
    let pin = pins.get(version)?;
    crate::patches::series(root, &pin.line)?;
    let src = crate::fetch::SourceArgs {
        version: Some(version.to_string()),
        source: None,
    };
    crate::fetch::resolve(&Shell::new()?, root, &src)?;
    // A release tag without Slurm's Python suite: the suite its pin names must be there too.
    crate::fetch::suite::resolve(root, version).map(|_| ())
}
