//! Which CPU a static archive's objects are for: reads the `ar` format (System V and BSD
//! long names, as zig's and Apple's `ar` write them) and each member's Mach-O header, so
//! the driver can prove that every installed library is, say, arm64 Mach-O, with no tool
//! from the target's SDK.

use crate::error::{Error, Result};
use std::path::Path;

/// `MH_MAGIC_64`, little-endian on disk.
const MH_MAGIC_64: u32 = 0xfeed_facf;
/// `CPU_TYPE_ARM64` and `CPU_TYPE_X86_64`.
pub const CPU_ARM64: u32 = 0x0100_000c;
pub const CPU_X86_64: u32 = 0x0100_0007;

/// The CPU a member is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    MachO64 {
        cputype: u32,
    },
    /// ELF, 32-bit Mach-O or anything else that is not a 64-bit Mach-O object.
    Other,
}

/// One object in an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub kind: Kind,
}

fn kind_of(data: &[u8]) -> Kind {
    if data.len() >= 8 && u32::from_le_bytes([data[0], data[1], data[2], data[3]]) == MH_MAGIC_64 {
        Kind::MachO64 {
            cputype: u32::from_le_bytes([data[4], data[5], data[6], data[7]]),
        }
    } else {
        Kind::Other
    }
}

/// The kind of a single file (an executable or object).
pub fn file_kind(path: &Path) -> Result<Kind> {
    let data = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(kind_of(&data))
}

/// The object members of an `ar` archive (symbol tables and string tables skipped).
pub fn archive_members(path: &Path) -> Result<Vec<Member>> {
    let data = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse_archive(&data).map_err(|detail| Error::Unpack {
        what: path.display().to_string(),
        detail,
    })
}

fn parse_archive(data: &[u8]) -> std::result::Result<Vec<Member>, String> {
    const MAGIC: &[u8] = b"!<arch>\n";
    if !data.starts_with(MAGIC) {
        return Err("not an ar archive".into());
    }
    let mut pos = MAGIC.len();
    let mut out = Vec::new();
    let mut gnu_names: &[u8] = &[];
    while pos + 60 <= data.len() {
        let h = &data[pos..pos + 60];
        if &h[58..60] != b"`\n" {
            return Err(format!("bad member header at offset {pos}"));
        }
        let field = |a: usize, b: usize| String::from_utf8_lossy(&h[a..b]).trim().to_string();
        let raw_name = field(0, 16);
        let size: usize = field(48, 58)
            .parse()
            .map_err(|_| format!("bad member size at offset {pos}"))?;
        let body_start = pos + 60;
        let body_end = body_start
            .checked_add(size)
            .filter(|e| *e <= data.len())
            .ok_or_else(|| format!("member at offset {pos} runs past the end (truncated)"))?;
        let mut body = &data[body_start..body_end];
        let name = if let Some(len) = raw_name.strip_prefix("#1/") {
            // BSD: the name is the first `len` bytes of the body.
            let n: usize = len.parse().map_err(|_| "bad BSD name length".to_string())?;
            if n > body.len() {
                return Err("BSD name longer than its member".into());
            }
            let name = String::from_utf8_lossy(&body[..n])
                .trim_end_matches('\0')
                .to_string();
            body = &body[n..];
            name
        } else if raw_name == "//" {
            gnu_names = body;
            String::new()
        } else if let Some(off) = raw_name
            .strip_prefix('/')
            .and_then(|o| o.parse::<usize>().ok())
        {
            let rest = gnu_names.get(off..).unwrap_or(&[]);
            let end = rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len());
            String::from_utf8_lossy(&rest[..end])
                .trim_end_matches('/')
                .to_string()
        } else {
            raw_name.trim_end_matches('/').to_string()
        };
        let is_table = name.is_empty()
            || raw_name == "/"
            || name.starts_with("__.SYMDEF")
            || raw_name == "/SYM64/";
        if !is_table {
            out.push(Member {
                name,
                kind: kind_of(body),
            });
        }
        pos = body_end + (body_end & 1);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(non_snake_case)]
    use super::*;

    fn header(name: &str, size: usize) -> Vec<u8> {
        let h = format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644);
        assert_eq!(h.len(), 60);
        h.into_bytes()
    }

    fn macho(cpu: u32) -> Vec<u8> {
        let mut v = MH_MAGIC_64.to_le_bytes().to_vec();
        v.extend(cpu.to_le_bytes());
        v.extend([0u8; 8]);
        v
    }

    #[test]
    fn parse_archive__bsd_and_sysv_names_and_kinds() {
        let mut a = b"!<arch>\n".to_vec();
        let symdef = b"__.SYMDEF SORTED\0\0\0\0";
        a.extend(header("#1/20", symdef.len() + 4));
        a.extend(symdef);
        a.extend([0u8; 4]);
        let long = b"json_object.c.o\0";
        let body = macho(CPU_ARM64);
        a.extend(header("#1/16", long.len() + body.len()));
        a.extend(long);
        a.extend(&body);
        let elf = b"\x7fELF\x02\x01\x01\0\0";
        a.extend(header("x.o/", elf.len()));
        a.extend(elf);
        a.push(b'\n'); // odd size: padded
        let body = macho(CPU_X86_64);
        a.extend(header("y.o/", body.len()));
        a.extend(&body);
        let m = parse_archive(&a).unwrap();
        assert_eq!(
            m,
            vec![
                Member {
                    name: "json_object.c.o".into(),
                    kind: Kind::MachO64 { cputype: CPU_ARM64 }
                },
                Member {
                    name: "x.o".into(),
                    kind: Kind::Other
                },
                Member {
                    name: "y.o".into(),
                    kind: Kind::MachO64 {
                        cputype: CPU_X86_64
                    }
                },
            ]
        );
    }

    #[test]
    fn parse_archive__truncated_or_foreign_is_an_error() {
        assert!(parse_archive(b"hello").is_err());
        let mut a = b"!<arch>\n".to_vec();
        a.extend(header("a.o/", 100));
        a.extend([0u8; 10]);
        assert!(parse_archive(&a).unwrap_err().contains("truncated"));
    }
}
