use super::*;
use std::fs;
use std::os::unix::fs::symlink;

#[test]
fn dir__attack_a_link_on_the_way_is_refused_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    fs::create_dir(&victim).unwrap();
    fs::write(victim.join("precious.conf"), "keep").unwrap();
    let top = d.path().join("prefix");
    fs::create_dir_all(top.join("real")).unwrap();
    fs::write(top.join("real/f"), "x").unwrap();
    symlink(&victim, top.join("evil")).unwrap();
    let t = Dir::open(&top).unwrap();
    let e = t.sub(Path::new("evil")).unwrap_err().to_string();
    assert!(e.contains("is a link"), "{e}");
    // The control: a real directory is reached, its file read and removed.
    let real = t.sub(Path::new("real")).unwrap();
    assert_eq!(real.read_file(OsStr::new("f")).unwrap(), b"x");
    real.remove_file(OsStr::new("f")).unwrap();
    assert!(t.remove_empty_dir(OsStr::new("real")).unwrap());
    // Removing the link removes the link, not what it leads to.
    t.remove_file(OsStr::new("evil")).unwrap();
    assert!(victim.join("precious.conf").exists());
    assert!(Dir::open(&top.join("evil")).is_err());
}

#[test]
fn make_dirs__attack_no_directory_is_made_below_an_untrusted_one() {
    let d = tempfile::tempdir().unwrap();
    let open = d.path().join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let e = make_dirs(&open.join("a/b"), 0o755, Owners::caller())
        .unwrap_err()
        .to_string();
    assert!(e.contains("mode 0777"), "{e}");
    assert!(
        !open.join("a").exists(),
        "made before its parent was judged"
    );
    make_dirs(&d.path().join("ok/a/b"), 0o755, Owners::caller()).unwrap();
    assert!(d.path().join("ok/a/b").is_dir());
}
