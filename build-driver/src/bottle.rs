//! `cargo xtask bottle`: a Homebrew bottle of Slurm built on Linux.

pub mod codesign;
