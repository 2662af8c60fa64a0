//! `cargo xtask deps`'s arguments.

use clap::Args;

#[derive(Debug, Args)]
pub struct DepsArgs {
    /// Rust target triple (aarch64-apple-darwin or x86_64-apple-darwin).
    #[arg(long)]
    pub target: String,
    /// Parallel jobs per library build (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Where apt is absent (macOS): a Debian mirror's base URL; the pinned orig tarballs are
    /// then downloaded from its pool/ with curl (and sha256-checked like any download).
    #[arg(long, value_name = "URL")]
    pub debian_mirror: Option<String>,
    /// macOS: build json-c and hwloc too, even where Homebrew has them (a self-contained
    /// prefix, as a bottle or the formula's source build needs).
    #[arg(long)]
    pub build_all: bool,
    /// Build for this oldest macOS (MAJOR.MINOR, at least 11.0) instead of the target table's
    /// 12.0; the prefix is then deps/<triple>-macos<MIN>. Bottles keep the table's.
    #[arg(long, value_name = "MAJOR.MINOR")]
    pub macos_min: Option<String>,
}
