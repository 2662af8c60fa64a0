//! Patch 0065 (POC D23): certgen/script's CA command run against two `openssl`s: this
//! machine's (OpenSSL) and a stand-in that answers `req` as LibreSSL, macOS's
//! `/usr/bin/openssl`, does (without `-new` or `-in` it reads a certificate request from
//! stdin: "Expecting: CERTIFICATE REQUEST", rc 1). The script before and after the patch
//! is taken from the patch file of every line that has one, so the test needs no Slurm
//! tree: the pristine script must fail on the stand-in (the defect, seen on every run),
//! the patched one must give a certificate on both. Needs `openssl`; without it the test
//! prints why it is skipped.

use std::path::Path;
use std::process::Command;

const PATCH: &str = "0065-certgen-script-self-signed-ca-with-req-new.patch";

/// The script before (`-` lines) and after (`+` lines) the patch, with its context.
fn scripts(patch: &str) -> (String, String) {
    let body = &patch[patch.find("\n@@").expect("a hunk")..];
    let (mut old, mut new) = (String::new(), String::new());
    for l in body.lines().skip(2) {
        if l.starts_with("-- ") || l == "--" || l.starts_with("diff ") {
            break;
        }
        match l.chars().next() {
            Some('-') => old += &format!("{}\n", &l[1..]),
            Some('+') => new += &format!("{}\n", &l[1..]),
            Some(' ') => {
                old += &format!("{}\n", &l[1..]);
                new += &format!("{}\n", &l[1..]);
            }
            _ => {}
        }
    }
    (old, new)
}

/// Runs `script KEY` with `openssl` first on the PATH from `bin`; its stdout, or stderr.
fn run(script: &Path, key: &str, bin: &Path) -> Result<String, String> {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("/bin/sh")
        .arg(script)
        .arg(key)
        .env("PATH", path)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn certgen_ca__pristine_fails_on_libressl_patched_works_on_both() {
    let Some(real) = crate::testing::shell_with(&["openssl"]).map(|sh| {
        xshell::cmd!(sh, "sh -c 'command -v openssl'")
            .read()
            .unwrap()
    }) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let (libressl, plain) = (d.path().join("libressl"), d.path().join("openssl"));
    std::fs::create_dir_all(&libressl).unwrap();
    std::fs::create_dir_all(&plain).unwrap();
    let fake = libressl.join("openssl");
    std::fs::write(
        &fake,
        driver_common::libressl::script(Path::new(real.trim())),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let key = Command::new(real.trim())
        .args([
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .output()
        .unwrap();
    assert!(key.status.success());
    let key = String::from_utf8(key.stdout).unwrap();
    let mut lines = 0;
    for line in ["25.05", "25.11", "26.05", "26.11"] {
        let file = super::series::patch_of(&crate::project_root(), line, PATCH).unwrap();
        let (old, new) = scripts(&std::fs::read_to_string(&file).unwrap());
        let (o, n) = (
            d.path().join(format!("old-{line}.sh")),
            d.path().join(format!("new-{line}.sh")),
        );
        std::fs::write(&o, &old).unwrap();
        std::fs::write(&n, &new).unwrap();
        let e = run(&o, &key, &libressl).expect_err("the pristine script on LibreSSL");
        assert!(e.contains("Expecting: CERTIFICATE REQUEST"), "{line}: {e}");
        for (who, bin) in [("LibreSSL-like", &libressl), ("OpenSSL", &plain)] {
            let cert = run(&n, &key, bin).unwrap_or_else(|e| panic!("{line}, {who}: {e}"));
            assert!(
                cert.contains("-----BEGIN CERTIFICATE-----"),
                "{line}, {who}: {cert}"
            );
        }
        lines += 1;
    }
    println!(
        "certgen: {lines} lines' scripts, pristine refused by the LibreSSL-like openssl, patched accepted by both"
    );
}
