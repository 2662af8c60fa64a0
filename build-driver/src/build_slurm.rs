//! `cargo xtask build-slurm`: copy the pristine source, apply the series, regenerate the
//! autotools files if a patch was applied, build the shim, configure out of tree, make and
//! install into a staging prefix, check the result, and print what was built.
//!
//! # Personalities
//!
//! * **native**: build for the target as it is. On a Linux target the shim header is not
//!   force-included (it would be inert there) and the shim is not linked: configure gets
//!   exactly `--prefix` and `CC`, as plain upstream, so a native build of the patched tree
//!   and a `--no-patches` build differ only by the patches. On a macOS target "native" is
//!   the real macOS build: the header is force-included (its `__APPLE__` branch maps the
//!   Linux names) and the shim is linked, as below.
//! * **darwin** (Linux host and target only; an error elsewhere): Linux runs Slurm through
//!   the code paths it takes on macOS. `CPPFLAGS` gets `-include shim/include/slurm_shim.h
//!   -DSLURM_SHIM_EMULATE_DARWIN` (the header's emulation branch renames glibc's pipe2,
//!   accept4, timers, affinity, setresuid, ... to the shim with `#pragma redefine_extname`),
//!   and configure is given macOS's answers where Linux can run them (cache variables
//!   `var=no`, `--without-bpf`, and one `config.h` value with no cache variable); the list,
//!   and what Linux cannot reproduce and why, is in [`configure::DARWIN_CACHE_VARS`]. The
//!   shim stays out of configure-time `LIBS` (DARWIN-CATALOG A7: configure would otherwise
//!   find `setresuid` and define `HAVE_SETRESUID`). It is linked once, into libslurm,
//!   libslurmfull and libslurm_pmi, through `make LIB_LDFLAGS=...` (see [`link`]), and after
//!   the install `nm -D` must show libslurmfull defining every `slurm_shim_*` symbol and no
//!   longer importing glibc's pipe2, accept4, timer_create, setresuid, sched_getaffinity,
//!   and no plugin carrying a copy of the shim; otherwise the build fails.
//!
//! # Regenerating autotools files
//!
//! The pristine upstream tarball ships `configure`, `Makefile.in` and friends generated
//! from its own sources; they are used as they are when no patch is applied (an empty
//! series or `--no-patches`), which keeps that build identical to plain upstream and saves
//! a minute of autoreconf. A patched tree is always regenerated (`autoreconf -fi`), since
//! patches touch only sources of truth (configure.ac, *.m4, Makefile.am).
//!
//! # Staging and skipping
//!
//! `<cargo target dir>/slurm/<version>-<personality>[-nopatch][-<triple>]/` holds `src/`
//! (the patched copy), `build/` (kept after install so `make check` can run in it),
//! `prefix/` (unless `--prefix`), the logs and `stamp`. `-<triple>` is added only when
//! cross-compiling. The stamp holds the hash of every input (see [`driver_common::util::stamp`]); when it matches,
//! nothing is rebuilt. What was staged (source, build dir, the make variables a later `make`
//! in the build dir needs, personality, target, line) is written to the staging manifest
//! beside the prefix ([`driver_common::staging::Manifest`]), which `check`, `cluster` and `ci` read.
//!
//! # Shape
//!
//! [`build`] is plan -> stamp -> run -> verify: [`plan::Plan`] decides everything once,
//! [`run`] does the work, [`verify`] checks the install, and the manifest and the stamp are
//! written last.

pub mod configure;
pub mod link;
pub mod make;
pub mod plan;
mod run;

use crate::fetch::SourceArgs;
use clap::Args;
use driver_common::error::{Error, Result};
use driver_common::personality::Personality;
use driver_common::staging::Manifest;
use driver_common::targets::{self, Os};
use driver_common::util::process::is_executable;
use driver_common::util::stamp::{self, Inputs};
use plan::Plan;
use std::path::{Path, PathBuf};
use std::time::Instant;
use xshell::Shell;

#[derive(Debug, Args, Clone)]
pub struct BuildArgs {
    #[command(flatten)]
    pub src: SourceArgs,
    #[arg(long, value_enum, default_value = "native")]
    pub personality: Personality,
    /// Build the pristine tree without patches/ (no files of patches/src/, no series).
    #[arg(long)]
    pub no_patches: bool,
    /// Rust target triple to build for (default: this machine).
    #[arg(long)]
    pub target: Option<String>,
    /// Installation prefix (default: a staging directory under target/). With --destdir it
    /// is the prefix the programs are configured for, not where the files go.
    #[arg(long)]
    pub prefix: Option<PathBuf>,
    /// Stage the install below this directory (`make install DESTDIR=...`): the files of
    /// --prefix P land in DIR/P (a Homebrew Cellar path built on another machine).
    #[arg(long, value_name = "DIR")]
    pub destdir: Option<PathBuf>,
    /// configure's --sysconfdir (where slurm.conf is read; default PREFIX/etc).
    #[arg(long, value_name = "DIR")]
    pub sysconfdir: Option<PathBuf>,
    /// configure's --localstatedir (default PREFIX/var).
    #[arg(long, value_name = "DIR")]
    pub localstatedir: Option<PathBuf>,
    /// Parallel make jobs (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// macOS targets: prefix holding the target's json-c, libjwt and hwloc (for
    /// auth/slurm, cred/slurm, serializer/json and hwloc topology); without it they are
    /// configured off.
    #[arg(long)]
    pub deps_prefix: Option<PathBuf>,
    /// macOS targets: the oldest macOS to build for (MAJOR.MINOR, at least 11.0) instead of
    /// the target table's 12.0, e.g. 11.0 for Darling's macOS 11 userland; the staging
    /// directory then ends in -macos<MIN>. Give `deps` the same value.
    #[arg(long, value_name = "MAJOR.MINOR")]
    pub macos_min: Option<String>,
    /// Build Slurm's tls/s2n plugin (25.05 and later) against the s2n-tls that `cargo xtask
    /// s2n [--target T]` installed for the target (or --s2n-prefix); the staging directory
    /// then ends in -s2n.
    #[arg(long)]
    pub with_s2n: bool,
    /// With --with-s2n: another s2n-tls installation (include/s2n.h, and lib/libs2n.so, or
    /// lib/libs2n.a for a macOS target).
    #[arg(long, value_name = "DIR", requires = "with_s2n")]
    pub s2n_prefix: Option<PathBuf>,
}

/// What a build produced.
#[derive(Clone, Debug)]
pub struct BuildOutput {
    pub prefix: PathBuf,
    pub build_dir: PathBuf,
    /// The patched copy of the source that was configured (printed in the summary).
    pub src_dir: PathBuf,
    pub version: String,
    pub line: String,
    pub personality: Personality,
    /// Whether at least one patch was applied.
    pub patched: bool,
    /// False when the stamp matched and nothing was done.
    pub rebuilt: bool,
}

impl BuildOutput {
    fn of(plan: &Plan, rebuilt: bool) -> BuildOutput {
        BuildOutput {
            prefix: plan.dirs.staged(),
            build_dir: plan.dirs.build.clone(),
            src_dir: plan.dirs.src.clone(),
            version: plan.source.version.clone(),
            line: plan.source.line.clone(),
            personality: plan.personality,
            patched: !plan.series.is_empty(),
            rebuilt,
        }
    }
}

pub use driver_common::staging::KEY_BINARIES;

/// Does the work; prints progress but no final summary. Plan -> stamp -> run -> verify.
pub fn build(sh: &Shell, root: &Path, args: &BuildArgs) -> Result<BuildOutput> {
    let mut plan = Plan::new(sh, root, args)?;
    plan.link_shim(sh, root)?;
    let inputs = plan.inputs(root)?;
    let dirs = &plan.dirs;
    if stamp::read(&dirs.stamp()).as_deref() == Some(inputs.hash().as_str())
        && dirs.staged().is_dir()
        && dirs.build.is_dir()
    {
        eprintln!(
            "build-slurm: {} is up to date (inputs unchanged)",
            dirs.base.display()
        );
        // A build staged before the manifest existed gets one; its inputs are the plan's.
        let manifest = plan.manifest();
        if Manifest::read(&dirs.staged()).ok().as_ref() != Some(&manifest) {
            manifest.write()?;
        }
        return Ok(BuildOutput::of(&plan, false));
    }
    // From here on, an interrupted build must not leave a stamp behind.
    std::fs::create_dir_all(&dirs.base).map_err(|e| Error::io(&dirs.base, e))?;
    stamp::remove(&dirs.stamp())?;
    driver_common::util::fs::remove_optional(&Manifest::path_for(&dirs.staged()))?;
    run::all(sh, &plan)?;
    verify(sh, &plan)?;
    record(&plan, &inputs)?;
    Ok(BuildOutput::of(&plan, true))
}

/// Checks the install: a macOS target's Mach-O files; the darwin personality's `config.h`
/// answers and its shim link.
fn verify(sh: &Shell, plan: &Plan) -> Result<()> {
    let prefix = &plan.dirs.staged();
    if plan.target.os == Os::Apple {
        let report = crate::cross::macho::check_prefix(
            prefix,
            plan.target,
            plan.line,
            plan.deps_prefix.is_some(),
        )?;
        eprintln!(
            "build-slurm: Mach-O check passed: all {} required programs, libraries and plugins \
             are {} Mach-O; {} Mach-O files in the prefix",
            report.required, plan.target.rust, report.macho_files
        );
    }
    if plan.s2n.is_some() {
        crate::s2n::check_plugin(prefix, &plan.dirs.log("configure"))?;
    }
    if plan.personality == Personality::Darwin {
        // A config.status rerun during make would have restored the Linux answers.
        configure::verify_config_h(&plan.dirs.build)?;
        let report = link::verify_darwin_link(sh, prefix)?;
        eprintln!(
            "build-slurm: darwin link check passed: libslurmfull.so defines all {} slurm_shim_* symbols, \
             imports none of {}; {} plugins carry no copy of the shim",
            report.defined,
            link::MUST_NOT_IMPORT.join(" "),
            report.plugins_checked
        );
    }
    Ok(())
}

/// The staging manifest beside the prefix, then the stamp (last: it says "all done").
fn record(plan: &Plan, inputs: &Inputs) -> Result<()> {
    plan.manifest().write()?;
    stamp::write(&plan.dirs.stamp(), inputs)
}

/// What the summary reports about an installed prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    pub present: Vec<&'static str>,
    pub missing: Vec<&'static str>,
    pub plugins: usize,
}

/// Looks at an installed prefix: the key programs and the number of plugins.
pub fn inspect(prefix: &Path) -> Installed {
    let mut present = Vec::new();
    let mut missing = Vec::new();
    for (dir, name) in KEY_BINARIES {
        if is_executable(&prefix.join(dir).join(name)) {
            present.push(*name);
        } else {
            missing.push(*name);
        }
    }
    let plugins = std::fs::read_dir(prefix.join("lib").join("slurm"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.ends_with(".so") && !n.starts_with("lib")
                })
                .count()
        })
        .unwrap_or(0);
    Installed {
        present,
        missing,
        plugins,
    }
}

/// The CLI command: build, then print what was built and where.
pub fn run(sh: &Shell, root: &Path, args: BuildArgs) -> Result<BuildOutput> {
    let t = Instant::now();
    let out = build(sh, root, &args)?;
    let inst = inspect(&out.prefix);
    let target = args.target.as_deref().unwrap_or(targets::host().rust);
    println!(
        "Slurm {} (line {}), personality {}, target {}, {}",
        out.version,
        out.line,
        out.personality.name(),
        target,
        if out.patched {
            "patched"
        } else {
            "no patches applied"
        }
    );
    println!(
        "  {} in {:.1}s",
        if out.rebuilt {
            "built"
        } else {
            "up to date, nothing rebuilt"
        },
        t.elapsed().as_secs_f64()
    );
    println!("  prefix:    {}", out.prefix.display());
    println!("  source:    {}", out.src_dir.display());
    println!("  build dir: {}", out.build_dir.display());
    println!("  programs:  {}", inst.present.join(" "));
    if !inst.missing.is_empty() {
        println!("  MISSING:   {}", inst.missing.join(" "));
    }
    println!(
        "  plugins:   {} in {}",
        inst.plugins,
        out.prefix.join("lib").join("slurm").display()
    );
    if out.personality == Personality::Darwin {
        println!("  shim:      linked into libslurm/libslurmfull (nm check passed)");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inspect__counts_programs_and_plugins() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        for (dir, name) in [("sbin", "slurmd"), ("bin", "srun")] {
            std::fs::create_dir_all(p.join(dir)).unwrap();
            let f = p.join(dir).join(name);
            std::fs::write(&f, "").unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(p.join("bin/sinfo"), "").unwrap(); // not executable: missing
        std::fs::create_dir_all(p.join("lib/slurm")).unwrap();
        for n in [
            "auth_none.so",
            "select_cons_tres.so",
            "libslurmfull.so",
            "auth_none.la",
        ] {
            std::fs::write(p.join("lib/slurm").join(n), "").unwrap();
        }
        let i = inspect(p);
        assert_eq!(i.present, vec!["slurmd", "srun"]);
        assert_eq!(i.missing.len(), KEY_BINARIES.len() - 2);
        assert!(i.missing.contains(&"sinfo"));
        assert_eq!(i.plugins, 2);
    }
}
