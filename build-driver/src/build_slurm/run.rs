//! The work of a build, step by step as the [`Plan`] says: a fresh copy of the source with the
//! series applied (and the autotools files regenerated), configure out of tree, make, make
//! install. Each step logs its whole output beside the staging directory and shows progress.

use super::configure;
use super::make;
use super::plan::{CONTRIBS, Plan};
use crate::patches;
use driver_common::error::{Error, Result};
use driver_common::util::process::logged::{Progress, run_logged};
use std::time::Instant;
use xshell::{Shell, cmd};

/// Every step, in order.
pub fn all(sh: &Shell, plan: &Plan) -> Result<()> {
    source(sh, plan)?;
    configure(sh, plan)?;
    make(sh, plan)?;
    install(sh, plan)
}

/// `src/`: a copy of the pristine tree, patched and regenerated when the series is not empty.
fn source(sh: &Shell, plan: &Plan) -> Result<()> {
    let (src, dirs) = (&plan.source, &plan.dirs);
    let t = Instant::now();
    eprintln!(
        "build-slurm: copying {} to {}",
        src.path.display(),
        dirs.src.display()
    );
    if plan.series.is_empty() {
        driver_common::util::fs::copy_tree(&src.path, &dirs.src)?;
    } else {
        eprintln!(
            "build-slurm: placing patches/src/ and applying {} patch(es) of patches/series for line {}",
            plan.series.len(),
            src.line
        );
        patches::tree::prepare(sh, &plan.root, &src.line, &src.path, &dirs.src)?;
        patches::regenerate(sh, &dirs.src)?;
    }
    eprintln!(
        "build-slurm: source ready in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A fresh `build/`, configured with the plan's arguments.
fn configure(sh: &Shell, plan: &Plan) -> Result<()> {
    let build = &plan.dirs.build;
    if build.exists() {
        std::fs::remove_dir_all(build).map_err(|e| Error::io(build, e))?;
    }
    std::fs::create_dir_all(build).map_err(|e| Error::io(build, e))?;
    let t = Instant::now();
    let configure_script = plan.dirs.src.join("configure");
    let conf_args = &plan.configure_args;
    let mut conf = {
        let _dir = sh.push_dir(build);
        let mut c = cmd!(sh, "{configure_script} {conf_args...}");
        if plan.cross && std::env::var_os("PKG_CONFIG_LIBDIR").is_none() {
            // Never let the build machine's .pc files describe the target's libraries.
            c = c.env("PKG_CONFIG_LIBDIR", "");
        }
        std::process::Command::from(c)
    };
    conf.current_dir(build);
    eprintln!(
        "build-slurm: configure ({}, {}, CC={})",
        plan.personality.name(),
        plan.target.rust,
        plan.toolchain.compiler.command()
    );
    run_logged(
        conf,
        "configure",
        &plan.dirs.log("configure"),
        Progress::Spinner,
    )?;
    configure::fix_config_h(build, plan.personality)?;
    eprintln!(
        "build-slurm: configure done in {:.0}s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `make -j<jobs> <make vars> [target]` in the build directory.
fn make_command(sh: &Shell, plan: &Plan, target: Option<&str>) -> std::process::Command {
    let _dir = sh.push_dir(&plan.dirs.build);
    let jobs_arg = format!("-j{}", plan.jobs);
    let vars = &plan.make_vars;
    let target = target.into_iter();
    let mut c = std::process::Command::from(cmd!(sh, "make {jobs_arg} {vars...} {target...}"));
    c.current_dir(&plan.dirs.build);
    c
}

fn make(sh: &Shell, plan: &Plan) -> Result<()> {
    let t = Instant::now();
    let log = plan.dirs.log("make");
    let estimate = make::estimate(&log, &plan.dirs.src);
    let steps = run_logged(
        make_command(sh, plan, None),
        "make",
        &log,
        Progress::Steps(estimate),
    )?;
    eprintln!(
        "build-slurm: make done in {:.0}s ({steps} compile/link steps, -j{})",
        t.elapsed().as_secs_f64(),
        plan.jobs
    );
    Ok(())
}

fn install(sh: &Shell, plan: &Plan) -> Result<()> {
    let t = Instant::now();
    let mut command = make_command(sh, plan, Some("install"));
    if let Some(d) = &plan.dirs.destdir {
        // A fresh staging tree: files of an earlier install must not survive into this one.
        let staged = plan.dirs.staged();
        if staged.exists() {
            std::fs::remove_dir_all(&staged).map_err(|e| Error::io(&staged, e))?;
        }
        command.arg(format!("DESTDIR={}", d.display()));
    }
    run_logged(
        command,
        "make install",
        &plan.dirs.log("install"),
        Progress::Spinner,
    )?;
    if plan.target.os == driver_common::targets::Os::Linux {
        for dir in CONTRIBS {
            let mut c = make_command(sh, plan, Some("install"));
            c.current_dir(plan.dirs.build.join("contribs").join(dir));
            run_logged(
                c,
                &format!("make install in contribs/{dir}"),
                &plan.dirs.log(&format!("install-{dir}")),
                Progress::Spinner,
            )?;
        }
    }
    eprintln!(
        "build-slurm: install done in {:.0}s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
