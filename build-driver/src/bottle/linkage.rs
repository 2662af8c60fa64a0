//! The install names of a keg's Mach-O files, put where Homebrew's own linkage fix leaves
//! them unchanged, and checked.
//!
//! What Homebrew does (Homebrew/brew `extend/os/mac/keg_relocate.rs` at aad366f,
//! `fix_dynamic_linkage`, run after a bottle is poured into the default cellar): a dylib's id
//! becomes `<opt prefix>/<its directory in the keg>/<basename of the old id>`; an absolute
//! dependency is left alone; an rpath is left alone unless it is in the build directory;
//! names starting with `@loader_path`/`@rpath` are never touched; `relocate_dynamic_linkage`
//! rewrites only names that start with a placeholder. So a bottle whose ids already are that
//! opt path, whose dependencies are `/usr/lib`, `/System` or the opt path, and whose rpaths are
//! `@loader_path`-relative is poured without one byte of its Mach-O files changing, and the
//! signatures made here are the ones macOS checks.
//!
//! The build (`--prefix <cellar>/<name>/<version>`) links with libtool's absolute names in
//! the Cellar keg: [`fix`] maps them as above and re-signs each file it changed.

use super::codesign;
use super::codesign::layout::{HEADER_SIZE, put_le32};
use object::LittleEndian as LE;
use object::macho;
use object::read::macho::MachHeader;
use std::path::Path;

/// Where a keg lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keg {
    /// `/opt/homebrew/Cellar/slurm-wlm/24.11.5`
    pub cellar: String,
    /// `/opt/homebrew/opt/slurm-wlm`
    pub opt: String,
}

/// The names a Mach-O file carries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    pub id: Option<String>,
    pub dylibs: Vec<String>,
    pub rpaths: Vec<String>,
}

const DYLIB_CMDS: [u32; 5] = [
    macho::LC_LOAD_DYLIB.0,
    macho::LC_LOAD_WEAK_DYLIB.0,
    macho::LC_REEXPORT_DYLIB.0,
    macho::LC_LAZY_LOAD_DYLIB.0,
    macho::LC_LOAD_UPWARD_DYLIB.0,
];

/// One load command: its type, the offset of its string (0: none) and its bytes.
struct Command {
    cmd: u32,
    str_at: usize,
    bytes: Vec<u8>,
}

impl Command {
    fn string(&self) -> Option<String> {
        if self.str_at == 0 {
            return None;
        }
        let s = self.bytes.get(self.str_at..)?;
        let end = s.iter().position(|b| *b == 0).unwrap_or(s.len());
        Some(String::from_utf8_lossy(&s[..end]).into_owned())
    }

    /// The same command with `name` as its string, padded to 8 bytes.
    fn with_string(&self, name: &str) -> Command {
        let mut bytes = self.bytes[..self.str_at].to_vec();
        bytes.extend_from_slice(name.as_bytes());
        bytes.push(0);
        bytes.resize(bytes.len().next_multiple_of(8), 0);
        let size = bytes.len() as u32;
        put_le32(&mut bytes, 4, size);
        Command {
            cmd: self.cmd,
            str_at: self.str_at,
            bytes,
        }
    }
}

fn commands(data: &[u8]) -> Result<Vec<Command>, String> {
    let header = macho::MachHeader64::<LE>::parse(data, 0)
        .map_err(|_| "not a thin 64-bit little-endian Mach-O file".to_string())?;
    let mut it = header
        .load_commands(LE, data, 0)
        .map_err(|e| format!("bad load commands: {e}"))?;
    let mut out = Vec::new();
    while let Some(lc) = it.next().map_err(|e| format!("bad load command: {e}"))? {
        let cmd = lc.cmd().0;
        let raw = lc.raw_data();
        let str_at =
            if cmd == macho::LC_ID_DYLIB.0 || DYLIB_CMDS.contains(&cmd) || cmd == macho::LC_RPATH.0
            {
                raw.get(8..12)
                    .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize)
                    .filter(|o| *o >= 12 && *o < raw.len())
                    .ok_or_else(|| format!("load command {cmd:#x} has a bad string offset"))?
            } else {
                0
            };
        out.push(Command {
            cmd,
            str_at,
            bytes: raw.to_vec(),
        });
    }
    Ok(out)
}

/// The id, dependencies and rpaths of a Mach-O file.
pub fn names(data: &[u8]) -> Result<Names, String> {
    let mut n = Names::default();
    for c in commands(data)? {
        match c.cmd {
            x if x == macho::LC_ID_DYLIB.0 => n.id = c.string(),
            x if x == macho::LC_RPATH.0 => n.rpaths.extend(c.string()),
            x if DYLIB_CMDS.contains(&x) => n.dylibs.extend(c.string()),
            _ => {}
        }
    }
    Ok(n)
}

/// Which of a file's names a rename applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Id,
    Dylib,
    Rpath,
}

/// Rewrites the strings of the id, dependency and rpath commands for which `rename` gives
/// a new name, inside the header's padding. Returns whether anything changed; the file's
/// signature is then stale (see [`fix`]).
pub fn rewrite(
    data: &mut [u8],
    rename: impl Fn(Role, &str) -> Option<String>,
) -> Result<bool, String> {
    let layout = codesign::Layout::parse(data)?;
    let mut changed = false;
    let mut out = Vec::new();
    for c in commands(data)? {
        let role = match c.cmd {
            x if x == macho::LC_ID_DYLIB.0 => Some(Role::Id),
            x if x == macho::LC_RPATH.0 => Some(Role::Rpath),
            x if DYLIB_CMDS.contains(&x) => Some(Role::Dylib),
            _ => None,
        };
        let new = match (role, c.string()) {
            (Some(r), Some(old)) => rename(r, &old).filter(|n| *n != old),
            _ => None,
        };
        match new {
            Some(name) => {
                changed = true;
                out.extend(c.with_string(&name).bytes);
            }
            None => out.extend(c.bytes),
        }
    }
    if !changed {
        return Ok(false);
    }
    let start = HEADER_SIZE;
    if start + out.len() > layout.first_section {
        return Err(format!(
            "the new load commands need {} bytes, the header has room for {}",
            out.len(),
            layout.first_section - start
        ));
    }
    let old_end = layout.commands_end;
    data[start..start + out.len()].copy_from_slice(&out);
    let end = start + out.len();
    if old_end > end {
        data[end..old_end].fill(0);
    }
    put_le32(data, 20, out.len() as u32);
    Ok(true)
}

/// The opt-link name of a file in the keg: `<opt>/<dir of rel>/<basename of name>`.
fn opt_id(keg: &Keg, rel: &Path, name: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name);
    let dir = rel
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    if dir.is_empty() {
        format!("{}/{base}", keg.opt)
    } else {
        format!("{}/{dir}/{base}", keg.opt)
    }
}

/// `@loader_path/<path from the file's directory to target>` (both relative to the keg).
fn loader_path(rel: &Path, target: &str) -> String {
    let from: Vec<_> = rel
        .parent()
        .map(|p| p.components().collect())
        .unwrap_or_default();
    let to: Vec<_> = Path::new(target).components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".into(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        "@loader_path".into()
    } else {
        format!("@loader_path/{}", parts.join("/"))
    }
}

/// The name Homebrew leaves alone for `old` in the keg file `rel` (None: keep `old`).
pub fn homebrew_name(keg: &Keg, rel: &Path, role: Role, old: &str) -> Option<String> {
    let in_keg = old
        .strip_prefix(&keg.cellar)
        .filter(|r| r.is_empty() || r.starts_with('/'))
        .map(|r| r.trim_start_matches('/'));
    match role {
        Role::Id => Some(opt_id(keg, rel, old)),
        Role::Dylib => in_keg.map(|r| format!("{}/{r}", keg.opt)),
        Role::Rpath => in_keg.map(|r| loader_path(rel, r)),
    }
}

/// Whether a name is one a poured keg may carry: `/usr/lib`, `/System`, `@loader_path`,
/// `@executable_path`, `@rpath` (ids and dependencies), or the opt link.
pub fn allowed(keg: &Keg, role: Role, name: &str) -> bool {
    let opt = name.starts_with(&format!("{}/", keg.opt));
    let system = name.starts_with("/usr/lib/") || name.starts_with("/System/");
    let relative = name.starts_with("@loader_path") || name.starts_with("@executable_path");
    match role {
        Role::Id | Role::Dylib => opt || system || relative || name.starts_with("@rpath/"),
        Role::Rpath => opt || relative,
    }
}

/// Puts every name of the keg file `rel` into Homebrew's form and re-signs the file when
/// anything changed. Returns whether it changed.
pub fn fix(keg: &Keg, rel: &Path, data: &mut Vec<u8>) -> Result<bool, String> {
    let changed = rewrite(data, |role, old| homebrew_name(keg, rel, role, old))?;
    if changed {
        let name = rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        codesign::sign(data, &name)?;
    }
    Ok(changed)
}

/// The names of a keg file that a poured keg may not carry, as `role name` lines.
pub fn violations(keg: &Keg, data: &[u8]) -> Result<Vec<String>, String> {
    let n = names(data)?;
    let mut bad = Vec::new();
    let mut check = |role: Role, name: &str| {
        if !allowed(keg, role, name) {
            bad.push(format!("{role:?} {name}"));
        }
    };
    if let Some(id) = &n.id {
        check(Role::Id, id);
    }
    n.dylibs.iter().for_each(|d| check(Role::Dylib, d));
    n.rpaths.iter().for_each(|r| check(Role::Rpath, r));
    Ok(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::zig_macho;

    fn keg() -> Keg {
        Keg {
            cellar: "/opt/homebrew/Cellar/slurm-wlm/24.11.5".into(),
            opt: "/opt/homebrew/opt/slurm-wlm".into(),
        }
    }

    #[test]
    fn homebrew_name__ids_to_opt_cellar_dependencies_to_opt_rpaths_to_loader_path() {
        let k = keg();
        let full = Path::new("lib/slurm/libslurmfull.dylib");
        let plugin = Path::new("lib/slurm/auth_slurm.so");
        let slurmd = Path::new("sbin/slurmd");
        let c = "/opt/homebrew/Cellar/slurm-wlm/24.11.5";
        assert_eq!(
            homebrew_name(
                &k,
                full,
                Role::Id,
                &format!("{c}/lib/slurm/libslurmfull.dylib")
            )
            .unwrap(),
            "/opt/homebrew/opt/slurm-wlm/lib/slurm/libslurmfull.dylib"
        );
        // libtool's relative plugin id: the basename stays, the directory is the file's.
        assert_eq!(
            homebrew_name(&k, plugin, Role::Id, ".libs/auth_slurm.so").unwrap(),
            "/opt/homebrew/opt/slurm-wlm/lib/slurm/auth_slurm.so"
        );
        assert_eq!(
            homebrew_name(
                &k,
                slurmd,
                Role::Dylib,
                &format!("{c}/lib/slurm/libslurmfull.dylib")
            )
            .unwrap(),
            "/opt/homebrew/opt/slurm-wlm/lib/slurm/libslurmfull.dylib"
        );
        assert_eq!(
            homebrew_name(&k, slurmd, Role::Dylib, "/usr/lib/libSystem.B.dylib"),
            None
        );
        assert_eq!(
            homebrew_name(&k, slurmd, Role::Rpath, &format!("{c}/lib/slurm")).unwrap(),
            "@loader_path/../lib/slurm"
        );
        assert_eq!(
            homebrew_name(&k, full, Role::Rpath, &format!("{c}/lib/slurm")).unwrap(),
            "@loader_path"
        );
        // Another version's keg is not this keg.
        assert_eq!(
            homebrew_name(&k, slurmd, Role::Dylib, &format!("{c}0/lib/x.dylib")),
            None
        );
    }

    #[test]
    fn allowed__system_opt_and_relative_only() {
        let k = keg();
        for ok in [
            "/usr/lib/libSystem.B.dylib",
            "/System/Library/Frameworks/IOKit.framework/IOKit",
            "/opt/homebrew/opt/slurm-wlm/lib/libslurm.42.dylib",
            "@loader_path/../lib/x.dylib",
            "@rpath/x.dylib",
        ] {
            assert!(allowed(&k, Role::Dylib, ok), "{ok}");
        }
        for bad in [
            "/opt/homebrew/Cellar/slurm-wlm/24.11.5/lib/libslurm.42.dylib",
            "/build/x/prefix/lib/a.dylib",
            "/opt/homebrew/opt/json-c/lib/libjson-c.dylib",
            ".libs/auth_slurm.so",
            "/opt/homebrew/opt/slurm-wlm-x/lib/a",
        ] {
            assert!(!allowed(&k, Role::Dylib, bad), "{bad}");
        }
        assert!(!allowed(&k, Role::Rpath, "/usr/lib"));
        assert!(allowed(&k, Role::Rpath, "@loader_path/../lib/slurm"));
    }

    #[test]
    fn fix__rewrites_a_cellar_id_resigns_and_a_second_fix_changes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let id = "/opt/homebrew/Cellar/slurm-wlm/24.11.5/lib/libx.dylib";
        let Some(lib) = zig_macho(
            d.path(),
            "aarch64-apple-darwin",
            "libx.dylib",
            "int f(void){return 1;}\n",
            Some(id),
        ) else {
            return;
        };
        let mut data = std::fs::read(&lib).unwrap();
        assert_eq!(names(&data).unwrap().id.as_deref(), Some(id));
        assert_eq!(violations(&keg(), &data).unwrap(), vec![format!("Id {id}")]);
        assert!(fix(&keg(), Path::new("lib/libx.dylib"), &mut data).unwrap());
        assert_eq!(
            names(&data).unwrap().id.as_deref(),
            Some("/opt/homebrew/opt/slurm-wlm/lib/libx.dylib")
        );
        assert!(
            names(&data)
                .unwrap()
                .dylibs
                .iter()
                .any(|d| d.starts_with("/usr/lib/libSystem"))
        );
        assert!(violations(&keg(), &data).unwrap().is_empty());
        codesign::verify(&data).unwrap();
        let before = data.clone();
        assert!(!fix(&keg(), Path::new("lib/libx.dylib"), &mut data).unwrap());
        assert_eq!(data, before);
        // A name longer than the header's padding is refused, the file left as it was.
        let long = format!("/opt/{}", "x".repeat(70_000));
        let e = rewrite(&mut data, |r, _| (r == Role::Id).then(|| long.clone())).unwrap_err();
        assert!(e.contains("room"), "{e}");
        assert_eq!(data, before);
    }
}
