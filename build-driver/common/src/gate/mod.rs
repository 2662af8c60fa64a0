//! The gate: everything the node tool starts, reads as configuration, writes or deletes
//! while it runs as root goes through here (docs/JOIN.md, "What root trusts").
//!
//! - [`chain`]: whether a path, and every directory up to `/`, can be changed by anyone but
//!   root (or the caller, when the caller is not root), judged on descriptors opened one
//!   component at a time without following links by path.
//! - [`program`]: a program checked that way, started with a clean environment ([`env`]).
//! - [`file`]: configuration read from a trusted file, or a file read without following a
//!   link; a file's content is never quoted in an error.
//! - [`keg`]: every directory and file of an install a daemon will load (sbin, bin,
//!   libexec, lib with its plugins, etc, the spool and log directories).
//! - [`dir`]: directories made, entries removed and trees copied through descriptors, so a
//!   link or a swap during the operation cannot lead outside the tree.
//! - [`workdir`]: a private work directory under a root-owned directory, never `TMPDIR`.

pub mod chain;
pub mod dir;
pub mod env;
pub mod file;
pub mod keg;
pub mod program;
pub mod read_tree;
pub mod workdir;

pub use chain::Owners;
pub use program::Program;
