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
//! cross-compiling. The stamp holds the hash of every input (see [`stamp`]); when it matches,
//! nothing is rebuilt. The make variables a later `make` in the build dir needs (the shim's
//! `LIB_LDFLAGS`) are written to `make-vars` beside it.

pub mod configure;
pub mod link;
pub mod make;
pub mod stamp;

use crate::cli::{BuildArgs, Personality};
use crate::error::{Error, Result};
use crate::targets::{self, Os, Target};
use crate::{cross, fetch, patches};
use std::path::{Path, PathBuf};
use std::time::Instant;
use xshell::{Shell, cmd};

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

/// The programs the summary looks for: `(dir under the prefix, name)`.
pub const KEY_BINARIES: &[(&str, &str)] = &[
    ("sbin", "slurmctld"),
    ("sbin", "slurmd"),
    ("sbin", "slurmstepd"),
    ("bin", "sbatch"),
    ("bin", "srun"),
    ("bin", "scancel"),
    ("bin", "sinfo"),
    ("bin", "squeue"),
    ("bin", "scontrol"),
];

/// The personality's command-line name.
pub fn personality_name(p: Personality) -> &'static str {
    match p {
        Personality::Native => "native",
        Personality::Darwin => "darwin",
    }
}

/// The staging directory name: `<version>-<personality>[-nopatch][-<triple>]`.
pub fn staging_name(
    version: &str,
    p: Personality,
    no_patches: bool,
    target: &Target,
    host: &Target,
) -> String {
    let mut s = format!("{version}-{}", personality_name(p));
    if no_patches {
        s.push_str("-nopatch");
    }
    if target.rust != host.rust {
        s.push('-');
        s.push_str(target.rust);
    }
    s
}

/// Refuses combinations that make no sense: the darwin personality emulates macOS on Linux,
/// so it needs a Linux host and a Linux target.
pub fn check_personality(p: Personality, target: &Target, host: &Target) -> Result<()> {
    if p != Personality::Darwin {
        return Ok(());
    }
    if host.os != Os::Linux {
        return Err(Error::Unsupported(format!(
            "the darwin personality emulates macOS on a Linux host; this host is {}: build with \
             --personality native, which on macOS is the real thing",
            host.rust
        )));
    }
    if target.os != Os::Linux {
        return Err(Error::Unsupported(format!(
            "the darwin personality builds for a Linux target; for {} use --personality native",
            target.rust
        )));
    }
    Ok(())
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| is_executable(&d.join(program))))
        .unwrap_or(false)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn require(program: &str, step: &str, fix: &str) -> Result<()> {
    if on_path(program) {
        Ok(())
    } else {
        Err(Error::MissingTool {
            program: program.into(),
            step: step.into(),
            fix: fix.into(),
        })
    }
}

/// The shim header that the build force-includes.
pub fn shim_header(root: &Path) -> PathBuf {
    root.join("shim").join("include").join("slurm_shim.h")
}

/// Does the work; prints progress but no final summary.
pub fn build(sh: &Shell, root: &Path, args: &BuildArgs) -> Result<BuildOutput> {
    let host = targets::host();
    let target = match &args.target {
        Some(t) => targets::lookup(t)?,
        None => host,
    };
    check_personality(args.personality, target, host)?;
    require(
        "make",
        "building Slurm",
        "install GNU make (Debian: apt-get install make)",
    )?;
    require(
        "pkg-config",
        "finding Slurm's dependencies",
        "Debian: apt-get install pkg-config; macOS: brew install pkgconf",
    )?;

    let source = fetch::resolve(sh, root, &args.src)?;
    let base = link::cargo_target_dir(root, env_var("CARGO_TARGET_DIR"))
        .join("slurm")
        .join(staging_name(
            &source.version,
            args.personality,
            args.no_patches,
            target,
            host,
        ));
    let src_dir = base.join("src");
    let build_dir = base.join("build");
    let prefix = match &args.prefix {
        Some(p) => std::path::absolute(p).map_err(|e| Error::io(p, e))?,
        None => base.join("prefix"),
    };
    let series = if args.no_patches {
        Vec::new()
    } else {
        patches::series(root, &source.line)?
    };

    // A macOS target built on Linux: zig, unless the user chose a compiler.
    let zig = if cross::default_is_zig(target, host)
        && configure::user_compiler(target, host, &env_var).is_none()
    {
        Some(cross::zig::prepare(
            sh,
            root,
            &base,
            target,
            on_path("ccache"),
        )?)
    } else {
        None
    };
    let compiler = configure::compiler(
        target,
        host,
        &env_var,
        on_path("ccache"),
        zig.as_ref().map(|z| z.cc.as_path()),
    )?;
    let deps_prefix = args
        .deps_prefix
        .as_ref()
        .map(|p| std::path::absolute(p).map_err(|e| Error::io(p, e)))
        .transpose()?;
    let spec = configure::ConfigureSpec {
        personality: args.personality,
        target,
        host,
        prefix: prefix.clone(),
        compiler: compiler.clone(),
        header: shim_header(root),
        user_cppflags: env_var("CPPFLAGS"),
        deps_prefix: deps_prefix.clone(),
        tool_vars: zig
            .as_ref()
            .map(|z| cross::zig::configure_env(z, env_var("LDFLAGS").as_deref()))
            .unwrap_or_default(),
    };
    let uses_shim = configure::uses_shim(args.personality, target);
    let jobs = args
        .jobs
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
        .max(1);

    // The inputs and the make variables.
    let mut inputs = stamp::Inputs::default();
    inputs.add("driver", env!("CARGO_PKG_VERSION"));
    inputs.add("target", target.rust);
    inputs.add("personality", personality_name(args.personality));
    inputs.add(
        "source",
        format!(
            "{} {} {}",
            source.version,
            source.line,
            stamp::tree_metadata_digest(&source.path)?
        ),
    );
    if !args.no_patches {
        let series_file = root.join("patches").join(&source.line).join("series");
        inputs.add("series", stamp::file_digest(&series_file)?);
        for p in &series {
            inputs.add(format!("patch {}", p.display()), stamp::file_digest(p)?);
        }
    }
    if let Some(z) = &zig {
        inputs.add("zig", &z.version);
        inputs.add(
            "cross-sdk",
            stamp::contents_digest(root, &[cross::cross_sdk_dir(root)])?,
        );
    }
    let mut make_vars = vec!["V=0".to_string()];
    if target.os == Os::Apple {
        make_vars.extend(cross::apple_make_vars());
        if target.rust != host.rust {
            make_vars.extend(cross::cross_make_vars());
        }
        make_vars.extend(configure::apple_make_cppflags(&spec));
    }
    make_vars.extend(configure::darwin_make_cppflags(&spec));
    if uses_shim {
        if !spec.header.is_file() {
            return Err(Error::Io {
                path: spec.header.clone(),
                detail: "the shim header is missing: run `cargo xtask codegen`".into(),
            });
        }
        let shim_inputs = [
            root.join("shim").join("src"),
            root.join("shim").join("Cargo.toml"),
            root.join("Cargo.lock"),
            spec.header.clone(),
        ];
        inputs.add("shim", stamp::contents_digest(root, &shim_inputs)?);
        eprintln!("build-slurm: building the shim for {}", target.rust);
        let mut shim = link::build_shim(sh, root, target)?;
        if target.os == Os::Linux {
            shim = link::relocatable_object(
                sh,
                target,
                host,
                &shim,
                &base.join("shim").join("slurm_shim.o"),
            )?;
        }
        let flags = link::lib_ldflags(target, &shim, &link::shim_symbols());
        make_vars.push(format!("LIB_LDFLAGS={}", flags.join(" ")));
    }
    let conf_args = configure::configure_args(&spec);
    inputs.add("compiler", &compiler.cc);
    inputs.add(
        "configure",
        conf_args
            .iter()
            .filter(|a| !a.starts_with("CC="))
            .cloned()
            .collect::<Vec<_>>()
            .join("\u{1f}"),
    );
    inputs.add("make", make_vars.join("\u{1f}"));
    if args.personality == Personality::Darwin {
        // The config.h rewrite is part of what the build is (a changed answer rebuilds).
        inputs.add("config.h answers", format!("{:?}", configure::CONFIG_H_ANSWERS));
    }

    let stamp_path = base.join("stamp");
    let out = BuildOutput {
        prefix: prefix.clone(),
        build_dir: build_dir.clone(),
        src_dir: src_dir.clone(),
        version: source.version.clone(),
        line: source.line.clone(),
        personality: args.personality,
        patched: !series.is_empty(),
        rebuilt: true,
    };
    if stamp::read(&stamp_path).as_deref() == Some(inputs.hash().as_str())
        && prefix.is_dir()
        && build_dir.is_dir()
    {
        eprintln!(
            "build-slurm: {} is up to date (inputs unchanged)",
            base.display()
        );
        return Ok(BuildOutput {
            rebuilt: false,
            ..out
        });
    }

    // From here on, an interrupted build must not leave a stamp behind.
    std::fs::create_dir_all(&base).map_err(|e| Error::io(&base, e))?;
    stamp::remove(&stamp_path)?;

    let t = Instant::now();
    eprintln!(
        "build-slurm: copying {} to {}",
        source.path.display(),
        src_dir.display()
    );
    patches::copy_tree(&source.path, &src_dir)?;
    if !series.is_empty() {
        eprintln!(
            "build-slurm: applying {} patch(es) from patches/{}/series",
            series.len(),
            source.line
        );
        patches::apply(sh, &series, &src_dir)?;
        patches::regenerate(sh, &src_dir)?;
    }
    eprintln!(
        "build-slurm: source ready in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    if build_dir.exists() {
        std::fs::remove_dir_all(&build_dir).map_err(|e| Error::io(&build_dir, e))?;
    }
    std::fs::create_dir_all(&build_dir).map_err(|e| Error::io(&build_dir, e))?;

    // configure
    let t = Instant::now();
    let configure_script = src_dir.join("configure");
    let mut conf = {
        let _dir = sh.push_dir(&build_dir);
        let mut c = cmd!(sh, "{configure_script} {conf_args...}");
        if target.rust != host.rust && env_var("PKG_CONFIG_LIBDIR").is_none() {
            // Never let the build machine's .pc files describe the target's libraries.
            c = c.env("PKG_CONFIG_LIBDIR", "");
        }
        std::process::Command::from(c)
    };
    conf.current_dir(&build_dir);
    eprintln!(
        "build-slurm: configure ({}, {}, CC={})",
        personality_name(args.personality),
        target.rust,
        compiler.command()
    );
    make::run_logged(
        conf,
        "configure",
        &base.join("configure.log"),
        make::Progress::Spinner,
    )?;
    configure::fix_config_h(&build_dir, args.personality)?;
    eprintln!(
        "build-slurm: configure done in {:.0}s",
        t.elapsed().as_secs_f64()
    );

    // make
    let t = Instant::now();
    let make_log = base.join("make.log");
    let estimate = make::estimate(&make_log, &src_dir);
    let jobs_arg = format!("-j{jobs}");
    let make_refs: Vec<&String> = make_vars.iter().collect();
    let mut mk = {
        let _dir = sh.push_dir(&build_dir);
        std::process::Command::from(cmd!(sh, "make {jobs_arg} {make_refs...}"))
    };
    mk.current_dir(&build_dir);
    let steps = make::run_logged(mk, "make", &make_log, make::Progress::Steps(estimate))?;
    eprintln!(
        "build-slurm: make done in {:.0}s ({steps} compile/link steps, -j{jobs})",
        t.elapsed().as_secs_f64()
    );

    // make install
    let t = Instant::now();
    let mut inst = {
        let _dir = sh.push_dir(&build_dir);
        let make_refs: Vec<&String> = make_vars.iter().collect();
        std::process::Command::from(cmd!(sh, "make {jobs_arg} {make_refs...} install"))
    };
    inst.current_dir(&build_dir);
    make::run_logged(
        inst,
        "make install",
        &base.join("install.log"),
        make::Progress::Spinner,
    )?;
    eprintln!(
        "build-slurm: install done in {:.0}s",
        t.elapsed().as_secs_f64()
    );

    if target.os == Os::Apple {
        let report =
            cross::macho::check_prefix(&prefix, target, &source.line, deps_prefix.is_some())?;
        eprintln!(
            "build-slurm: Mach-O check passed: all {} required programs, libraries and plugins \
             are {} Mach-O; {} Mach-O files in the prefix",
            report.required, target.rust, report.macho_files
        );
    }
    if args.personality == Personality::Darwin {
        // A config.status rerun during make would have restored the Linux answers.
        configure::verify_config_h(&build_dir)?;
        let report = link::verify_darwin_link(sh, &prefix)?;
        eprintln!(
            "build-slurm: darwin link check passed: libslurmfull.so defines all {} slurm_shim_* symbols, \
             imports none of {}; {} plugins carry no copy of the shim",
            report.defined,
            link::MUST_NOT_IMPORT.join(" "),
            report.plugins_checked
        );
    }
    let vars_file = base.join("make-vars");
    std::fs::write(&vars_file, make_vars.join("\n") + "\n")
        .map_err(|e| Error::io(&vars_file, e))?;
    stamp::write(&stamp_path, &inputs)?;
    Ok(out)
}

/// The make variables a build used (`V=0`, and `LIB_LDFLAGS=...` when the shim is linked),
/// to pass to any later `make` in its build directory (e.g. `make check`) so nothing is
/// relinked without the shim.
pub fn make_vars(out: &BuildOutput) -> Result<Vec<String>> {
    let base = out.build_dir.parent().unwrap_or(&out.build_dir);
    let path = base.join("make-vars");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    Ok(text
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
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
        personality_name(out.personality),
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
    #![allow(non_snake_case)]
    use super::*;
    use crate::targets::lookup;

    #[test]
    fn staging_name__personality_nopatch_and_cross_triple() {
        let linux = lookup("x86_64-unknown-linux-gnu").unwrap();
        let arm = lookup("aarch64-unknown-linux-gnu").unwrap();
        assert_eq!(
            staging_name("24.11.5", Personality::Native, false, linux, linux),
            "24.11.5-native"
        );
        assert_eq!(
            staging_name("24.11.5", Personality::Native, true, linux, linux),
            "24.11.5-native-nopatch"
        );
        assert_eq!(
            staging_name("24.11.5", Personality::Darwin, false, linux, linux),
            "24.11.5-darwin"
        );
        assert_eq!(
            staging_name("24.11.5", Personality::Native, false, arm, linux),
            "24.11.5-native-aarch64-unknown-linux-gnu"
        );
    }

    #[test]
    fn check_personality__darwin_needs_linux_host_and_target() {
        let linux = lookup("x86_64-unknown-linux-gnu").unwrap();
        let mac = lookup("aarch64-apple-darwin").unwrap();
        assert!(check_personality(Personality::Darwin, linux, linux).is_ok());
        assert!(matches!(
            check_personality(Personality::Darwin, linux, mac),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(
            check_personality(Personality::Darwin, mac, linux),
            Err(Error::Unsupported(_))
        ));
        assert!(check_personality(Personality::Native, mac, linux).is_ok());
        assert!(check_personality(Personality::Native, linux, mac).is_ok());
    }

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
