//! A healthy node fixture (a temporary prefix and SACK directory, a controller listening on
//! loopback) passes; each broken state is found by its own check, with the typed problem.
//! Root only: the fixture's files must be root's, and giving a file to uid 65534 needs root;
//! as another user each test prints why it skipped.

use super::*;
use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::{PermissionsExt, chown};
use std::path::Path;

const NOBODY: u32 = 65534;

struct Fixture {
    _dir: tempfile::TempDir,
    params: Params,
    /// The stand-in controller: a listener on loopback, kept open for the test.
    _controller: TcpListener,
}

fn chmod(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

fn write(p: &Path, bytes: &[u8], mode: u32) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, bytes).unwrap();
    chmod(p, mode);
}

/// A port nothing listens on: bound, then let go.
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The healthy node, or `None` (with the reason printed) when not root.
/// The system's resolver for the names the tests use (`localhost`, from /etc/hosts), and a
/// refusal without asking anyone for names under `.invalid` (RFC 6761): no query leaves the
/// machine.
fn loopback_resolver(name: &str, timeout: Duration) -> Result<Vec<IpAddr>, String> {
    if name.ends_with(".invalid") {
        return Err("Name or service not known (the tests' resolver)".into());
    }
    assert!(
        name == "localhost" || name.parse::<IpAddr>().is_ok(),
        "the tests resolve only localhost and addresses, not {name:?}"
    );
    super::name::resolve(name, timeout)
}

fn fixture() -> Option<Fixture> {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: the fixture's files must belong to root, and only root can chown them");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    for bin in ["sbin/slurmd", "sbin/sackd", "lib/slurm/auth_slurm.so"] {
        write(&prefix.join(bin), b"#!/bin/sh\n", 0o755);
    }
    let key: Vec<u8> = (0..64u8).collect();
    write(&prefix.join("etc/slurm.key"), &key, 0o600);
    write(&dir.path().join("controller.key"), &key, 0o600);
    let sack = dir.path().join("run/slurm");
    fs::create_dir_all(&sack).unwrap();
    chmod(&sack, 0o755);
    let controller = TcpListener::bind("127.0.0.1:0").unwrap();
    let params = Params {
        key: prefix.join("etc/slurm.key"),
        prefix,
        expect_key: Some(dir.path().join("controller.key")),
        sack_dir: sack,
        slurmd_port: free_port(),
        bind: vec![IpAddr::from([127, 0, 0, 1])],
        name: "localhost".into(),
        node_addr: Some("127.0.0.1".into()),
        controller: Some(format!("{}", controller.local_addr().unwrap())),
        timeout: Duration::from_secs(5),
        ask_version: false,
        resolver: loopback_resolver,
        conf: None,
    };
    Some(Fixture {
        _dir: dir,
        params,
        _controller: controller,
    })
}

fn problems(p: &Params) -> Vec<Problem> {
    let found = examine(p);
    eprint!("{}", render(&found));
    found
        .into_iter()
        .filter_map(|f| match f.verdict {
            Verdict::Fail(p) => Some(p),
            _ => None,
        })
        .collect()
}

fn key_problems(p: &Params) -> Vec<KeyProblem> {
    problems(p)
        .into_iter()
        .filter_map(|p| match p {
            Problem::Key(k) => Some(k),
            _ => None,
        })
        .collect()
}

/// The trust rule's findings: (the culprit path, why).
fn untrusted(p: &Params) -> Vec<(PathBuf, String)> {
    problems(p)
        .into_iter()
        .filter_map(|p| match p {
            Problem::File(FileProblem::Untrusted { path, why, .. }) => Some((path, why)),
            _ => None,
        })
        .collect()
}

#[test]
fn doctor__healthy_fixture_passes() {
    let Some(f) = fixture() else { return };
    let found = examine(&f.params);
    let report = render(&found);
    eprint!("{report}");
    assert!(found.iter().all(|f| !f.failed()), "{report}");
    for check in [
        "key",
        "files",
        "sack-dir",
        "slurmd-port",
        "node-name",
        "controller",
    ] {
        assert!(
            report.contains(&format!("ok    {check}: ")),
            "{check}: {report}"
        );
    }
    // Every skip says why (the version rule: --no-ask; Linux: no pmset).
    for f in &found {
        if let Verdict::Skip(why) = &f.verdict {
            assert!(why.len() > 20, "{:?} skipped without a reason", f.check);
        }
    }
    if cfg!(target_os = "linux") {
        assert!(
            report.contains("skip  sleep: not applicable (Linux)"),
            "{report}"
        );
    }
}

#[test]
fn doctor__key_mode_0644_fails() {
    let Some(f) = fixture() else { return };
    chmod(&f.params.key, 0o644);
    assert_eq!(
        key_problems(&f.params),
        vec![KeyProblem::Mode {
            path: f.params.key.clone(),
            mode: 0o644
        }]
    );
}

#[test]
fn doctor__key_owned_by_another_uid_fails() {
    let Some(f) = fixture() else { return };
    chown(&f.params.key, Some(NOBODY), None).unwrap();
    assert_eq!(
        key_problems(&f.params),
        vec![KeyProblem::NotRoot {
            path: f.params.key.clone(),
            uid: NOBODY
        }]
    );
}

#[test]
fn doctor__key_too_short_fails() {
    let Some(mut f) = fixture() else { return };
    write(&f.params.key, &[7u8; 16], 0o600);
    f.params.expect_key = None;
    assert_eq!(
        key_problems(&f.params),
        vec![KeyProblem::TooShort {
            path: f.params.key.clone(),
            len: 16
        }]
    );
}

#[test]
fn doctor__key_differing_from_expect_key_fails() {
    let Some(f) = fixture() else { return };
    let expected = f.params.expect_key.clone().unwrap();
    write(&expected, &[9u8; 64], 0o600);
    assert_eq!(
        key_problems(&f.params),
        vec![KeyProblem::Differs {
            path: f.params.key.clone(),
            expected
        }]
    );
}

#[test]
fn doctor__slurmd_group_writable_fails() {
    let Some(f) = fixture() else { return };
    let slurmd = f.params.prefix.join("sbin/slurmd");
    chmod(&slurmd, 0o775);
    let found = untrusted(&f.params);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, slurmd);
    assert!(found[0].1.contains("its group"), "{found:?}");
}

#[test]
fn doctor__slurmd_owned_by_another_uid_fails() {
    let Some(f) = fixture() else { return };
    let slurmd = f.params.prefix.join("sbin/slurmd");
    chown(&slurmd, Some(NOBODY), None).unwrap();
    let found = untrusted(&f.params);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, slurmd);
    assert!(found[0].1.contains("uid 65534"), "{found:?}");
}

#[test]
fn doctor__plugin_dir_world_writable_fails_once() {
    let Some(f) = fixture() else { return };
    let plugins = f.params.prefix.join("lib/slurm");
    write(&plugins.join("select_cons_tres.so"), b"x", 0o755);
    chmod(&plugins, 0o777);
    let found = untrusted(&f.params);
    assert_eq!(found.len(), 1, "one culprit, not one per plugin: {found:?}");
    assert_eq!(found[0].0, plugins);
    assert!(found[0].1.contains("every user"), "{found:?}");
}

#[test]
fn doctor__missing_slurmd_fails() {
    let Some(f) = fixture() else { return };
    let slurmd = f.params.prefix.join("sbin/slurmd");
    fs::remove_file(&slurmd).unwrap();
    assert!(problems(&f.params).contains(&Problem::File(FileProblem::Missing { path: slurmd })),);
}

#[test]
fn doctor__sack_dir_world_writable_fails() {
    let Some(f) = fixture() else { return };
    chmod(&f.params.sack_dir, 0o777);
    assert_eq!(
        problems(&f.params),
        vec![Problem::Sack(SackProblem::WorldWritable {
            path: f.params.sack_dir.clone(),
            mode: 0o777
        })]
    );
}

#[test]
fn doctor__slurmd_port_in_use_fails() {
    let Some(mut f) = fixture() else { return };
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    f.params.slurmd_port = taken.local_addr().unwrap().port();
    let found = problems(&f.params);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        matches!(&found[0], Problem::PortTaken { addr, .. } if *addr == taken.local_addr().unwrap()),
        "{found:?}"
    );
}

#[test]
fn doctor__name_that_does_not_resolve_fails() {
    let Some(mut f) = fixture() else { return };
    f.params.name = "no-such-node.invalid".into();
    f.params.node_addr = None;
    let found = problems(&f.params);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        matches!(&found[0], Problem::Name(NameProblem::DoesNotResolve { name, .. }) if name == "no-such-node.invalid"),
        "{found:?}"
    );
}

#[test]
fn doctor__name_resolving_elsewhere_than_node_addr_fails() {
    let Some(mut f) = fixture() else { return };
    f.params.node_addr = Some("127.0.0.2".into());
    let found = problems(&f.params);
    assert!(
        matches!(&found[..], [Problem::Name(NameProblem::WrongAddress { want, .. })] if want == "127.0.0.2"),
        "{found:?}"
    );
}

#[test]
fn doctor__controller_unreachable_fails_and_the_version_is_not_asked() {
    let Some(mut f) = fixture() else { return };
    let port = free_port();
    f.params.controller = Some(format!("127.0.0.1:{port}"));
    f.params.ask_version = true;
    let found = examine(&f.params);
    eprint!("{}", render(&found));
    let failed: Vec<_> = found.iter().filter(|f| f.failed()).collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(
        matches!(&failed[0].verdict, Verdict::Fail(Problem::Controller(ControllerProblem::Unreachable { port: p, .. })) if *p == port),
        "{failed:?}"
    );
    let version = found.iter().find(|f| f.check == Check::Version).unwrap();
    assert_eq!(
        version.verdict,
        Verdict::Skip("not asked: the controller is unreachable".into())
    );
}

#[test]
fn render__fail_lines_carry_their_fix() {
    let found = vec![
        Finding::fail(
            Check::Key,
            Problem::Key(KeyProblem::Mode {
                path: "/opt/slurm/etc/slurm.key".into(),
                mode: 0o644,
            }),
        ),
        Finding::ok(Check::Port, "free"),
        Finding::skip(Check::Sleep, "not applicable (Linux)"),
    ];
    let text = render(&found);
    let lines: Vec<_> = text.lines().collect();
    assert!(lines[0].starts_with("FAIL  key: /opt/slurm/etc/slurm.key has mode 0644"));
    assert_eq!(lines[1], "  fix: sudo chmod 600 /opt/slurm/etc/slurm.key");
    assert_eq!(lines[2], "ok    slurmd-port: free");
    assert_eq!(lines[3], "skip  sleep: not applicable (Linux)");
}

#[test]
fn render_json__same_words_and_fix_only_on_failures() {
    let found = vec![
        Finding::fail(
            Check::SackDir,
            Problem::Sack(SackProblem::WorldWritable {
                path: "/var/run/slurm".into(),
                mode: 0o777,
            }),
        ),
        Finding::skip(Check::Sleep, "not applicable (Linux)"),
    ];
    let v: serde_json::Value = serde_json::from_str(&render_json(&found)).unwrap();
    assert_eq!(v[0]["check"], "sack-dir");
    assert_eq!(v[0]["status"], "FAIL");
    assert_eq!(v[0]["fix"], "sudo chmod 755 /var/run/slurm");
    assert_eq!(v[1]["status"], "skip");
    assert_eq!(v[1]["detail"], "not applicable (Linux)");
    assert!(v[1].get("fix").is_none());
}

/// The shape of `pmset -g` on macOS 14 (written from pmset(1)'s format: no Mac here).
const PMSET_G: &str = "System-wide power settings:\nCurrently in use:\n standby              1\n Sleep On Power Button 1\n hibernatefile        /var/vm/sleepimage\n disksleep            10\n sleep                1 (sleep prevented by sharingd, powerd)\n hibernatemode        3\n displaysleep         10\n";

#[test]
fn sleep__pmset_sleep_line_is_read_and_judged() {
    assert_eq!(sleep::sleep_minutes(PMSET_G), Some(1));
    assert!(sleep::judge(PMSET_G).failed());
    let never = PMSET_G.replace(" sleep                1", " sleep                0");
    assert_eq!(sleep::sleep_minutes(&never), Some(0));
    assert!(!sleep::judge(&never).failed());
    assert_eq!(
        sleep::sleep_minutes(" disksleep 10\n displaysleep 5\n"),
        None
    );
}

#[test]
fn controller__join_errors_keep_what_and_fix_apart() {
    let refused = controller::from_join(driver_common::error::Error::JoinRefused {
        node: "26.05.3".into(),
        controller: "24.11.5".into(),
        why: "newer".into(),
        install: "24.11".into(),
    });
    assert_eq!(
        refused.fix(),
        "install Slurm 24.11 on this node, or change the controller"
    );
    let asked = controller::from_join(driver_common::error::Error::JoinController {
        controller: "ctl:6817".into(),
        what: "no answer".into(),
        fix: "check the port".into(),
        detail: "sackd: error: connect failure\n\n".into(),
    });
    assert_eq!(asked.fix(), "check the port");
    assert!(
        asked
            .detail()
            .ends_with("no answer (the probe saw: sackd: error: connect failure)"),
        "{}",
        asked.detail()
    );
}
