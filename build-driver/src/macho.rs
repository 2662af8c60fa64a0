//! The driver's one Mach-O reader, on the `object` crate: the header of a thin or universal
//! file (CPU types and file type), and the members of a static archive with the CPU each is
//! for. The install check of a macOS build (`cross::macho`), the `deps` libraries' check
//! (`deps::prefix`) and the plugin-linkage audit (`audit::image`, which reads symbols and load
//! commands with the same crate) all read Mach-O through `object`; no header is parsed by
//! hand.

use driver_common::error::{Error, Result};
use driver_common::targets::Target;
use object::macho;
use object::read::archive::ArchiveFile;
use object::read::macho::{FatArch, MachHeader, MachOFatFile32, MachOFatFile64};
use object::{Endianness, FileKind};
use std::path::Path;

/// `CPU_TYPE_*` and `MH_*` file types as plain numbers (`<mach/machine.h>`,
/// `<mach-o/loader.h>`), taken from `object`'s definitions.
pub const CPU_TYPE_X86: u32 = macho::CPU_TYPE_X86.0;
pub const CPU_TYPE_X86_64: u32 = macho::CPU_TYPE_X86_64.0;
pub const CPU_TYPE_ARM: u32 = macho::CPU_TYPE_ARM.0;
pub const CPU_TYPE_ARM64: u32 = macho::CPU_TYPE_ARM64.0;
pub const MH_OBJECT: u32 = macho::MH_OBJECT.0;
pub const MH_EXECUTE: u32 = macho::MH_EXECUTE.0;
pub const MH_DYLIB: u32 = macho::MH_DYLIB.0;
pub const MH_BUNDLE: u32 = macho::MH_BUNDLE.0;

/// What a Mach-O header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachInfo {
    /// `CPU_TYPE_*` of each architecture in the file (one for a thin file).
    pub cpus: Vec<u32>,
    /// `MH_EXECUTE`, `MH_DYLIB`, `MH_BUNDLE`, ... (of the first architecture).
    pub filetype: u32,
}

/// The `CPU_TYPE_*` of a macOS target (from the target table's `-arch` name).
pub fn cpu_type(target: &Target) -> Result<u32> {
    match target.apple_arch {
        Some("arm64") => Ok(CPU_TYPE_ARM64),
        Some("x86_64") => Ok(CPU_TYPE_X86_64),
        _ => Err(Error::Unsupported(format!(
            "{} is not a Mach-O target",
            target.rust
        ))),
    }
}

/// A CPU type for messages.
pub fn cpu_name(cpu: u32) -> String {
    match cpu {
        CPU_TYPE_ARM64 => "arm64".into(),
        CPU_TYPE_X86_64 => "x86_64".into(),
        CPU_TYPE_X86 => "i386".into(),
        CPU_TYPE_ARM => "arm".into(),
        other => format!("cpu {other:#x}"),
    }
}

/// A file type for messages.
pub fn filetype_name(t: u32) -> String {
    match t {
        MH_OBJECT => "object".into(),
        MH_EXECUTE => "executable".into(),
        MH_DYLIB => "dylib".into(),
        MH_BUNDLE => "bundle".into(),
        other => format!("filetype {other}"),
    }
}

/// A thin header of either word size and byte order.
fn thin<H: MachHeader<Endian = Endianness>>(data: &[u8]) -> Option<MachInfo> {
    let h = H::parse(data, 0).ok()?;
    let endian = h.endian().ok()?;
    Some(MachInfo {
        cpus: vec![h.cputype(endian).0],
        filetype: h.filetype(endian).0,
    })
}

/// A thin file's header, or `None` when `data` is not one.
fn thin_any(data: &[u8]) -> Option<MachInfo> {
    match FileKind::parse(data).ok()? {
        FileKind::MachO32 => thin::<macho::MachHeader32<Endianness>>(data),
        FileKind::MachO64 => thin::<macho::MachHeader64<Endianness>>(data),
        _ => None,
    }
}

/// The slices of a universal file, each a thin Mach-O file.
fn fat<A: FatArch>(data: &[u8], arches: &[A]) -> std::result::Result<MachInfo, String> {
    if arches.is_empty() || arches.len() > 64 {
        return Err(format!(
            "universal header with {} architectures",
            arches.len()
        ));
    }
    let mut info = MachInfo {
        cpus: Vec::new(),
        filetype: 0,
    };
    for (i, arch) in arches.iter().enumerate() {
        let slice = arch
            .data(data)
            .map_err(|_| "truncated universal header".to_string())?;
        let slice = thin_any(slice).ok_or("a universal slice is not Mach-O")?;
        if i == 0 {
            info.filetype = slice.filetype;
        }
        info.cpus.extend(slice.cpus);
    }
    Ok(info)
}

/// Parses a Mach-O header (thin 32/64-bit of either byte order, or universal); `Err` says
/// what the file is instead.
pub fn inspect(data: &[u8]) -> std::result::Result<MachInfo, String> {
    if data.len() < 8 {
        return Err("too short for a Mach-O header".into());
    }
    match FileKind::parse(data) {
        Ok(FileKind::MachO32 | FileKind::MachO64) => {
            thin_any(data).ok_or_else(|| "truncated Mach-O header".into())
        }
        Ok(FileKind::MachOFat32) => {
            let f = MachOFatFile32::parse(data).map_err(|_| "truncated universal header")?;
            fat(data, f.arches())
        }
        Ok(FileKind::MachOFat64) => {
            let f = MachOFatFile64::parse(data).map_err(|_| "truncated universal header")?;
            fat(data, f.arches())
        }
        Ok(FileKind::Elf32 | FileKind::Elf64) => Err("ELF, not Mach-O".into()),
        _ => Err("not Mach-O".into()),
    }
}

/// The CPU a file or archive member is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    MachO64 {
        cputype: u32,
    },
    /// ELF, 32-bit Mach-O or anything else that is not a 64-bit Mach-O file.
    Other,
}

/// The kind of the bytes of a file or member.
pub fn kind_of(data: &[u8]) -> Kind {
    match FileKind::parse(data) {
        Ok(FileKind::MachO64) => thin::<macho::MachHeader64<Endianness>>(data)
            .map(|i| Kind::MachO64 { cputype: i.cpus[0] })
            .unwrap_or(Kind::Other),
        _ => Kind::Other,
    }
}

/// The kind of a single file (an executable or object).
pub fn file_kind(path: &Path) -> Result<Kind> {
    let data = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(kind_of(&data))
}

/// One object in an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub kind: Kind,
}

/// The object members of an `ar` archive (System V and BSD names, as zig's and Apple's `ar`
/// write them; symbol and name tables skipped).
pub fn archive_members(path: &Path) -> Result<Vec<Member>> {
    let data = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse_archive(&data).map_err(|detail| Error::Unpack {
        what: path.display().to_string(),
        detail,
    })
}

fn parse_archive(data: &[u8]) -> std::result::Result<Vec<Member>, String> {
    if !data.starts_with(b"!<arch>\n") {
        return Err("not an ar archive".into());
    }
    let archive = ArchiveFile::parse(data).map_err(|e| format!("not an ar archive: {e}"))?;
    let mut out = Vec::new();
    for member in archive.members() {
        let member = member.map_err(|e| format!("bad member header: {e}"))?;
        let name = String::from_utf8_lossy(member.name()).into_owned();
        let body = member
            .data(data)
            .map_err(|_| format!("member {name} runs past the end (truncated)"))?;
        out.push(Member {
            name,
            kind: kind_of(body),
        });
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal thin 64-bit little-endian Mach-O header (no load commands).
    pub(crate) fn header(cpu: u32, filetype: u32) -> Vec<u8> {
        let mut v = Vec::new();
        for w in [macho::MH_MAGIC_64, cpu, 0, filetype, 0, 0, 0, 0] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v
    }

    fn ar_header(name: &str, size: usize) -> Vec<u8> {
        let h = format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644);
        assert_eq!(h.len(), 60);
        h.into_bytes()
    }

    #[test]
    fn inspect__thin_headers_both_byte_orders() {
        let i = inspect(&header(CPU_TYPE_ARM64, MH_EXECUTE)).unwrap();
        assert_eq!(
            i,
            MachInfo {
                cpus: vec![CPU_TYPE_ARM64],
                filetype: MH_EXECUTE
            }
        );
        let i = inspect(&header(CPU_TYPE_X86_64, MH_BUNDLE)).unwrap();
        assert_eq!(i.cpus, vec![CPU_TYPE_X86_64]);
        assert_eq!(i.filetype, MH_BUNDLE);
        let mut big = Vec::new();
        for w in [macho::MH_MAGIC, CPU_TYPE_X86, 0, MH_DYLIB, 0, 0, 0] {
            big.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(
            inspect(&big).unwrap(),
            MachInfo {
                cpus: vec![CPU_TYPE_X86],
                filetype: MH_DYLIB
            }
        );
    }

    #[test]
    fn inspect__universal_lists_every_slice() {
        let (a, x) = (
            header(CPU_TYPE_ARM64, MH_DYLIB),
            header(CPU_TYPE_X86_64, MH_DYLIB),
        );
        let mut f = Vec::new();
        for w in [macho::FAT_MAGIC, 2] {
            f.extend_from_slice(&w.to_be_bytes());
        }
        let base = 8 + 2 * 20;
        for (i, (cpu, body)) in [(CPU_TYPE_ARM64, &a), (CPU_TYPE_X86_64, &x)]
            .iter()
            .enumerate()
        {
            let off = (base + i * 32) as u32;
            for w in [*cpu, 0, off, body.len() as u32, 0] {
                f.extend_from_slice(&w.to_be_bytes());
            }
        }
        f.extend(&a);
        f.extend(&x);
        let i = inspect(&f).unwrap();
        assert_eq!(i.cpus, vec![CPU_TYPE_ARM64, CPU_TYPE_X86_64]);
        assert_eq!(i.filetype, MH_DYLIB);
        f.truncate(base + 10);
        assert!(inspect(&f).is_err());
    }

    #[test]
    fn inspect__elf_and_garbage_are_errors() {
        let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
        elf.resize(64, 0);
        assert_eq!(inspect(&elf).unwrap_err(), "ELF, not Mach-O");
        assert!(inspect(b"#!/bin/sh\n").is_err());
        assert!(inspect(&[]).is_err());
    }

    #[test]
    fn parse_archive__bsd_and_sysv_names_and_kinds() {
        let mut a = b"!<arch>\n".to_vec();
        let symdef = b"__.SYMDEF SORTED\0\0\0\0";
        a.extend(ar_header("#1/20", symdef.len() + 4));
        a.extend(symdef);
        a.extend([0u8; 4]);
        let long = b"json_object.c.o\0";
        let body = header(CPU_TYPE_ARM64, MH_OBJECT);
        a.extend(ar_header("#1/16", long.len() + body.len()));
        a.extend(long);
        a.extend(&body);
        let elf = b"\x7fELF\x02\x01\x01\0\0";
        a.extend(ar_header("x.o/", elf.len()));
        a.extend(elf);
        a.push(b'\n'); // odd size: padded
        let body = header(CPU_TYPE_X86_64, MH_OBJECT);
        a.extend(ar_header("y.o/", body.len()));
        a.extend(&body);
        let m = parse_archive(&a).unwrap();
        assert_eq!(
            m,
            vec![
                Member {
                    name: "json_object.c.o".into(),
                    kind: Kind::MachO64 {
                        cputype: CPU_TYPE_ARM64
                    }
                },
                Member {
                    name: "x.o".into(),
                    kind: Kind::Other
                },
                Member {
                    name: "y.o".into(),
                    kind: Kind::MachO64 {
                        cputype: CPU_TYPE_X86_64
                    }
                },
            ]
        );
    }

    #[test]
    fn parse_archive__truncated_or_foreign_is_an_error() {
        assert!(parse_archive(b"hello").is_err());
        let mut a = b"!<arch>\n".to_vec();
        a.extend(ar_header("a.o/", 100));
        a.extend([0u8; 10]);
        assert!(parse_archive(&a).unwrap_err().contains("truncated"));
    }
}
