//! The linkage facts of one binary (ELF or Mach-O), read with the `object` crate: its
//! imports (undefined symbols, weak or not), its exports, the libraries it loads and its run
//! paths.
//!
//! * ELF: the dynamic symbol table (`.dynsym`): undefined entries are imports (`STB_WEAK` ones
//!   are weak), defined entries of default or protected visibility are exports (symbol
//!   versions are ignored); `DT_NEEDED`, `DT_RPATH` and `DT_RUNPATH` from the dynamic table.
//! * Mach-O (thin, 64-bit): the symbol table: undefined external entries are imports,
//!   defined external entries that are not private-extern are exports. An import is weak as
//!   dyld sees it: by the weak-import flag of its binds (`LC_DYLD_INFO` binds and lazy binds)
//!   or of its chained-fixups import (`LC_DYLD_CHAINED_FIXUPS`, ld64's default); a symbol
//!   without either falls back to the symbol table's `N_WEAK_REF`. `LC_LOAD_DYLIB` (and its
//!   weak, re-export, lazy and upward forms; `LC_LOAD_WEAK_DYLIB` may be absent at run
//!   time) and `LC_RPATH` from the load
//!   commands. Names keep Mach-O's leading underscore, as the SDK's `.tbd` lists do.

use driver_common::error::{Error, Result};
use object::elf;
use object::macho;
use object::read::elf::{ElfFile, FileHeader};
use object::read::macho::{LoadCommandVariant, MachHeader, MachOFile};
use object::{Endianness, FileKind, Object, ObjectSymbol, SymbolScope};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Elf,
    MachO,
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Format::Elf => "ELF",
            Format::MachO => "Mach-O",
        })
    }
}

/// One undefined symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    pub name: String,
    /// A weak reference: the process loads even when nothing defines it.
    pub weak: bool,
}

/// A library a binary loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needed {
    /// `DT_NEEDED` name or Mach-O install name (`@rpath/...`, an absolute path, ...).
    pub name: String,
    /// `LC_LOAD_WEAK_DYLIB`: dyld tolerates its absence.
    pub optional: bool,
}

#[derive(Debug)]
pub struct Image {
    pub path: PathBuf,
    pub format: Format,
    pub arch: object::Architecture,
    pub executable: bool,
    pub imports: Vec<Import>,
    pub exports: HashSet<String>,
    pub needed: Vec<Needed>,
    /// `DT_RPATH`/`DT_RUNPATH` entries or `LC_RPATH`s, unexpanded (`$ORIGIN`, `@loader_path`).
    pub rpaths: Vec<String>,
}

impl Image {
    /// Read `path`. `Ok(None)`: readable, but not an ELF or thin 64-bit Mach-O file (a script,
    /// a static archive, a libtool `.la`).
    pub fn read(path: &Path) -> Result<Option<Image>> {
        let data = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Image::parse(path, &data)
    }

    pub fn parse(path: &Path, data: &[u8]) -> Result<Option<Image>> {
        let image = match FileKind::parse(data) {
            Ok(FileKind::Elf64) => elf_image::<elf::FileHeader64<Endianness>>(path, data),
            Ok(FileKind::Elf32) => elf_image::<elf::FileHeader32<Endianness>>(path, data),
            Ok(FileKind::MachO64) => macho_image(path, data),
            Ok(FileKind::MachOFat32 | FileKind::MachOFat64) => {
                return Err(Error::File {
                    path: path.to_path_buf(),
                    problem: "universal (fat) Mach-O file: audit one architecture at a time \
                             (lipo -thin ARCH)"
                        .into(),
                });
            }
            Ok(_) | Err(_) => return Ok(None),
        };
        image.map(Some).map_err(|e| Error::File {
            path: path.to_path_buf(),
            problem: format!("malformed binary: {e}"),
        })
    }
}

fn utf8(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Undefined non-local symbols are imports (weak ones weak); defined symbols of dynamic
/// scope (default or protected visibility, not private-extern) are exports.
fn imports_and_exports<'data, S: ObjectSymbol<'data>>(
    symbols: impl Iterator<Item = S>,
) -> (Vec<Import>, HashSet<String>) {
    let mut imports = Vec::new();
    let mut exports = HashSet::new();
    for sym in symbols {
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() {
            continue;
        }
        if sym.is_undefined() {
            if !sym.is_local() {
                imports.push(Import {
                    name: name.to_string(),
                    weak: sym.is_weak(),
                });
            }
        } else if sym.scope() == SymbolScope::Dynamic {
            exports.insert(name.to_string());
        }
    }
    (imports, exports)
}

fn elf_image<H: FileHeader<Endian = Endianness>>(
    path: &Path,
    data: &[u8],
) -> object::Result<Image> {
    let file = ElfFile::<H>::parse(data)?;
    let (imports, exports) = imports_and_exports(file.dynamic_symbols());
    let mut needed = Vec::new();
    let mut rpath = Vec::new();
    let mut runpath = Vec::new();
    if let Ok(table) = file.elf_dynamic_table() {
        for d in table.iter() {
            let text = || d.string(table.strings()).map(utf8);
            match d.tag {
                elf::DT_NEEDED => needed.push(Needed {
                    name: text()?,
                    optional: false,
                }),
                elf::DT_RPATH => rpath.extend(text()?.split(':').map(String::from)),
                elf::DT_RUNPATH => runpath.extend(text()?.split(':').map(String::from)),
                _ => {}
            }
        }
    }
    // ld.so ignores DT_RPATH when DT_RUNPATH is present.
    let rpaths = if runpath.is_empty() { rpath } else { runpath };
    let executable = file.elf_header().e_type(file.endian()) == elf::ET_EXEC
        || (file.elf_header().e_type(file.endian()) == elf::ET_DYN && has_interp(&file));
    Ok(Image {
        path: path.to_path_buf(),
        format: Format::Elf,
        arch: file.architecture(),
        executable,
        imports,
        exports,
        needed,
        rpaths,
    })
}

/// A position-independent executable is `ET_DYN` with a `PT_INTERP` program header.
fn has_interp<H: FileHeader<Endian = Endianness>>(file: &ElfFile<'_, H>) -> bool {
    use object::read::elf::ProgramHeader;
    let endian = file.endian();
    file.elf_program_headers()
        .iter()
        .any(|p| p.p_type(endian) == elf::PT_INTERP)
}

fn macho_image(path: &Path, data: &[u8]) -> object::Result<Image> {
    let file = MachOFile::<macho::MachHeader64<Endianness>>::parse(data)?;
    let endian = file.endian();
    let (mut imports, exports) = imports_and_exports(file.symbols());
    let mut needed = Vec::new();
    let mut rpaths = Vec::new();
    // What dyld acts on: each bound symbol's weak-import flag in the bind information (classic
    // binds and lazy binds) or the chained-fixups imports. A symbol bound both ways is weak
    // only if every bind is.
    let mut bound_weak: HashMap<String, bool> = HashMap::new();
    let mut note = |name: &[u8], weak: bool| {
        bound_weak
            .entry(utf8(name))
            .and_modify(|w| *w &= weak)
            .or_insert(weak);
    };
    let mut commands = file.macho_load_commands()?;
    while let Some(cmd) = commands.next()? {
        match cmd.variant()? {
            LoadCommandVariant::DyldInfo(info) => {
                let ptr = 8;
                for mut binds in [
                    info.binds(endian, data, ptr)?,
                    info.lazy_binds(endian, data, ptr)?,
                ] {
                    while let Some(b) = binds.next()? {
                        note(
                            b.symbol,
                            b.flags.intersects(macho::BIND_SYMBOL_FLAGS_WEAK_IMPORT),
                        );
                    }
                }
            }
            LoadCommandVariant::LinkeditData(l) if cmd.cmd() == macho::LC_DYLD_CHAINED_FIXUPS => {
                let fixups = l.chained_fixups(endian, data)?;
                let mut imports = fixups.imports(endian)?;
                while let Some(i) = imports.next()? {
                    note(i.name, i.weak_import);
                }
            }
            LoadCommandVariant::Dylib(d) => needed.push(Needed {
                name: utf8(cmd.string(endian, d.dylib.name)?),
                optional: cmd.cmd() == macho::LC_LOAD_WEAK_DYLIB,
            }),
            LoadCommandVariant::Rpath(r) => rpaths.push(utf8(cmd.string(endian, r.path)?)),
            _ => {}
        }
    }
    for i in &mut imports {
        if let Some(&weak) = bound_weak.get(&i.name) {
            i.weak = weak;
        }
    }
    Ok(Image {
        path: path.to_path_buf(),
        format: Format::MachO,
        arch: file.architecture(),
        executable: file.macho_header().filetype(endian) == macho::MH_EXECUTE,
        imports,
        exports,
        needed,
        rpaths,
    })
}
