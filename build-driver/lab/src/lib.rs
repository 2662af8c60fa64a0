//! The laboratory: live clusters on loopback from built prefixes, the verification
//! scenarios, the soak, Slurm's own Python suite against both builds, the benchmarks, and
//! `make check` pristine vs patched. `cargo xtask cluster ...` dispatches here.

// Test names read `subject__behaviour` across the driver's crates.
#![cfg_attr(test, allow(non_snake_case))]

pub mod check;
pub mod cli;
pub mod cluster;
pub mod expectations;
#[cfg(test)]
mod join_tests;
pub mod profile_name;
