//! Attacks on `install` and `uninstall`: each test plants what a user who can write the
//! staged tree or the prefix would plant, and checks that root does not act on it.

use super::tests::{args, staged_scratch};
use super::*;
use driver_common::testing::write as put;
use std::os::unix::fs::PermissionsExt;

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn install__attack_setuid_helper_and_writable_dirs_are_normalised() {
    let (d, sh, from) = staged_scratch();
    put(&from.join("libexec/helper"), "#!/bin/sh\n");
    fs::set_permissions(
        from.join("libexec/helper"),
        fs::Permissions::from_mode(0o6777),
    )
    .unwrap();
    fs::set_permissions(from.join("sbin"), fs::Permissions::from_mode(0o777)).unwrap();
    fs::set_permissions(from.join("etc"), fs::Permissions::from_mode(0o775)).unwrap();
    fs::set_permissions(from.join("sbin/slurmd"), fs::Permissions::from_mode(0o777)).unwrap();
    let _ = install_as(&sh, d.path(), args(d.path(), &from, None), me());
    let p = d.path().join("root/opt/slurm");
    assert_eq!(
        mode(&p.join("libexec/helper")),
        0o755,
        "setuid or writable helper"
    );
    assert_eq!(mode(&p.join("sbin/slurmd")), 0o755, "writable slurmd");
    assert_eq!(mode(&p.join("sbin")) & 0o022, 0, "writable sbin/");
    assert_eq!(mode(&p.join("etc")) & 0o022, 0, "writable etc/");
}

#[test]
fn install__attack_symlink_out_of_the_tree_is_refused() {
    let (d, sh, from) = staged_scratch();
    std::os::unix::fs::symlink("/etc/passwd", from.join("etc/slurm.conf")).unwrap();
    std::os::unix::fs::symlink("../../../../x", from.join("lib/up")).unwrap();
    let e = install_as(&sh, d.path(), args(d.path(), &from, None), me());
    let e = e
        .expect_err("a link out of the tree was installed")
        .to_string();
    assert!(e.contains("outside"), "{e}");
    assert!(
        !d.path().join("root/opt/slurm").exists(),
        "something was installed"
    );
}

#[test]
fn uninstall__attack_manifest_entries_outside_the_prefix_are_not_removed() {
    let (d, sh, from) = staged_scratch();
    install_as(&sh, d.path(), args(d.path(), &from, None), me()).unwrap();
    let p = d.path().join("root/opt/slurm");
    let victim = d.path().join("victim");
    fs::write(&victim, "root's").unwrap();
    let mut m = Manifest::read(&p.join(MANIFEST)).unwrap();
    let e = m.files["lib/libslurm.42.dylib"].clone();
    let content = format!(
        "sha256:{}",
        driver_common::util::fs::sha256_file(&victim).unwrap()
    );
    let planted = manifest::Entry {
        content,
        mode: e.mode,
    };
    fs::set_permissions(&victim, fs::Permissions::from_mode(e.mode)).unwrap();
    m.files.insert("../../../victim".into(), planted.clone());
    m.files.insert(victim.display().to_string(), planted);
    m.write(&p.join(MANIFEST)).unwrap();
    let r = uninstall(&UninstallArgs {
        prefix: "/opt/slurm".into(),
        destdir: Some(d.path().join("root")),
    });
    assert!(
        victim.exists(),
        "uninstall deleted a file outside the prefix"
    );
    let e = r.expect_err("a bad manifest was followed").to_string();
    assert!(e.contains("outside") || e.contains("relative"), "{e}");
}

#[test]
fn install__attack_prefix_below_a_directory_another_user_can_write_is_refused() {
    let (d, sh, from) = staged_scratch();
    let parent = d.path().join("root/opt");
    fs::create_dir_all(&parent).unwrap();
    fs::set_permissions(&parent, fs::Permissions::from_mode(0o777)).unwrap();
    let e = install_as(&sh, d.path(), args(d.path(), &from, None), me());
    let e = e
        .expect_err("installed below a world-writable directory")
        .to_string();
    assert!(e.contains("writable") && e.contains("chmod"), "{e}");
    assert!(!parent.join("slurm").exists());
}

#[test]
fn install__dangling_link_inside_the_tree_installs_or_names_a_fix() {
    let (d, sh, from) = staged_scratch();
    std::os::unix::fs::symlink("libslurm.99.dylib", from.join("lib/libgone.dylib")).unwrap();
    match install_as(&sh, d.path(), args(d.path(), &from, None), me()) {
        Ok(()) => {
            assert!(fs::symlink_metadata(d.path().join("root/opt/slurm/lib/libgone.dylib")).is_ok())
        }
        Err(e) => assert!(e.to_string().contains("fix"), "{e}"),
    }
}
