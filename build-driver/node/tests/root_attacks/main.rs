#![allow(non_snake_case)]
//! Attacks on every root command of `slurm-mac` (issue: one gate for everything root starts,
//! reads, writes or deletes), run through the binary as root against scratch trees. Every
//! program of a scratch prefix is a stand-in that records its uid, argv, working directory
//! and the variables a caller could use to load code or move configuration; files and
//! directories are given to `nobody` or opened to group/world to play the other user. Each
//! attack has a control (the same run on a trusted tree) that shows the stand-in does run,
//! so an attack that "passes" because nothing ran at all would fail its control.
//!
//! Needs root (chown to another user, root-owned trees): without it each test says so and
//! does nothing; CI runs as root.

mod kit;

mod bad_input;
mod doctor;
mod gres_conf;
mod install;
mod join;
mod power;
mod service;
