//! Building the shim for a target, the make variables that link it once into Slurm's shared
//! libraries, and the `nm` check that proves it took.
//!
//! Where the shim goes: Slurm 24.11's src/api/Makefile.am uses the make variable
//! `LIB_LDFLAGS` for libslurmhelper (a convenience library: libtool ignores linker flags
//! for it), libslurm, libslurmfull and libslurm_pmi; elsewhere only in convenience libraries
//! (libcommon, libconmgr, libfile_bcast, libslurm_lua, libslurm_mysql) and in contribs that
//! are not built by default. No plugin or program Makefile uses it (plugins use
//! `PLUGIN_FLAGS`, programs `CMD_LDFLAGS`), and configure never sets it, so
//! `make LIB_LDFLAGS=...` links the shim into exactly the three shared libraries without
//! editing a file. Programs bind the shim's symbols from libslurmfull; plugins, which link
//! no Slurm library, resolve them from the process that loads them.
//!
//! Every flag is spelled `-Wl,...` so that libtool passes it to the linker of the shared
//! libraries only and records nothing in any `.la` file's `dependency_libs`: a bare archive
//! path would be inherited by programs linking a convenience library (slurmd and sbcast link
//! libfile_bcast) and pull a second copy of the shim into them.
//!
//! On Linux the archive is not linked as it is: Rust's std is one object in it, with default
//! visibility, so pulling any of it exports ~1700 std symbols from libslurmfull and imports
//! glibc's pipe2, accept4 and sched_getaffinity (std's own pipes, sockets and
//! `available_parallelism`) even though no shim path calls them, which the `nm` check
//! rejects (measured). So the driver first makes one relocatable object, `ld -r
//! --whole-archive`, keeps only the `slurm_shim_*` symbols global (`objcopy
//! --keep-global-symbols`), and links it with `--gc-sections`: what no shim function
//! reaches is dropped, and libslurmfull exports exactly the shim's table. (Slurm's own
//! objects are unaffected by `--gc-sections`: every global symbol of libslurmfull is
//! exported, hence a root.) On macOS the archive is linked with `-u _<sym>` per symbol.

use driver_common::error::{Error, Result};
use driver_common::targets::{Os, Target};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// The shim as built for one target.
#[derive(Clone, Debug)]
pub struct ShimLib {
    /// `<cargo target dir>/<triple>/release/libslurm_shim.a`.
    pub archive: PathBuf,
    /// The native libraries Rust's std needs, as rustc printed them (`-lgcc_s -lutil ...`).
    pub native_libs: Vec<String>,
}

pub use driver_common::staging::{cargo_target_dir, host_dirs};

/// `RUSTFLAGS` for Rust code that ships in a bottle (the shim, the node tool): the user's
/// `RUSTFLAGS`, then this machine's directories remapped, so no panic location names them.
/// The shim and the node tool get the same value, so cargo builds their shared crates once.
pub fn shipped_rustflags(root: &Path) -> String {
    let mut flags: Vec<String> = std::env::var("RUSTFLAGS")
        .ok()
        .map(|f| f.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    flags.extend(driver_common::util::host_paths::rust_flags(&host_dirs(
        root,
    )));
    flags.join(" ")
}

/// `cargo rustc -p slurm-shim --release --target <triple> --crate-type staticlib -- --print
/// native-static-libs`: builds the archive and reports std's native libraries in one step
/// (cargo replays the note when the crate is fresh).
pub fn build_shim(
    sh: &Shell,
    root: &Path,
    target: &Target,
    macos_min: Option<&str>,
) -> Result<ShimLib> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let triple = target.rust;
    let out = {
        let _dir = sh.push_dir(root);
        let mut c = cmd!(
            sh,
            "{cargo} rustc -p slurm-shim --release --target {triple} --crate-type staticlib -- --print native-static-libs"
        );
        if let Some(min) = macos_min {
            // The same minimum macOS as the C code (zig's -target, Apple's -mmacosx-version-min).
            c = c.env("MACOSX_DEPLOYMENT_TARGET", min);
            // A shipped (macOS) shim names no directory of this machine.
            c = c.env("RUSTFLAGS", shipped_rustflags(root));
        }
        c.quiet().ignore_status().output()?
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
        return Err(Error::Command {
            step: format!("building the shim for {triple}"),
            program: "cargo rustc -p slurm-shim".into(),
            detail: format!(
                "{}\n(is the target installed? `rustup target add {triple}`)",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ),
        });
    }
    let native_libs = parse_native_static_libs(&stderr).ok_or_else(|| Error::Command {
        step: format!("building the shim for {triple}"),
        program: "cargo rustc -p slurm-shim".into(),
        detail: "rustc printed no `native-static-libs:` line".into(),
    })?;
    let archive = cargo_target_dir(root, std::env::var("CARGO_TARGET_DIR").ok())
        .join(triple)
        .join("release")
        .join("libslurm_shim.a");
    if !archive.is_file() {
        return Err(Error::File {
            path: archive,
            problem: "cargo succeeded but the shim archive is not there".into(),
        });
    }
    Ok(ShimLib {
        archive,
        native_libs,
    })
}

/// Linux: turns the shim archive into one relocatable object at `out` whose only global
/// symbols are the export table's (see the module doc). Cross targets use `<host>-ld` and
/// `<host>-objcopy`.
pub fn relocatable_object(
    sh: &Shell,
    target: &Target,
    cross: bool,
    shim: &ShimLib,
    out: &Path,
) -> Result<ShimLib> {
    let (ld, objcopy) = if !cross {
        ("ld".to_string(), "objcopy".to_string())
    } else {
        (
            format!("{}-ld", target.autoconf_host),
            format!("{}-objcopy", target.autoconf_host),
        )
    };
    let dir = out.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let keep = dir.join("slurm_shim.keep");
    std::fs::write(&keep, shim_symbols().join("\n") + "\n").map_err(|e| Error::io(&keep, e))?;
    let whole = dir.join("slurm_shim.whole.o");
    let archive = &shim.archive;
    let fail = |program: &str, e: xshell::Error| {
        Error::from(e).context(format!(
            "preparing the shim object with {program} (binutils needed: Debian: apt-get install binutils)"
        ))
    };
    cmd!(sh, "{ld} -r -o {whole} --whole-archive {archive}")
        .quiet()
        .run()
        .map_err(|e| fail(&ld, e))?;
    cmd!(sh, "{objcopy} --keep-global-symbols={keep} {whole} {out}")
        .quiet()
        .run()
        .map_err(|e| fail(&objcopy, e))?;
    let _ = std::fs::remove_file(&whole);
    Ok(ShimLib {
        archive: out.to_path_buf(),
        native_libs: shim.native_libs.clone(),
    })
}

/// The libraries on rustc's `note: native-static-libs: ...` line.
pub fn parse_native_static_libs(stderr: &str) -> Option<Vec<String>> {
    stderr.lines().find_map(|l| {
        let rest = l.split_once("native-static-libs:")?.1;
        Some(rest.split_whitespace().map(str::to_string).collect())
    })
}

/// The value of `LIB_LDFLAGS` that links exactly the shim's exported functions (and what
/// they need) into libslurm/libslurmfull: one "undefined" request per row of the export
/// table, so the linker pulls those archive members, then the archive, then std's native
/// libraries. GNU ld spells the request `--undefined=<sym>`, ld64 `-u _<sym>`.
pub fn lib_ldflags(target: &Target, shim: &ShimLib, symbols: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = symbols
        .iter()
        .map(|s| match target.os {
            Os::Linux => format!("-Wl,--undefined={s}"),
            Os::Apple => format!("-Wl,-u,_{s}"),
        })
        .collect();
    if target.os == Os::Linux {
        v.push("-Wl,--gc-sections".to_string());
    }
    v.push(format!("-Wl,{}", shim.archive.display()));
    v.extend(shim.native_libs.iter().map(|l| format!("-Wl,{l}")));
    v
}

/// The exported symbols of the shim, from its export table.
pub fn shim_symbols() -> Vec<&'static str> {
    slurm_shim::table::ENTRIES
        .iter()
        .map(|e| e.symbol)
        .collect()
}

/// glibc functions a darwin-personality libslurmfull must no longer import (the shim
/// replaces them; importing one means the header's mapping did not reach a call).
pub const MUST_NOT_IMPORT: &[&str] = &[
    "pipe2",
    "accept4",
    "timer_create",
    "setresuid",
    "sched_getaffinity",
];

/// What `nm -D` says about one shared object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DynSymbols {
    pub defined: BTreeSet<String>,
    pub undefined: BTreeSet<String>,
}

/// Parses `nm -D` output (`<addr> T name`, `U name@GLIBC_2.9`, ...); version suffixes are
/// dropped.
pub fn parse_nm_dynamic(text: &str) -> DynSymbols {
    let mut s = DynSymbols::default();
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let (kind, name) = match parts.as_slice() {
            [kind, name] => (*kind, *name),
            [_addr, kind, name] => (*kind, *name),
            _ => continue,
        };
        let name = name.split('@').next().unwrap_or(name).to_string();
        match kind {
            "U" | "w" | "v" => {
                s.undefined.insert(name);
            }
            _ => {
                s.defined.insert(name);
            }
        }
    }
    s
}

/// Problems with a darwin-personality libslurmfull: shim symbols it does not define, and
/// glibc functions of [`MUST_NOT_IMPORT`] it still imports.
pub fn check_libslurmfull(syms: &DynSymbols, shim_symbols: &[&str]) -> Vec<String> {
    let mut bad = Vec::new();
    let missing: Vec<&str> = shim_symbols
        .iter()
        .copied()
        .filter(|s| !syms.defined.contains(*s))
        .collect();
    if !missing.is_empty() {
        bad.push(format!("does not define {}", missing.join(" ")));
    }
    let imported: Vec<&str> = MUST_NOT_IMPORT
        .iter()
        .copied()
        .filter(|s| syms.undefined.contains(*s))
        .collect();
    if !imported.is_empty() {
        bad.push(format!("still imports glibc's {}", imported.join(" ")));
    }
    bad
}

/// The result of [`verify_darwin_link`], for the summary.
#[derive(Clone, Debug)]
pub struct LinkReport {
    /// Shim symbols libslurmfull defines.
    pub defined: usize,
    /// Plugins checked (none may define a shim symbol).
    pub plugins_checked: usize,
}

/// `nm -D` on the installed libslurmfull and plugins: libslurmfull defines every shim symbol
/// and imports none of [`MUST_NOT_IMPORT`]; no plugin defines a shim symbol (the shim exists
/// once per process).
pub fn verify_darwin_link(sh: &Shell, prefix: &Path) -> Result<LinkReport> {
    let libdir = prefix.join("lib").join("slurm");
    let full = libdir.join("libslurmfull.so");
    let text = cmd!(sh, "nm -D {full}")
        .quiet()
        .read()
        .map_err(|e| Error::from(e).context("darwin link check: nm -D"))?;
    let syms = parse_nm_dynamic(&text);
    let shim = shim_symbols();
    let bad = check_libslurmfull(&syms, &shim);
    if !bad.is_empty() {
        return Err(Error::Build {
            step: "darwin link check (nm -D libslurmfull.so)".into(),
            log: full,
            tail: bad.join("\n"),
        });
    }
    let mut plugins: Vec<PathBuf> = std::fs::read_dir(&libdir)
        .map_err(|e| Error::io(&libdir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "so")
                && p.file_name()
                    .is_some_and(|n| n != "libslurmfull.so" && n != "libslurm_pmi.so")
        })
        .collect();
    plugins.sort();
    let mut offenders = Vec::new();
    if !plugins.is_empty() {
        let plugin_refs: Vec<&PathBuf> = plugins.iter().collect();
        let text = cmd!(sh, "nm -D -A --defined-only {plugin_refs...}")
            .quiet()
            .read()
            .map_err(|e| Error::from(e).context("darwin link check: nm -D -A"))?;
        for line in text.lines() {
            if let Some((file, rest)) = line.split_once(':') {
                if rest
                    .split_whitespace()
                    .last()
                    .is_some_and(|n| n.starts_with(slurm_shim::table::PREFIX))
                {
                    offenders.push(file.to_string());
                }
            }
        }
    }
    offenders.dedup();
    if !offenders.is_empty() {
        return Err(Error::Build {
            step: "darwin link check (plugins must not carry the shim)".into(),
            log: libdir,
            tail: offenders.join("\n"),
        });
    }
    Ok(LinkReport {
        defined: shim.len(),
        plugins_checked: plugins.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use driver_common::targets::rows;

    fn shim() -> ShimLib {
        ShimLib {
            archive: PathBuf::from("/t/x/release/libslurm_shim.a"),
            native_libs: vec!["-lgcc_s".into(), "-lc".into()],
        }
    }

    #[test]
    fn lib_ldflags__linux_requests_each_symbol_then_archive_then_libs() {
        let t = rows::linux_x86();
        let v = lib_ldflags(t, &shim(), &["slurm_shim_pipe2", "slurm_shim_accept4"]);
        assert_eq!(
            v,
            vec![
                "-Wl,--undefined=slurm_shim_pipe2",
                "-Wl,--undefined=slurm_shim_accept4",
                "-Wl,--gc-sections",
                "-Wl,/t/x/release/libslurm_shim.a",
                "-Wl,-lgcc_s",
                "-Wl,-lc",
            ]
        );
    }

    #[test]
    fn lib_ldflags__apple_uses_ld64_spelling() {
        let t = rows::mac_arm();
        let v = lib_ldflags(t, &shim(), &["slurm_shim_pipe2"]);
        assert_eq!(v[0], "-Wl,-u,_slurm_shim_pipe2");
        assert!(!v.iter().any(|f| f.contains("gc-sections")), "{v:?}");
    }

    #[test]
    fn lib_ldflags__every_flag_is_hidden_from_libtool() {
        let t = rows::linux_x86();
        for f in lib_ldflags(t, &shim(), &shim_symbols()) {
            assert!(f.starts_with("-Wl,"), "{f}");
        }
    }

    #[test]
    fn parse_native_static_libs__reads_rustc_note() {
        let err =
            "warning: x\nnote: native-static-libs: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc\n";
        assert_eq!(
            parse_native_static_libs(err).unwrap(),
            vec![
                "-lgcc_s",
                "-lutil",
                "-lrt",
                "-lpthread",
                "-lm",
                "-ldl",
                "-lc"
            ]
        );
        assert_eq!(parse_native_static_libs("nothing"), None);
    }

    const NM: &str = "                 U accept@GLIBC_2.2.5\n\
                      0000000000012340 T slurm_shim_pipe2\n\
                      0000000000012350 T slurm_shim_accept4\n\
                                       U pipe2@GLIBC_2.9\n\
                                       w __gmon_start__\n\
                      0000000000022350 B some_data\n";

    #[test]
    fn parse_nm_dynamic__splits_defined_and_undefined_without_versions() {
        let s = parse_nm_dynamic(NM);
        assert!(s.defined.contains("slurm_shim_pipe2"));
        assert!(s.defined.contains("some_data"));
        assert!(s.undefined.contains("pipe2"));
        assert!(s.undefined.contains("accept"));
        assert!(!s.defined.contains("pipe2"));
    }

    #[test]
    fn check_libslurmfull__reports_missing_definitions_and_glibc_imports() {
        let s = parse_nm_dynamic(NM);
        let bad = check_libslurmfull(&s, &["slurm_shim_pipe2", "slurm_shim_timer_create"]);
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(
            bad[0].contains("slurm_shim_timer_create") && !bad[0].contains("slurm_shim_pipe2 "),
            "{bad:?}"
        );
        assert!(bad[1].contains("pipe2"), "{bad:?}");
        let ok = parse_nm_dynamic(
            "0000000000012340 T slurm_shim_pipe2\n                 U pipe@GLIBC_2.2.5\n",
        );
        assert!(check_libslurmfull(&ok, &["slurm_shim_pipe2"]).is_empty());
    }

    #[test]
    fn cargo_target_dir__env_absolute_relative_or_default() {
        let root = Path::new("/r");
        assert_eq!(cargo_target_dir(root, None), PathBuf::from("/r/target"));
        assert_eq!(
            cargo_target_dir(root, Some(String::new())),
            PathBuf::from("/r/target")
        );
        assert_eq!(
            cargo_target_dir(root, Some("/x/t".into())),
            PathBuf::from("/x/t")
        );
        assert_eq!(
            cargo_target_dir(root, Some("tt".into())),
            PathBuf::from("/r/tt")
        );
    }
}
