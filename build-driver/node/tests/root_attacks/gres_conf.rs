//! `gres-conf`: slurmd -v -C only from a trusted install; a hardware file's content is never
//! printed.

use super::kit::*;

#[test]
fn gres_conf__attack_an_untrusted_slurmd_is_not_run() {
    if !root() {
        return;
    }
    let k = Kit::new();
    put(&k.prefix.join("lib/slurm/gpu_apple.so"), "plugin");
    let prefix = k.prefix.to_str().unwrap();
    let o = k.run(&["gres-conf", "--prefix", prefix]);
    ran_clean(&k, &o);
    let k = Kit::new();
    put(&k.prefix.join("lib/slurm/gpu_apple.so"), "plugin");
    chmod(&k.prefix.join("sbin/slurmd"), 0o777);
    let o = k.run(&["gres-conf", "--prefix", k.prefix.to_str().unwrap()]);
    refused(&k, &o, &k.prefix.join("sbin/slurmd"), &["mode 0777"]);
}

#[test]
fn gres_conf__attack_a_root_only_hardware_file_is_not_quoted() {
    if !root() {
        return;
    }
    let k = Kit::new();
    put(&k.prefix.join("lib/slurm/gpu_apple.so"), "plugin");
    let secret = k.dir.path().join("shadow");
    put(&secret, "root:SECRET-HASH-0xdeadbeef:19000:0:99999:7:::\n");
    chmod(&secret, 0o600);
    let o = k.run(&[
        "gres-conf",
        "--prefix",
        k.prefix.to_str().unwrap(),
        "--hardware",
        secret.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("line 1"), "{t}");
    assert!(!t.contains("SECRET"), "the file's content was printed: {t}");
    // Another user's hardware file is refused like a program.
    give_away(&secret);
    let o = k.run(&[
        "gres-conf",
        "--prefix",
        k.prefix.to_str().unwrap(),
        "--hardware",
        secret.to_str().unwrap(),
    ]);
    refused(&k, &o, &secret, &["owner uid 65534"]);
}
