//! `join` (plan mode and `--apply`): nothing of the prefix runs before the whole install is
//! trusted; the probe's environment and work directory are root's.

use super::kit::*;
use std::path::Path;

fn join(k: &Kit, extra: &[&str]) -> std::process::Output {
    let key = k.key();
    let mut args = vec![
        "join",
        "--prefix",
        k.prefix.to_str().unwrap(),
        "--controller",
        "127.0.0.1:9",
        "--key",
        key.to_str().unwrap(),
        "--timeout",
        "3",
    ];
    args.extend(extra);
    k.run(&args)
}

#[test]
fn join__control_a_trusted_prefix_runs_its_programs_as_root_with_a_clean_environment() {
    if !root() {
        return;
    }
    let k = Kit::new();
    let o = join(&k, &[]);
    ran_clean(&k, &o);
    let ran = k.ran().join("\n");
    assert!(ran.contains("sbin/slurmd args=-V"), "{ran}");
    assert!(ran.contains("sbin/sackd args=-D"), "{ran}");
}

/// Each way another user could change what root runs or loads; none may start a program.
#[test]
fn join__attack_untrusted_program_directory_plugin_or_config_runs_nothing() {
    if !root() {
        return;
    }
    type Spoil = fn(&Kit) -> std::path::PathBuf;
    let cases: &[(&str, Spoil, &str)] = &[
        (
            "slurmd owned by nobody",
            |k| {
                let p = k.prefix.join("sbin/slurmd");
                give_away(&p);
                p
            },
            "owner uid 65534",
        ),
        (
            "slurmd mode 0777",
            |k| {
                let p = k.prefix.join("sbin/slurmd");
                chmod(&p, 0o777);
                p
            },
            "mode 0777",
        ),
        (
            "slurmd mode 0775",
            |k| {
                let p = k.prefix.join("sbin/slurmd");
                chmod(&p, 0o775);
                p
            },
            "mode 0775",
        ),
        (
            "sbin/ owned by nobody",
            |k| {
                let p = k.prefix.join("sbin");
                give_away(&p);
                p
            },
            "owner uid 65534",
        ),
        (
            "a plugin owned by nobody",
            |k| {
                let p = k.prefix.join("lib/slurm/task_darwin.so");
                give_away(&p);
                p
            },
            "owner uid 65534",
        ),
        (
            "lib/ owned by nobody",
            |k| {
                let p = k.prefix.join("lib");
                give_away(&p);
                p
            },
            "owner uid 65534",
        ),
        (
            "slurmstepd owned by nobody",
            |k| {
                let p = k.prefix.join("sbin/slurmstepd");
                give_away(&p);
                p
            },
            "owner uid 65534",
        ),
        (
            "etc/ owned by nobody",
            |k| {
                let p = k.prefix.join("etc");
                give_away(&p);
                p
            },
            "owner uid 65534",
        ),
        (
            "the prefix in a user's directory",
            |k| {
                give_away(k.dir.path());
                k.dir.path().to_path_buf()
            },
            "owner uid 65534",
        ),
    ];
    for (what, spoil, why) in cases {
        let k = Kit::new();
        let culprit = spoil(&k);
        let o = join(&k, &["--node-addr", "192.0.2.7"]);
        eprintln!("case: {what}");
        refused(&k, &o, &culprit, &[why, "fix:"]);
    }
}

#[test]
fn join__attack_apply_with_a_nobody_sackd_and_a_writable_scontrol_starts_nothing() {
    if !root() {
        return;
    }
    let k = Kit::new();
    give_away(&k.prefix.join("sbin/sackd"));
    chmod(&k.prefix.join("bin/scontrol"), 0o777);
    let o = join(&k, &["--apply"]);
    // The first culprit is named (sbin is judged before bin); neither ran.
    refused(&k, &o, &k.prefix.join("sbin/sackd"), &["owner uid 65534"]);
    assert!(
        !k.prefix.join("etc/slurm.key").exists(),
        "the key was installed"
    );
}

#[test]
fn join__attack_a_nobody_tmpdir_does_not_hold_roots_work_directory() {
    if !root() {
        return;
    }
    let k = Kit::new();
    let tmp = k.dir.path().join("usertmp");
    std::fs::create_dir(&tmp).unwrap();
    give_away(&tmp);
    let key = k.key();
    let o = run_hostile(
        &[
            "join",
            "--prefix",
            k.prefix.to_str().unwrap(),
            "--controller",
            "127.0.0.1:9",
            "--key",
            key.to_str().unwrap(),
            "--timeout",
            "3",
        ],
        &[("TMPDIR", tmp.to_str().unwrap())],
    );
    ran_clean(&k, &o);
    let sackd = k
        .ran()
        .into_iter()
        .find(|l| l.contains("sbin/sackd"))
        .unwrap();
    assert!(sackd.contains("SLURM_SACK_KEY=/tmp/slurm-join."), "{sackd}");
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "root wrote into the caller's TMPDIR"
    );
}

#[test]
fn join__attack_a_conf_file_another_user_owns_is_not_taken() {
    if !root() {
        return;
    }
    let k = Kit::new();
    let conf = k.dir.path().join("user.conf");
    put(&conf, "ClusterName=x\nPluginDir=/home/nobody/plugins\n");
    give_away(&conf);
    let key = k.key();
    let args = |c: &Path| {
        vec![
            "join".to_string(),
            "--prefix".into(),
            k.prefix.display().to_string(),
            "--conf".into(),
            c.display().to_string(),
            "--key".into(),
            key.display().to_string(),
            "--timeout".into(),
            "3".into(),
            "--apply".into(),
        ]
    };
    let a = args(&conf);
    let o = k.run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    refused(&k, &o, &conf, &["owner uid 65534", "--conf"]);
    assert!(!Path::new(&k.prefix.join("etc/slurm.key")).exists());
    // The control: the same file, root's, is read and the probe runs.
    nix::unistd::chown(&conf, Some(nix::unistd::Uid::from_raw(0)), None).unwrap();
    let o = k.run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    ran_clean(&k, &o);
}
