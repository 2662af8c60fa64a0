//! The combined prefix (`include/`, `lib/`, `lib/pkgconfig/`) assembled from the
//! per-library installations, and the checks run on it: every archive member is a 64-bit
//! Mach-O object for the target's CPU, and a small C program using json-c, libjwt, hwloc
//! and libcrypto links for the target with the same flags Slurm's configure will use.

use super::tools::CrossTools;
use crate::macho::{self, Kind};
use driver_common::error::{Error, Result};
use driver_common::targets::Target;
use driver_common::util::fs::Staging;
use std::fs;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// The stamp file inside each `pkgs/<name>` and inside the prefix.
pub const STAMP: &str = ".deps-stamp";

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
                driver_common::util::fs::copy_into(&dir.join(sub), &out.join(sub), &[])?;
            }
        }
        relocate_pc_files(&out, dir, prefix)?;
    }
    remove_la_files(&out.join("lib"))?;
    let stamp_file = out.join(STAMP);
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

/// The `lib*.a` files directly in `dir`, sorted.
pub fn archives_in(dir: &Path) -> Result<Vec<PathBuf>> {
    driver_common::util::fs::files_with_extension(dir, "a")
}

/// Merges the members of `others` into `archive` (an `ar` MRI script: CREATE, ADDLIB each,
/// SAVE), written beside it and renamed over it.
pub fn merge_archives(sh: &Shell, ar: &Path, archive: &Path, others: &[PathBuf]) -> Result<()> {
    let tmp = archive.with_extension("merge.a");
    let mut script = format!("CREATE {}\nADDLIB {}\n", tmp.display(), archive.display());
    for o in others {
        script.push_str(&format!("ADDLIB {}\n", o.display()));
    }
    script.push_str("SAVE\nEND\n");
    let out = cmd!(sh, "{ar} -M")
        .stdin(&script)
        .quiet()
        .ignore_status()
        .output()?;
    if !out.status.success() {
        let _ = fs::remove_file(&tmp);
        return Err(Error::Command {
            step: format!("deps: merging archives into {}", archive.display()),
            program: ar.display().to_string(),
            detail: driver_common::util::process::tail(&out.stderr, 10),
        });
    }
    fs::rename(&tmp, archive).map_err(|e| Error::io(archive, e))
}

/// Checks every `lib/*.a` in `prefix`: each object member is 64-bit Mach-O for `target`.
/// Returns (archive name, member count) for the report.
pub fn check_archives(prefix: &Path, target: &Target) -> Result<Vec<(String, usize)>> {
    let want = macho::cpu_type(target)?;
    let names = archives_in(&prefix.join("lib"))?;
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

/// Programs that call into each library the way Slurm's plugins do, one per Slurm image
/// that links it: jansson (inside libjwt's users) and json-c both define `json_object_get`
/// and friends, so they must never share one image. Slurm keeps them apart
/// (`auth_slurm.so` has libjwt + jansson, `serializer_json.so` has json-c); a single test
/// program with both fails with duplicate symbols.
pub const SMOKES: &[(&str, &str, &str)] = &[
    ("jwt", "-ljwt", SMOKE_JWT),
    ("json", "-ljson-c", SMOKE_JSON),
    ("hwloc", "-lhwloc", SMOKE_HWLOC),
];

const SMOKE_JWT: &str = r#"#include <stdio.h>
#include <string.h>
#include <jwt.h>
#include <openssl/crypto.h>

int main(void)
{
	jwt_t *jwt = NULL, *back = NULL;
	unsigned char key[32];
	char *token;

	memset(key, 7, sizeof(key));
	if (jwt_new(&jwt) || jwt_set_alg(jwt, JWT_ALG_HS256, key, sizeof(key)) ||
	    jwt_add_grant(jwt, "sun", "slurm"))
		return 2;
	token = jwt_encode_str(jwt);
	if (!token || jwt_decode(&back, token, key, sizeof(key)))
		return 3;
	printf("%s %s %s\n", token, jwt_get_grant(back, "sun"),
	       OpenSSL_version(OPENSSL_VERSION));
	jwt_free_str(token);
	jwt_free(back);
	jwt_free(jwt);
	return 0;
}
"#;

const SMOKE_JSON: &str = r#"#include <stdio.h>
#include <json-c/json.h>

int main(void)
{
	struct json_object *o = json_tokener_parse("{\"a\":1}");

	if (!o)
		return 1;
	printf("%s\n", json_object_to_json_string(o));
	json_object_put(o);
	return 0;
}
"#;

const SMOKE_HWLOC: &str = r#"#include <stdio.h>
#include <hwloc.h>

int main(void)
{
	hwloc_topology_t topo;

	if (hwloc_topology_init(&topo) || hwloc_topology_load(topo))
		return 1;
	printf("cores %d\n", hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE));
	hwloc_topology_destroy(topo);
	return 0;
}
"#;

/// Links each of [`SMOKES`] for the target against `prefix` (and `extra_prefixes`) with
/// its single `-l` (as Slurm's configure tests link), in a scratch directory, checks that
/// each result is a Mach-O executable for the target's CPU, and moves them to
/// `<out>/smoke-<name>`. Proves each archive is complete (no transitive symbol missing).
pub fn link_smoke(
    sh: &Shell,
    prefix: &Path,
    extra_prefixes: &[PathBuf],
    target: &Target,
    tools: &CrossTools,
    out: &Path,
) -> Result<Vec<PathBuf>> {
    let staging = Staging::new(out, "smoke")?;
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
    let want = macho::cpu_type(target)?;
    let mut kept = Vec::new();
    for (name, lib, text) in SMOKES {
        let c = staging.dir.join(format!("{name}.c"));
        fs::write(&c, text).map_err(|e| Error::io(&c, e))?;
        let exe = staging.dir.join(name);
        let (inc, libdir) = (&inc, &libdir);
        let res = cmd!(
            sh,
            "{cc} {cflags...} {inc...} -o {exe} {c} {libdir...} {lib}"
        )
        .quiet()
        .ignore_status()
        .output()?;
        if !res.status.success() {
            return Err(Error::Command {
                step: format!("deps: linking the {name} test program against the prefix"),
                program: cc.display().to_string(),
                detail: driver_common::util::process::tail(&res.stderr, 20),
            });
        }
        let kind = macho::file_kind(&exe)?;
        if kind != (Kind::MachO64 { cputype: want }) {
            return Err(Error::Unsupported(format!(
                "deps: the {name} test program is {kind:?}, not a Mach-O executable for {}",
                target.rust
            )));
        }
        let dest = out.join(format!("smoke-{name}"));
        fs::rename(&exe, &dest).map_err(|e| Error::io(&dest, e))?;
        kept.push(dest);
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use driver_common::targets::rows;

    #[test]
    fn relocate_pc_files__rewrites_absolute_and_prefix_lines() {
        let (d, pc) = crate::testing::scratch("lib/pkgconfig");
        crate::testing::write(
            &pc.join("json-c.pc"),
            "prefix=/old/p\nlibdir=/old/p/lib\nLibs: -L${libdir} -ljson-c\n",
        );
        crate::testing::write(&pc.join("other.txt"), "/old/p");
        relocate_pc_files(d.path(), Path::new("/old/p"), Path::new("/new")).unwrap();
        crate::testing::assert_file(
            &pc.join("json-c.pc"),
            "prefix=/new\nlibdir=/new/lib\nLibs: -L${libdir} -ljson-c\n",
        );
        crate::testing::assert_file(&pc.join("other.txt"), "/old/p");
    }

    #[test]
    fn assemble__merges_drops_la_replaces_old_prefix_atomically() {
        let (d, a) = crate::testing::scratch("pkgs/a");
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
        crate::testing::assert_file(
            &prefix.join("lib/pkgconfig/b.pc"),
            &format!("prefix={}\n", prefix.display()),
        );
        crate::testing::assert_file(&prefix.join(STAMP), "stamp-1");
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
        let t = rows::mac_arm();
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
        let x86 = rows::mac_x86();
        let e = check_archives(&prefix, x86).unwrap_err().to_string();
        assert!(e.contains("a_long_object_file_name.o"), "{e}");

        // Bundling: another archive's members merged in (libjwt.a + jansson + libcrypto).
        let c2 = d.path().join("second.c");
        fs::write(&c2, "int deps_second(void) { return 2; }\n").unwrap();
        let o2 = d.path().join("second.o");
        cmd!(sh, "{cc} -c -fPIC -o {o2} {c2}")
            .quiet()
            .run()
            .unwrap();
        let other = d.path().join("libother.a");
        cmd!(sh, "{ar} rcs {other} {o2}").quiet().run().unwrap();
        merge_archives(&sh, ar, &a, &[other]).unwrap();
        let names: Vec<String> = macho::archive_members(&a)
            .unwrap()
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(names, ["a_long_object_file_name.o", "second.o"]);
        assert!(!a.with_extension("merge.a").exists());
        let e = merge_archives(&sh, ar, &a, &[d.path().join("missing.a")]).unwrap_err();
        assert!(e.to_string().contains("merging archives"), "{e}");
    }
}
