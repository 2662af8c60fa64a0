//! C programs the scenarios build with the system C compiler (`cc`): a SPANK plugin that
//! marks each callback (`fixtures/spank_marks.c`, built against the installed
//! `<prefix>/include/slurm/spank.h`) and a program that touches memory in steps
//! (`fixtures/touch_memory.c`). Each is compiled into the scenario's directory on first use.

use super::client::Ctx;
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::run_bounded;
use std::path::PathBuf;
use std::time::Duration;

pub const SPANK_MARKS: &str = include_str!("fixtures/spank_marks.c");
pub const TOUCH_MEMORY: &str = include_str!("fixtures/touch_memory.c");

/// What to build.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A program.
    Program,
    /// A shared object (`-shared -fPIC`) against the head's installed Slurm headers.
    SlurmPlugin,
}

/// Compile `source` (named `stem`.c) into the scenario directory; returns the output path
/// (`stem`, or `stem`.so for a plugin), mode 0755.
pub fn build(ctx: &Ctx<'_>, stem: &str, source: &str, kind: Kind) -> Result<PathBuf> {
    let src = ctx.path(&format!("{stem}.c"));
    driver_common::util::fs::write_atomic(&src, source.as_bytes(), 0o644)?;
    let out = match kind {
        Kind::Program => ctx.path(stem),
        Kind::SlurmPlugin => ctx.path(&format!("{stem}.so")),
    };
    let mut c = std::process::Command::from(xshell::cmd!(ctx.sh, "cc -O1 -Wall -Werror"));
    if let Kind::SlurmPlugin = kind {
        let include = ctx.cluster.state.prefix.join("include");
        c.args(["-shared", "-fPIC"]).arg("-I").arg(include);
    }
    c.arg("-o").arg(&out).arg(&src);
    let res = run_bounded(c, Duration::from_secs(120))?;
    if !res.status.success() {
        return Err(Error::Scenario(format!(
            "cc could not build the fixture {} ({}): {}",
            src.display(),
            res.status,
            String::from_utf8_lossy(&res.stderr).trim()
        )));
    }
    Ok(out)
}
