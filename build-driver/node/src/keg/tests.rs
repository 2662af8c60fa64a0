use super::*;
use driver_common::testing::{assert_mentions, write as put};
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::PermissionsExt;

pub(super) fn me() -> u32 {
    nix::unistd::geteuid().as_raw()
}

pub(super) fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// A scratch directory (0755) holding a Homebrew prefix `<d>/hb` with a keg
/// `hb/Cellar/slurm-wlm/1.0` that names the prefix in its files, and the copy's root `<d>/rt`
/// (same length). Returns (dir, keg, root).
pub(super) fn scratch_keg() -> (tempfile::TempDir, Keg, String) {
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let prefix = d.path().join("hb");
    let dir = prefix.join("Cellar/slurm-wlm/1.0");
    let p = prefix.to_str().unwrap();
    put(
        &dir.join("sbin/slurmd"),
        &format!("#!/bin/sh\n# PluginDir {p}/Cellar/slurm-wlm/1.0/lib/slurm conf {p}/etc/slurm\n"),
    );
    put(&dir.join("lib/slurm/auth_slurm.so"), "plugin\n");
    put(
        &dir.join("lib/libslurm.42.dylib"),
        &format!("id {p}/opt/slurm-wlm/lib/libslurm.42.dylib\0"),
    );
    std::os::unix::fs::symlink("libslurm.42.dylib", dir.join("lib/libslurm.dylib")).unwrap();
    put(&dir.join("bin/slurm-mac"), "tool\n");
    let keg = Keg::at(&dir).unwrap();
    let root = d.path().join("rt").to_str().unwrap().to_string();
    (d, keg, root)
}

#[test]
fn default_root__same_length_as_the_homebrew_prefix() {
    assert_eq!(
        default_root("/opt/homebrew").as_deref(),
        Some("/opt/slurmmac")
    );
    assert_eq!(default_root("/usr/local").as_deref(), Some("/opt/slurm"));
    assert_eq!(default_root("/home/linuxbrew/.linuxbrew"), None);
    assert_eq!(default_root("/opt/hb"), None);
}

#[test]
fn keg_at__a_cellar_path_and_nothing_else() {
    let (d, keg, _) = scratch_keg();
    assert_eq!(keg.prefix, d.path().join("hb").to_str().unwrap());
    assert_eq!(
        (keg.name.as_str(), keg.version.as_str()),
        ("slurm-wlm", "1.0")
    );
    let e = Keg::at(&d.path().join("hb")).unwrap_err().to_string();
    assert_mentions(&e, &["is not a Homebrew keg", "brew --prefix slurm-wlm"]);
}

#[test]
fn root_for__refuses_another_length_a_relative_path_and_the_prefix_itself() {
    let (d, keg, root) = scratch_keg();
    assert_eq!(root_for(&keg, Some(Path::new(&root))).unwrap(), root);
    let long = format!("{root}x");
    let e = root_for(&keg, Some(Path::new(&long)))
        .unwrap_err()
        .to_string();
    assert_mentions(&e, &[&long, "bytes", "in place"]);
    let e = root_for(&keg, Some(Path::new("rel/ative/path")))
        .unwrap_err()
        .to_string();
    assert_mentions(&e, &["absolute"]);
    let inside = d.path().join("hb").to_str().unwrap().to_string();
    let e = root_for(&keg, Some(Path::new(&inside)))
        .unwrap_err()
        .to_string();
    assert_mentions(&e, &["outside the Homebrew prefix"]);
    let e = root_for(&keg, None).unwrap_err().to_string();
    assert_mentions(&e, &["no default root", "--root"]);
}

#[test]
fn copy__relocated_normalised_linked_keyed_and_a_second_run_changes_nothing() {
    let (d, keg, root) = scratch_keg();
    fs::set_permissions(
        keg.dir.join("sbin/slurmd"),
        fs::Permissions::from_mode(0o4777),
    )
    .unwrap();
    fs::set_permissions(keg.dir.join("sbin"), fs::Permissions::from_mode(0o777)).unwrap();
    let key = d.path().join("slurm.key");
    fs::write(&key, "0123456789abcdef0123456789abcdef").unwrap();
    copy_as(&keg, &root, Some(&key), me()).unwrap();
    let r = Path::new(&root);
    let copy = r.join("Cellar/slurm-wlm/1.0");
    let slurmd = fs::read_to_string(copy.join("sbin/slurmd")).unwrap();
    assert!(!slurmd.contains(&keg.prefix), "{slurmd}");
    assert!(
        slurmd.contains(&format!(
            "{root}/Cellar/slurm-wlm/1.0/lib/slurm conf {root}/etc/slurm"
        )),
        "{slurmd}"
    );
    let lib = fs::read(copy.join("lib/libslurm.42.dylib")).unwrap();
    assert!(String::from_utf8_lossy(&lib).contains(&format!("{root}/opt/slurm-wlm/lib")));
    assert_eq!(
        mode(&copy.join("sbin/slurmd")),
        0o755,
        "setuid or writable slurmd"
    );
    assert_eq!(mode(&copy.join("sbin")), 0o755, "writable sbin/");
    assert_eq!(
        fs::read_link(copy.join("lib/libslurm.dylib")).unwrap(),
        Path::new("libslurm.42.dylib")
    );
    assert_eq!(
        fs::read_link(r.join("opt/slurm-wlm")).unwrap(),
        Path::new("../Cellar/slurm-wlm/1.0")
    );
    assert_eq!(
        fs::read_to_string(r.join("opt/slurm-wlm/bin/slurm-mac")).unwrap(),
        "tool\n"
    );
    assert_eq!(mode(&r.join("etc/slurm/slurm.key")), 0o600);
    for dir in ["var/spool/slurmd", "var/log/slurm", "var/run"] {
        assert_eq!(mode(&r.join(dir)), 0o755, "{dir}");
    }
    assert!(copy.join(crate::install::MANIFEST).is_file());
    let before = fs::metadata(copy.join("sbin/slurmd")).unwrap().ino();
    copy_as(&keg, &root, Some(&key), me()).unwrap();
    assert_eq!(
        fs::metadata(copy.join("sbin/slurmd")).unwrap().ino(),
        before,
        "copied again"
    );
    // The keg itself is untouched.
    assert!(
        fs::read_to_string(keg.dir.join("sbin/slurmd"))
            .unwrap()
            .contains(&keg.prefix)
    );
}

#[test]
fn sysconfdir__a_keg_or_its_copy_reads_its_roots_etc_slurm_an_install_its_etc() {
    let (d, keg, root) = scratch_keg();
    assert_eq!(sysconfdir(&keg.dir), d.path().join("hb/etc/slurm"));
    copy_as(&keg, &root, None, me()).unwrap();
    let opt = Path::new(&root).join("opt/slurm-wlm");
    assert_eq!(sysconfdir(&opt), Path::new(&root).join("etc/slurm"));
    assert_eq!(sysconfdir(&d.path().join("hb")), d.path().join("hb/etc"));
}

#[test]
fn trusted_install__a_keg_others_can_change_is_sent_to_copy_keg() {
    let (d, keg, _) = scratch_keg();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let e = trusted_install(&keg.dir, &[]).unwrap_err();
    let Error::Untrusted { fix, .. } = e else {
        panic!("{e}")
    };
    assert_mentions(&fix, &["copy-keg --keg", keg.dir.to_str().unwrap()]);
    let other = d.path().join("plain");
    put(&other.join("sbin/slurmd"), "x");
    let e = trusted_install(&other, &[]).unwrap_err();
    let Error::Untrusted { fix, .. } = e else {
        panic!("{e}")
    };
    assert!(!fix.contains("copy-keg"), "{fix}");
    assert_mentions(&fix, &["install", "root-owned prefix"]);
}
