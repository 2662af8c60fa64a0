//! `service install`: the whole install and launchctl trusted before a plist is written or
//! anything is loaded.

use super::kit::*;

fn launchctl(k: &Kit) -> std::path::PathBuf {
    let p = k.dir.path().join("launchctl");
    put(
        &p,
        &format!(
            "#!/bin/sh\necho \"uid=$(id -u) prog=$0 args=$* cwd=$(pwd) LD_PRELOAD=${{LD_PRELOAD-}} SLURM_CONF=${{SLURM_CONF-}} TMPDIR=${{TMPDIR-}}\" >> {}\n[ \"$1\" = print ] && exit 1\nexit 0\n",
            k.record.display()
        ),
    );
    chmod(&p, 0o755);
    p
}

fn install(k: &Kit, l: &std::path::Path) -> std::process::Output {
    let daemons = k.dir.path().join("LaunchDaemons");
    std::fs::create_dir_all(&daemons).unwrap();
    k.run(&[
        "service",
        "install",
        "--prefix",
        k.prefix.to_str().unwrap(),
        "--log-dir",
        k.dir.path().join("log").to_str().unwrap(),
        "--launchd-dir",
        daemons.to_str().unwrap(),
        "--launchctl",
        l.to_str().unwrap(),
        "--conf-server",
        "127.0.0.1:6817",
    ])
}

#[test]
fn service__attack_an_untrusted_launchctl_or_plugin_loads_nothing() {
    if !root() {
        return;
    }
    let k = Kit::new();
    let l = launchctl(&k);
    let o = install(&k, &l);
    ran_clean(&k, &o);
    assert!(o.status.success(), "{}", text(&o));
    let k = Kit::new();
    let l = launchctl(&k);
    give_away(&l);
    let o = install(&k, &l);
    refused(&k, &o, &l, &["owner uid 65534"]);
    let k = Kit::new();
    let l = launchctl(&k);
    give_away(&k.prefix.join("lib/slurm/task_darwin.so"));
    let o = install(&k, &l);
    refused(
        &k,
        &o,
        &k.prefix.join("lib/slurm/task_darwin.so"),
        &["owner uid 65534"],
    );
    assert_eq!(
        std::fs::read_dir(k.dir.path().join("LaunchDaemons"))
            .unwrap()
            .count(),
        0,
        "a plist was written"
    );
}
