#![allow(non_snake_case)]
//! Attack: `slurm-mac install` run by a user who is not root (here uid 65534, started by a
//! root test) must change nothing: not the prefix, not the key. Skipped (said why) when the
//! test is not root, since only root can start a process as another user.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;

const NOBODY: u32 = 65534;

fn put(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn install__attack_non_root_run_changes_nothing() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to start the install as uid {NOBODY}");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let from = d.path().join("stage/opt/slurm");
    put(&from.join("sbin/slurmd"), "#!/bin/sh\n");
    put(&from.join("etc/slurm.conf.example"), "ClusterName=x\n");
    driver_common::staging::Manifest {
        version: "24.11.5".into(),
        line: "24.11".into(),
        personality: driver_common::personality::Personality::Native,
        target: "aarch64-apple-darwin".into(),
        patched: true,
        prefix: from.clone(),
        configured_prefix: Some("/opt/slurm".into()),
        sysconfdir: None,
        localstatedir: None,
        source: d.path().join("src"),
        build_dir: d.path().join("build"),
        make_vars: vec![],
    }
    .write()
    .unwrap();
    let root = d.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::os::unix::fs::chown(&root, Some(NOBODY), Some(NOBODY)).unwrap();
    let key = d.path().join("slurm.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_slurm-mac"))
        .args(["install", "--prefix", "/opt/slurm", "--destdir"])
        .arg(&root)
        .arg("--from")
        .arg(&from)
        .arg("--key")
        .arg(&key)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a non-root install succeeded: {err}");
    let left: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        left.is_empty(),
        "a non-root install left {left:?}; it said: {err}"
    );
    assert!(err.contains("root"), "{err}");
}

/// Attack: `slurm-mac copy-keg` run by a user who is not root makes no copy and no directory
/// of the root (the same refusal `install` gives), while `--print-root` needs no root.
#[test]
fn copy_keg__attack_non_root_run_changes_nothing() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to start copy-keg as uid {NOBODY}");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let keg = d.path().join("hb/Cellar/slurm-wlm/1.0");
    put(&keg.join("sbin/slurmd"), "#!/bin/sh\n");
    let root = d.path().join("rt");
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_slurm-mac"))
            .arg("copy-keg")
            .arg("--keg")
            .arg(&keg)
            .arg("--root")
            .arg(&root)
            .args(extra)
            .uid(NOBODY)
            .gid(NOBODY)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a non-root copy succeeded: {err}");
    assert!(err.contains("root"), "{err}");
    assert!(
        !root.exists(),
        "a non-root copy-keg made {}",
        root.display()
    );
    let out = run(&["--print-root"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        root.to_str().unwrap()
    );
}
