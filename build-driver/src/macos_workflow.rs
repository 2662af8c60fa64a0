//! Checks of `ci/macos-arm64.yml` (lane 5, "Real macOS"), which no machine of this project
//! can run: the YAML parses, it targets an arm64 macOS runner (but for the one Linux job that
//! builds the bottle, [`LINUX_JOBS`]), its steps only run the machine setup scripts and
//! `cargo xtask ...` (and, in [`BREW_JOBS`], `brew` on the bottle), every `cargo xtask` command
//! line parses with this driver's command line, and the Slurm job runs fetch, deps,
//! build-slurm, audit and the cluster test in that order.

use crate::cli::Cli;
use clap::Parser;
use yaml_rust2::{Yaml, YamlLoader};

const WORKFLOW: &str = "ci/macos-arm64.yml";

/// Command-line pieces the workflow uses before the helper that adds them has landed: a
/// command containing one of them may fail to parse (printed), and once it parses the entry
/// must be removed (the test fails until then).
const PENDING: &[(&str, &str)] = &[];

/// Jobs that run on Linux: the bottle is built there, as `cargo xtask ci` builds it.
const LINUX_JOBS: &[&str] = &["bottle-linux"];
/// Jobs whose steps may also run `brew` (tap, checks, install, test and services of the tap).
const BREW_JOBS: &[&str] = &["bottle-macos"];
/// The `brew` commands those jobs may run.
const BREW_COMMANDS: &[&str] = &[
    "tap",
    "trust",
    "style",
    "audit",
    "readall",
    "install",
    "linkage",
    "test",
    "services",
    "uninstall",
];

/// The programs of the poured keg (or its root-owned copy) those jobs may run: the node tool
/// the bottle ships, and slurmd itself.
const SHIPPED_PROGRAMS: &[&str] = &["/bin/slurm-mac", "/sbin/slurmd"];

/// Whether `line` is an allowed `brew` step, or runs a program the bottle ships (optionally
/// under sudo): one command, no `&&` chains.
fn brew_step(line: &str) -> bool {
    let w = words(line);
    let rest = if w.first().is_some_and(|x| x == "sudo") {
        &w[1..]
    } else {
        &w[..]
    };
    let brew = rest.first().is_some_and(|x| x == "brew")
        && rest
            .get(1)
            .is_some_and(|c| BREW_COMMANDS.contains(&c.as_str()));
    let shipped = rest
        .first()
        .is_some_and(|x| SHIPPED_PROGRAMS.iter().any(|p| x.ends_with(p)));
    (brew || shipped) && !w.iter().any(|x| matches!(x.as_str(), "&&" | "||" | ";"))
}

fn load() -> (String, Yaml) {
    let path = crate::project_root().join(WORKFLOW);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut docs = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{WORKFLOW}: {e}"));
    assert_eq!(docs.len(), 1, "{WORKFLOW}: one YAML document");
    (text, docs.remove(0))
}

/// Shell words of a `run:` line: whitespace-separated, double quotes grouped and removed.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    assert!(!quoted, "unbalanced quote in `{line}`");
    if any {
        out.push(cur);
    }
    out
}

/// The `cargo xtask` arguments of a run line (after an optional `sudo env NAME=VALUE...`), or
/// `None` for the machine setup script. Anything else fails.
fn xtask_args(line: &str) -> Option<Vec<String>> {
    let w = words(line);
    if w == ["bash", "ci/setup-macos.sh"] || w == ["bash", "ci/setup-debian.sh"] {
        return None;
    }
    let mut rest: &[String] = &w;
    if rest.first().is_some_and(|x| x == "sudo") {
        rest = &rest[1..];
        if rest.first().is_some_and(|x| x == "env") {
            rest = &rest[1..];
            while rest
                .first()
                .is_some_and(|x| x.contains('=') && !x.starts_with('-'))
            {
                rest = &rest[1..];
            }
        }
    }
    assert!(
        rest.len() >= 3 && rest[0] == "cargo" && rest[1] == "xtask",
        "{WORKFLOW}: step `{line}` is not a `cargo xtask` command (ci/ workflows only call cargo xtask)"
    );
    Some(rest[2..].to_vec())
}

fn steps(job: &Yaml) -> Vec<String> {
    job["steps"]
        .as_vec()
        .expect("steps")
        .iter()
        .filter_map(|s| s["run"].as_str().map(|r| r.trim().to_string()))
        .collect()
}

#[test]
fn workflow__arm64_macos_runner_and_header_says_not_run() {
    let (text, doc) = load();
    let jobs = doc["jobs"].as_hash().expect("jobs");
    assert!(!jobs.is_empty());
    for (name, job) in jobs {
        let runner = job["runs-on"].as_str().unwrap_or_default();
        if name.as_str().is_some_and(|n| LINUX_JOBS.contains(&n)) {
            assert!(
                runner.starts_with("ubuntu-"),
                "job {name:?}: runs-on {runner:?}"
            );
            assert_eq!(
                job["container"].as_str(),
                Some("debian:12"),
                "job {name:?}: Debian 12, as ci/setup-debian.sh expects"
            );
            continue;
        }
        // GitHub's arm64 macOS images: macos-14, macos-15, macos-latest (macos-13 is Intel).
        let ok = runner == "macos-latest"
            || runner
                .strip_prefix("macos-")
                .and_then(|v| v.split('-').next()?.parse::<u32>().ok())
                .is_some_and(|v| v >= 14);
        assert!(
            ok,
            "job {name:?}: runs-on {runner:?} is not an arm64 macOS image"
        );
    }
    assert!(text.contains("NOT RUN by this project"));
    assert!(text.contains("Name=gpu Type=apple File=/dev/null") && text.contains("placeholder"));
}

#[test]
fn workflow__every_step_is_cargo_xtask_and_parses() {
    let (_, doc) = load();
    let mut pending_seen = Vec::new();
    for (name, job) in doc["jobs"].as_hash().unwrap() {
        let brew_job = name.as_str().is_some_and(|n| BREW_JOBS.contains(&n));
        for line in steps(job) {
            if brew_job && brew_step(&line) {
                continue;
            }
            let Some(args) = xtask_args(&line) else {
                continue;
            };
            let argv = std::iter::once("cargo xtask".to_string()).chain(args.iter().cloned());
            match Cli::try_parse_from(argv) {
                Ok(_) => {
                    for (token, what) in PENDING {
                        assert!(
                            !args.iter().any(|a| a == token),
                            "`{line}` parses now: remove {token:?} ({what}) from PENDING"
                        );
                    }
                }
                Err(e) => {
                    let pending: Vec<_> = PENDING
                        .iter()
                        .filter(|(t, _)| args.iter().any(|a| a == t))
                        .collect();
                    assert!(
                        !pending.is_empty(),
                        "{WORKFLOW}: `{line}` does not parse:\n{e}"
                    );
                    for (t, what) in pending {
                        println!("NOT YET CHECKED: `{line}` uses {t} of {what}, not landed yet");
                        pending_seen.push(*t);
                    }
                }
            }
        }
    }
    println!("pending pieces the workflow waits for: {pending_seen:?}");
}

#[test]
fn workflow__slurm_job_runs_the_lane_in_order() {
    let (_, doc) = load();
    let runs = steps(&doc["jobs"]["slurm"]);
    let firsts: Vec<String> = runs
        .iter()
        .filter_map(|l| xtask_args(l))
        .map(|a| a[..a.len().min(2)].join(" "))
        .collect();
    let order = ["fetch", "deps", "build-slurm", "audit", "cluster test"];
    let mut at = 0;
    for want in order {
        let pos = firsts[at..]
            .iter()
            .position(|f| f == want || f.starts_with(&format!("{want} ")))
            .unwrap_or_else(|| panic!("slurm job lacks `cargo xtask {want}` after {firsts:?}"));
        at += pos + 1;
    }
    let build = runs.iter().find(|l| l.contains("build-slurm")).unwrap();
    assert!(build.contains("--personality native") && build.contains("--version"));
    // The audit's expectations file exists and parses.
    let audit = runs.iter().find(|l| l.contains("xtask audit")).unwrap();
    let w = words(audit);
    let file = &w[w.iter().position(|x| x == "--expect").unwrap() + 1];
    crate::audit::Expectations::load(&crate::project_root().join(file)).unwrap();
    assert!(crate::project_root().join(file).is_file(), "{file} missing");
}

/// Every step that fetches or builds Slurm names its version: `$SLURM_VERSION`, which is
/// CI's version (not the users' default: the lane's expectation files are that line's, and
/// the bottle job fetches from Debian, which serves only CI's version).
#[test]
fn workflow__every_versioned_step_names_ci_version() {
    use crate::defaults::{needs_explicit_version, version_arg};
    let (_, doc) = load();
    assert_eq!(
        doc["env"]["SLURM_VERSION"].as_str(),
        Some(driver_common::lines::CI_VERSION),
        "{WORKFLOW}: env SLURM_VERSION"
    );
    let mut versioned = 0;
    for (name, job) in doc["jobs"].as_hash().unwrap() {
        for line in steps(job) {
            if brew_step(&line) {
                continue;
            }
            let Some(args) = xtask_args(&line) else {
                continue;
            };
            if needs_explicit_version(&args) {
                assert_eq!(
                    version_arg(&args),
                    Some("$SLURM_VERSION"),
                    "{WORKFLOW}: job {name:?}: `{line}` must pass --version \"$SLURM_VERSION\""
                );
                versioned += 1;
            }
        }
    }
    // fetch and build-slurm on the Mac; fetch and two bottles on Linux.
    assert_eq!(versioned, 5);
}

#[test]
fn words__quotes_and_spaces() {
    assert_eq!(
        words("a \"b c\" \"PATH=$PATH\"  d"),
        ["a", "b c", "PATH=$PATH", "d"]
    );
    assert_eq!(
        xtask_args("sudo env \"A=1\" B=2 cargo xtask cluster test --prefix x").unwrap(),
        ["cluster", "test", "--prefix", "x"]
    );
    assert!(xtask_args("bash ci/setup-macos.sh").is_none());
}

#[test]
#[should_panic(expected = "not a `cargo xtask` command")]
fn xtask_args__rejects_other_commands() {
    xtask_args("brew install hwloc");
}

#[test]
fn workflow__bottle_jobs_build_on_linux_then_tap_audit_install_test_and_serve_it() {
    let (_, doc) = load();
    let linux = steps(&doc["jobs"]["bottle-linux"]);
    for t in ["aarch64-apple-darwin", "x86_64-apple-darwin"] {
        assert!(
            linux.iter().any(|l| l.contains("cargo xtask bottle")
                && l.contains(&format!("--target {t}"))
                && l.contains("--tap slurm-on-mac/slurm")
                && l.contains("--root-url \"$TAP_ROOT_URL\"")),
            "bottle-linux lacks the {t} bottle for the tap"
        );
    }
    let mac = steps(&doc["jobs"]["bottle-macos"]);
    assert_eq!(
        doc["jobs"]["bottle-macos"]["needs"].as_str(),
        Some("bottle-linux")
    );
    let root_url = |job: &str| doc["jobs"][job]["env"]["TAP_ROOT_URL"].as_str();
    assert_eq!(root_url("bottle-linux"), root_url("bottle-macos"));
    assert!(root_url("bottle-macos").is_some_and(|u| u.starts_with("file:///")));
    // In this order: the tap, its checks, the bottle, its test and service, then a source build.
    let order = [
        "cargo xtask tap --tap slurm-on-mac/slurm --root-url \"$TAP_ROOT_URL\"",
        "brew tap slurm-on-mac/slurm \"file://$TAP_DIR\"",
        "brew trust slurm-on-mac/slurm",
        "brew style slurm-on-mac/slurm",
        "brew audit --strict --new slurm-on-mac/slurm/slurm-wlm",
        "brew readall --os=all --arch=all slurm-on-mac/slurm",
        "brew install slurm-on-mac/slurm/slurm-wlm",
        "brew test slurm-on-mac/slurm/slurm-wlm",
        "sudo brew services start slurm-on-mac/slurm/slurm-wlm",
        "service status",
        "cluster test --prefix /opt/homebrew/opt/slurm-wlm",
        "brew uninstall slurm-on-mac/slurm/slurm-wlm",
        "brew install --build-from-source slurm-on-mac/slurm/slurm-wlm",
        "brew test slurm-on-mac/slurm/slurm-wlm",
        "sudo brew services start slurm-on-mac/slurm/slurm-wlm",
    ];
    let mut at = 0;
    for want in order {
        let found = mac[at..].iter().position(|l| l.contains(want));
        assert!(
            found.is_some(),
            "bottle-macos lacks {want} (after step {at})"
        );
        at += found.unwrap_or(0) + 1;
    }
    // No local bottle file is installed (Homebrew 5+ refuses it without HOMEBREW_DEVELOPER).
    assert!(!mac.iter().any(|l| l.contains(".bottle.tar.gz")));
    assert!(!brew_step("brew uninstall-all") && brew_step("sudo brew services stop slurm-wlm"));
    assert!(brew_step("sudo /opt/slurmmac/opt/slurm-wlm/sbin/slurmd -V"));
    assert!(!brew_step("sudo /opt/x/bin/slurm-mac -V && rm -rf /"));
}
