//! Patch 0029 (POC D21) cannot be reproduced on Linux: AF_INET6 is 10 here. This test
//! compiles `slurm_pack_addr()`/`slurm_unpack_addr_no_alloc()` out of a Slurm
//! `src/common/slurm_protocol_socket.c` into `build-driver/tests/af-wire/harness.c` twice:
//! as Linux (AF_INET6 10) and as macOS (`-D__APPLE__`, AF_INET6 forced to 30), then makes
//! each build unpack what the other packed. With the series' patch both directions agree;
//! on the pristine file the test asserts that they do not (so it is seen to fail without
//! the patch, on every run). Needs the pristine tree (`cargo xtask fetch --version V`) and
//! `cc`; without either it prints why it is skipped.

use std::fs;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

const ADDR6: &str = "fd40:534d:4406:1::128";

fn root() -> PathBuf {
    crate::project_root()
}

/// The two functions, with a conditional block (`#if ... #endif`: a patch's helpers) right
/// before the first.
fn extract(source: &str) -> Option<String> {
    let start_fn = source.find("extern void slurm_pack_addr(")?;
    let before = source[..start_fn].trim_end();
    let start = if before.ends_with("#endif") {
        before.rfind("\n#if").map_or(start_fn, |i| i + 1)
    } else {
        start_fn
    };
    let unpack = source.find("extern int slurm_unpack_addr_no_alloc(")?;
    let end = unpack + source[unpack..].find("\n}\n")? + 3;
    Some(source[start..end].to_string())
}

struct Builds {
    linux: PathBuf,
    mac: PathBuf,
}

fn build(sh: &Shell, dir: &Path, extracted: &str) -> Builds {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("extracted.c"), extracted).unwrap();
    let harness = root().join("build-driver/tests/af-wire/harness.c");
    let inc = format!("-I{}", dir.display());
    let (linux, mac) = (dir.join("linux"), dir.join("mac"));
    let o = "-o".as_ref();
    crate::testing::cc(sh, &[inc.as_ref(), o, linux.as_ref(), harness.as_ref()]);
    let apple: [&std::ffi::OsStr; 2] = ["-D__APPLE__".as_ref(), "-DFORCE_AF_INET6=30".as_ref()];
    crate::testing::cc(
        sh,
        &[
            apple[0],
            apple[1],
            inc.as_ref(),
            o,
            mac.as_ref(),
            harness.as_ref(),
        ],
    );
    Builds { linux, mac }
}

/// Pack with `from`, unpack with `to`; what `to` prints.
fn cross(sh: &Shell, from: &Path, to: &Path, addr: &str) -> String {
    let packed = cmd!(sh, "{from} pack {addr} 6818").output().unwrap().stdout;
    let out = cmd!(sh, "{to} unpack")
        .stdin(packed)
        .output()
        .unwrap()
        .stdout;
    String::from_utf8_lossy(&out).trim().to_string()
}

fn run_line(line: &str, version: &str) {
    let pristine = root()
        .join("slurm-src")
        .join(version)
        .join("src/common/slurm_protocol_socket.c");
    if !pristine.is_file() {
        println!(
            "af_wire ({line}) skipped: {} is not there (cargo xtask fetch --version {version})",
            pristine.display()
        );
        return;
    }
    let sh = Shell::new().unwrap();
    if cmd!(sh, "cc --version")
        .quiet()
        .ignore_stdout()
        .run()
        .is_err()
    {
        println!("af_wire ({line}) skipped: no C compiler `cc`");
        return;
    }
    let (tmp, tree) = crate::testing::scratch("tree");
    fs::create_dir_all(tree.join("src/common")).unwrap();
    fs::copy(&pristine, tree.join("src/common/slurm_protocol_socket.c")).unwrap();
    let text = fs::read_to_string(&pristine).unwrap();
    let Some(before) = extract(&text) else {
        panic!(
            "{}: slurm_pack_addr/slurm_unpack_addr_no_alloc not found",
            pristine.display()
        );
    };
    let patch = super::series::patch_of(
        &root(),
        line,
        "0029-pack-addr-linux-address-families-on-the-wire.patch",
    )
    .unwrap();
    sh.change_dir(&tree);
    cmd!(sh, "git apply -p1 {patch}").run().unwrap();
    let patched = fs::read_to_string(tree.join("src/common/slurm_protocol_socket.c")).unwrap();
    let after = extract(&patched).unwrap();

    let old = build(&sh, &tmp.path().join("pristine"), &before);
    let new = build(&sh, &tmp.path().join("patched"), &after);
    let want6 = format!("inet6 {ADDR6} 6818");

    // without the patch a Mac and a Linux node disagree about IPv6 (POC D21); with it they
    // agree, both ways, and IPv4 and same-OS traffic are unchanged
    let cases = [
        ("pristine mac -> linux", &old.mac, &old.linux, false),
        ("pristine linux -> mac", &old.linux, &old.mac, false),
        ("patched mac -> linux", &new.mac, &new.linux, true),
        ("patched linux -> mac", &new.linux, &new.mac, true),
        ("patched mac -> mac", &new.mac, &new.mac, true),
    ];
    for (name, from, to, agree) in cases {
        let got = cross(&sh, from, to, ADDR6);
        assert_eq!(got == want6, agree, "{name}: got {got:?}, want6 {want6:?}");
    }
    for (from, to) in [(&new.mac, &new.linux), (&new.linux, &new.mac)] {
        assert_eq!(cross(&sh, from, to, "127.0.0.1"), "inet 127.0.0.1 6818");
    }
    // Linux packs the same bytes as before
    let (ol, nl) = (&old.linux, &new.linux);
    let linux_old = cmd!(sh, "{ol} pack {ADDR6} 6818").output().unwrap().stdout;
    let linux_new = cmd!(sh, "{nl} pack {ADDR6} 6818").output().unwrap().stdout;
    assert_eq!(linux_old, linux_new, "Linux wire bytes changed");
}

#[test]
fn af_wire__macos_and_linux_agree_on_ipv6_24_11() {
    run_line("24.11", "24.11.5");
}

#[test]
fn af_wire__macos_and_linux_agree_on_ipv6_26_11() {
    run_line("26.11", "26.11-snapshot");
}
