//! `cargo xtask cluster peer --native P1 --darwin P2`: Slurm's own Python test suite
//! (`testsuite/python`, pytest, local-config mode) against a cluster of each build, and the
//! per-test outcomes compared: the darwin personality must do what the native build does.
//!
//! For each build, in the private mount namespace (private_ns.rs):
//! - a one-node cluster (lab.rs: `cluster up`'s MariaDB, slurmdbd, slurmctld and slurmd) with
//!   `SelectTypeParameters=CR_CPU`, which many tests require; its accounting database is
//!   thrown away afterwards, so the suite may modify it (`--allow-slurmdbd-modify`);
//! - a copy of the build's `testsuite/python` (the suite writes into its own directory) and a
//!   `testsuite.conf` naming the build's source, build directory, prefix and configuration;
//! - pytest run as the test user `slurmtest`, which has a `NOPASSWD: ALL` sudo rule (the suite
//!   runs SlurmUser commands through sudo and skips most tests without it), with a per-test
//!   timeout (pytest-timeout) and a JUnit XML report, read back per test case.
//!
//! The tests run are a subset (`--subset FILE`, default `ci/peer-subset.txt`: one pytest path
//! or node id per line, `#` comments) or the whole suite (`--all`). Tests whose outcomes differ
//! are run once more on both builds (fresh clusters); a difference that is not there again is
//! printed as not reproduced. The command fails when a difference is reproduced, or when the
//! native run passed nothing (a suite that only skips proves nothing).

use super::lab::Lab;
use super::private_ns::{self, Entered};
use super::user::TEST_USER;
use crate::check::{Outcome, Results};
use crate::cli::PeerArgs;
use driver_common::error::{Error, Result};
use driver_common::personality::Personality;
use driver_common::staging::Manifest;
use driver_common::util::process::bounded::run_to_log_bounded;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use xshell::{Shell, cmd};

mod report;
pub use report::{counts, node_id, parse_junit, parse_subset};

/// The Python modules the suite imports (installed by ci/setup-debian.sh, pinned).
const MODULES: &[&str] = &[
    "pytest",
    "pytest_timeout",
    "pexpect",
    "jsondiff",
    "jsonpatch",
    "requests",
    "yaml",
];
/// `slurm.conf` lines beyond the cluster's own (later lines win). CR_CPU: what the most
/// tests require. MinJobAge: in local-config mode every module's teardown looks up every job
/// the run submitted so far (lib/atf.py `cancel_jobs` fails on a purged job), so no job
/// record may be purged during the run (0 is not accepted; 24 hours is longer than any run).
///
/// KillWait: Slurm's default (30 s) instead of the harness's 2 s; `srun` gives a killed
/// step KillWait + 2 s to end, and test_116_46 failed with 2 s on a loaded machine.
const EXTRA_CONF: &[&str] = &[
    "SelectTypeParameters=CR_CPU",
    "MinJobAge=86400",
    "KillWait=30",
];

/// An installed build with the source and build trees the suite compiles helpers against,
/// as its staging manifest names them ([`driver_common::staging::Manifest`]).
#[derive(Debug, Clone)]
pub struct Install {
    pub name: String,
    pub prefix: PathBuf,
    pub src: PathBuf,
    pub build: PathBuf,
    /// The `testsuite/python` directory run against it.
    pub suite: PathBuf,
}

impl Install {
    /// The staged build of `prefix`, which must be of `personality`, with `suite` (a
    /// `testsuite/python` directory) or else its source's own suite.
    pub fn from_prefix(
        personality: Personality,
        prefix: &Path,
        suite: Option<&Path>,
    ) -> Result<Install> {
        let staged = Manifest::read_as(prefix, personality)?;
        let name = personality.name();
        for (what, dir) in [("source", &staged.source), ("build", &staged.build_dir)] {
            if !dir.is_dir() {
                return Err(Error::Usage(format!(
                    "{name}: no {what} tree {} (named by {}); rebuild it with `cargo xtask build-slurm`",
                    dir.display(),
                    Manifest::path_for(&staged.prefix).display()
                )));
            }
        }
        let suite = match suite {
            Some(s) => s.to_path_buf(),
            None => staged.source.join("testsuite/python"),
        };
        let conftest = suite.join("conftest.py");
        if !conftest.is_file() {
            return Err(Error::Usage(format!(
                "{name}: {} is missing: no Python test suite there (release tags of 25.11 and later have none: pass --suite with the directory `cargo xtask fetch --version V` exports for a pin that names one)",
                conftest.display()
            )));
        }
        if suite.file_name() != Some(std::ffi::OsStr::new("python")) {
            return Err(Error::Usage(format!(
                "{name}: --suite {}: name the suite's `testsuite/python` directory itself",
                suite.display()
            )));
        }
        Ok(Install {
            name: name.to_string(),
            prefix: staged.prefix,
            src: staged.source,
            build: staged.build_dir,
            suite,
        })
    }
}

/// The tests to run: all of them with `--all`, else the subset file's lines.
fn selection(root: &Path, args: &PeerArgs) -> Result<Vec<String>> {
    if args.all {
        return Ok(vec!["tests".to_string()]);
    }
    let file = args
        .subset
        .clone()
        .unwrap_or_else(|| root.join("ci/peer-subset.txt"));
    let text = std::fs::read_to_string(&file).map_err(|e| Error::io(&file, e))?;
    let subset = parse_subset(&text);
    if subset.is_empty() {
        return Err(Error::file(file, "no tests listed"));
    }
    Ok(subset)
}

/// The differences between the native and darwin results that are there again when just
/// those tests run once more on both builds (timing-sensitive tests on a loaded machine).
fn reproduced_differences(
    sh: &Shell,
    installs: &[Install; 2],
    results: &[crate::check::Results],
    work: &Path,
    args: &PeerArgs,
) -> Result<Vec<crate::check::Difference>> {
    let mut diffs = crate::check::differences(&results[0], &results[1]);
    for d in &diffs {
        println!("  differs (native -> darwin): {d}");
    }
    if diffs.is_empty() {
        return Ok(diffs);
    }
    let ids: Vec<String> = diffs.iter().filter_map(|d| node_id(&d.test)).collect();
    println!(
        "peer suite: running the {} differing test(s) again on both builds",
        ids.len()
    );
    let mut again = Vec::new();
    for install in installs {
        let dir = work.join(format!("{}-again", install.name));
        again.push(run_one(sh, install, &dir, &ids, args)?);
    }
    diffs.retain(|d| {
        let kept = again[0].get(&d.test) != again[1].get(&d.test);
        if !kept {
            println!(
                "  not reproduced (both {}): {d}",
                again[0]
                    .get(&d.test)
                    .map_or("absent".into(), |o| o.to_string())
            );
        }
        kept
    });
    for d in &diffs {
        println!("  reproduced: {d}");
    }
    Ok(diffs)
}

/// The whole command. Callable from `ci` in-process: outside the private namespace it runs
/// the driver again as `cluster peer` with `args`.
pub fn run(sh: &Shell, root: &Path, args: PeerArgs) -> Result<()> {
    if private_ns::enter(sh, "cluster peer", &argv(&args))? == Entered::Done {
        return Ok(());
    }
    let installs = [
        Install::from_prefix(Personality::Native, &args.native, args.suite.as_deref())?,
        Install::from_prefix(Personality::Darwin, &args.darwin, args.suite.as_deref())?,
    ];
    let selection = selection(root, &args)?;
    test_user(sh)?;
    check_modules(sh)?;
    let work = work_dir()?;
    println!(
        "peer suite: {} selection(s), {} node(s) per cluster, profile `{}`, per-test timeout {} s, work directory {}",
        selection.len(),
        args.nodes,
        args.profile.profile.name(),
        args.timeout,
        work.display()
    );
    let mut results = Vec::new();
    for install in &installs {
        let t = Instant::now();
        let r = run_one(sh, install, &work.join(&install.name), &selection, &args)?;
        println!(
            "peer suite [{}]: {} in {:.0?}",
            install.name,
            counts(&r),
            t.elapsed()
        );
        results.push(r);
    }
    let native = &results[0];
    let diffs = reproduced_differences(sh, &installs, &results, &work, &args)?;
    let passed = native.values().filter(|o| **o == Outcome::Pass).count();
    let verdict = if passed == 0 {
        Err(Error::Scenario(format!(
            "the native run passed no test: nothing was compared (see {})",
            work.display()
        )))
    } else if !diffs.is_empty() {
        Err(Error::Scenario(format!(
            "{} test(s) differ between native and darwin personality (files kept in {})",
            diffs.len(),
            work.display()
        )))
    } else {
        println!(
            "peer suite: native and darwin personality agree on all {} test cases",
            native.len()
        );
        Ok(())
    };
    if verdict.is_ok() && !args.keep {
        std::fs::remove_dir_all(&work).map_err(|e| Error::io(&work, e))?;
    }
    verdict
}

/// The command line that runs `args` again (inside the private namespace).
fn argv(args: &PeerArgs) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = vec!["cluster".into(), "peer".into()];
    v.extend(["--native".into(), args.native.clone().into_os_string()]);
    v.extend(["--darwin".into(), args.darwin.clone().into_os_string()]);
    if let Some(s) = &args.subset {
        v.extend(["--subset".into(), s.clone().into_os_string()]);
    }
    if args.all {
        v.push("--all".into());
    }
    if let Some(s) = &args.suite {
        v.extend(["--suite".into(), s.clone().into_os_string()]);
    }
    v.push(format!("--timeout={}", args.timeout).into());
    v.push(format!("--profile={}", args.profile.profile.name()).into());
    v.push(format!("--nodes={}", args.nodes).into());
    if args.keep {
        v.push("--keep".into());
    }
    v
}

/// One build: cluster up, suite copied and configured, pytest as the test user, cluster down.
fn run_one(
    sh: &Shell,
    install: &Install,
    dir: &Path,
    selection: &[String],
    args: &PeerArgs,
) -> Result<Results> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let extra: Vec<String> = EXTRA_CONF.iter().map(|s| s.to_string()).collect();
    let lab = Lab::start(
        sh,
        &install.prefix,
        dir,
        args.profile.profile,
        args.nodes,
        &extra,
        &[],
    )?;
    let outcome = (|| {
        let suite = prepare_suite(sh, install, dir, &lab.conf())?;
        // Written by pytest, so in the test user's directory.
        let junit = dir.join("suite/junit.xml");
        let log = dir.join("pytest.log");
        run_pytest(
            sh,
            install,
            &lab.conf(),
            &suite,
            &junit,
            &log,
            selection,
            args,
        )?;
        let xml = std::fs::read_to_string(&junit).map_err(|e| {
            Error::io(&junit, e).context(format!("pytest wrote no report; see {}", log.display()))
        })?;
        parse_junit(&xml).map_err(|e| Error::file(&junit, e))
    })();
    let stopped = lab.stop(sh);
    let results = outcome?;
    stopped?;
    Ok(results)
}

/// Copy `testsuite/python` below `dir/suite/testsuite`, write `testsuite.conf` beside it, give
/// both to the test user; returns the `python` directory pytest runs in.
fn prepare_suite(sh: &Shell, install: &Install, dir: &Path, conf: &Path) -> Result<PathBuf> {
    let testsuite = dir.join("suite/testsuite");
    std::fs::create_dir_all(&testsuite).map_err(|e| Error::io(&testsuite, e))?;
    let from = &install.suite;
    driver_common::util::process::bounded::read_bounded(
        cmd!(sh, "cp -R {from} {testsuite}"),
        Duration::from_secs(60),
    )?;
    let tsconf = testsuite.join("testsuite.conf");
    std::fs::write(&tsconf, testsuite_conf(install, conf)).map_err(|e| Error::io(&tsconf, e))?;
    let suite_root = dir.join("suite");
    driver_common::util::process::bounded::read_bounded(
        cmd!(sh, "chown -R {TEST_USER} {suite_root}"),
        Duration::from_secs(60),
    )?;
    Ok(testsuite.join("python"))
}

/// The keys lib/atf.py reads from `testsuite.conf`.
pub fn testsuite_conf(install: &Install, conf: &Path) -> String {
    let conf_dir = conf.parent().unwrap_or(Path::new("/"));
    format!(
        "# Generated by `cargo xtask cluster peer` for the {} build.\nSlurmSourceDir={}\nSlurmBuildDir={}\nSlurmInstallDir={}\nSlurmConfigDir={}\n",
        install.name,
        install.src.display(),
        install.build.display(),
        install.prefix.display(),
        conf_dir.display()
    )
}

#[allow(clippy::too_many_arguments)]
fn run_pytest(
    sh: &Shell,
    install: &Install,
    conf: &Path,
    suite: &Path,
    junit: &Path,
    log: &Path,
    selection: &[String],
    args: &PeerArgs,
) -> Result<()> {
    let home = user_home(sh)?;
    let p = &install.prefix;
    let path = format!(
        "PATH={}/bin:{}/sbin:/usr/local/bin:/usr/bin:/bin",
        p.display(),
        p.display()
    );
    let tsconf = suite.parent().unwrap_or(suite).join("testsuite.conf");
    let env = [
        format!("HOME={home}"),
        format!("USER={TEST_USER}"),
        path,
        "LANG=C.UTF-8".to_string(),
        format!("SLURM_CONF={}", conf.display()),
        format!("SLURM_TESTSUITE_CONF={}", tsconf.display()),
    ];
    let timeout = format!("--timeout={}", args.timeout);
    let junitxml = format!("--junitxml={}", junit.display());
    let command = {
        let _dir = sh.push_dir(suite);
        Command::from(cmd!(
            sh,
            "runuser -u {TEST_USER} -- env -i {env...} python3 -m pytest -p no:cacheprovider -q -rfE --no-color --local-config --allow-slurmdbd-modify {timeout} {junitxml} {selection...}"
        ))
    };
    // The whole run is bounded too: every test may use its timeout, plus a margin.
    let per_selection = if args.all {
        400
    } else {
        selection.len() as u64
    };
    let deadline = Duration::from_secs(args.timeout * per_selection.max(1) + 600);
    let status = run_to_log_bounded(command, log, deadline)?;
    // pytest exits 1 when tests failed (a result, compared later), >1 on usage or internal
    // errors (no usable result).
    match status.code() {
        Some(0 | 1) => Ok(()),
        _ => Err(Error::Scenario(format!(
            "pytest ended with {status}; see {}:\n{}",
            log.display(),
            driver_common::util::process::file_tail(log, 30)
        ))),
    }
}

/// The shared test user (user.rs: created if absent, with the `NOPASSWD: ALL` sudo rule), and
/// the check lib/atf.py makes: `sudo -ln` must show the rule, or most tests skip.
fn test_user(sh: &Shell) -> Result<()> {
    let user = super::user::ensure_test_user()?;
    let name = &user.name;
    let rights = driver_common::util::process::bounded::read_bounded(
        cmd!(sh, "runuser -u {name} -- sudo -ln"),
        Duration::from_secs(30),
    )
    .map_err(|e| {
        e.context(format!(
            "`sudo -ln` as {name} failed (is the sudo package installed? ci/setup-debian.sh)"
        ))
    })?;
    if !rights.contains("NOPASSWD: ALL") {
        return Err(Error::Usage(format!(
            "{name} has no `NOPASSWD: ALL` sudo rule; `sudo -ln` says:\n{rights}"
        )));
    }
    Ok(())
}

/// The Python modules must import for the test user's `python3`.
fn check_modules(sh: &Shell) -> Result<()> {
    let code = format!("import {}", MODULES.join(", "));
    let out = driver_common::util::process::bounded::run_bounded(
        cmd!(
            sh,
            "runuser -u {TEST_USER} -- env -i PATH=/usr/local/bin:/usr/bin:/bin python3 -c {code}"
        ),
        Duration::from_secs(60),
    )?;
    if !out.status.success() {
        return Err(Error::MissingTool {
            program: format!("python3 modules ({})", MODULES.join(", ")),
            step: "the peer suite".into(),
            fix: format!(
                "run ci/setup-debian.sh (pinned pip packages); python3 said: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(())
}

fn user_home(sh: &Shell) -> Result<String> {
    let line = driver_common::util::process::bounded::read_bounded(
        cmd!(sh, "getent passwd {TEST_USER}"),
        Duration::from_secs(10),
    )?;
    line.trim()
        .split(':')
        .nth(5)
        .map(str::to_string)
        .ok_or_else(|| Error::Scenario(format!("getent passwd {TEST_USER}: {line:?}")))
}

/// A new directory for one peer run, readable by the test user.
fn work_dir() -> Result<PathBuf> {
    driver_common::util::fs::new_work_dir("xtask-peer", 0o755)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JUNIT: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1" skipped="2" tests="5">
<testcase classname="tests.test_101_1" name="test_ok" time="0.1"><properties><property name="description" value="x"/></properties></testcase>
<testcase classname="tests.test_101_1" name="test_bad" time="0.1"><failure message="assert 0">trace</failure></testcase>
<testcase classname="tests.test_102_1" name="test_skip" time="0.0"><skipped type="pytest.skip" message="needs auto-config">x</skipped></testcase>
<testcase classname="tests.test_102_1" name="test_x[a b]" time="0.0"><skipped type="pytest.xfail" message="known"/></testcase>
<testcase classname="tests.test_103_1" name="test_td" time="0.1"><failure message="f"/><error message="failed on teardown"/></testcase>
</testsuite></testsuites>"#;

    #[test]
    fn parse_junit__maps_every_outcome() {
        let r = parse_junit(JUNIT).unwrap();
        assert_eq!(r.len(), 5);
        assert_eq!(r["tests.test_101_1::test_ok"], Outcome::Pass);
        assert_eq!(r["tests.test_101_1::test_bad"], Outcome::Fail);
        assert_eq!(r["tests.test_102_1::test_skip"], Outcome::Skip);
        assert_eq!(r["tests.test_102_1::test_x[a b]"], Outcome::XFail);
        assert_eq!(r["tests.test_103_1::test_td"], Outcome::Error);
    }

    #[test]
    fn parse_junit__empty_or_broken_report_is_an_error() {
        assert!(parse_junit("<testsuites><testsuite/></testsuites>").is_err());
        assert!(parse_junit("<testsuites>").is_err());
    }

    #[test]
    fn counts__names_the_four_main_outcomes_even_at_zero() {
        let r = parse_junit(JUNIT).unwrap();
        assert_eq!(counts(&r), "PASS 1, FAIL 1, SKIP 1, ERROR 1, XFAIL 1");
    }

    #[test]
    fn argv__round_trips_through_the_cli() {
        use clap::Parser;
        let args = PeerArgs {
            native: "/n".into(),
            darwin: "/d".into(),
            subset: Some("/s.txt".into()),
            all: false,
            suite: Some("/x/testsuite/python".into()),
            timeout: 17,
            keep: true,
            profile: crate::cli::ProfileArg {
                profile: crate::cluster::profile::Profile::Poc,
            },
            nodes: 3,
        };
        let mut line: Vec<std::ffi::OsString> = vec!["cargo xtask".into()];
        line.extend(argv(&args));
        let cli = crate::cli::ClusterCli::try_parse_from(line).unwrap();
        let crate::cli::ClusterCommand::Cluster(c) = cli.command;
        let crate::cli::ClusterAction::Peer(p) = c.action else {
            panic!("not peer")
        };
        assert_eq!(
            (p.native, p.darwin, p.subset, p.all, p.timeout, p.keep),
            (args.native, args.darwin, args.subset, false, 17, true)
        );
        assert_eq!(p.suite, args.suite);
        assert_eq!(p.profile.profile, crate::cluster::profile::Profile::Poc);
        assert_eq!(p.nodes, 3);
    }

    #[test]
    fn node_id__module_class_and_parameters() {
        assert_eq!(
            node_id("tests.test_116_46::test_wait").as_deref(),
            Some("tests/test_116_46.py::test_wait")
        );
        assert_eq!(
            node_id("tests.test_116_28.Test_mem_mincpus_tmp::test_mem[a b-1]").as_deref(),
            Some("tests/test_116_28.py::Test_mem_mincpus_tmp::test_mem[a b-1]")
        );
        assert_eq!(node_id("no_separator"), None);
    }

    #[test]
    fn parse_subset__comments_and_blank_lines() {
        let s = parse_subset("# head\n\ntests/test_a.py  # why\n  tests/test_b.py::test_c\n#x\n");
        assert_eq!(s, ["tests/test_a.py", "tests/test_b.py::test_c"]);
    }

    #[test]
    fn testsuite_conf__has_the_four_keys_atf_reads() {
        let i = Install {
            name: "native".into(),
            prefix: "/s/prefix".into(),
            src: "/s/src".into(),
            build: "/s/build".into(),
            suite: "/s/src/testsuite/python".into(),
        };
        let c = testsuite_conf(&i, Path::new("/c/etc/slurm.conf"));
        driver_common::testing::assert_has_lines(
            &c.lines().collect::<Vec<_>>(),
            &[
                "SlurmSourceDir=/s/src",
                "SlurmBuildDir=/s/build",
                "SlurmInstallDir=/s/prefix",
                "SlurmConfigDir=/c/etc",
            ],
        );
    }

    #[test]
    fn install__takes_src_and_build_from_the_staging_manifest() {
        let (d, prefix) = driver_common::testing::scratch("prefix");
        std::fs::create_dir_all(&prefix).unwrap();
        let err = Install::from_prefix(Personality::Native, &prefix, None).unwrap_err();
        assert!(matches!(err, Error::NotStaged { .. }), "{err}");
        let staged = Manifest {
            version: "24.11.5".into(),
            line: "24.11".into(),
            personality: Personality::Native,
            target: "x86_64-unknown-linux-gnu".into(),
            patched: true,
            prefix: prefix.clone(),
            configured_prefix: None,
            sysconfdir: None,
            localstatedir: None,
            source: d.path().join("elsewhere/src"),
            build_dir: d.path().join("elsewhere/build"),
            make_vars: vec!["V=0".into()],
        };
        staged.write().unwrap();
        let err = Install::from_prefix(Personality::Native, &prefix, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no source tree"), "{err}");
        let err = Install::from_prefix(Personality::Darwin, &prefix, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a native build"), "{err}");
        std::fs::create_dir_all(d.path().join("elsewhere/src/testsuite/python")).unwrap();
        std::fs::create_dir_all(d.path().join("elsewhere/build")).unwrap();
        let err = Install::from_prefix(Personality::Native, &prefix, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("conftest.py is missing"), "{err}");
        std::fs::write(
            d.path().join("elsewhere/src/testsuite/python/conftest.py"),
            "",
        )
        .unwrap();
        let i = Install::from_prefix(Personality::Native, &prefix, None).unwrap();
        assert_eq!(i.build, d.path().join("elsewhere/build"));
        assert_eq!(i.suite, d.path().join("elsewhere/src/testsuite/python"));
        // A suite from elsewhere (a release tag without one): taken instead, checked the same.
        let other = d.path().join("suite/testsuite/python");
        std::fs::create_dir_all(&other).unwrap();
        let err = Install::from_prefix(Personality::Native, &prefix, Some(&other))
            .unwrap_err()
            .to_string();
        assert!(err.contains("pass --suite"), "{err}");
        std::fs::write(other.join("conftest.py"), "").unwrap();
        let i = Install::from_prefix(Personality::Native, &prefix, Some(&other)).unwrap();
        assert_eq!(i.suite, other);
        let err = Install::from_prefix(Personality::Native, &prefix, Some(other.parent().unwrap()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("conftest.py is missing"), "{err}");
    }
}
