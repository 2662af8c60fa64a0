//! The post-install check of a macOS build: every program, library and plugin a compute
//! node or a client needs is in the prefix and is a Mach-O file of the target's CPU.
//!
//! The header is read by [`crate::macho::inspect`] (the `object` crate): CPU and file type of
//! a thin Mach-O file, or the architectures of a universal one, which must contain the CPU.
//! Programs must be `MH_EXECUTE`; libslurmfull `MH_DYLIB`; plugins
//! `MH_BUNDLE` (Apple's ld64 with libtool's `-bundle`) or `MH_DYLIB` (zig, which makes
//! `-shared` dylibs; see [`super::zig`]). Anything else (missing, ELF, wrong CPU, wrong kind)
//! is listed, and the build fails with the whole list.
//!
//! Which plugins: the brief's list, per release line ([`driver_common::lines::Facts`]). Not files,
//! hence not checked: `switch/none`, `task/none` and `jobacct_gather/none` (built into
//! libslurmfull: no line has such a plugin directory; found when the first cross install was
//! checked) and `cred/slurm` (it lives in `auth_slurm.so`). 24.11 names topology/flat
//! `topology_default`. `tls/none` exists in every line, `certgen/script` since 25.05.
//! `gpu/apple` (patch 0050, `AutoDetect=apple`) links IOKit and CoreFoundation: on Linux the
//! lane's stubs in `build-driver/cross-sdk/Frameworks`.
//! auth/slurm (with cred/slurm) and serializer/json need json-c and libjwt: they are
//! required only when the build was configured with them ([`required`]'s `with_deps`).

use driver_common::error::{Error, Result};
use driver_common::lines::Line;
use driver_common::node_files;
use driver_common::targets::Target;
use std::path::{Path, PathBuf};

use crate::macho::{self, cpu_name, cpu_type, filetype_name, inspect};

/// What kind of file an entry must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    Program,
    Library,
    Plugin,
}

impl Expect {
    fn accepts(self, filetype: u32) -> bool {
        match self {
            Expect::Program => filetype == macho::MH_EXECUTE,
            Expect::Library => filetype == macho::MH_DYLIB,
            Expect::Plugin => filetype == macho::MH_BUNDLE || filetype == macho::MH_DYLIB,
        }
    }
}

/// One required file, relative to the prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Required {
    pub path: String,
    pub expect: Expect,
}

/// The required files for release `line`.
pub fn required(line: Line, with_deps: bool) -> Vec<Required> {
    let mut v: Vec<Required> = node_files::PROGRAMS
        .iter()
        .map(|p| Required {
            path: p.to_string(),
            expect: Expect::Program,
        })
        .collect();
    v.push(Required {
        path: "lib/slurm/libslurmfull.dylib".into(),
        expect: Expect::Library,
    });
    v.extend(
        node_files::plugins(line, with_deps)
            .into_iter()
            .map(|p| Required {
                path: format!("lib/slurm/{p}.so"),
                expect: Expect::Plugin,
            }),
    );
    v
}

/// The result of a passing check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrefixReport {
    /// Required files checked (all passed).
    pub required: usize,
    /// Mach-O files of the target's CPU anywhere under the prefix.
    pub macho_files: usize,
}

/// Checks one file; `None` when it is right.
pub fn check_file(path: &Path, expect: Expect, cpu: u32) -> Option<String> {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) => return Some(format!("{}: {e}", path.display())),
    };
    match inspect(&data) {
        Err(what) => Some(format!("{}: {what}", path.display())),
        Ok(info) => {
            let mut bad = Vec::new();
            if !info.cpus.contains(&cpu) {
                bad.push(format!(
                    "CPU {} (want {})",
                    info.cpus
                        .iter()
                        .map(|c| cpu_name(*c))
                        .collect::<Vec<_>>()
                        .join("+"),
                    cpu_name(cpu)
                ));
            }
            if !expect.accepts(info.filetype) {
                bad.push(format!(
                    "{} (want {expect:?})",
                    filetype_name(info.filetype)
                ));
            }
            (!bad.is_empty()).then(|| format!("{}: {}", path.display(), bad.join(", ")))
        }
    }
}

/// Counts the Mach-O files of `cpu` under `dir` (symlinks not followed).
pub fn count_macho(dir: &Path, cpu: u32) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in rd.filter_map(|e| e.ok()) {
        let Ok(ft) = e.file_type() else { continue };
        let p = e.path();
        if ft.is_dir() {
            n += count_macho(&p, cpu);
        } else if ft.is_file() {
            if let Ok(d) = std::fs::read(&p) {
                if inspect(&d).is_ok_and(|i| i.cpus.contains(&cpu)) {
                    n += 1;
                }
            }
        }
    }
    n
}

/// Checks every [`required`] file under `prefix`; the error lists all problems.
pub fn check_prefix(
    prefix: &Path,
    target: &Target,
    line: Line,
    with_deps: bool,
) -> Result<PrefixReport> {
    let cpu = cpu_type(target)?;
    let req = required(line, with_deps);
    let bad: Vec<String> = req
        .iter()
        .filter_map(|r| check_file(&prefix.join(&r.path), r.expect, cpu))
        .collect();
    if !bad.is_empty() {
        return Err(Error::MachO {
            prefix: PathBuf::from(prefix),
            target: target.rust.to_string(),
            problems: bad.join("\n"),
        });
    }
    Ok(PrefixReport {
        required: req.len(),
        macho_files: count_macho(prefix, cpu),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use driver_common::targets::{lookup, rows};

    use crate::macho::tests::header;

    #[test]
    fn check_file__cpu_and_kind_mismatches_are_named() {
        let (d, p) = crate::testing::scratch("x");
        std::fs::write(&p, header(macho::CPU_TYPE_X86_64, macho::MH_DYLIB)).unwrap();
        assert_eq!(
            check_file(&p, Expect::Library, macho::CPU_TYPE_X86_64),
            None
        );
        assert_eq!(check_file(&p, Expect::Plugin, macho::CPU_TYPE_X86_64), None);
        let m = check_file(&p, Expect::Program, macho::CPU_TYPE_ARM64).unwrap();
        crate::testing::assert_mentions(&m, &["CPU x86_64 (want arm64)", "dylib (want Program)"]);
        let m = check_file(
            &d.path().join("absent"),
            Expect::Program,
            macho::CPU_TYPE_ARM64,
        )
        .unwrap();
        assert!(m.contains("absent"), "{m}");
    }

    #[test]
    fn required__per_line_and_deps() {
        let names = |v: Vec<Required>| v.into_iter().map(|r| r.path).collect::<Vec<_>>();
        let a = names(required(Line::L24_11, false));
        assert!(a.contains(&"lib/slurm/topology_default.so".to_string()));
        assert!(
            !a.iter()
                .any(|p| p.contains("certgen") || p.contains("auth_slurm"))
        );
        for p in [
            "lib/slurm/proctrack_darwin.so",
            "lib/slurm/jobacct_gather_darwin.so",
            "lib/slurm/task_darwin.so",
        ] {
            assert!(a.contains(&p.to_string()), "{p}");
        }
        let b = names(required(Line::L26_11, true));
        for p in [
            "lib/slurm/topology_flat.so",
            "lib/slurm/certgen_script.so",
            "lib/slurm/auth_slurm.so",
            "lib/slurm/serializer_json.so",
            "sbin/slurmd",
            "bin/sacctmgr",
            "lib/slurm/libslurmfull.dylib",
        ] {
            assert!(b.contains(&p.to_string()), "{p}");
        }
        // 25.05 renamed topology/default to flat and added certgen
        let c = names(required(Line::L25_05, false));
        assert!(c.contains(&"lib/slurm/topology_flat.so".to_string()));
        assert!(c.contains(&"lib/slurm/certgen_script.so".to_string()));
        assert!(!c.contains(&"lib/slurm/topology_default.so".to_string()));
    }

    /// Real zig-built Mach-O files (an executable, a dylib and a `-bundle` module through the
    /// generated wrapper): the check accepts them for their own CPU and kind only.
    #[test]
    fn check_file__real_zig_outputs() {
        let sh = xshell::Shell::new().unwrap();
        let Ok(crate::cross::zig::Zig { path: zig, version }) = crate::cross::zig::find(&sh) else {
            eprintln!("SKIPPED check_file__real_zig_outputs: the pinned zig is not installed");
            return;
        };
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("m.c"),
            "int f(void); int main(void){return f();}\nint f(void){return 0;}\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("p.c"),
            "int undefined_in_host(void); int g(void){return undefined_in_host();}\n",
        )
        .unwrap();
        for (triple, cpu, other) in [
            (
                "aarch64-apple-darwin",
                macho::CPU_TYPE_ARM64,
                macho::CPU_TYPE_X86_64,
            ),
            (
                "x86_64-apple-darwin",
                macho::CPU_TYPE_X86_64,
                macho::CPU_TYPE_ARM64,
            ),
        ] {
            let t = lookup(triple).unwrap();
            let dir = d.path().join(triple);
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            let tc =
                crate::cross::zig::write_wrappers(&dir, &zig, &version, t, &root, false).unwrap();
            let cc = &tc.cc;
            let (m, exe, so) = (d.path().join("m.c"), dir.join("m"), dir.join("p.so"));
            let p = d.path().join("p.c");
            xshell::cmd!(sh, "{cc} {m} -o {exe}").quiet().run().unwrap();
            xshell::cmd!(
                sh,
                "{cc} -bundle -Wl,-undefined -Wl,dynamic_lookup {p} -o {so}"
            )
            .quiet()
            .run()
            .unwrap();
            assert_eq!(check_file(&exe, Expect::Program, cpu), None, "{triple}");
            assert_eq!(check_file(&so, Expect::Plugin, cpu), None, "{triple}");
            assert!(check_file(&so, Expect::Program, cpu).is_some(), "{triple}");
            assert!(
                check_file(&exe, Expect::Program, other).is_some(),
                "{triple}"
            );
        }
    }

    #[test]
    fn check_prefix__lists_every_problem() {
        let d = tempfile::tempdir().unwrap();
        let t = rows::mac_arm();
        for r in required(Line::L24_11, false) {
            let p = d.path().join(&r.path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let ft = match r.expect {
                Expect::Program => macho::MH_EXECUTE,
                Expect::Library => macho::MH_DYLIB,
                Expect::Plugin => macho::MH_BUNDLE,
            };
            std::fs::write(&p, header(macho::CPU_TYPE_ARM64, ft)).unwrap();
        }
        let ok = check_prefix(d.path(), t, Line::L24_11, false).unwrap();
        assert_eq!(ok.required, required(Line::L24_11, false).len());
        assert_eq!(ok.macho_files, ok.required);
        std::fs::write(d.path().join("sbin/slurmd"), b"\x7fELF").unwrap();
        std::fs::remove_file(d.path().join("lib/slurm/hash_k12.so")).unwrap();
        match check_prefix(d.path(), t, Line::L24_11, false) {
            Err(Error::MachO { problems, .. }) => {
                assert!(problems.contains("sbin/slurmd"), "{problems}");
                assert!(problems.contains("hash_k12.so"), "{problems}");
                assert_eq!(problems.lines().count(), 2, "{problems}");
            }
            other => panic!("{other:?}"),
        }
        let x86 = rows::mac_x86();
        assert!(check_prefix(d.path(), x86, Line::L24_11, false).is_err());
    }
}
