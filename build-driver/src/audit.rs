//! `cargo xtask audit --prefix DIR`: prove that every plugin of an installed Slurm can be
//! loaded by every program that loads it.
//!
//! For each plugin `DIR/lib/slurm/<type>_<name>.so` (or `.dylib`), the programs that load it
//! come from its type ([`loaders`]). For each such program installed in `DIR/sbin` or
//! `DIR/bin`, every undefined symbol of the plugin must be weak or be exported by the
//! program, by a library the program or the plugin loads (libslurmfull among them; resolved
//! as [`resolve`] describes), or by a system library (ELF: the real libraries on this
//! machine; Mach-O: the SDK's `.tbd` stubs: on Linux those zig ships plus the cross lane's
//! own `build-driver/cross-sdk/lib/*.tbd`, on a Mac the active SDK's). Anything else is a
//! finding: on ELF Slurm gets away with it because it `dlopen`s with `RTLD_LAZY` (catalog D1);
//! a Mach-O linked by Apple's ld64 (chained fixups, eager binding) fails at `dlopen`. zig
//! links plugins with lazy binds, so on this machine only this audit catches the class.
//!
//! With `--expect FILE`, the findings must equal the accepted ones listed there
//! (`ci/expectations/audit-<line>-<lane>.toml`): a new finding fails, and so does a listed
//! one that is gone (remove it then). Without it, any finding fails.

pub mod expect;
mod image;
pub mod loaders;
pub mod report;
mod resolve;
mod tbd;

use clap::Args;
use driver_common::error::{Error, Result};
use image::{Format, Image};
use resolve::Resolver;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;
use xshell::{Shell, cmd};

pub use expect::Expectations;

pub use report::{Finding, Report};

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The installed Slurm prefix (with lib/slurm/ and sbin/ or bin/), ELF or Mach-O.
    #[arg(long)]
    pub prefix: PathBuf,
    /// Accepted findings (e.g. ci/expectations/audit-24.11-native.toml): succeed only when
    /// the findings are exactly these.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Another SDK stub (.tbd) with system-library exports for a Mach-O prefix, beyond the
    /// libSystem stubs zig ships (repeatable).
    #[arg(long, value_name = "FILE")]
    pub tbd: Vec<PathBuf>,
}

pub fn run(sh: &Shell, root: &Path, args: AuditArgs) -> Result<()> {
    check(sh, root, &args.prefix, args.expect.as_deref(), &args.tbd).map(|_| ())
}

/// Audit `prefix`, print the report, and judge it: against `expect` when given, else any
/// finding fails. Returns the summary line (also used by `cargo xtask ci`).
pub fn check(
    sh: &Shell,
    root: &Path,
    prefix: &Path,
    expect: Option<&Path>,
    extra_stubs: &[PathBuf],
) -> Result<String> {
    let start = Instant::now();
    let mut stubs = cross_sdk_stubs(root)?;
    stubs.extend(extra_stubs.iter().cloned());
    let report = audit(sh, prefix, &stubs)?;
    print_report(prefix, &report);
    let verdict = match expect {
        Some(file) => expect::judge(&report, &Expectations::load(file)?, file),
        None if report.findings.is_empty() && report.unknown.is_empty() => Ok(()),
        None => Err(Error::Audit(format!(
            "{} pair(s) with unresolved symbols, {} plugin(s) of unknown type",
            report.findings.len(),
            report.unknown.len()
        ))),
    };
    let summary = format!(
        "{}; {:.1} s",
        report.summary(),
        start.elapsed().as_secs_f64()
    );
    println!("audit: {summary}");
    verdict.map(|()| summary)
}

fn print_report(prefix: &Path, r: &Report) {
    println!(
        "audit {}: {} {}, {} plugins, loader table for {:?}",
        prefix.display(),
        r.format,
        r.arch,
        r.plugins,
        r.line
    );
    if !r.not_installed.is_empty() {
        println!(
            "  not installed (their pairs are not checked): {}",
            r.not_installed
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for u in &r.unknown {
        println!(
            "  UNKNOWN TYPE {u}: no row in the type table (build-driver/src/audit/loaders.rs)"
        );
    }
    // One line per plugin and unresolved set, listing the programs that share it.
    let mut groups: BTreeMap<(&str, Vec<String>), Vec<&str>> = BTreeMap::new();
    let mut types = BTreeSet::new();
    for f in &r.findings {
        if let Some(t) = loaders::plugin_type(&f.plugin) {
            types.insert(t.name);
        }
        let mut what: Vec<String> = f.symbols.iter().cloned().collect();
        what.extend(f.libraries.iter().map(|l| format!("library {l}")));
        groups
            .entry((f.plugin.as_str(), what))
            .or_default()
            .push(f.program.as_str());
    }
    for ((plugin, what), programs) in &groups {
        println!(
            "  UNRESOLVED {plugin} in {} ({}): {}",
            if programs.len() == 1 {
                "1 program".to_string()
            } else {
                format!("{} programs", programs.len())
            },
            programs.join(", "),
            what.join(", ")
        );
    }
    for t in loaders::TYPES.iter().filter(|t| types.contains(t.name)) {
        println!("  ({} plugins are loaded by: {})", t.name, t.evidence);
    }
}

/// Audit the prefix; `extra_stubs`: more `.tbd` files for a Mach-O prefix.
pub fn audit(sh: &Shell, prefix: &Path, extra_stubs: &[PathBuf]) -> Result<Report> {
    let (plugin_dir, names, programs) = installed(prefix)?;
    let line = release_line(prefix)?;

    // The first plugin decides the format and architecture; all must agree.
    let first = Image::read(&plugin_dir.join(&names[0]))?
        .ok_or_else(|| Error::file(plugin_dir.join(&names[0]), "not an ELF or Mach-O file"))?;
    let (format, arch) = (first.format, arch_name(first.arch));
    let stubs = match format {
        Format::MachO => {
            let mut s = if cfg!(target_os = "macos") {
                sdk_stubs(sh)?
            } else {
                zig_stubs(sh)?
            };
            s.extend(extra_stubs.iter().cloned());
            s
        }
        Format::Elf => extra_stubs.to_vec(),
    };
    let mut resolver = Resolver::new(prefix, &stubs, &arch)?;
    let program_images = program_closures(&mut resolver, &programs, format)?;
    let mut report = Report {
        line,
        format,
        arch: arch.clone(),
        plugins: 0,
        pairs: 0,
        findings: Vec::new(),
        unknown: Vec::new(),
        not_installed: BTreeSet::new(),
    };
    for name in &names {
        audit_plugin(
            &mut resolver,
            &plugin_dir,
            name,
            &program_images,
            &mut report,
        )?;
    }
    Ok(report)
}

/// What the prefix installs: its plugin directory, the plugins' file names (sorted), and the
/// known programs present in `sbin/` or `bin/`.
fn installed(prefix: &Path) -> Result<(PathBuf, Vec<String>, BTreeMap<&'static str, PathBuf>)> {
    let not_prefix = |detail: &str| Error::NotASlurmPrefix {
        path: prefix.to_path_buf(),
        detail: detail.to_string(),
    };
    if !prefix.is_dir() {
        return Err(not_prefix("no such directory"));
    }
    let plugin_dir = prefix.join("lib/slurm");
    if !plugin_dir.is_dir() {
        return Err(not_prefix("it has no lib/slurm directory"));
    }
    let mut names: Vec<String> = std::fs::read_dir(&plugin_dir)
        .map_err(|e| Error::io(&plugin_dir, e))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".so") || n.ends_with(".dylib"))
        .filter(|n| !loaders::is_library(n))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(Error::NoPlugins(plugin_dir));
    }
    let mut programs: BTreeMap<&'static str, PathBuf> = BTreeMap::new();
    for p in loaders::CLIENTS.iter().chain(loaders::DAEMONS) {
        for dir in ["sbin", "bin"] {
            let path = prefix.join(dir).join(p);
            if path.is_file() {
                programs.insert(p, path);
            }
        }
    }
    if programs.is_empty() {
        return Err(not_prefix(
            "no Slurm program (slurmd, slurmctld, srun, ...) in sbin/ or bin/",
        ));
    }
    Ok((plugin_dir, names, programs))
}

type ProgramImages = BTreeMap<&'static str, (Rc<Image>, resolve::Closure)>;

/// Each program's image and the closure of what it loads; scripts are skipped.
fn program_closures(
    resolver: &mut Resolver,
    programs: &BTreeMap<&'static str, PathBuf>,
    format: Format,
) -> Result<ProgramImages> {
    let mut out = ProgramImages::new();
    for (name, path) in programs {
        let Some(img) = resolver.image(path)? else {
            continue; // a script
        };
        if !img.executable {
            return Err(Error::file(path, "a program name, but not an executable"));
        }
        if img.format != format {
            return Err(Error::file(
                path,
                format!("{} file in a prefix whose plugins are {format}", img.format),
            ));
        }
        let closure = resolver.closure(&img, &img)?;
        out.insert(name, (img, closure));
    }
    Ok(out)
}

/// The findings of one plugin in every program that loads it.
fn audit_plugin(
    resolver: &mut Resolver,
    plugin_dir: &Path,
    name: &str,
    programs: &ProgramImages,
    report: &mut Report,
) -> Result<()> {
    let path = plugin_dir.join(name);
    let Some(plugin) = resolver.image(&path)? else {
        return Err(Error::file(path, "not an ELF or Mach-O file"));
    };
    report.plugins += 1;
    let Some(ty) = loaders::plugin_type(name) else {
        report.unknown.push(name.to_string());
        return Ok(());
    };
    for program in loaders::programs(ty, report.line) {
        let Some((prog, prog_closure)) = programs.get(program) else {
            report.not_installed.insert(program.to_string());
            continue;
        };
        report.pairs += 1;
        let plug_closure = resolver.closure(&plugin, prog)?;
        let symbols: BTreeSet<String> = plugin
            .imports
            .iter()
            .filter(|i| !i.weak)
            .filter(|i| !prog_closure.defines(&i.name) && !plug_closure.defines(&i.name))
            .map(|i| i.name.clone())
            .collect();
        let libraries: BTreeSet<String> = prog_closure
            .missing
            .union(&plug_closure.missing)
            .cloned()
            .collect();
        if !symbols.is_empty() || !libraries.is_empty() {
            report.findings.push(Finding {
                plugin: name.to_string(),
                program: program.to_string(),
                symbols,
                libraries,
            });
        }
    }
    Ok(())
}

/// The release line, from `SLURM_VERSION_NUMBER` in `include/slurm/slurm_version.h`.
fn release_line(prefix: &Path) -> Result<loaders::Line> {
    let header = prefix.join("include/slurm/slurm_version.h");
    let text = std::fs::read_to_string(&header).map_err(|e| {
        Error::io(&header, e).context(format!(
            "{} is not a Slurm install prefix: include/slurm/slurm_version.h tells the release",
            prefix.display()
        ))
    })?;
    let number = text
        .lines()
        .find_map(|l| {
            let v = l.strip_prefix("#define SLURM_VERSION_NUMBER")?.trim();
            u32::from_str_radix(v.strip_prefix("0x")?, 16).ok()
        })
        .ok_or_else(|| Error::File {
            path: header.clone(),
            problem: "no `#define SLURM_VERSION_NUMBER 0x...`".into(),
        })?;
    loaders::Line::from_version_number(
        number,
        &format!("SLURM_VERSION_NUMBER in {}", header.display()),
    )
}

fn arch_name(a: object::Architecture) -> String {
    match a {
        object::Architecture::Aarch64 => "arm64".into(),
        object::Architecture::X86_64 => "x86_64".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// The zig cross lane's own link stubs (`build-driver/cross-sdk/lib/*.tbd`: libresolv,
/// libiconv; `build-driver/cross-sdk/Frameworks`: IOKit, CoreFoundation), which zig lacks;
/// they stand for macOS libraries the cross-built binaries load. Not on a Mac, where the
/// SDK has the real ones.
fn cross_sdk_stubs(root: &Path) -> Result<Vec<PathBuf>> {
    let sdk = crate::cross::zig::sdk_dir(root);
    let dir = sdk.join("lib");
    if cfg!(target_os = "macos") || !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = tbd_files(&dir)?;
    out.extend(framework_stubs(&sdk.join("Frameworks")));
    Ok(out)
}

/// The frameworks Slurm links (gpu/apple, patch 0050: `-framework IOKit -framework
/// CoreFoundation`).
pub const FRAMEWORKS: &[&str] = &["IOKit", "CoreFoundation"];

/// `<dir>/<F>.framework/<F>.tbd` of each of [`FRAMEWORKS`] that `dir` has (an SDK's
/// `System/Library/Frameworks`, or the cross lane's stand-ins).
fn framework_stubs(dir: &Path) -> Vec<PathBuf> {
    FRAMEWORKS
        .iter()
        .map(|f| dir.join(format!("{f}.framework")).join(format!("{f}.tbd")))
        .filter(|p| p.is_file())
        .collect()
}

/// On a Mac: the active SDK's stubs (`xcrun --show-sdk-path`, then `usr/lib/*.tbd`,
/// `usr/lib/system/*.tbd` and the [`FRAMEWORKS`]' stubs). Only tbd v3/v4 (YAML) are read; an SDK whose stubs are v5 (JSON)
/// fails here with the parse error. Not run by this project (no Mac).
fn sdk_stubs(sh: &Shell) -> Result<Vec<PathBuf>> {
    let sdk = cmd!(sh, "xcrun --show-sdk-path")
        .quiet()
        .read()
        .map_err(|e| Error::MissingTool {
            program: "xcrun".into(),
            step: "audit of a Mach-O prefix on macOS (the SDK's .tbd stubs)".into(),
            fix: format!("{e}; install the Xcode command line tools (xcode-select --install)"),
        })?;
    let mut out = Vec::new();
    for sub in ["usr/lib", "usr/lib/system"] {
        let dir = PathBuf::from(sdk.trim()).join(sub);
        out.extend(tbd_files(&dir)?);
    }
    out.extend(framework_stubs(
        &PathBuf::from(sdk.trim()).join("System/Library/Frameworks"),
    ));
    Ok(out)
}

fn tbd_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "tbd"))
        .collect();
    out.sort();
    Ok(out)
}

/// The `.tbd` stubs zig ships (`<lib_dir>/libc/darwin/*.tbd`), found through
/// `python3 -m ziglang env`.
fn zig_stubs(sh: &Shell) -> Result<Vec<PathBuf>> {
    let missing = |detail: String| Error::MissingTool {
        program: "zig (python3 -m ziglang)".into(),
        step: "audit of a Mach-O prefix (the SDK stubs of libSystem)".into(),
        fix: format!("{detail}; install it with ci/setup-debian.sh, or pass --tbd FILE"),
    };
    let env = cmd!(sh, "python3 -m ziglang env")
        .quiet()
        .ignore_stderr()
        .read()
        .map_err(|e| missing(e.to_string()))?;
    let lib_dir = zig_lib_dir(&env).ok_or_else(|| missing("no .lib_dir in `zig env`".into()))?;
    let dir = PathBuf::from(lib_dir).join("libc/darwin");
    let out = tbd_files(&dir)?;
    if out.is_empty() {
        return Err(missing(format!("no .tbd file in {}", dir.display())));
    }
    Ok(out)
}

/// `.lib_dir = "..."` from `zig env` (ZON in zig 0.14+, JSON before).
fn zig_lib_dir(env: &str) -> Option<String> {
    env.lines().find_map(|l| {
        let l = l.trim().trim_start_matches('.').trim_start_matches('"');
        let rest = l.strip_prefix("lib_dir")?;
        let value = rest
            .trim_start_matches('"')
            .trim_start()
            .strip_prefix(['=', ':'])?;
        let value = value.trim().trim_end_matches(',').trim().trim_matches('"');
        Some(value.to_string())
    })
}

#[cfg(test)]
mod tests;
