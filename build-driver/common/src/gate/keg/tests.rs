use super::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;

#[test]
fn keg__attack_a_writable_plugin_deep_in_lib_is_found() {
    let d = tempfile::tempdir().unwrap();
    let plugin = d.path().join("lib/slurm/task_darwin.so");
    fs::create_dir_all(plugin.parent().unwrap()).unwrap();
    fs::write(&plugin, "so").unwrap();
    fs::create_dir_all(d.path().join("sbin")).unwrap();
    std::os::unix::fs::symlink("task_darwin.so", d.path().join("lib/slurm/alias.so")).unwrap();
    let install = Install {
        trees: vec![
            d.path().join("sbin"),
            d.path().join("lib"),
            d.path().join("etc"),
        ],
        dirs: vec![d.path().join("var/spool")],
    };
    trusted(&install, Owners::caller()).unwrap();
    fs::set_permissions(&plugin, fs::Permissions::from_mode(0o666)).unwrap();
    let found = examine(&install, Owners::caller());
    // the plugin, and the link that leads to it
    assert_eq!(found.len(), 2, "{found:?}");
    let e = found[0].to_string();
    assert!(
        e.contains("task_darwin.so") && e.contains("mode 0666"),
        "{e}"
    );
    fs::set_permissions(&plugin, fs::Permissions::from_mode(0o644)).unwrap();
    fs::set_permissions(
        d.path().join("lib/slurm"),
        fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let e = trusted(&install, Owners::caller()).unwrap_err().to_string();
    assert!(e.contains("lib/slurm") && e.contains("mode 0777"), "{e}");
}
