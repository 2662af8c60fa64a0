//! `doctor --controller`: a prefix whose files fail is reported, and its sackd and scontrol
//! are not run to ask the controller.

use super::kit::*;

fn doctor(k: &Kit) -> std::process::Output {
    // A reachable "controller": doctor only asks the release after a TCP connection works.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ctl = l.local_addr().unwrap().to_string();
    let key = k.key();
    k.run(&[
        "doctor",
        "--prefix",
        k.prefix.to_str().unwrap(),
        "--controller",
        &ctl,
        "--key",
        key.to_str().unwrap(),
        "--timeout",
        "3",
    ])
}

#[test]
fn doctor__attack_a_failing_slurmd_is_reported_and_nothing_is_probed() {
    if !root() {
        return;
    }
    let k = Kit::new();
    give_away(&k.prefix.join("sbin/slurmd"));
    let o = doctor(&k);
    refused(&k, &o, &k.prefix.join("sbin/slurmd"), &["owner uid 65534"]);
    assert!(
        text(&o).contains("not asked: the files root runs failed"),
        "{}",
        text(&o)
    );
    // The control: a trusted prefix is probed (its sackd runs, as root, environment clean).
    let k = Kit::new();
    let o = doctor(&k);
    ran_clean(&k, &o);
    assert!(
        k.ran().iter().any(|l| l.contains("sbin/sackd")),
        "{:?}",
        k.ran()
    );
}

#[test]
fn doctor__a_users_prefix_is_one_finding_with_its_fix() {
    if !root() {
        return;
    }
    let k = Kit::new();
    for p in ["", "sbin", "sbin/slurmd", "lib", "lib/slurm", "etc"] {
        give_away(&k.prefix.join(p));
    }
    let o = doctor(&k);
    let t = text(&o);
    assert_eq!(t.matches("owner uid 65534").count(), 1, "{t}");
    assert!(
        t.contains("install the build into a root-owned prefix"),
        "{t}"
    );
    assert!(k.ran().is_empty(), "{:?}", k.ran());
}
