//! The release lines' rows (docs/lines/<line>.toml) and docs/RELEASE-LINES.md's table, and
//! `cargo xtask lines table`. `lines verify --version V` (one release line through the whole
//! suite, then its row) is run by [`crate::ci::verify`], above this module: CI's lanes use
//! the rows, the rows use no lane.
//!
//! The suite is CI's Slurm lanes ([`crate::ci::slurm_lanes`]: native builds without and with
//! the series and `make check` in both, the lint, the darwin personality and its `make check`,
//! every CI scenario under `default`, `macos-native` and `site`, multi-node and mix, the short
//! soak, the peer subset, the Mach-O build, the bottle where the pin is a tarball, the three
//! audits) plus every local scenario a one-node darwin cluster runs under `default` and
//! `macos-native`. Whatever the steps give, the run ends by writing the line's row:
//! `docs/lines/<line>.toml` (the data: each step's result, detail and time, the date, the
//! commit, the series' hash) and the generated table of RELEASE-LINES.md, both replaced
//! whole (never half-written). `cargo xtask ci` writes its line's row the same way, marked
//! `suite = "ci"`. A row whose series hash is not the series' hash today fails a test
//! ([`row::stale`]): its line was changed after it was verified. The series' hash stays the
//! same while the line's patched tree does ([`crate::patches::tree::row_sha256`]: a header
//! or layout change that `patches refresh` proves leaves the tree as it was keeps the row).

pub mod row;
pub mod table;
#[cfg(test)]
mod tests;

use crate::report::Report;
use clap::{Args, Subcommand};
use driver_common::error::Result;
use std::path::Path;

#[derive(Debug, Args)]
pub struct LinesArgs {
    #[command(subcommand)]
    pub command: LinesCommand,
}

#[derive(Debug, Subcommand)]
pub enum LinesCommand {
    /// Fetched source of a pinned version -> native builds with and without the series and
    /// `make check` in both, lint, darwin personality and its `make check`, every scenario
    /// (CI's and the local ones) under `default` and `macos-native`, `site`, multi-node and
    /// mix, soak, peer subset, Mach-O build, bottle (tarball pins), audits; then writes
    /// docs/lines/<line>.toml and RELEASE-LINES.md's table, whatever the steps gave. Hours on
    /// two cores. Fails if any step failed.
    Verify(LinesVerifyArgs),
    /// Regenerate RELEASE-LINES.md's table from the rows in docs/lines/ (after a merge of
    /// rows, say); fails on a row older than its series.
    Table,
}

#[derive(Debug, Args)]
pub struct LinesVerifyArgs {
    /// A pinned version (slurm-src/pins.toml), already fetched (`cargo xtask fetch --version
    /// V`), e.g. 25.05.8, 25.11.7, 26.05.3, 26.11-snapshot.
    #[arg(long)]
    pub version: String,
    /// Keep the pristine (unpatched) native build after its `make check`.
    #[arg(long)]
    pub keep_builds: bool,
}

/// `lines table`: the table regenerated from the rows, refused while a row is stale.
pub fn table(root: &Path) -> Result<()> {
    let stale = row::stale(root, &row::load_all(root)?)?;
    if !stale.is_empty() {
        return Err(driver_common::error::Error::Usage(stale.join("\n")));
    }
    table::regenerate(root)?;
    println!("{} regenerated from {}/", table::DOC, row::DIR);
    Ok(())
}

/// Writes the row of `version`'s line from `report` and regenerates the table; returns the
/// row's path.
pub fn record(root: &Path, run: &row::RunInfo<'_>, report: &Report) -> Result<std::path::PathBuf> {
    let pins = driver_common::pins::Pins::load(root)?;
    let line = pins.get(run.version)?.line.clone();
    let r = row::Row::from_report(root, run, &line, report)?;
    let path = row::write(root, &r)?;
    table::regenerate(root)?;
    Ok(path)
}
