use super::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;

fn chmod(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn trusted__attack_writable_or_foreign_directories_anywhere_above_are_refused() {
    let me = Owners::caller();
    let d = tempfile::tempdir().unwrap();
    let deep = d.path().join("a/b/c");
    fs::create_dir_all(&deep).unwrap();
    trusted(&deep.join("not-yet/file"), me).unwrap();
    chmod(&d.path().join("a"), 0o777);
    let e = trusted(&deep, me).unwrap_err().to_string();
    assert!(
        e.contains("/a (owner uid") && e.contains("mode 0777"),
        "{e}"
    );
    assert!(e.contains("chmod go-w"), "{e}");
    chmod(&d.path().join("a"), 0o1777);
    trusted(&deep, me).expect("a sticky directory above an owned entry is fine");
    chmod(&deep, 0o1777);
    assert!(
        trusted(&deep, me).is_err(),
        "the leaf itself may not be writable"
    );
    chmod(&deep, 0o755);
    chmod(&d.path().join("a/b"), 0o775);
    assert!(
        trusted(&deep.join("x"), me).is_err(),
        "group-writable above"
    );
    chmod(&d.path().join("a/b"), 0o755);
    // A link to a writable place: the place it leads to is judged.
    let opendir = d.path().join("open");
    fs::create_dir(&opendir).unwrap();
    chmod(&opendir, 0o777);
    std::os::unix::fs::symlink(&opendir, d.path().join("a/link")).unwrap();
    assert!(trusted(&d.path().join("a/link/f"), me).is_err());
    // A relative link and `..` resolve as the kernel does.
    std::os::unix::fs::symlink("b/c", d.path().join("a/rel")).unwrap();
    let w = open(&d.path().join("a/rel/../c"), me).unwrap();
    assert_eq!(w.resolved, d.path().canonicalize().unwrap().join("a/b/c"));
}

#[test]
fn trusted__attack_foreign_owner_of_an_entry_or_a_link_is_refused() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("not run: only root can give a file away (CI runs as root)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("slurmd");
    fs::write(&f, "x").unwrap();
    open(&f, Owners::ROOT).unwrap();
    std::os::unix::fs::chown(&f, Some(65534), None).unwrap();
    let e = open(&f, Owners::ROOT).unwrap_err().to_string();
    assert!(
        e.contains("owner uid 65534") && e.contains("chown root"),
        "{e}"
    );
    // A link nobody owns, in a sticky directory: nobody may replace it.
    let sticky = d.path().join("tmp");
    fs::create_dir(&sticky).unwrap();
    chmod(&sticky, 0o1777);
    std::os::unix::fs::symlink("/bin", sticky.join("l")).unwrap();
    open(&sticky.join("l/sh"), Owners::ROOT).unwrap();
    nix::unistd::fchownat(
        nix::fcntl::AT_FDCWD,
        &sticky.join("l"),
        Some(nix::unistd::Uid::from_raw(65534)),
        None,
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .unwrap();
    assert!(open(&sticky.join("l/sh"), Owners::ROOT).is_err());
}
