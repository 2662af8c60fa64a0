//! Attacks on `copy-keg`: the keg and the Homebrew prefix belong to the admin user, so
//! whatever runs as that user can plant anything there before (or while) root reads it.

use super::tests::{me, scratch_keg};
use super::*;
use driver_common::testing::{assert_mentions, write as put};
use std::os::unix::fs::PermissionsExt;

/// Nothing of the copy exists below `root`.
fn nothing_copied(root: &str) {
    assert!(
        !Path::new(root).join("Cellar/slurm-wlm/1.0").exists(),
        "a copy was placed"
    );
}

#[test]
fn copy__attack_symlink_to_a_secret_is_not_followed() {
    let (d, keg, root) = scratch_keg();
    let secret = d.path().join("secret");
    fs::write(&secret, "SECRET").unwrap();
    std::os::unix::fs::symlink(&secret, keg.dir.join("lib/slurm/cred_slurm.so")).unwrap();
    let e = copy_as(&keg, &root, None, me()).unwrap_err().to_string();
    assert_mentions(&e, &["cred_slurm.so", "outside the installed tree"]);
    nothing_copied(&root);
}

#[test]
fn copy__attack_directory_link_out_of_the_keg_is_not_walked() {
    let (d, keg, root) = scratch_keg();
    put(&d.path().join("elsewhere/key"), "SECRET");
    std::os::unix::fs::symlink(d.path().join("elsewhere"), keg.dir.join("share")).unwrap();
    let e = copy_as(&keg, &root, None, me()).unwrap_err().to_string();
    assert_mentions(&e, &["share", "outside the installed tree"]);
    nothing_copied(&root);
}

#[test]
fn copy__attack_a_file_of_another_user_in_the_keg_is_refused() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: only root can give a file to another user");
        return;
    }
    let (_d, keg, root) = scratch_keg();
    let planted = keg.dir.join("lib/slurm/master.passwd");
    fs::write(&planted, "root's").unwrap();
    std::os::unix::fs::chown(&planted, Some(4242), Some(4242)).unwrap();
    let e = copy_as(&keg, &root, None, me()).unwrap_err().to_string();
    assert_mentions(&e, &["master.passwd", "uid 4242", "tree's owner"]);
    nothing_copied(&root);
}

#[test]
fn copy__attack_a_fifo_in_the_keg_is_refused() {
    let (_d, keg, root) = scratch_keg();
    nix::unistd::mkfifo(
        &keg.dir.join("lib/fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let e = copy_as(&keg, &root, None, me()).unwrap_err().to_string();
    assert_mentions(&e, &["fifo", "FIFO"]);
    nothing_copied(&root);
}

#[test]
fn copy__attack_a_root_others_can_change_is_refused_before_anything_is_written() {
    let (d, keg, root) = scratch_keg();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let e = copy_as(&keg, &root, None, me()).unwrap_err().to_string();
    assert_mentions(&e, &[d.path().to_str().unwrap()]);
    assert!(!Path::new(&root).exists(), "the root was made");
}

#[test]
fn copy__attack_an_opt_directory_in_place_of_the_link_is_refused() {
    let (_d, keg, root) = scratch_keg();
    fs::create_dir_all(Path::new(&root).join("opt/slurm-wlm/sbin")).unwrap();
    let e = copy_as(&keg, &root, None, me()).unwrap_err().to_string();
    assert_mentions(&e, &["opt/slurm-wlm", "not a link"]);
    nothing_copied(&root);
}

#[test]
fn copy__attack_a_cellar_of_another_user_below_a_trusted_root_is_refused() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: only root can give a directory to another user");
        return;
    }
    let (_d, keg, root) = scratch_keg();
    let cellar = Path::new(&root).join("Cellar");
    fs::create_dir_all(&cellar).unwrap();
    std::os::unix::fs::chown(&cellar, Some(4242), Some(4242)).unwrap();
    let e = copy_as(&keg, &root, None, me()).unwrap_err().to_string();
    assert_mentions(&e, &["Cellar", "4242"]);
    nothing_copied(&root);
}
