//! The combined prefix (`include/`, `lib/`, `lib/pkgconfig/`) assembled from the
//! per-library installations, and the checks run on it: every archive member is a 64-bit
//! Mach-O object for the target's CPU, and a small C program using json-c, libjwt, hwloc
//! and libcrypto links for the target with the same flags Slurm's configure will use.

use super::macho::{self, CPU_ARM64, CPU_X86_64, Kind};
use super::recipes::copy_tree;
use super::tools::CrossTools;
use crate::error::{Error, Result};
use crate::fetch::archive::Staging;
use crate::targets::Target;
use std::fs;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// Rewrites `old` to `new` in every `.pc` file below `<dir>/lib/pkgconfig`.
pub fn relocate_pc_files(dir: &Path, old: &Path, new: &Path) -> Result<()> {
    let pc = dir.join("lib/pkgconfig");
    let Ok(rd) = fs::read_dir(&pc) else {
        return Ok(());
    };
    let (old, new) = (old.display().to_string(), new.display().to_string());
    for e in rd.filter_map(|e| e.ok()) {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "pc") {
            let text = fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
            fs::write(&p, text.replace(&old, &new)).map_err(|e| Error::io(&p, e))?;
        }
    }
    Ok(())
}

/// Builds `<prefix>` from `pkgs` (name, installed directory) in a staging directory beside
/// it, then replaces any old prefix with a rename. libtool `.la` files are dropped (they
/// name build paths and would make Slurm's libtool chase them).
pub fn assemble(prefix: &Path, pkgs: &[(String, PathBuf)], stamp: &str) -> Result<()> {
    let parent = prefix
        .parent()
        .ok_or_else(|| Error::Unsupported(format!("{}: no parent", prefix.display())))?;
    let staging = Staging::new(parent, "prefix")?;
    let out = staging.dir.join("prefix");
    for (_, dir) in pkgs {
        for sub in ["include", "lib"] {
            if dir.join(sub).is_dir() {
                copy_tree(&dir.join(sub), &out.join(sub))?;
            }
        }
        relocate_pc_files(&out, dir, prefix)?;
    }
    remove_la_files(&out.join("lib"))?;
    let stamp_file = out.join(super::STAMP);
    fs::write(&stamp_file, stamp).map_err(|e| Error::io(&stamp_file, e))?;
    if prefix.exists() {
        let old = staging.dir.join("old");
        fs::rename(prefix, &old).map_err(|e| Error::io(prefix, e))?;
    }
    fs::rename(&out, prefix).map_err(|e| Error::io(prefix, e))
}

fn remove_la_files(lib: &Path) -> Result<()> {
    let Ok(rd) = fs::read_dir(lib) else {
        return Ok(());
    };
    for e in rd.filter_map(|e| e.ok()) {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "la") {
            fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
        }
    }
    Ok(())
}

/// The Mach-O CPU type of an Apple target.
pub fn cputype(target: &Target) -> Result<u32> {
    match target.rust {
        "aarch64-apple-darwin" => Ok(CPU_ARM64),
        "x86_64-apple-darwin" => Ok(CPU_X86_64),
        other => Err(Error::Unsupported(format!(
            "deps: {other} is not an Apple target"
        ))),
    }
}

/// Checks every `lib/*.a` in `prefix`: each object member is 64-bit Mach-O for `target`.
/// Returns (archive name, member count) for the report.
pub fn check_archives(prefix: &Path, target: &Target) -> Result<Vec<(String, usize)>> {
    let want = cputype(target)?;
    let lib = prefix.join("lib");
    let mut names: Vec<PathBuf> = fs::read_dir(&lib)
        .map_err(|e| Error::io(&lib, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "a"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for a in names {
        let members = macho::archive_members(&a)?;
        let bad: Vec<String> = members
            .iter()
            .filter(|m| m.kind != Kind::MachO64 { cputype: want })
            .map(|m| format!("{} ({:?})", m.name, m.kind))
            .collect();
        if members.is_empty() || !bad.is_empty() {
            return Err(Error::Unsupported(format!(
                "deps: {} is not all 64-bit Mach-O for {}: {} members, wrong: [{}]",
                a.display(),
                target.rust,
                members.len(),
                bad.join(", ")
            )));
        }
        let name = a
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push((name, members.len()));
    }
    Ok(out)
}

/// A C program that calls into each library the way Slurm does.
pub const SMOKE_C: &str = r#"#include <stdio.h>
#include <string.h>
#include <json-c/json.h>
#include <jwt.h>
#include <hwloc.h>
#include <openssl/crypto.h>

int main(void)
{
	hwloc_topology_t topo;
	jwt_t *jwt = NULL;
	unsigned char key[32];
	char *token;
	struct json_object *o = json_tokener_parse("{\"a\":1}");

	memset(key, 7, sizeof(key));
	if (hwloc_topology_init(&topo) || hwloc_topology_load(topo))
		return 1;
	printf("cores %d\n", hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE));
	hwloc_topology_destroy(topo);
	if (jwt_new(&jwt) || jwt_set_alg(jwt, JWT_ALG_HS256, key, sizeof(key)) ||
	    jwt_add_grant(jwt, "sun", "slurm"))
		return 2;
	token = jwt_encode_str(jwt);
	printf("%s %s %s\n", token, json_object_to_json_string(o),
	       OpenSSL_version(OPENSSL_VERSION));
	jwt_free_str(token);
	jwt_free(jwt);
	json_object_put(o);
	return 0;
}
"#;

/// Links [`SMOKE_C`] for the target against `prefix` with `ldflags` and `libs` (what Slurm's
/// configure gets), in a scratch directory, and checks the result is a Mach-O executable
/// for the target's CPU. Proves the archives are complete (no missing transitive symbol).
pub fn link_smoke(
    sh: &Shell,
    prefix: &Path,
    extra_prefixes: &[PathBuf],
    target: &Target,
    tools: &CrossTools,
    libs: &[String],
) -> Result<PathBuf> {
    let staging = Staging::new(prefix.parent().unwrap_or(prefix), "smoke")?;
    let c = staging.dir.join("smoke.c");
    fs::write(&c, SMOKE_C).map_err(|e| Error::io(&c, e))?;
    let exe = staging.dir.join("smoke");
    let cc = &tools.cc;
    let cflags = &tools.cflags;
    let all: Vec<&Path> = std::iter::once(prefix)
        .chain(extra_prefixes.iter().map(PathBuf::as_path))
        .collect();
    let inc: Vec<String> = all
        .iter()
        .map(|p| format!("-I{}", p.join("include").display()))
        .collect();
    let libdir: Vec<String> = all
        .iter()
        .map(|p| format!("-L{}", p.join("lib").display()))
        .collect();
    let out = cmd!(
        sh,
        "{cc} {cflags...} {inc...} -o {exe} {c} {libdir...} -ljson-c -ljwt -lhwloc {libs...}"
    )
    .quiet()
    .ignore_status()
    .output()?;
    if !out.status.success() {
        return Err(Error::Command {
            step: "deps: linking a test program against the prefix".into(),
            program: cc.display().to_string(),
            detail: crate::fetch::stderr_tail(&out.stderr, 20),
        });
    }
    let kind = macho::file_kind(&exe)?;
    let want = cputype(target)?;
    if kind != (Kind::MachO64 { cputype: want }) {
        return Err(Error::Unsupported(format!(
            "deps: the test program is {kind:?}, not a Mach-O executable for {}",
            target.rust
        )));
    }
    let kept = prefix.parent().unwrap_or(prefix).join("smoke");
    fs::rename(&exe, &kept).map_err(|e| Error::io(&kept, e))?;
    Ok(kept)
}

#[cfg(test)]
mod tests {
    #![allow(non_snake_case)]
    use super::*;

    #[test]
    fn relocate_pc_files__rewrites_absolute_and_prefix_lines() {
        let d = tempfile::tempdir().unwrap();
        let pc = d.path().join("lib/pkgconfig");
        fs::create_dir_all(&pc).unwrap();
        fs::write(
            pc.join("json-c.pc"),
            "prefix=/old/p\nlibdir=/old/p/lib\nLibs: -L${libdir} -ljson-c\n",
        )
        .unwrap();
        fs::write(pc.join("other.txt"), "/old/p").unwrap();
        relocate_pc_files(d.path(), Path::new("/old/p"), Path::new("/new")).unwrap();
        assert_eq!(
            fs::read_to_string(pc.join("json-c.pc")).unwrap(),
            "prefix=/new\nlibdir=/new/lib\nLibs: -L${libdir} -ljson-c\n"
        );
        assert_eq!(fs::read_to_string(pc.join("other.txt")).unwrap(), "/old/p");
    }

    #[test]
    fn assemble__merges_drops_la_replaces_old_prefix_atomically() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("pkgs/a");
        let b = d.path().join("pkgs/b");
        for (p, f) in [(&a, "liba.a"), (&b, "libb.a")] {
            fs::create_dir_all(p.join("lib/pkgconfig")).unwrap();
            fs::create_dir_all(p.join("include")).unwrap();
            fs::write(p.join("lib").join(f), "x").unwrap();
        }
        fs::write(a.join("lib/liba.la"), "libdir=/x").unwrap();
        fs::write(
            b.join("lib/pkgconfig/b.pc"),
            format!("prefix={}\n", b.display()),
        )
        .unwrap();
        let prefix = d.path().join("prefix");
        fs::create_dir_all(prefix.join("lib")).unwrap();
        fs::write(prefix.join("lib/stale.a"), "x").unwrap();
        let pkgs = vec![("a".to_string(), a), ("b".to_string(), b)];
        assemble(&prefix, &pkgs, "stamp-1").unwrap();
        let mut libs: Vec<String> = fs::read_dir(prefix.join("lib"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        libs.sort();
        assert_eq!(libs, ["liba.a", "libb.a", "pkgconfig"]);
        assert_eq!(
            fs::read_to_string(prefix.join("lib/pkgconfig/b.pc")).unwrap(),
            format!("prefix={}\n", prefix.display())
        );
        assert_eq!(
            fs::read_to_string(prefix.join(super::super::STAMP)).unwrap(),
            "stamp-1"
        );
        let left: Vec<String> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn check_archives__accepts_zig_arm64_objects_and_rejects_another_cpu() {
        let d = tempfile::tempdir().unwrap();
        let t = crate::targets::lookup("aarch64-apple-darwin").unwrap();
        let Some(tools) = super::super::tools::tests::zig_or_skip(&d.path().join("tools"), t.rust)
        else {
            return;
        };
        let sh = Shell::new().unwrap();
        let prefix = d.path().join("prefix");
        fs::create_dir_all(prefix.join("lib")).unwrap();
        let c = d.path().join("a_long_object_file_name.c");
        fs::write(&c, "int deps_probe(int x) { return x + 1; }\n").unwrap();
        let o = d.path().join("a_long_object_file_name.o");
        let (cc, ar) = (&tools.cc, &tools.ar);
        cmd!(sh, "{cc} -c -fPIC -o {o} {c}").quiet().run().unwrap();
        let a = prefix.join("lib/libprobe.a");
        cmd!(sh, "{ar} rcs {a} {o}").quiet().run().unwrap();
        assert_eq!(
            check_archives(&prefix, t).unwrap(),
            vec![("libprobe.a".to_string(), 1)]
        );
        let x86 = crate::targets::lookup("x86_64-apple-darwin").unwrap();
        let e = check_archives(&prefix, x86).unwrap_err().to_string();
        assert!(e.contains("a_long_object_file_name.o"), "{e}");
    }
}
