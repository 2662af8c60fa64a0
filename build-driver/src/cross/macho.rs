//! The post-install check of a macOS build: every program, library and plugin a compute
//! node or a client needs is in the prefix and is a Mach-O file of the target's CPU.
//!
//! The header is read by hand: three 32-bit fields (magic, cputype, filetype) of a thin
//! Mach-O file, or the architecture table of a universal one that must contain the CPU. Programs must be `MH_EXECUTE`; libslurmfull `MH_DYLIB`; plugins
//! `MH_BUNDLE` (Apple's ld64 with libtool's `-bundle`) or `MH_DYLIB` (zig, which makes
//! `-shared` dylibs; see [`super::zig`]). Anything else (missing, ELF, wrong CPU, wrong kind)
//! is listed, and the build fails with the whole list.
//!
//! Which plugins: the brief's list, per release line. Not files, hence not checked:
//! `switch/none`, `task/none` and `jobacct_gather/none` (built into libslurmfull: neither
//! 24.11 nor 26.11 has such a plugin directory; found when the first cross install was
//! checked) and `cred/slurm` (it lives in `auth_slurm.so`). 24.11 names topology/flat
//! `topology_default`. `tls/none` exists in both lines, `certgen/script` only in 26.11.
//! auth/slurm (with cred/slurm) and serializer/json need json-c and libjwt: they are
//! required only when the build was configured with them ([`required`]'s `with_deps`).

use crate::error::{Error, Result};
use crate::targets::Target;
use std::path::{Path, PathBuf};

/// The Mach-O constants the check needs (`<mach-o/loader.h>`, `<mach/machine.h>`,
/// `<mach-o/fat.h>`: documented values).
pub mod consts {
    pub const MH_MAGIC: u32 = 0xfeed_face;
    pub const MH_MAGIC_64: u32 = 0xfeed_facf;
    pub const FAT_MAGIC: u32 = 0xcafe_babe;
    pub const FAT_MAGIC_64: u32 = 0xcafe_babf;
    pub const CPU_ARCH_ABI64: u32 = 0x0100_0000;
    pub const CPU_TYPE_X86: u32 = 7;
    pub const CPU_TYPE_ARM: u32 = 12;
    pub const CPU_TYPE_X86_64: u32 = CPU_TYPE_X86 | CPU_ARCH_ABI64;
    pub const CPU_TYPE_ARM64: u32 = CPU_TYPE_ARM | CPU_ARCH_ABI64;
    pub const MH_OBJECT: u32 = 1;
    pub const MH_EXECUTE: u32 = 2;
    pub const MH_DYLIB: u32 = 6;
    pub const MH_BUNDLE: u32 = 8;
}
use consts as macho;

/// What a Mach-O header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachInfo {
    /// `CPU_TYPE_*` of each architecture in the file (one for a thin file).
    pub cpus: Vec<u32>,
    /// `MH_EXECUTE`, `MH_DYLIB`, `MH_BUNDLE`, ... (of the first architecture).
    pub filetype: u32,
}

/// The `CPU_TYPE_*` of a macOS target.
pub fn cpu_type(target: &Target) -> Result<u32> {
    match target.rust {
        "aarch64-apple-darwin" => Ok(macho::CPU_TYPE_ARM64),
        "x86_64-apple-darwin" => Ok(macho::CPU_TYPE_X86_64),
        other => Err(Error::Unsupported(format!(
            "{other} is not a Mach-O target"
        ))),
    }
}

fn cpu_name(cpu: u32) -> String {
    match cpu {
        macho::CPU_TYPE_ARM64 => "arm64".into(),
        macho::CPU_TYPE_X86_64 => "x86_64".into(),
        macho::CPU_TYPE_X86 => "i386".into(),
        macho::CPU_TYPE_ARM => "arm".into(),
        other => format!("cpu {other:#x}"),
    }
}

fn filetype_name(t: u32) -> String {
    match t {
        macho::MH_OBJECT => "object".into(),
        macho::MH_EXECUTE => "executable".into(),
        macho::MH_DYLIB => "dylib".into(),
        macho::MH_BUNDLE => "bundle".into(),
        other => format!("filetype {other}"),
    }
}

fn word(data: &[u8], at: usize, big: bool) -> Option<u32> {
    let b: [u8; 4] = data.get(at..at + 4)?.try_into().ok()?;
    Some(if big {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    })
}

/// A thin header: magic (either byte order), cputype, cpusubtype, filetype.
fn thin(data: &[u8]) -> Option<MachInfo> {
    let big = match word(data, 0, false)? {
        macho::MH_MAGIC | macho::MH_MAGIC_64 => false,
        m if m.swap_bytes() == macho::MH_MAGIC || m.swap_bytes() == macho::MH_MAGIC_64 => true,
        _ => return None,
    };
    Some(MachInfo {
        cpus: vec![word(data, 4, big)?],
        filetype: word(data, 12, big)?,
    })
}

/// Parses a Mach-O header (thin 32/64-bit, or universal: big-endian `fat_header` then
/// `nfat_arch` entries of cputype, cpusubtype, offset, ...); `Err` says what the file is
/// instead.
pub fn inspect(data: &[u8]) -> std::result::Result<MachInfo, String> {
    if let Some(i) = thin(data) {
        return Ok(i);
    }
    let magic = word(data, 0, true).ok_or("too short for a Mach-O header")?;
    if magic == macho::FAT_MAGIC || magic == macho::FAT_MAGIC_64 {
        let n = word(data, 4, true).ok_or("truncated universal header")? as usize;
        // fat_arch is 20 bytes, fat_arch_64 32 (64-bit offset and size).
        let (size, off_at) = if magic == macho::FAT_MAGIC {
            (20, 8)
        } else {
            (32, 8)
        };
        if n == 0 || n > 64 {
            return Err(format!("universal header with {n} architectures"));
        }
        let mut info = MachInfo {
            cpus: Vec::new(),
            filetype: 0,
        };
        for i in 0..n {
            let e = 8 + i * size;
            let offset = if magic == macho::FAT_MAGIC {
                word(data, e + off_at, true).map(|o| o as usize)
            } else {
                let hi = word(data, e + off_at, true);
                let lo = word(data, e + off_at + 4, true);
                hi.zip(lo)
                    .map(|(h, l)| ((u64::from(h) << 32) | u64::from(l)) as usize)
            }
            .ok_or("truncated universal header")?;
            let slice =
                thin(data.get(offset..).unwrap_or(&[])).ok_or("a universal slice is not Mach-O")?;
            if i == 0 {
                info.filetype = slice.filetype;
            }
            info.cpus.extend(slice.cpus);
        }
        return Ok(info);
    }
    if data.starts_with(b"\x7fELF") {
        return Err("ELF, not Mach-O".into());
    }
    Err("not Mach-O".into())
}

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

const PROGRAMS: &[&str] = &[
    "sbin/slurmd",
    "sbin/slurmstepd",
    "sbin/sackd",
    "bin/sbatch",
    "bin/srun",
    "bin/salloc",
    "bin/scancel",
    "bin/sinfo",
    "bin/squeue",
    "bin/scontrol",
    "bin/sacct",
    "bin/sacctmgr",
];

/// Plugins in both lines (by file name under `lib/slurm`, without `.so`).
const PLUGINS: &[&str] = &[
    "proctrack_pgid",
    "select_cons_tres",
    "gres_gpu",
    "accounting_storage_slurmdbd",
    "mpi_pmi2",
    "prep_script",
    "hash_k12",
    "tls_none",
];

/// Plugins that need json-c and libjwt (cred/slurm is inside auth_slurm in both lines).
const DEP_PLUGINS: &[&str] = &["auth_slurm", "serializer_json"];

/// The required files for release `line` (`24.11`, `26.11`, ...).
pub fn required(line: &str, with_deps: bool) -> Vec<Required> {
    let mut v: Vec<Required> = PROGRAMS
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
    let mut plugins: Vec<&str> = PLUGINS.to_vec();
    if line == "24.11" {
        plugins.push("topology_default");
    } else {
        plugins.push("topology_flat");
        plugins.push("certgen_script");
    }
    if with_deps {
        plugins.extend(DEP_PLUGINS);
    }
    v.extend(plugins.into_iter().map(|p| Required {
        path: format!("lib/slurm/{p}.so"),
        expect: Expect::Plugin,
    }));
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
    line: &str,
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
    #![allow(non_snake_case)]
    use super::*;
    use crate::targets::lookup;

    /// A minimal thin 64-bit little-endian Mach-O header (no load commands).
    fn header(cpu: u32, filetype: u32) -> Vec<u8> {
        let mut v = Vec::new();
        for w in [macho::MH_MAGIC_64, cpu, 0, filetype, 0, 0, 0, 0] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v
    }

    #[test]
    fn inspect__thin_headers() {
        let i = inspect(&header(macho::CPU_TYPE_ARM64, macho::MH_EXECUTE)).unwrap();
        assert_eq!(
            i,
            MachInfo {
                cpus: vec![macho::CPU_TYPE_ARM64],
                filetype: macho::MH_EXECUTE
            }
        );
        let i = inspect(&header(macho::CPU_TYPE_X86_64, macho::MH_BUNDLE)).unwrap();
        assert_eq!(i.cpus, vec![macho::CPU_TYPE_X86_64]);
        assert_eq!(i.filetype, macho::MH_BUNDLE);
    }

    #[test]
    fn inspect__elf_and_garbage_are_errors() {
        let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
        elf.resize(64, 0);
        assert!(inspect(&elf).is_err());
        assert!(inspect(b"#!/bin/sh\n").is_err());
        assert!(inspect(&[]).is_err());
    }

    #[test]
    fn check_file__cpu_and_kind_mismatches_are_named() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x");
        std::fs::write(&p, header(macho::CPU_TYPE_X86_64, macho::MH_DYLIB)).unwrap();
        assert_eq!(
            check_file(&p, Expect::Library, macho::CPU_TYPE_X86_64),
            None
        );
        assert_eq!(check_file(&p, Expect::Plugin, macho::CPU_TYPE_X86_64), None);
        let m = check_file(&p, Expect::Program, macho::CPU_TYPE_ARM64).unwrap();
        assert!(
            m.contains("CPU x86_64 (want arm64)") && m.contains("dylib (want Program)"),
            "{m}"
        );
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
        let a = names(required("24.11", false));
        assert!(a.contains(&"lib/slurm/topology_default.so".to_string()));
        assert!(
            !a.iter()
                .any(|p| p.contains("certgen") || p.contains("auth_slurm"))
        );
        let b = names(required("26.11", true));
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
        let t = lookup("aarch64-apple-darwin").unwrap();
        for r in required("24.11", false) {
            let p = d.path().join(&r.path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let ft = match r.expect {
                Expect::Program => macho::MH_EXECUTE,
                Expect::Library => macho::MH_DYLIB,
                Expect::Plugin => macho::MH_BUNDLE,
            };
            std::fs::write(&p, header(macho::CPU_TYPE_ARM64, ft)).unwrap();
        }
        let ok = check_prefix(d.path(), t, "24.11", false).unwrap();
        assert_eq!(ok.required, required("24.11", false).len());
        assert_eq!(ok.macho_files, ok.required);
        std::fs::write(d.path().join("sbin/slurmd"), b"\x7fELF").unwrap();
        std::fs::remove_file(d.path().join("lib/slurm/hash_k12.so")).unwrap();
        match check_prefix(d.path(), t, "24.11", false) {
            Err(Error::MachO { problems, .. }) => {
                assert!(problems.contains("sbin/slurmd"), "{problems}");
                assert!(problems.contains("hash_k12.so"), "{problems}");
                assert_eq!(problems.lines().count(), 2, "{problems}");
            }
            other => panic!("{other:?}"),
        }
        let x86 = lookup("x86_64-apple-darwin").unwrap();
        assert!(check_prefix(d.path(), x86, "24.11", false).is_err());
    }
}
