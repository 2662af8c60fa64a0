use super::*;
use std::os::unix::fs::PermissionsExt;

fn inputs(dir: &Path) -> ClientInputs {
    ClientInputs {
        prefix: dir.join("prefix"),
        etc: dir.join("prefix/etc"),
        key: dir.join("home/slurm.key"),
        controller: Controller::parse("ctl.example.org").unwrap(),
        log_dir: dir.join("log"),
        launchd_dir: dir.join("LaunchDaemons"),
        launchctl: Some(dir.join("launchctl")),
        run_dir: dir.join("run/slurm"),
    }
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A prefix with an executable `sbin/sackd` (and `sbin/slurmd`, which must stay unused), the
/// key to install, a LaunchDaemons directory and a fake launchctl: `print` says "not loaded"
/// until `bootstrap` loaded the label; `bootstrap` fails like launchd's when `fail-load`
/// exists. Every call is appended to `calls`.
fn scene() -> (tempfile::TempDir, ClientInputs) {
    let d = tempfile::tempdir().unwrap();
    chmod(d.path(), 0o755);
    let i = inputs(d.path());
    std::fs::create_dir_all(i.prefix.join("sbin")).unwrap();
    for daemon in ["sackd", "slurmd"] {
        let p = i.prefix.join("sbin").join(daemon);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        chmod(&p, 0o755);
    }
    std::fs::create_dir_all(i.key.parent().unwrap()).unwrap();
    std::fs::write(&i.key, "the cluster's key").unwrap();
    chmod(&i.key, 0o600);
    std::fs::create_dir_all(&i.launchd_dir).unwrap();
    std::fs::create_dir_all(i.run_dir.parent().unwrap()).unwrap();
    let state = d.path().display();
    let script = format!(
        r#"#!/bin/sh
echo "$@" >> '{state}/calls'
case $1 in
  print) [ -e '{state}/loaded' ] || exit 113 ;;
  bootstrap) [ -e '{state}/fail-load' ] && {{ echo "Bootstrap failed: 5: Input/output error" >&2; exit 5; }}; : > '{state}/loaded' ;;
  bootout) rm -f '{state}/loaded' ;;
esac
"#
    );
    let l = i.launchctl.clone().unwrap();
    std::fs::write(&l, script).unwrap();
    chmod(&l, 0o755);
    (d, i)
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn sh() -> xshell::Shell {
    xshell::Shell::new().unwrap()
}

#[test]
fn plan__sackd_argv_is_the_launch_daemons_configless_sackd() {
    let p = ClientPlan::new(&inputs(Path::new("/opt")));
    assert_eq!(
        p.sackd(),
        [
            "/opt/prefix/sbin/sackd",
            "-D",
            "--conf-server",
            "ctl.example.org:6817"
        ]
    );
    // The same arguments `service install --daemon sackd` writes into the plist.
    let plist = service::normalised(&p.service).unwrap().plist();
    let args = service::plist::program_arguments(&plist);
    assert_eq!(args, p.sackd());
    assert_eq!(p.service.daemon, Daemon::Sackd);
}

#[test]
fn plan__installs_only_the_key_0600_and_no_slurmd() {
    let p = ClientPlan::new(&inputs(Path::new("/opt")));
    assert_eq!(
        p.installs,
        [Install {
            from: "/opt/home/slurm.key".into(),
            to: "/opt/prefix/etc/slurm.key".into(),
            mode: 0o600,
        }]
    );
    let text = p.render();
    assert!(!text.contains("slurmd"), "{text}");
    assert!(!text.contains("slurm.conf "), "{text}");
    assert!(
        text.contains("install -d -m 755 /opt/run/slurm\n"),
        "{text}"
    );
    assert!(
        text.contains("org.slurm-on-mac.sackd")
            && text.contains("/opt/prefix/sbin/sackd -D --conf-server ctl.example.org:6817\n"),
        "{text}"
    );
    let mut i = inputs(Path::new("/opt"));
    i.key = i.etc.join("slurm.key");
    assert!(
        ClientPlan::new(&i).installs.is_empty(),
        "the key is in place"
    );
}

#[test]
fn plan__environment_puts_the_prefix_on_path_and_unsets_slurm_conf() {
    let p = ClientPlan::new(&inputs(Path::new("/opt/my slurm")));
    assert_eq!(
        p.environment(),
        "export PATH='/opt/my slurm/prefix/bin':\"$PATH\"\nunset SLURM_CONF\n"
    );
}

#[test]
fn preflight__a_local_slurm_conf_or_a_slurmd_daemon_is_refused() {
    let (d, i) = scene();
    preflight(&i.etc, &i.launchd_dir).unwrap();
    std::fs::create_dir_all(&i.etc).unwrap();
    std::fs::write(i.etc.join("slurm.conf"), "ClusterName=x\n").unwrap();
    let e = preflight(&i.etc, &i.launchd_dir).unwrap_err().to_string();
    assert!(e.contains("instead of sackd's copy"), "{e}");
    std::fs::remove_file(i.etc.join("slurm.conf")).unwrap();
    std::fs::write(i.launchd_dir.join("org.slurm-on-mac.slurmd.plist"), "").unwrap();
    let e = preflight(&i.etc, &i.launchd_dir).unwrap_err().to_string();
    assert!(e.contains("compute node"), "{e}");
    drop(d);
}

#[test]
fn apply__writes_the_key_and_loads_sackd_and_nothing_of_slurmd() {
    let (d, i) = scene();
    let p = ClientPlan::new(&i);
    apply(&sh(), &p).unwrap();
    assert_eq!(names_in(&i.etc), ["slurm.key"]);
    let run = std::fs::metadata(&i.run_dir).unwrap();
    assert!(run.is_dir() && run.permissions().mode() & 0o777 == 0o755);
    let key = std::fs::metadata(i.etc.join("slurm.key")).unwrap();
    assert_eq!(key.permissions().mode() & 0o777, 0o600);
    assert_eq!(names_in(&i.launchd_dir), ["org.slurm-on-mac.sackd.plist"]);
    let plist_path = i.launchd_dir.join("org.slurm-on-mac.sackd.plist");
    let xml = std::fs::read(&plist_path).unwrap();
    let v = service::plist::parse(&xml, &plist_path).unwrap();
    let args = service::plist::program_arguments(&v);
    assert_eq!(args, p.sackd());
    let calls = std::fs::read_to_string(d.path().join("calls")).unwrap();
    assert!(
        calls.contains(&format!("bootstrap system {}", plist_path.display())),
        "{calls}"
    );
    assert!(!calls.contains("slurmd"), "{calls}");
}

#[test]
fn apply__a_service_that_does_not_load_takes_the_key_back() {
    let (d, i) = scene();
    std::fs::write(d.path().join("fail-load"), "").unwrap();
    let e = apply(&sh(), &ClientPlan::new(&i)).unwrap_err().to_string();
    assert!(e.contains("did not load"), "{e}");
    assert!(!i.etc.join("slurm.key").exists(), "the key stayed");
    assert!(!i.run_dir.exists(), "the run directory stayed");
    assert!(names_in(&i.launchd_dir).is_empty());
}

#[test]
fn apply__attack_sackd_writable_by_others_writes_nothing() {
    let (d, i) = scene();
    chmod(&i.prefix.join("sbin/sackd"), 0o777);
    let e = apply(&sh(), &ClientPlan::new(&i)).unwrap_err().to_string();
    assert!(e.contains("writable"), "{e}");
    assert!(!i.etc.exists(), "the key's directory was made");
    assert!(!i.run_dir.exists(), "the run directory was made");
    assert!(!d.path().join("calls").exists(), "launchctl was called");
}

#[test]
fn apply__attack_key_directory_writable_by_others_writes_nothing() {
    let (d, i) = scene();
    std::fs::create_dir_all(&i.etc).unwrap();
    chmod(&i.etc, 0o777);
    let e = apply(&sh(), &ClientPlan::new(&i)).unwrap_err().to_string();
    assert!(e.contains("writable"), "{e}");
    assert!(names_in(&i.etc).is_empty());
    assert!(!d.path().join("calls").exists(), "launchctl was called");
}

#[test]
fn apply__without_launchctl_writes_nothing() {
    let (d, mut i) = scene();
    i.launchctl = Some(d.path().join("no-launchctl"));
    let e = apply(&sh(), &ClientPlan::new(&i)).unwrap_err().to_string();
    assert!(e.contains("launchd"), "{e}");
    assert!(!i.etc.exists());
}

#[test]
fn client__bad_controller_or_conf_server_is_refused_before_anything() {
    use clap::Parser;
    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: JoinArgs,
    }
    let (d, i) = scene();
    for bad in [
        "ctl x",
        "ctl:0",
        "ctl:6817:1",
        "-ctl",
        "ctl:70000",
        "[::1]x",
    ] {
        let flag = format!("--controller={bad}");
        let t = T::try_parse_from(["t", "--prefix", "/nonexistent", "--client", &flag]).unwrap();
        let e = run(&t.a, &i.prefix, i.etc.clone(), &i.key).unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{bad}: {e}");
    }
    assert!(!i.etc.exists());
    drop(d);
}

#[test]
fn client__cli_takes_no_slurmd_option_and_needs_the_controller() {
    use clap::Parser;
    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: JoinArgs,
    }
    let base = ["t", "--prefix", "/p", "--client"];
    let parse = |more: &[&str]| T::try_parse_from(base.iter().chain(more)).map(|t| t.a);
    assert!(parse(&["--controller", "c"]).is_ok_and(|a| a.client));
    assert!(parse(&[]).is_err(), "no controller");
    for extra in [
        &["--dynamic", "macos"][..],
        &["--node-addr", "192.0.2.7"],
        &["--name", "mac1"],
        &["--conf", "/etc/slurm.conf"],
    ] {
        let mut more = vec!["--controller", "c"];
        more.extend(extra);
        assert!(parse(&more).is_err(), "{extra:?} accepted with --client");
    }
    assert!(
        T::try_parse_from([
            "t",
            "--prefix",
            "/p",
            "--controller",
            "c",
            "--log-dir",
            "/l"
        ])
        .is_err(),
        "--log-dir without --client"
    );
}

#[test]
fn make_run_dir__made_0755_once_and_a_file_in_its_place_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("slurm");
    assert!(make_run_dir(&dir).unwrap(), "made");
    let m = std::fs::metadata(&dir).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o755);
    assert!(!make_run_dir(&dir).unwrap(), "there already");
    let file = d.path().join("file");
    std::fs::write(&file, "").unwrap();
    assert!(make_run_dir(&file).is_err());
}
