//! Checks that the Slurm version each command defaults to is one of the two constants of
//! `driver_common::lines`: [`DEFAULT_VERSION`] for users (`fetch`, `build-slurm`, `bottle`),
//! [`CI_VERSION`] for `ci`. Also checks that CI's entry point (`.ci/run`) names CI's version
//! on every command that takes one, so changing the users' default never changes what CI
//! builds.

use crate::cli::Cli;
use crate::cli::Command;
use clap::{CommandFactory, Parser};
use driver_common::lines::{CI_VERSION, DEFAULT_VERSION};

/// The `cargo xtask` commands that build or fetch one Slurm version and so take `--version`.
const VERSIONED: &[&str] = &["fetch", "build-slurm", "bottle", "ci"];

/// Whether CI must pass `--version` to this `cargo xtask` command (its arguments after
/// `xtask`): a command of [`VERSIONED`] that builds Slurm (`ci --shim-only` does not).
pub fn needs_explicit_version(args: &[String]) -> bool {
    let builds_slurm =
        !(args.first().is_some_and(|c| c == "ci") && args.iter().any(|a| a == "--shim-only"));
    args.first()
        .is_some_and(|c| VERSIONED.contains(&c.as_str()))
        && builds_slurm
        && !args.iter().any(|a| a == "--source")
}

/// The value after `--version` (or of `--version=V`), if any.
pub fn version_arg(args: &[String]) -> Option<&str> {
    args.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--version=").or_else(|| {
            (a == "--version")
                .then(|| args.get(i + 1).map(String::as_str))
                .flatten()
        })
    })
}

fn parse(line: &str) -> Command {
    Cli::try_parse_from(line.split_whitespace())
        .unwrap_or_else(|e| panic!("`{line}`: {e}"))
        .command
}

#[test]
fn defaults__user_commands_take_the_default_version_and_ci_its_own() {
    let version = |line: &str| match parse(line) {
        Command::Fetch(a) => a.src.version,
        Command::BuildSlurm(a) => a.src.version,
        Command::Bottle(a) => Some(a.version),
        Command::Ci(a) => Some(a.version),
        other => panic!("`{line}`: {other:?}"),
    };
    for line in [
        "cargo-xtask fetch",
        "cargo-xtask build-slurm",
        "cargo-xtask build-slurm --personality darwin",
        "cargo-xtask bottle --target aarch64-apple-darwin",
    ] {
        assert_eq!(version(line).as_deref(), Some(DEFAULT_VERSION), "`{line}`");
    }
    assert_eq!(version("cargo-xtask ci").as_deref(), Some(CI_VERSION));
    assert_eq!(
        version("cargo-xtask ci --shim-only").as_deref(),
        Some(CI_VERSION)
    );
    // A local source has no default pin to be checked against ...
    assert_eq!(version("cargo-xtask fetch --source x.tar.gz"), None);
    assert_eq!(version("cargo-xtask build-slurm --source dir"), None);
    // ... unless one is named; a named version is never replaced.
    for line in [
        "cargo-xtask fetch --source g --version 25.11.7",
        "cargo-xtask build-slurm --version 25.11.7",
        "cargo-xtask bottle --version 25.11.7 --target x86_64-apple-darwin",
        "cargo-xtask ci --version 25.11.7",
    ] {
        assert_eq!(version(line).as_deref(), Some("25.11.7"), "`{line}`");
    }
}

#[test]
fn defaults__help_names_the_default_and_fetch_from_the_pin_alone() {
    let mut cli = Cli::command();
    let help = |cli: &mut clap::Command, sub: &str| {
        cli.find_subcommand_mut(sub)
            .unwrap_or_else(|| panic!("no subcommand {sub}"))
            .render_long_help()
            .to_string()
    };
    let shown = format!("[default: {DEFAULT_VERSION}]");
    for sub in ["fetch", "build-slurm", "bottle"] {
        let text = help(&mut cli, sub);
        assert!(text.contains(&shown), "{sub} --help lacks {shown}:\n{text}");
    }
    let ci = help(&mut cli, "ci");
    assert!(ci.contains(&format!("[default: {CI_VERSION}]")), "{ci}");
    let fetch = help(&mut cli, "fetch");
    assert!(
        fetch.contains("needs nothing but the pin and internet access")
            && fetch.contains("no local mirror"),
        "{fetch}"
    );
}

#[test]
fn ci_run__names_ci_version_on_every_versioned_command() {
    let path = crate::project_root().join(".ci/run");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut seen = Vec::new();
    for line in text.lines().map(str::trim) {
        // `cargo xtask X` or the same alias spelt out with features
        // (`cargo run ... --package build-driver --features F -- X`)
        let rest = line.strip_prefix("cargo xtask ").or_else(|| {
            (line.starts_with("cargo run ") && line.contains("--package build-driver"))
                .then(|| line.split_once(" -- ").map(|(_, r)| r))
                .flatten()
        });
        let Some(rest) = rest else {
            continue;
        };
        let args: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
        parse(&format!("cargo-xtask {rest}"));
        if needs_explicit_version(&args) {
            assert_eq!(
                version_arg(&args),
                Some(CI_VERSION),
                ".ci/run: `{line}` must name CI's version explicitly"
            );
            seen.push(args[0].clone());
        }
    }
    assert_eq!(seen, ["fetch", "ci"], ".ci/run: its versioned commands");
}

#[test]
fn needs_explicit_version__versioned_commands_that_build() {
    let args = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    for yes in [
        "fetch --from debian",
        "ci",
        "bottle --target t",
        "build-slurm",
    ] {
        assert!(needs_explicit_version(&args(yes)), "{yes}");
    }
    for no in [
        "ci --shim-only",
        "deps --target t",
        "fetch --source x",
        "audit",
    ] {
        assert!(!needs_explicit_version(&args(no)), "{no}");
    }
    assert_eq!(version_arg(&args("fetch --version 1.2.3")), Some("1.2.3"));
    assert_eq!(version_arg(&args("ci --version=1.2.3")), Some("1.2.3"));
    assert_eq!(version_arg(&args("ci --version")), None);
}

/// The README's first command works on a fresh Debian machine (CI's version, from Debian),
/// and the README names both versions as the constants have them.
#[test]
fn readme__first_command_uses_ci_version_and_names_the_default() {
    let text = std::fs::read_to_string(crate::project_root().join("README.md")).unwrap();
    let first = text
        .lines()
        .find(|l| l.contains("cargo xtask"))
        .unwrap_or_default();
    assert!(
        first.contains(&format!("fetch --version {CI_VERSION} --from debian"))
            && first.contains(&format!("bottle --version {CI_VERSION} ")),
        "README's first command: {first}"
    );
    for v in [DEFAULT_VERSION, CI_VERSION] {
        assert!(
            text.contains(&format!("**{v}**")),
            "README does not name {v}"
        );
    }
}
