//! `install` and `uninstall`: no path followed as root. A symlinked directory in a prefix
//! cannot lead `uninstall` outside it; a staged directory or file swapped for a link while
//! `install` copies cannot bring a root-only file into the install.

use super::kit::*;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn sha256(p: &Path) -> String {
    driver_common::util::fs::sha256_file(p).unwrap()
}

#[test]
fn uninstall__attack_a_symlinked_directory_does_not_lead_outside_the_prefix() {
    if !root() {
        return;
    }
    let k = Kit::new();
    let victim = k.dir.path().join("victimdir");
    put(&victim.join("precious.conf"), "keep me");
    let prefix = k.dir.path().join("inst");
    put(&prefix.join("sbin/slurmd"), "x");
    let (a, b) = (
        sha256(&prefix.join("sbin/slurmd")),
        sha256(&victim.join("precious.conf")),
    );
    let manifest = format!(
        "prefix = \"{p}\"\n[files.\"sbin/slurmd\"]\ncontent = \"sha256:{a}\"\nmode = 420\n[files.\"evil/precious.conf\"]\ncontent = \"sha256:{b}\"\nmode = 420\n",
        p = prefix.display(),
        a = a,
        b = b,
    );
    put(
        &prefix.join("share/slurm-on-mac/install-manifest.toml"),
        &manifest,
    );
    chmod(&victim.join("precious.conf"), 0o644);
    chmod(&prefix.join("sbin/slurmd"), 0o644);
    symlink(&victim, prefix.join("evil")).unwrap();
    let o = k.run(&["uninstall", "--prefix", prefix.to_str().unwrap()]);
    let t = text(&o);
    assert!(
        victim.join("precious.conf").exists(),
        "removed through the link:\n{t}"
    );
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("nothing was removed"), "{t}");
    assert!(
        prefix.join("sbin/slurmd").exists(),
        "a refused uninstall removed something"
    );
    // The control: a real directory in its place is removed with the rest.
    std::fs::remove_file(prefix.join("evil")).unwrap();
    put(&prefix.join("evil/precious.conf"), "keep me");
    chmod(&prefix.join("evil/precious.conf"), 0o644);
    let o = k.run(&["uninstall", "--prefix", prefix.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!prefix.join("evil/precious.conf").exists());
    assert!(victim.join("precious.conf").exists());
}

/// A staged build for `prefix` in `stage` (its staging manifest beside it).
fn staged(stage: &Path, prefix: &Path) {
    put(&stage.join("sbin/slurmd"), "#!/bin/sh\n");
    chmod(&stage.join("sbin/slurmd"), 0o755);
    for i in 0..150 {
        put(&stage.join(format!("share/doc/f{i:03}")), "doc");
    }
    put(&stage.join("etc/slurm.conf.example"), "ClusterName=x\n");
    driver_common::staging::Manifest {
        version: "24.11.5".into(),
        line: "24.11".into(),
        personality: driver_common::personality::Personality::Native,
        target: "aarch64-apple-darwin".into(),
        patched: true,
        prefix: stage.to_path_buf(),
        configured_prefix: Some(prefix.to_path_buf()),
        sysconfdir: None,
        localstatedir: None,
        source: stage.join("src"),
        build_dir: stage.join("build"),
        make_vars: vec![],
    }
    .write()
    .unwrap();
}

/// The attacker: waits until `install`'s staging tree (beside `prefix`) holds `rel`, that
/// is until root has looked at the staged `rel` and begun to copy it, then swaps the staged
/// `rel` for a link to `to`. Gives up at `stop`.
fn swapper(
    prefix: PathBuf,
    stage: PathBuf,
    rel: &'static str,
    to: PathBuf,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let parent = prefix.parent().unwrap().to_path_buf();
        while !stop.load(Ordering::Relaxed) {
            let started = std::fs::read_dir(&parent)
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| {
                    e.file_name().to_string_lossy().starts_with(".tmp-install")
                        && e.path().join("tree").join(rel).exists()
                });
            if started {
                let path = stage.join(rel);
                let _ = std::fs::rename(&path, path.with_extension("real"));
                let _ = symlink(&to, &path);
                return;
            }
            std::thread::yield_now();
        }
    })
}

/// 30 installs of a staged build while [`swapper`] swaps the staged `rel` for a link to
/// the root-only `secret`; returns how many installs hold the secret's content.
fn race(k: &Kit, tag: &str, rel: &'static str, secret: &Path) -> usize {
    let stage = k.dir.path().join(format!("stage-{tag}/opt/slurm"));
    // The control: without the swaps, the same install succeeds (so a refusal below is the
    // gate's doing, not a broken setup).
    let control = k.dir.path().join(format!("control-{tag}/opt/slurm"));
    std::fs::create_dir_all(control.parent().unwrap()).unwrap();
    staged(&stage, &control);
    let o = k.run(&[
        "install",
        "--from",
        stage.to_str().unwrap(),
        "--prefix",
        control.to_str().unwrap(),
    ]);
    assert!(
        o.status.success(),
        "the control install failed: {}",
        text(&o)
    );
    let (mut breaches, mut installs) = (0, 0);
    for round in 0..30 {
        let prefix = k.dir.path().join(format!("{tag}{round}/opt/slurm"));
        std::fs::create_dir_all(prefix.parent().unwrap()).unwrap();
        let _ = std::fs::remove_dir_all(stage.parent().unwrap().parent().unwrap());
        staged(&stage, &prefix);
        let stop = Arc::new(AtomicBool::new(false));
        let s = swapper(
            prefix.clone(),
            stage.clone(),
            rel,
            secret.to_path_buf(),
            stop.clone(),
        );
        let o = k.run(&[
            "install",
            "--from",
            stage.to_str().unwrap(),
            "--prefix",
            prefix.to_str().unwrap(),
        ]);
        stop.store(true, Ordering::Relaxed);
        s.join().unwrap();
        installs += usize::from(o.status.success());
        let leaked = driver_common::util::fs::walk_files(&prefix)
            .unwrap_or_default()
            .iter()
            .any(|r| {
                std::fs::read(prefix.join(r)).is_ok_and(|b| b.windows(6).any(|w| w == b"SECRET"))
            });
        breaches += usize::from(leaked);
    }
    eprintln!(
        "install race ({rel}): {breaches} breaches in 30 runs ({installs} installs succeeded)"
    );
    breaches
}

/// The race: while `install` copies, the attacker swaps a staged directory (`share/doc`) or
/// file (`etc/slurm.conf.example`) for a link to a root-only one once root has begun to copy
/// it. A breach is an install that holds the root-only content. Whether the swap lands
/// before root reads the path depends on scheduling; the bound is the 30 installs of each
/// race. Counts seen on the code before the gate are in the closing note.
#[test]
fn install__attack_swapping_staged_paths_for_links_during_the_copy_brings_in_nothing() {
    if !root() {
        return;
    }
    let k = Kit::new();
    let secret_dir = k.dir.path().join("rootonly");
    for i in 0..150 {
        put(&secret_dir.join(format!("f{i:03}")), "SECRET");
        chmod(&secret_dir.join(format!("f{i:03}")), 0o600);
    }
    chmod(&secret_dir, 0o700);
    let secret_conf = k.dir.path().join("rootonly.conf");
    put(&secret_conf, "SECRET\n");
    chmod(&secret_conf, 0o600);
    let dir = race(&k, "d", "share/doc", &secret_dir);
    let file = race(&k, "f", "etc/slurm.conf.example", &secret_conf);
    assert_eq!(
        (dir, file),
        (0, 0),
        "installs holding a root-only file's content (directory race, file race)"
    );
}
