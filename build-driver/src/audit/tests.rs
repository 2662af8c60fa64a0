//! The audit against tiny synthetic prefixes built at test time: the proof of concept's
//! failure class (a plugin loaded by slurmd that needs a symbol only slurmctld defines) must be
//! reported for slurmd and not for slurmctld, and a weak reference must be accepted. Once as
//! ELF (the system's `cc`), once as arm64 Mach-O (zig, `python3 -m ziglang cc -target
//! aarch64-macos`; skipped with the reason printed when zig is absent). The ELF tests are
//! compiled on Linux only (elsewhere `cc` does not make ELF).

use super::*;
use std::fs;

const LIBSLURMFULL: &str = "int slurm_common(void) { return 1; }\n";
const SLURMCTLD: &str = "extern int slurm_common(void);\n\
    int ctld_only(void) { return 2; }\n\
    int main(void) { return slurm_common() + ctld_only(); }\n";
const SLURMD: &str = "extern int slurm_common(void);\n\
    int main(void) { return slurm_common(); }\n";
/// A prep plugin (prep is loaded by slurmctld, slurmd and slurmstepd) in the shape of
/// prep/script: it calls a slurmctld-only function, libslurmfull, libc, and a weak function.
const PLUGIN: &str = "#include <stdio.h>\n\
    extern int slurm_common(void);\n\
    extern int ctld_only(void);\n\
    #ifdef __APPLE__\n\
    extern int maybe_there(void) __attribute__((weak_import));\n\
    #else\n\
    extern int maybe_there(void) __attribute__((weak));\n\
    #endif\n\
    int init(void) {\n\
        printf(\"init %d\\n\", slurm_common());\n\
        if (maybe_there) maybe_there();\n\
        return slurm_common() + ctld_only();\n\
    }\n";

/// How to compile for one object format.
struct Toolchain {
    cc: Vec<String>,
    lib: &'static str,
    shared: &'static [&'static str],
    plugin: &'static [&'static str],
    program: &'static [&'static str],
}

/// The system's `cc` builds ELF only on Linux (the ELF tests are Linux-only).
#[cfg(target_os = "linux")]
fn elf() -> Toolchain {
    Toolchain {
        cc: vec!["cc".into()],
        lib: "libslurmfull.so",
        shared: &["-shared", "-fPIC"],
        plugin: &["-shared", "-fPIC"],
        program: &["-rdynamic", "-Wl,-rpath,$ORIGIN/../lib/slurm"],
    }
}

fn macho() -> Option<Toolchain> {
    let ok = std::process::Command::new("python3")
        .args(["-m", "ziglang", "version"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| Toolchain {
        cc: ["python3", "-m", "ziglang", "cc", "-target", "aarch64-macos"]
            .map(String::from)
            .to_vec(),
        lib: "libslurmfull.dylib",
        shared: &["-shared", "-Wl,-install_name,@rpath/libslurmfull.dylib"],
        plugin: &["-shared", "-Wl,-undefined,dynamic_lookup"],
        program: &["-Wl,-rpath,@executable_path/../lib/slurm"],
    })
}

fn compile(sh: &Shell, t: &Toolchain, src_dir: &Path, src: &str, out: &Path, extra: &[String]) {
    let file = src_dir.join(format!("{}.c", out.file_name().unwrap().to_string_lossy()));
    fs::write(&file, src).unwrap();
    let (program, args) = t.cc.split_first().unwrap();
    cmd!(sh, "{program} {args...} -o {out} {file} {extra...}")
        .run()
        .unwrap();
}

/// PREFIX/sbin/{slurmctld,slurmd}, PREFIX/lib/slurm/{libslurmfull,prep_demo.so}.
/// A shell and the demo prefix built with `t` in a new temporary directory (which lives as
/// long as the second value).
fn shell_and_prefix(t: &Toolchain) -> (Shell, tempfile::TempDir, PathBuf) {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prefix = build_prefix(&sh, t, dir.path());
    (sh, dir, prefix)
}

fn build_prefix(sh: &Shell, t: &Toolchain, dir: &Path) -> PathBuf {
    let prefix = dir.join("prefix");
    let src = dir.join("src");
    for d in ["sbin", "lib/slurm", "include/slurm"] {
        fs::create_dir_all(prefix.join(d)).unwrap();
    }
    fs::create_dir_all(&src).unwrap();
    fs::write(
        prefix.join("include/slurm/slurm_version.h"),
        "#define SLURM_VERSION_NUMBER 0x180b05\n",
    )
    .unwrap();
    let s = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let lib_dir = prefix.join("lib/slurm");
    compile(
        sh,
        t,
        &src,
        LIBSLURMFULL,
        &lib_dir.join(t.lib),
        &s(t.shared),
    );
    let mut link = s(t.program);
    link.extend([format!("-L{}", lib_dir.display()), "-lslurmfull".into()]);
    compile(
        sh,
        t,
        &src,
        SLURMCTLD,
        &prefix.join("sbin/slurmctld"),
        &link,
    );
    compile(sh, t, &src, SLURMD, &prefix.join("sbin/slurmd"), &link);
    compile(
        sh,
        t,
        &src,
        PLUGIN,
        &lib_dir.join("prep_demo.so"),
        &s(t.plugin),
    );
    prefix
}

fn check_failure_class(sh: &Shell, prefix: &Path, format: Format) {
    let r = audit(sh, prefix, &[]).unwrap();
    assert_eq!(r.format, format);
    assert_eq!(r.plugins, 1);
    // slurmstepd (and the clients) are not installed: two pairs.
    assert_eq!(r.pairs, 2, "{r:?}");
    assert!(r.not_installed.contains("slurmstepd"));
    let sym = |s: &str| match format {
        Format::Elf => s.to_string(),
        Format::MachO => format!("_{s}"),
    };
    assert_eq!(r.findings.len(), 1, "{:?}", r.findings);
    let f = &r.findings[0];
    assert_eq!(
        (f.plugin.as_str(), f.program.as_str()),
        ("prep_demo.so", "slurmd")
    );
    // Only the slurmctld-only function: libslurmfull's, libc's and the weak one resolve.
    assert_eq!(
        f.symbols.iter().cloned().collect::<Vec<_>>(),
        [sym("ctld_only")]
    );
    assert!(f.libraries.is_empty(), "{:?}", f.libraries);
    assert!(!r.findings.iter().any(|f| f.program == "slurmctld"));
    // The plugin really imports the weak symbol (weak) and libc's printf (not weak): the
    // audit accepted the first as weak and resolved the second from the system library.
    let plugin = Image::read(&prefix.join("lib/slurm/prep_demo.so"))
        .unwrap()
        .unwrap();
    let import = |n: &str| plugin.imports.iter().find(|i| i.name == sym(n)).cloned();
    assert_eq!(
        import("maybe_there").map(|i| i.weak),
        Some(true),
        "{:?}",
        plugin.imports
    );
    assert_eq!(
        import("printf").map(|i| i.weak),
        Some(false),
        "{:?}",
        plugin.imports
    );
    assert_eq!(import("slurm_common").map(|i| i.weak), Some(false));
}

#[cfg(target_os = "linux")]
#[test]
fn audit__elf_reports_slurmctld_only_symbol_for_slurmd_only() {
    let (sh, _dir, prefix) = shell_and_prefix(&elf());
    check_failure_class(&sh, &prefix, Format::Elf);
}

#[test]
fn audit__macho_reports_slurmctld_only_symbol_for_slurmd_only() {
    let Some(t) = macho() else {
        println!(
            "SKIPPED: zig absent (`python3 -m ziglang version` failed); ci/setup-debian.sh installs it"
        );
        return;
    };
    let (sh, _dir, prefix) = shell_and_prefix(&t);
    check_failure_class(&sh, &prefix, Format::MachO);
}

#[cfg(target_os = "linux")]
#[test]
fn audit__unknown_type_is_reported() {
    let (sh, _dir, prefix) = shell_and_prefix(&elf());
    fs::copy(
        prefix.join("lib/slurm/prep_demo.so"),
        prefix.join("lib/slurm/widget_demo.so"),
    )
    .unwrap();
    let r = audit(&sh, &prefix, &[]).unwrap();
    assert_eq!(r.unknown, ["widget_demo.so"]);
}

#[test]
fn audit__bad_prefixes_give_clear_errors() {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let err = |path: &Path| audit(&sh, path, &[]).unwrap_err().to_string();

    let e = err(&p.join("nonexistent"));
    crate::testing::assert_mentions(&e, &["not a Slurm install prefix", "no such directory"]);
    let e = err(p);
    assert!(e.contains("no lib/slurm directory"), "{e}");

    fs::create_dir_all(p.join("lib/slurm")).unwrap();
    fs::write(p.join("lib/slurm/libslurmfull.so"), "").unwrap();
    let e = err(p);
    assert!(e.contains("no plugins"), "{e}");

    fs::write(p.join("lib/slurm/auth_demo.so"), "not a binary").unwrap();
    let e = err(p);
    assert!(e.contains("no Slurm program"), "{e}");

    fs::create_dir_all(p.join("sbin")).unwrap();
    fs::copy("/bin/true", p.join("sbin/slurmd")).unwrap();
    let e = err(p);
    assert!(e.contains("slurm_version.h"), "{e}");

    fs::create_dir_all(p.join("include/slurm")).unwrap();
    fs::write(
        p.join("include/slurm/slurm_version.h"),
        "#define SLURM_VERSION_NUMBER 0x1a0b00\n",
    )
    .unwrap();
    let e = err(p);
    crate::testing::assert_mentions(&e, &["auth_demo.so", "not an ELF or Mach-O"]);

    // A file that cannot be read (a directory in place of a plugin).
    fs::remove_file(p.join("lib/slurm/auth_demo.so")).unwrap();
    fs::create_dir(p.join("lib/slurm/auth_demo.so")).unwrap();
    let e = err(p);
    assert!(e.contains("auth_demo.so"), "{e}");
}

#[test]
fn zig_lib_dir__zon_and_json() {
    let zon = ".{\n    .zig_exe = \"/z/zig\",\n    .lib_dir = \"/z/lib\",\n}";
    assert_eq!(zig_lib_dir(zon).as_deref(), Some("/z/lib"));
    let json = "{\n \"zig_exe\": \"/z/zig\",\n \"lib_dir\": \"/y/lib\",\n}";
    assert_eq!(zig_lib_dir(json).as_deref(), Some("/y/lib"));
    assert_eq!(zig_lib_dir("nothing"), None);
}

/// The cross lane's IOKit and CoreFoundation stubs: found by the audit, named as the SDK
/// names the frameworks, and exporting exactly the shim's IOKit/CoreFoundation rows (the
/// calls gpu/apple makes, which the stand-in headers declare): a call added to one of the
/// three without the others fails here.
#[test]
fn cross_sdk_stubs__frameworks_export_what_gpu_apple_calls() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let stubs = cross_sdk_stubs(&root).unwrap();
    let mut exported = std::collections::BTreeSet::new();
    let mut names = Vec::new();
    for f in FRAMEWORKS {
        let p = stubs
            .iter()
            .find(|p| p.ends_with(format!("{f}.framework/{f}.tbd")))
            .unwrap_or_else(|| panic!("no {f}.tbd among {stubs:?}"));
        let libs = tbd::parse(&fs::read_to_string(p).unwrap(), "arm64").unwrap();
        names.push(libs[0].install_name.clone());
        exported.extend(libs[0].exports.iter().cloned());
    }
    assert_eq!(
        names,
        [
            "/System/Library/Frameworks/IOKit.framework/Versions/A/IOKit",
            "/System/Library/Frameworks/CoreFoundation.framework/Versions/A/CoreFoundation"
        ]
    );
    let rows: std::collections::BTreeSet<String> = slurm_shim::table::ENTRIES
        .iter()
        .filter(|e| e.module == "iokit" || e.module == "corefoundation")
        .map(|e| format!("_{}", e.linux_name()))
        .collect();
    assert_eq!(exported, rows);
    let mut declared = std::collections::BTreeSet::new();
    for h in ["IOKit/IOKitLib.h", "CoreFoundation/CoreFoundation.h"] {
        let text = fs::read_to_string(root.join("shim/include/emulate").join(h)).unwrap();
        let fw = root
            .join("build-driver/cross-sdk/Frameworks")
            .join(format!(
                "{}.framework/Headers",
                h.split('/').next().unwrap()
            ))
            .join(h.split('/').nth(1).unwrap());
        assert_eq!(
            fs::read_to_string(&fw).unwrap(),
            text,
            "{} is the stand-in",
            fw.display()
        );
        declared.extend(
            rows.iter()
                .filter(|r| text.contains(&format!(" {}(", &r[1..])))
                .cloned(),
        );
    }
    assert_eq!(declared, rows, "every row is declared by a stand-in header");
}
