use super::ServiceOptions;
use super::*;
use crate::service::plist::Daemon;
use std::os::unix::fs::PermissionsExt;

/// A fake launchctl: `bootstrap` creates `<state>/<label>`; `bootout` marks it going and the
/// label stays visible to `print` for `linger` more calls, as launchd does while the job
/// stops; `bootstrap` of a label still present fails like launchd's (5: Input/output error).
fn fake_launchctl(dir: &Path, linger: u32) -> PathBuf {
    let state = dir.join("state");
    std::fs::create_dir_all(&state).unwrap();
    let script = format!(
        r#"#!/bin/sh
state='{state}'
echo "$@" >> "$state/calls"
case $1 in
  bootstrap)
    label=$(basename "$3" .plist)
    if [ -e "$state/$label" ]; then echo "Bootstrap failed: 5: Input/output error" >&2; exit 5; fi
    : > "$state/$label" ;;
  bootout) label=${{2#system/}}; echo {linger} > "$state/$label.going" ;;
  print)
    label=${{2#system/}}
    [ -e "$state/$label" ] || exit 113
    if [ -e "$state/$label.going" ]; then
      n=$(cat "$state/$label.going")
      if [ "$n" -le 0 ]; then rm -f "$state/$label" "$state/$label.going"; exit 113; fi
      echo $((n - 1)) > "$state/$label.going"
    fi
    echo "system/$label = {{ state = running }}" ;;
esac
"#,
        state = state.display()
    );
    let p = dir.join("launchctl");
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn options(dir: &Path, launchctl: PathBuf) -> ServiceOptions {
    let prefix = dir.join("prefix");
    std::fs::create_dir_all(prefix.join("sbin")).unwrap();
    let slurmd = prefix.join("sbin/slurmd");
    std::fs::write(&slurmd, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&slurmd, std::fs::Permissions::from_mode(0o755)).unwrap();
    ServiceOptions {
        daemon: Daemon::Slurmd,
        prefix,
        log_dir: dir.join("log"),
        conf_server: None,
        caffeinate: true,
        launchd_dir: dir.join("LaunchDaemons"),
        launchctl: Some(launchctl),
    }
}

#[test]
fn install__writes_the_plist_0644_and_reinstall_waits_out_the_bootout_race() {
    let d = tempfile::tempdir().unwrap();
    let sh = Shell::new().unwrap();
    let o = options(d.path(), fake_launchctl(d.path(), 3));
    std::fs::create_dir_all(&o.launchd_dir).unwrap();
    install(&sh, &o).unwrap();
    let path = o.launchd_dir.join("org.slurm-on-mac.slurmd.plist");
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o644);
    let v = plist::parse(&std::fs::read(&path).unwrap(), &path).unwrap();
    let args = plist::program_arguments(&v);
    assert_eq!(args[0], "/usr/bin/caffeinate");
    // Again: the label lingers for 3 prints after bootout; bootstrap only after it is gone.
    install(&sh, &o).unwrap();
    let calls = std::fs::read_to_string(d.path().join("state/calls")).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    let bootout = lines.iter().position(|l| l.starts_with("bootout")).unwrap();
    let last_bootstrap = lines
        .iter()
        .rposition(|l| l.starts_with("bootstrap"))
        .unwrap();
    assert!(last_bootstrap > bootout + 3, "{calls}");
    uninstall(&sh, &o).unwrap();
    assert!(!path.exists());
    let l = launchctl_of(&o).unwrap();
    assert!(!l.loaded(&sh, "org.slurm-on-mac.slurmd").unwrap());
}

#[test]
fn uninstall__a_label_that_never_goes_is_a_timeout_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let sh = Shell::new().unwrap();
    let l = Launchctl {
        program: driver_common::gate::Program::checked(&fake_launchctl(d.path(), 1_000_000))
            .unwrap(),
    };
    std::fs::write(d.path().join("state/org.x"), "").unwrap();
    let e = l
        .bootout(&sh, "org.x", std::time::Duration::from_millis(600))
        .unwrap_err()
        .to_string();
    assert!(e.contains("org.x") && e.contains("timed out"), "{e}");
}

#[test]
fn install__refuses_a_prefix_without_the_daemon_and_a_missing_launchctl() {
    let d = tempfile::tempdir().unwrap();
    let sh = Shell::new().unwrap();
    let mut o = options(d.path(), fake_launchctl(d.path(), 0));
    o.prefix = d.path().join("nothing");
    let e = install(&sh, &o).unwrap_err().to_string();
    assert!(e.contains("--prefix") && e.contains("sbin/slurmd"), "{e}");
    o.launchctl = Some(d.path().join("no-launchctl"));
    let e = install(&sh, &o).unwrap_err().to_string();
    assert!(e.contains("service print"), "{e}");
    assert!(!o.launchd_dir.exists(), "nothing written");
}

#[test]
fn install__attack_slurmd_owned_by_another_user_or_writable_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let sh = Shell::new().unwrap();
    let o = options(d.path(), fake_launchctl(d.path(), 0));
    let slurmd = o.prefix.join("sbin/slurmd");
    std::fs::set_permissions(&slurmd, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = install(&sh, &o).expect_err("a world-writable slurmd was loaded as root");
    assert!(e.to_string().contains("writable"), "{e}");
    std::fs::set_permissions(&slurmd, std::fs::Permissions::from_mode(0o755)).unwrap();
    if nix::unistd::geteuid().is_root() {
        std::os::unix::fs::chown(&slurmd, Some(4242), None).unwrap();
        let e = install(&sh, &o).expect_err("another user's slurmd was loaded as root");
        assert!(e.to_string().contains("4242"), "{e}");
    } else {
        eprintln!("skipped the ownership half: only root can give slurmd to uid 4242");
    }
    assert!(!o.launchd_dir.join("org.slurm-on-mac.slurmd.plist").exists());
}

#[test]
fn install__attack_relative_log_dir_and_bad_conf_server_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let sh = Shell::new().unwrap();
    let mut o = options(d.path(), fake_launchctl(d.path(), 0));
    o.log_dir = "attack-relative-logs".into();
    let e = install(&sh, &o).expect_err("a relative log directory reached the plist");
    let _ = std::fs::remove_dir("attack-relative-logs");
    assert!(e.to_string().contains("absolute"), "{e}");
    o.log_dir = d.path().join("log");
    o.conf_server = Some("ctl:6817 -Z".into());
    let e = install(&sh, &o).expect_err("a bad --conf-server reached the plist");
    assert!(e.to_string().contains("--conf-server"), "{e}");
    assert!(!o.launchd_dir.join("org.slurm-on-mac.slurmd.plist").exists());
}

#[test]
fn install__attack_failed_reinstall_restores_the_old_job_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    let sh = Shell::new().unwrap();
    let lc = fake_launchctl(d.path(), 0);
    // The stand-in refuses any plist that names the host `broken`.
    let text = std::fs::read_to_string(&lc).unwrap().replacen(
        "  bootstrap)\n",
        "  bootstrap)\n    if grep -q broken \"$3\"; then echo refused >&2; exit 5; fi\n",
        1,
    );
    std::fs::write(&lc, text).unwrap();
    let mut o = options(d.path(), lc);
    std::fs::create_dir_all(&o.launchd_dir).unwrap();
    install(&sh, &o).unwrap();
    let path = o.launchd_dir.join("org.slurm-on-mac.slurmd.plist");
    let old = std::fs::read(&path).unwrap();
    o.conf_server = Some("broken:6817".into());
    let e = install(&sh, &o).unwrap_err().to_string();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        old,
        "the old plist was overwritten"
    );
    assert!(
        d.path().join("state/org.slurm-on-mac.slurmd").exists(),
        "no job runs"
    );
    assert!(e.contains("old") && e.contains("runs"), "{e}");
}
