//! `cargo xtask s2n`'s arguments.

use clap::Args;

#[derive(Debug, Args)]
pub struct S2nArgs {
    /// Parallel compile jobs (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Build for this macOS target (e.g. aarch64-apple-darwin: a static libs2n.a against
    /// `cargo xtask deps --target`'s libcrypto, for the Mach-O lane) instead of this machine.
    #[arg(long)]
    pub target: Option<String>,
}
