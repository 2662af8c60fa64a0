//! `join` against live loopback clusters of the harness (cluster/handle.rs), mixing release
//! lines. Ignored by default: they need root (mount namespaces), MariaDB and built prefixes,
//! and take about a minute each. Run them with
//!
//! ```text
//! cargo test -p slurm-lab join_tests -- --ignored --nocapture --test-threads 1
//! ```
//!
//! The prefixes default to this worktree's `target/slurm/<build>/prefix`; the variables
//! `JOIN_PREFIX_2411_NATIVE`, `JOIN_PREFIX_2411_DARWIN` and `JOIN_PREFIX_2605_NATIVE` name
//! others (read only: the harness writes only into its cluster directory). A missing build
//! skips its test, saying which and how to build it (CI builds 24.11.5 only).

use crate::cluster::UpOptions;
use crate::cluster::handle::Cluster;
use driver_common::error::{Error, Result};
use slurm_mac::join::ask::{Controller, Source};
use slurm_mac::join::*;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);

fn prefix(var: &str, build: &str, how: &str) -> Option<PathBuf> {
    let p = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        driver_common::project_root()
            .join("target/slurm")
            .join(build)
            .join("prefix")
    });
    if p.join("sbin/slurmd").is_file() && p.join("sbin/sackd").is_file() {
        Some(p)
    } else {
        eprintln!(
            "skipped: no {build} build at {} (set {var}, or build it: {how})",
            p.display()
        );
        None
    }
}

fn native_2411() -> Option<PathBuf> {
    prefix(
        "JOIN_PREFIX_2411_NATIVE",
        "24.11.5-native",
        "cargo xtask build-slurm --version 24.11.5",
    )
}
fn darwin_2411() -> Option<PathBuf> {
    prefix(
        "JOIN_PREFIX_2411_DARWIN",
        "24.11.5-darwin",
        "cargo xtask build-slurm --version 24.11.5 --personality darwin",
    )
}
fn native_2605() -> Option<PathBuf> {
    prefix(
        "JOIN_PREFIX_2605_NATIVE",
        "26.05.3-native-nopatch",
        "cargo xtask fetch --version 26.05.3 && cargo xtask build-slurm --version 26.05.3 --no-patches",
    )
}

fn root_or_skip() -> bool {
    let ok = cfg!(target_os = "linux") && nix::unistd::geteuid().is_root();
    if !ok {
        eprintln!("skipped: the clusters need root (mount namespaces)");
    }
    ok
}

/// The 24.11 native and darwin prefixes, when both are built and this is root; `None`
/// (the reason printed: the calling test is skipped) if not.
fn both_2411_as_root() -> Option<(PathBuf, PathBuf)> {
    let (Some(native), Some(darwin)) = (native_2411(), darwin_2411()) else {
        return None;
    };
    root_or_skip().then_some((native, darwin))
}

/// The 24.11 darwin prefix, the native one and a one-node 24.11 native controller `name`
/// serving configless with its key; `None` (the reason printed: the calling test is
/// skipped) without both builds or root.
fn darwin_and_controller_2411(name: &str) -> Option<Joined> {
    let (native, darwin) = both_2411_as_root()?;
    let up = controller(&native, name);
    let key = up.c.layout().key();
    Some(Joined {
        native,
        darwin,
        up,
        key,
    })
}

struct Joined {
    native: PathBuf,
    darwin: PathBuf,
    up: Up,
    key: PathBuf,
}

/// A TCP port on 127.0.0.1 that nothing listens on (it was free a moment ago).
fn unused_port() -> u16 {
    crate::cluster::free_ports(1).unwrap()[0]
}

/// The error of `r` names `fix` (the advice a user reads).
fn assert_names_fix(r: &Result<Checked>, fix: &str) {
    assert!(
        r.as_ref()
            .err()
            .is_some_and(|e| e.to_string().contains(fix)),
        "{r:?}"
    );
}

/// A running cluster, stopped when dropped (also when an assertion fails).
struct Up {
    c: Cluster,
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl Drop for Up {
    fn drop(&mut self) {
        if let Err(e) = crate::cluster::down(&self.c.layout().root) {
            eprintln!("cluster down: {e}");
        }
    }
}

/// A one-node cluster of `prefix` serving configless, with room for dynamic nodes.
fn controller(prefix: &Path, name: &str) -> Up {
    controller_with(prefix, name, true, None)
}

/// `controller`; `node`: a build of another release line that will ask it. Configless hands
/// the controller's `PluginDir` to the node, and the harness sets it to the controller's
/// prefix, whose plugins another release refuses ("Incompatible plugin version"): so the
/// node's plugin directory is listed second (Slurm tries each directory of the list in
/// order and skips another release's plugins: plugin_load_and_link, src/common/plugin.c).
fn controller_with(prefix: &Path, name: &str, configless: bool, node: Option<&Path>) -> Up {
    let sh = xshell::Shell::new().unwrap();
    let mut opts = UpOptions::new(
        prefix.to_path_buf(),
        name.into(),
        crate::cluster::default_dir(name),
    );
    opts.extra_conf = vec!["MaxNodeCount=8".into()];
    if let Some(node) = node {
        opts.extra_conf.push(format!(
            "PluginDir={}:{}",
            prefix.join("lib/slurm").display(),
            node.join("lib/slurm").display()
        ));
    }
    if configless {
        opts.extra_conf
            .push("SlurmctldParameters=enable_configless".into());
    }
    let (_lock, c) = crate::cluster::fresh_up(&sh, &opts).unwrap();
    Up { c, _lock }
}

fn configless(c: &Cluster) -> Source {
    Source::Configless(
        Controller::parse(&format!("127.0.0.1:{}", c.state.ports.slurmctld)).unwrap(),
    )
}

fn show(what: &str, r: &Result<Checked>) {
    match r {
        Ok(c) => println!(
            "{what}: accepted: node {} controller {} ({} back)",
            c.node.text, c.controller.text, c.behind
        ),
        Err(e) => println!("{what}: {e}"),
    }
}

#[test]
#[ignore = "needs root, MariaDB and built prefixes; see the module doc"]
fn join__same_line_darwin_node_accepted_and_bad_inputs_name_the_fix() {
    let Some(Joined {
        native,
        darwin,
        up,
        key,
    }) = darwin_and_controller_2411("join2411")
    else {
        return;
    };
    let c = &up.c;
    let r = check(&darwin, &configless(c), &key, TIMEOUT);
    show("24.11 darwin node, 24.11 controller", &r);
    let ok = r.unwrap();
    assert_eq!((ok.node.line.to_string(), ok.behind), ("24.11".into(), 0));

    let missing = c.layout().root.join("no-such.key");
    let r = check(&darwin, &configless(c), &missing, TIMEOUT);
    show("missing key", &r);
    assert!(matches!(r, Err(Error::JoinKey { .. })));

    let open = c.layout().root.join("open.key");
    std::fs::copy(&key, &open).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let r = check(&darwin, &configless(c), &open, TIMEOUT);
    show("key readable by others", &r);
    assert_names_fix(&r, "chmod 600");

    let wrong = c.layout().root.join("wrong.key");
    driver_common::util::fs::write_atomic(&wrong, &[7u8; 1024], 0o600).unwrap();
    let r = check(&darwin, &configless(c), &wrong, TIMEOUT);
    show("wrong key", &r);
    assert_names_fix(&r, "--key");

    let port = unused_port();
    let nobody = Source::Configless(Controller::parse(&format!("127.0.0.1:{port}")).unwrap());
    let r = check(&darwin, &nobody, &key, Duration::from_secs(15));
    show("nothing listening", &r);
    assert_names_fix(&r, "firewall");
    drop(up);

    let up = controller_with(&native, "join2411n", false, None);
    let r = check(&darwin, &configless(&up.c), &up.c.layout().key(), TIMEOUT);
    show("controller without configless", &r);
    assert_names_fix(&r, "enable_configless");
    let r = check(
        &darwin,
        &Source::Local(up.c.layout().conf()),
        &up.c.layout().key(),
        TIMEOUT,
    );
    show("the same, with its slurm.conf (--conf)", &r);
    assert_eq!(r.unwrap().behind, 0);
}

#[test]
#[ignore = "needs root, MariaDB and built 24.11 and 26.05 prefixes; see the module doc"]
fn join__mixed_lines_older_node_accepted_newer_node_refused() {
    let (Some(old), Some(new)) = (native_2411(), native_2605()) else {
        return;
    };
    if !root_or_skip() {
        return;
    }
    {
        let up = controller_with(&new, "join2605", true, Some(&old));
        let r = check(&old, &configless(&up.c), &up.c.layout().key(), TIMEOUT);
        show("24.11 node, 26.05 controller", &r);
        let ok = r.unwrap();
        assert_eq!(
            (ok.controller.line.to_string(), ok.behind),
            ("26.05".into(), 3)
        );
    }
    {
        let up = controller_with(&old, "join2411b", true, Some(&new));
        let r = check(&new, &configless(&up.c), &up.c.layout().key(), TIMEOUT);
        show("26.05 node, 24.11 controller", &r);
        let e = r.unwrap_err().to_string();
        // The 24.11 controller cannot read a 26.05 header and answers "Protocol
        // authentication error", as to a wrong key: the advice names both causes and the
        // lines to install.
        assert!(
            e.contains("older release than this build")
                && e.contains("25.11, 25.05, 24.11 or 24.05")
                && e.contains("--key"),
            "{e}"
        );
        let log =
            std::fs::read_to_string(up.c.log(crate::cluster::daemon::Daemon::Slurmctld)).unwrap();
        let seen = log
            .lines()
            .find(|l| l.contains("not supported"))
            .unwrap_or("(none)");
        println!("the 24.11 controller's log: {seen}");
        assert!(seen.contains("protocol_version"), "{seen}");
    }
}

#[test]
#[ignore = "needs root, MariaDB and built prefixes; see the module doc"]
fn join__planned_dynamic_slurmd_registers_with_its_features() {
    let Some(j) = darwin_and_controller_2411("join2411d") else {
        return;
    };
    let (c, darwin, key) = (&j.up.c, &j.darwin, &j.key);
    check(darwin, &configless(c), key, TIMEOUT).unwrap();
    // Two slurmd on one machine need two ports: the test's node adds its own (`Port=` is a
    // node parameter `--conf` takes); a Mac uses the cluster's SlurmdPort.
    let port = unused_port();
    let plan = plan::Plan::new(&plan::Inputs {
        slurmd: darwin.join("sbin/slurmd"),
        etc: darwin.join("etc"),
        key: darwin.join("etc/slurm.key"),
        conf_server: Some(format!("127.0.0.1:{}", c.state.ports.slurmctld)),
        local_conf: None,
        shape: plan::Shape::Dynamic {
            features: format!("macos,joined Port={port}"),
        },
        node_name: "mac1".into(),
        hardware: None,
    });
    print!("plan:\n{}", plan.render());
    // The prefix is read-only here: the key comes through SLURM_SACK_KEY instead of
    // <etc>/slurm.key, and slurmd runs in the foreground (-D) so the test owns its PID.
    let run = c.layout().root.join("mac1-run");
    std::fs::create_dir_all(run.join("slurm")).unwrap();
    // The harness's slurm.conf puts spool directories under nodes/%n (one level: slurmd
    // makes only the last).
    std::fs::create_dir_all(c.layout().node_dir("mac1")).unwrap();
    let mut cmd = std::process::Command::new(&plan.slurmd[0]);
    cmd.args(&plan.slurmd[1..])
        .arg("-D")
        .env("SLURM_SACK_KEY", key)
        .env_remove("SLURM_CONF");
    driver_common::util::process::spawn::private_run(
        &mut cmd,
        std::ffi::CString::new(run.as_os_str().as_encoded_bytes()).unwrap(),
        Some(c"mac1".into()),
        Vec::new(),
    );
    let log = c.layout().root.join("mac1-slurmd.out");
    let mut child = driver_common::util::process::spawn_logged(cmd, &log).unwrap();
    let seen = driver_common::util::process::bounded::poll(
        "mac1 idle",
        Duration::from_secs(60),
        Duration::from_millis(500),
        || {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(Error::Scenario(format!("mac1's slurmd exited: {status}")));
            }
            let mut q = c.tool("scontrol");
            q.args(["show", "node", "mac1"]);
            let out =
                driver_common::util::process::bounded::run_bounded(q, Duration::from_secs(20))?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            Ok((text.contains("State=IDLE")).then_some(text))
        },
    );
    child.kill().ok();
    child.wait().ok();
    let text = seen.unwrap_or_else(|e| {
        panic!(
            "{e}; slurmd said:\n{}",
            driver_common::util::process::file_tail(&log, 20)
        )
    });
    println!("scontrol show node mac1:\n{text}");
    assert!(text.contains("AvailableFeatures=macos,joined"), "{text}");
    assert!(text.contains("DYNAMIC_NORM"), "{text}");
}

mod client;
