//! `power`: scontrol never from the caller's PATH; the map and each node's suspend command
//! trusted like programs.

use super::kit::*;
use std::path::Path;

fn map(k: &Kit, suspend: &Path) -> std::path::PathBuf {
    let m = k.dir.path().join("nodes.toml");
    put(
        &m,
        &format!(
            "broadcast = \"127.255.255.255:9\"\n[node.mac1]\nmac = \"a4:83:e7:00:11:22\"\nsuspend = [\"{}\", \"sleepnow\"]\n",
            suspend.display()
        ),
    );
    m
}

#[test]
fn power__attack_scontrol_on_the_callers_path_is_not_run() {
    if !root() {
        return;
    }
    let k = Kit::new();
    let evil = k.dir.path().join("evilbin");
    k.stand_in(&evil.join("scontrol"));
    let m = map(&k, &k.prefix.join("bin/scontrol"));
    let path = format!("{}:/usr/bin:/bin", evil.display());
    let o = run_hostile(
        &["power", "suspend", "mac[1]", "--map", m.to_str().unwrap()],
        &[("PATH", &path)],
    );
    assert!(
        k.ran().is_empty(),
        "ran from the caller's PATH: {:?}",
        k.ran()
    );
    assert!(!o.status.success());
    // The control: --scontrol names a trusted one, which runs clean.
    // slurmctld gives its programs SLURM_CONF; a trusted one is passed on.
    let sc = k.prefix.join("bin/scontrol");
    let conf = k.prefix.join("etc/slurm.conf");
    let o = run_hostile(
        &[
            "power",
            "suspend",
            "mac[1]",
            "--map",
            m.to_str().unwrap(),
            "--scontrol",
            sc.to_str().unwrap(),
        ],
        &[("PATH", &path), ("SLURM_CONF", conf.to_str().unwrap())],
    );
    ran_clean(&k, &o);
    assert!(
        k.ran()[0].contains(&format!("SLURM_CONF={}", conf.display())),
        "{:?}",
        k.ran()
    );
    // Another user's SLURM_CONF is refused, not passed on.
    std::fs::remove_file(&k.record).unwrap();
    give_away(&conf);
    let o = run_hostile(
        &[
            "power",
            "suspend",
            "mac[1]",
            "--map",
            m.to_str().unwrap(),
            "--scontrol",
            sc.to_str().unwrap(),
        ],
        &[("PATH", &path), ("SLURM_CONF", conf.to_str().unwrap())],
    );
    refused(&k, &o, &conf, &["owner uid 65534"]);
}

#[test]
fn power__attack_a_map_or_suspend_command_another_user_owns_runs_nothing() {
    if !root() {
        return;
    }
    let k = Kit::new();
    let cmd = k.dir.path().join("suspend-mac");
    k.stand_in(&cmd);
    let m = map(&k, &cmd);
    let run = |k: &Kit| k.run(&["power", "suspend", "mac1", "--map", m.to_str().unwrap()]);
    let o = run(&k);
    ran_clean(&k, &o);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::remove_file(&k.record).unwrap();
    give_away(&cmd);
    let o = run(&k);
    refused(&k, &o, &cmd, &["owner uid 65534"]);
    nix::unistd::chown(&cmd, Some(nix::unistd::Uid::from_raw(0)), None).unwrap();
    give_away(&m);
    let o = run(&k);
    refused(&k, &o, &m, &["owner uid 65534"]);
}
