//! The node tool: what an admin does on a Mac that runs slurmd or the client commands.
//! `slurm-mac` (this crate's binary) ships in the bottle; `cargo xtask install|uninstall|
//! service|join|gres-conf|doctor` are thin calls into the same code; `power` (the
//! controller's ResumeProgram/SuspendProgram for Macs) is the tool's own.

// Test names read `subject__behaviour` across the driver's crates.
#![cfg_attr(test, allow(non_snake_case))]

pub mod cli;
pub mod controller;
pub mod doctor;
pub mod gres_conf;
pub mod install;
pub mod join;
pub mod keg;
pub mod launchd;
pub mod names;
pub mod power;
pub mod service;
