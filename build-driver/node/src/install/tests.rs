use super::*;
use driver_common::testing::write as put;
use std::os::unix::fs::PermissionsExt;

/// A staged build for `prefix` below `d/stage` with its staging manifest.
/// A temporary directory, a shell and a build staged for `/opt/slurm` in it.
pub(super) fn staged_scratch() -> (tempfile::TempDir, Shell, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let from = staged(d.path(), "/opt/slurm");
    (d, Shell::new().unwrap(), from)
}

fn staged(d: &Path, prefix: &str) -> PathBuf {
    let s = d.join("stage").join(prefix.trim_start_matches('/'));
    put(&s.join("sbin/slurmd"), "#!/bin/sh\necho slurmd\n");
    fs::set_permissions(s.join("sbin/slurmd"), fs::Permissions::from_mode(0o755)).unwrap();
    put(&s.join("lib/libslurm.42.dylib"), "lib");
    std::os::unix::fs::symlink("libslurm.42.dylib", s.join("lib/libslurm.dylib")).unwrap();
    put(&s.join("etc/slurm.conf.example"), "ClusterName=example\n");
    Staged {
        version: "24.11.5".into(),
        line: "24.11".into(),
        personality: driver_common::personality::Personality::Native,
        target: "aarch64-apple-darwin".into(),
        patched: true,
        prefix: s.clone(),
        configured_prefix: Some(prefix.into()),
        sysconfdir: None,
        localstatedir: None,
        source: d.join("src"),
        build_dir: d.join("build"),
        make_vars: vec![],
    }
    .write()
    .unwrap();
    s
}

pub(super) fn args(d: &Path, from: &Path, key: Option<PathBuf>) -> InstallArgs {
    InstallArgs {
        prefix: "/opt/slurm".into(),
        destdir: Some(d.join("root")),
        from: Some(from.to_path_buf()),
        key,
    }
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn install__staged_tree_exact_modes_manifest_key_and_a_second_run_changes_nothing() {
    let (d, sh, from) = staged_scratch();
    let key = d.path().join("slurm.key");
    fs::write(&key, b"0123456789abcdef").unwrap();
    install_as(
        &sh,
        d.path(),
        args(d.path(), &from, Some(key.clone())),
        me(),
    )
    .unwrap();
    let p = d.path().join("root/opt/slurm");
    assert_eq!(mode(&p.join("sbin/slurmd")), 0o755);
    assert_eq!(
        fs::read_link(p.join("lib/libslurm.dylib")).unwrap(),
        Path::new("libslurm.42.dylib")
    );
    let m = Manifest::read(&p.join(MANIFEST)).unwrap();
    assert_eq!(m.prefix, Path::new("/opt/slurm"));
    assert_eq!(
        m.files.keys().cloned().collect::<Vec<_>>(),
        [
            "etc/slurm.conf.example",
            "lib/libslurm.42.dylib",
            "lib/libslurm.dylib",
            "sbin/slurmd"
        ]
    );
    assert_eq!(m.files["sbin/slurmd"].mode, 0o755);
    let k = p.join("etc/slurm.key");
    assert_eq!(fs::read(&k).unwrap(), b"0123456789abcdef");
    assert_eq!(mode(&k), 0o600);
    let meta = fs::metadata(&k).unwrap();
    assert_eq!(meta.uid(), me());
    driver_common::testing::assert_file(&p.join("etc/slurm.conf"), "ClusterName=example\n");
    // Again: nothing changes (same inode: the tree was not replaced).
    let ino = fs::metadata(p.join("sbin/slurmd")).unwrap().ino();
    install_as(&sh, d.path(), args(d.path(), &from, Some(key)), me()).unwrap();
    assert_eq!(fs::metadata(p.join("sbin/slurmd")).unwrap().ino(), ino);
    // An admin's slurm.conf survives a new build and gets no overwrite: .new instead.
    fs::write(p.join("etc/slurm.conf"), "ClusterName=mine\n").unwrap();
    put(
        &from.join("etc/slurm.conf.example"),
        "ClusterName=example2\n",
    );
    put(&from.join("sbin/slurmd"), "#!/bin/sh\necho slurmd 2\n");
    install_as(&sh, d.path(), args(d.path(), &from, None), me()).unwrap();
    driver_common::testing::assert_file(&p.join("etc/slurm.conf"), "ClusterName=mine\n");
    driver_common::testing::assert_file(&p.join("etc/slurm.conf.new"), "ClusterName=example2\n");
    assert!(
        fs::read_to_string(p.join("sbin/slurmd"))
            .unwrap()
            .contains("slurmd 2")
    );
    assert!(
        p.join("etc/slurm.key").is_file(),
        "the key stays across installs"
    );
    let leftovers: Vec<_> = fs::read_dir(d.path().join("root/opt"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["slurm"], "no staging directory left");
    // Uninstall: our files go, the admin's stay.
    uninstall(&UninstallArgs {
        prefix: "/opt/slurm".into(),
        destdir: Some(d.path().join("root")),
    })
    .unwrap();
    assert!(!p.join("sbin").exists() && !p.join(MANIFEST).exists());
    assert!(p.join("etc/slurm.conf").is_file() && p.join("etc/slurm.key").is_file());
}

#[test]
fn install__refuses_foreign_prefix_wrong_build_missing_key_and_leaves_nothing() {
    let (d, sh, from) = staged_scratch();
    let p = d.path().join("root/opt/slurm");
    // A prefix with someone's files and no manifest of ours.
    put(&p.join("bin/other"), "x");
    let e = install_as(&sh, d.path(), args(d.path(), &from, None), me())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("was not installed by `cargo xtask install`"),
        "{e}"
    );
    assert!(!p.join("sbin").exists());
    fs::remove_dir_all(&p).unwrap();
    // Owned by another user.
    fs::create_dir_all(&p).unwrap();
    std::os::unix::fs::chown(&p, Some(4242), None).unwrap();
    let e = install_as(&sh, d.path(), args(d.path(), &from, None), me())
        .unwrap_err()
        .to_string();
    assert!(e.contains("uid 4242"), "{e}");
    fs::remove_dir_all(&p).unwrap();
    // A missing key: an error naming the fix, before anything is written.
    let e = install_as(
        &sh,
        d.path(),
        args(d.path(), &from, Some(d.path().join("none.key"))),
        me(),
    )
    .unwrap_err()
    .to_string();
    driver_common::testing::assert_mentions(&e, &["--key", "controller's slurm.key"]);
    assert!(!p.exists());
    // A build configured for another prefix.
    let other = staged(&d.path().join("o"), "/usr/local/slurm");
    let e = install_as(&sh, d.path(), args(d.path(), &other, None), me())
        .unwrap_err()
        .to_string();
    assert!(e.contains("was built for --prefix /usr/local/slurm"), "{e}");
    // Uninstall of something we did not install removes nothing.
    put(&p.join("keep"), "x");
    let e = uninstall(&UninstallArgs {
        prefix: "/opt/slurm".into(),
        destdir: Some(d.path().join("root")),
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("nothing removed"), "{e}");
    assert!(p.join("keep").is_file());
}

#[test]
fn install__without_from_looks_in_target_stage_and_says_how_to_build_it() {
    let d = tempfile::tempdir().unwrap();
    let sh = Shell::new().unwrap();
    let a = InstallArgs {
        from: None,
        ..args(d.path(), d.path(), None)
    };
    let e = install_as(&sh, d.path(), a, me()).unwrap_err().to_string();
    driver_common::testing::assert_mentions(&e, &["stage/opt/slurm", "--destdir target/stage"]);
    assert!(default_from(Path::new("/r"), Path::new("/opt/slurm")).ends_with("stage/opt/slurm"));
}

/// The test's own uid: the expected owner of what it installs.
pub(super) fn me() -> u32 {
    nix::unistd::geteuid().as_raw()
}
