use super::*;
use crate::testing::write as put;
use std::fs;
use std::os::unix::fs::PermissionsExt;

const CELLAR_KEG: &str = "/opt/homebrew/Cellar/slurm-wlm/24.11.5";

fn layout() -> Layout {
    Layout::new(FORMULA, "24.11.5", "24.11", "aarch64-apple-darwin").unwrap()
}

fn pin() -> driver_common::pins::Pin {
    pinned(&crate::project_root(), "24.11.5").unwrap()
}

/// A staged install as build-slurm leaves it for the bottle: Cellar install names, an
/// rpath into the keg, libtool's relative plugin id, `.la`/`.a` files, a `.pc` file with
/// the Cellar path. `None` where zig is missing (reason printed).
fn staged(dir: &Path) -> Option<PathBuf> {
    let sh = Shell::new().unwrap();
    let zig = crate::testing::zig_or_skip()?;
    let s = dir.join("stage").join(CELLAR_KEG.trim_start_matches('/'));
    let lib = s.join("lib/slurm");
    fs::create_dir_all(&lib).unwrap();
    fs::create_dir_all(s.join("sbin")).unwrap();
    fs::create_dir_all(s.join("bin")).unwrap();
    put(&dir.join("full.c"), "int slurm_f(void){return 7;}\n");
    put(
        &dir.join("main.c"),
        "int slurm_f(void);\nint main(void){return slurm_f();}\n",
    );
    put(&dir.join("plugin.c"), "int plugin_init(void){return 0;}\n");
    let t = "aarch64-macos.12.0";
    let (full_c, main_c, plugin_c) = (dir.join("full.c"), dir.join("main.c"), dir.join("plugin.c"));
    let full = lib.join("libslurmfull.dylib");
    let id = format!("-Wl,-install_name,{CELLAR_KEG}/lib/slurm/libslurmfull.dylib");
    xshell::cmd!(
        sh,
        "{zig} cc -target {t} -g0 -shared {id} {full_c} -o {full}"
    )
    .quiet()
    .run()
    .unwrap();
    let rpath = format!("-Wl,-rpath,{CELLAR_KEG}/lib/slurm");
    let slurmd = s.join("sbin/slurmd");
    xshell::cmd!(
        sh,
        "{zig} cc -target {t} -g0 {main_c} -L{lib} -lslurmfull {rpath} -o {slurmd}"
    )
    .quiet()
    .run()
    .unwrap();
    let plugin = lib.join("auth_x.so");
    xshell::cmd!(
        sh,
        "{zig} cc -target {t} -g0 -shared -Wl,-install_name,.libs/auth_x.so {plugin_c} -o {plugin}"
    )
    .quiet()
    .run()
    .unwrap();
    for n in ["sbin/slurmstepd", "bin/sinfo", "bin/srun", "bin/sbatch"] {
        fs::copy(&slurmd, s.join(n)).unwrap();
    }
    put(&lib.join("auth_x.la"), "libdir='/x'\n");
    put(&lib.join("auth_x.a"), "!<arch>\n");
    put(
        &s.join("lib/pkgconfig/slurm.pc"),
        &format!("prefix={CELLAR_KEG}\nCflags: -I${{prefix}}/include\n"),
    );
    std::os::unix::fs::symlink("libslurmfull.dylib", lib.join("libslurmfull.so")).unwrap();
    Some(s)
}

/// A stand-in for the cross-built node tool: a small executable of `triple` that links only
/// libSystem (the real one: `node_tool`'s ignored test).
fn node_tool(dir: &Path, triple: &str) -> Option<PathBuf> {
    crate::testing::zig_macho(
        dir,
        triple,
        &format!("slurm-mac-{triple}"),
        "int main(void){return 0;}\n",
        None,
    )
}

/// [`staged`] and the arm64 and Intel node tools, or `None` where zig is missing.
fn staged_with_node_tools(dir: &Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    Some((
        staged(dir)?,
        node_tool(dir, "aarch64-apple-darwin")?,
        node_tool(dir, "x86_64-apple-darwin")?,
    ))
}

fn entries(bottle: &Path) -> Vec<(String, Vec<u8>)> {
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(
        fs::File::open(bottle).unwrap(),
    ));
    let mut out = Vec::new();
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut data).unwrap();
        out.push((e.path().unwrap().display().to_string(), data));
    }
    out
}

#[test]
fn package__homebrew_layout_fixed_names_valid_signatures_placeholders_and_formulae() {
    let d = tempfile::tempdir().unwrap();
    let (Some(stage), Some(tool)) = (
        staged(d.path()),
        node_tool(d.path(), "aarch64-apple-darwin"),
    ) else {
        return;
    };
    let out = d.path().join("out");
    let made = package(
        &crate::project_root(),
        &layout(),
        &pin(),
        &stage,
        &tool,
        &out,
    )
    .unwrap();
    assert_eq!(
        made.bottle,
        out.join("slurm-wlm--24.11.5.arm64_sonoma.bottle.tar.gz")
    );
    assert_eq!(made.report.macho_files, 8);
    let files = entries(&made.bottle);
    let get = |n: &str| {
        files
            .iter()
            .find(|(p, _)| p == &format!("slurm-wlm/24.11.5/{n}"))
            .map(|(_, d)| d.clone())
            .unwrap_or_else(|| panic!("{n} not in the bottle"))
    };
    for gone in ["lib/slurm/auth_x.la", "lib/slurm/auth_x.a"] {
        assert!(!files.iter().any(|(p, _)| p.ends_with(gone)), "{gone}");
    }
    let slurmd = get("sbin/slurmd");
    codesign::verify(&slurmd).unwrap();
    let n = linkage::names(&slurmd).unwrap();
    assert!(
        n.dylibs
            .contains(&"/opt/homebrew/opt/slurm-wlm/lib/slurm/libslurmfull.dylib".to_string()),
        "{n:?}"
    );
    assert_eq!(n.rpaths, ["@loader_path/../lib/slurm"]);
    // The node tool is in bin/, executable, signed by the bottle's signer (not zig's linker),
    // and links only the system.
    let node = get(node_tool::KEG_PATH);
    let v = codesign::verify(&node).unwrap();
    assert_eq!(
        v.flags & (codesign::consts::CS_ADHOC | codesign::consts::CS_LINKER_SIGNED),
        codesign::consts::CS_ADHOC
    );
    assert_eq!(
        linkage::names(&node).unwrap().dylibs,
        ["/usr/lib/libSystem.B.dylib"]
    );
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(
        fs::File::open(&made.bottle).unwrap(),
    ));
    let mode = ar
        .entries()
        .unwrap()
        .map(|e| e.unwrap())
        .find(|e| e.path().unwrap().ends_with(node_tool::KEG_PATH))
        .map(|e| e.header().mode().unwrap());
    assert_eq!(mode, Some(0o755));
    let plugin = get("lib/slurm/auth_x.so");
    codesign::verify(&plugin).unwrap();
    assert_eq!(
        linkage::names(&plugin).unwrap().id.as_deref(),
        Some("/opt/homebrew/opt/slurm-wlm/lib/slurm/auth_x.so")
    );
    let pc = String::from_utf8(get("lib/pkgconfig/slurm.pc")).unwrap();
    assert!(
        pc.starts_with("prefix=@@HOMEBREW_CELLAR@@/slurm-wlm/24.11.5\n"),
        "{pc}"
    );
    let receipt: serde_json::Value = serde_json::from_slice(&get("INSTALL_RECEIPT.json")).unwrap();
    let changed: Vec<&str> = receipt["changed_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(changed, ["lib/pkgconfig/slurm.pc"]);
    // The LaunchDaemon runs the root-owned copy of the keg (slurm-mac copy-keg), whose root
    // has the Homebrew prefix's length; nothing of the prefix (which its user owns) is left.
    let plist = String::from_utf8(get("org.slurm-on-mac.slurmd.plist")).unwrap();
    assert!(
        plist.contains("<string>/opt/slurmmac/opt/slurm-wlm/sbin/slurmd</string>")
            && plist.contains("/opt/slurmmac/var/log/slurm/")
            && !plist.contains("HOMEBREW")
            && !plist.contains("/opt/homebrew"),
        "{plist}"
    );
    let brew = String::from_utf8(get(".brew/slurm-wlm.rb")).unwrap();
    assert!(
        brew.contains("class SlurmWlm < Formula") && !brew.contains("bottle do"),
        "{brew}"
    );
    for needed in [
        "pour_bottle? only_if: :default_prefix",
        "name macos: \"org.slurm-on-mac.slurmd\"",
        "require_root true",
        "slurmd -C",
        "--conf-server",
        "SLURM_CONF",
        "slurm.key",
    ] {
        assert!(brew.contains(needed), "formula lacks {needed}");
    }
    // The formulae are the tap's (`cargo xtask tap`), written from the JSON.
    assert!(!out.join("slurm-wlm.rb").exists() && !out.join("slurm-wlm@24.11.rb").exists());
    let json: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(out.join("slurm-wlm--24.11.5.arm64_sonoma.bottle.json")).unwrap(),
    )
    .unwrap();
    let tag = &json["slurm-on-mac/slurm/slurm-wlm"]["bottle"]["tags"]["arm64_sonoma"];
    assert_eq!(tag["sha256"], made.sha256.as_str());
    assert_eq!(
        tag["filename"],
        "slurm-wlm-24.11.5.arm64_sonoma.bottle.tar.gz"
    );
    assert_eq!(
        json["slurm-on-mac/slurm/slurm-wlm"]["bottle"]["cellar"],
        "/opt/homebrew/Cellar"
    );
    // Every path the formula's test and service name is in the bottle.
    for n in check::NAMED {
        get(n);
    }
    // Ruby parses the keg's formula.
    let sh = Shell::new().unwrap();
    if crate::testing::have(&sh, &["ruby"]) {
        let p = d.path().join("brew.rb");
        fs::write(&p, &brew).unwrap();
        let o = xshell::cmd!(sh, "ruby -c {p}").quiet().read().unwrap();
        assert!(o.contains("Syntax OK"), "{o}");
    }
    // Reproducible: the same inputs again give the same bytes.
    let again = package(
        &crate::project_root(),
        &layout(),
        &pin(),
        &stage,
        &tool,
        &d.path().join("out2"),
    )
    .unwrap();
    assert_eq!(again.sha256, made.sha256);
    assert_eq!(
        fs::read(&again.bottle).unwrap(),
        fs::read(&made.bottle).unwrap()
    );
}

#[test]
fn check__fails_on_a_build_machine_path_a_bad_signature_and_a_cellar_name() {
    let d = tempfile::tempdir().unwrap();
    let (Some(stage), Some(tool)) = (
        staged(d.path()),
        node_tool(d.path(), "aarch64-apple-darwin"),
    ) else {
        return;
    };
    let root = crate::project_root();
    // A build-machine path (as a configure path or -rpath would leave it).
    put(
        &stage.join("share/doc/note.txt"),
        &format!("built in {}/target\n", root.display()),
    );
    let e = package(
        &root,
        &layout(),
        &pin(),
        &stage,
        &tool,
        &d.path().join("o1"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("share/doc/note.txt: build-machine path"), "{e}");
    assert!(
        !d.path()
            .join("o1/slurm-wlm--24.11.5.arm64_sonoma.bottle.tar.gz")
            .exists(),
        "nothing half-written"
    );
    fs::remove_file(stage.join("share/doc/note.txt")).unwrap();
    let l = codesign::Layout::parse(&fs::read(stage.join("bin/sinfo")).unwrap()).unwrap();
    let keg = d.path().join("keg");
    keg::assemble(&layout(), &stage, &tool, &keg, "").unwrap();
    // A flipped code byte after assembly: the signature no longer holds.
    let mut k = fs::read(keg.join("bin/sinfo")).unwrap();
    k[l.first_section + 4] ^= 0x0f;
    fs::write(keg.join("bin/sinfo"), &k).unwrap();
    fs::set_permissions(keg.join("bin/sinfo"), fs::Permissions::from_mode(0o755)).unwrap();
    receipt::write_receipt(&layout(), &keg, &[], 0).unwrap();
    let e = check::check(&root, &layout(), &keg)
        .unwrap_err()
        .to_string();
    crate::testing::assert_mentions(&e, &["bin/sinfo: signature", "does not match its hash"]);
    if codesign::SECOND_VERIFIER {
        crate::testing::assert_mentions(&e, &["rejected by both", "code digest mismatch"]);
    }
    // A Cellar dependency left in place.
    let mut k = fs::read(keg.join("bin/sinfo")).unwrap();
    k[l.first_section + 4] ^= 0x0f;
    linkage::rewrite(&mut k, |r, old| {
        (r == linkage::Role::Dylib && old.contains("libslurmfull"))
            .then(|| format!("{CELLAR_KEG}/lib/slurm/libslurmfull.dylib"))
    })
    .unwrap();
    codesign::sign(&mut k, "sinfo").unwrap();
    fs::write(keg.join("bin/sinfo"), &k).unwrap();
    let e = check::check(&root, &layout(), &keg)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bin/sinfo: install name Dylib /opt/homebrew/Cellar/"),
        "{e}"
    );
}

#[test]
fn check__fails_when_the_node_tool_is_missing_of_another_cpu_or_no_program() {
    let d = tempfile::tempdir().unwrap();
    let Some((stage, tool, intel)) = staged_with_node_tools(d.path()) else {
        return;
    };
    let root = crate::project_root();
    let keg = d.path().join("keg");
    keg::assemble(&layout(), &stage, &tool, &keg, "").unwrap();
    receipt::write_receipt(&layout(), &keg, &[], 0).unwrap();
    check::check(&root, &layout(), &keg).unwrap();
    let installed = keg.join(node_tool::KEG_PATH);
    let check_with = |data: Option<&[u8]>| {
        let _ = fs::remove_file(&installed);
        if let Some(data) = data {
            fs::write(&installed, data).unwrap();
        }
        check::check(&root, &layout(), &keg)
            .unwrap_err()
            .to_string()
    };
    let e = check_with(None);
    assert!(e.contains("bin/slurm-mac is missing"), "{e}");
    // An Intel build in an arm64 bottle, signed (zig signs arm64 images only), so that only
    // its CPU is wrong.
    let mut x86 = fs::read(&intel).unwrap();
    codesign::sign(&mut x86, "slurm-mac").unwrap();
    let e = check_with(Some(&x86));
    assert!(!e.contains("signature"), "{e}");
    crate::testing::assert_mentions(
        &e,
        &[
            "bin/slurm-mac: not a program of the bottle's CPU",
            "CPU x86_64 (want arm64)",
        ],
    );
    // A Linux build, or anything else that is no Mach-O file.
    let e = check_with(Some(b"\x7fELF\x02\x01\x01\0"));
    crate::testing::assert_mentions(&e, &["bin/slurm-mac: not a program of the bottle's CPU"]);
}

/// zig signs arm64 images only: an x86_64 node tool comes unsigned and leaves the keg signed.
#[test]
fn assemble__signs_a_node_tool_the_linker_did_not_sign() {
    let d = tempfile::tempdir().unwrap();
    let (Some(stage), Some(intel)) = (staged(d.path()), node_tool(d.path(), "x86_64-apple-darwin"))
    else {
        return;
    };
    let unsigned = codesign::verify(&fs::read(&intel).unwrap()).unwrap_err();
    assert!(unsigned.contains("not signed"), "{unsigned}");
    let keg = d.path().join("keg");
    keg::assemble(&layout(), &stage, &intel, &keg, "").unwrap();
    let installed = keg.join(node_tool::KEG_PATH);
    codesign::verify(&fs::read(&installed).unwrap()).unwrap();
    assert_eq!(
        fs::metadata(&installed).unwrap().permissions().mode() & 0o777,
        0o755
    );
}

#[test]
fn layout__apple_targets_only_and_intel_uses_usr_local() {
    let x = Layout::new(FORMULA, "24.11.5", "24.11", "x86_64-apple-darwin").unwrap();
    assert_eq!(
        (x.tag, x.keg_path().as_str()),
        ("sonoma", "/usr/local/Cellar/slurm-wlm/24.11.5")
    );
    assert_eq!(x.bottle_name(), "slurm-wlm--24.11.5.sonoma.bottle.tar.gz");
    let e = Layout::new(FORMULA, "24.11.5", "24.11", "x86_64-unknown-linux-gnu")
        .unwrap_err()
        .to_string();
    crate::testing::assert_mentions(
        &e,
        &["not an Apple target", "--target aarch64-apple-darwin"],
    );
    let e = Layout::new(FORMULA, "24.11.5", "24.11", "arm64-mac")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown target triple"), "{e}");
    let e = pinned(&crate::project_root(), "24.11.99")
        .unwrap_err()
        .to_string();
    assert!(e.contains("24.11.99") && e.contains("24.11.5"), "{e}");
    // A snapshot has no release tarball to pin in a formula: refused before any build.
    let snap = pinned(&crate::project_root(), "26.11-snapshot").unwrap();
    let e = source_of(&snap).unwrap_err().to_string();
    assert!(e.contains("26.11-snapshot") && e.contains("24.11.5"), "{e}");
    assert!(source_of(&pin()).is_ok());
    // A release line pinned by its tag's commit: the formula takes tag and revision.
    let git = pinned(&crate::project_root(), "25.11.7").unwrap();
    let source = source_of(&git).unwrap();
    assert_eq!(
        source,
        super::formula::Source::Git {
            url: "https://github.com/SchedMD/slurm.git".into(),
            tag: "slurm-25-11-7-1".into(),
            revision: "f56e676bbd3e7cccbdd7c505c030c62bb983ebee".into(),
        }
    );
}

#[test]
fn formula__git_release_has_tag_and_revision_and_no_sha256() {
    let git = pinned(&crate::project_root(), "25.11.7").unwrap();
    let source = source_of(&git).unwrap();
    let layout = Layout::new(FORMULA, "25.11.7", "25.11", "aarch64-apple-darwin").unwrap();
    let project = super::tap::Project::at("0123456789abcdef0123456789abcdef01234567");
    let text = super::formula::render(&project.spec(&layout, &source, &[], &[]));
    assert!(
        text.contains(
            "  url \"https://github.com/SchedMD/slurm.git\",\n      tag:      \"slurm-25-11-7-1\",\n      revision: \"f56e676bbd3e7cccbdd7c505c030c62bb983ebee\"\n  version \"25.11.7\"\n  license"
        ),
        "{text}"
    );
    // 25.11 has TLS: s2n-tls is built before Slurm, which is configured with it; 24.11 not.
    let s2n = "system \"cargo\", \"xtask\", \"s2n\", \"--target\", triple\n";
    let at = |t: &str, n: &str| t.find(n).unwrap_or_else(|| panic!("no {n} in\n{t}"));
    assert!(at(&text, s2n) < at(&text, "\"build-slurm\""), "{text}");
    assert!(text.contains("\"--localstatedir\", var,\n             \"--with-s2n\"\n"));
    let old = Layout::new(FORMULA, "24.11.5", "24.11", "aarch64-apple-darwin").unwrap();
    let source = source_of(&pin()).unwrap();
    let text_24 = super::formula::render(&project.spec(&old, &source, &[], &[]));
    assert!(!text_24.contains("s2n") && text_24.contains("\"--localstatedir\", var\n"));
    let sh = xshell::Shell::new().unwrap();
    if crate::testing::have(&sh, &["ruby"]) {
        let (_d, p) = crate::testing::scratch("slurm-wlm@25.11.rb");
        fs::write(&p, &text).unwrap();
        let o = xshell::cmd!(sh, "ruby -c {p}").quiet().read().unwrap();
        assert!(o.contains("Syntax OK"), "{o}");
    } else {
        println!("ruby not installed: the git formula's syntax is not checked");
    }
}

/// From 25.05 on the keg must carry tls/s2n: its absence, or a plugin of another CPU, fails
/// the check. (The fixture's keg is 24.11.5's; only the layout's line decides.)
#[test]
fn check__a_line_with_tls_needs_tls_s2n_of_the_bottles_cpu() {
    assert!(!layout().has_tls());
    for line in ["25.05", "25.11", "26.05", "26.11"] {
        let l = Layout::new(FORMULA, "24.11.5", line, "aarch64-apple-darwin").unwrap();
        assert!(l.has_tls(), "{line}");
    }
    let d = tempfile::tempdir().unwrap();
    let Some((stage, tool, intel)) = staged_with_node_tools(d.path()) else {
        return;
    };
    let tls = Layout::new(FORMULA, "24.11.5", "25.05", "aarch64-apple-darwin").unwrap();
    let root = crate::project_root();
    let keg = d.path().join("keg");
    keg::assemble(&tls, &stage, &tool, &keg, "").unwrap();
    receipt::write_receipt(&tls, &keg, &[], 0).unwrap();
    check::check(&root, &layout(), &keg).unwrap();
    let e = check::check(&root, &tls, &keg).unwrap_err().to_string();
    crate::testing::assert_mentions(&e, &["lib/slurm/tls_s2n.so is missing", "--with-s2n"]);
    let plugin = keg.join(crate::s2n::PLUGIN);
    let mut x86 = fs::read(&intel).unwrap();
    codesign::sign(&mut x86, "tls_s2n.so").unwrap();
    fs::write(&plugin, &x86).unwrap();
    let e = check::check(&root, &tls, &keg).unwrap_err().to_string();
    crate::testing::assert_mentions(
        &e,
        &[
            "lib/slurm/tls_s2n.so: not a plugin of the bottle's CPU",
            "CPU x86_64 (want arm64)",
        ],
    );
    fs::copy(keg.join("lib/slurm/auth_x.so"), &plugin).unwrap();
    check::check(&root, &tls, &keg).unwrap();
}
