//! `cargo xtask ci`: everything CI runs, in order, each step timed, then a summary table.
//!
//! 1. Shim lane: `cargo test --workspace` (with the `apple-codesign` feature when the driver
//!    was built with it, as `.ci/run` builds it: one feature set, compiled once; else the
//!    bottle tests again with that feature: the second signature verifier), `codegen
//!    --check`, a type-check of the driver for aarch64-apple-darwin (it runs on the Mac of
//!    `ci/macos-arm64.yml`), release builds of the shim for aarch64-apple-darwin and
//!    x86_64-apple-darwin. `--shim-only` stops here.
//! 2. Linux non-regression: Slurm built natively without and with `patches/` (the line's series),
//!    `make check` in both, and any difference in any test result fails.
//!    The patched source is scanned by `cargo xtask lint` (hazards on macOS: never-initialised
//!    pthread objects, /proc paths, ...) and compared exactly with
//!    `ci/expectations/lint-<line>.toml`.
//! 3. Darwin personality: built, `make check` compared with the native patched build. A
//!    difference fails unless `ci/expectations/<line>-darwin.toml` lists it with a reason; an
//!    entry that no longer matches fails too (the file must stay true). Then live clusters
//!    (slurmctld, slurmd, slurmdbd + a private MariaDB on loopback): the smoke scenarios on
//!    the native install, every scenario of `cargo xtask cluster test` on the darwin install,
//!    the `macos-native` profile's scenarios (the macOS process plugins) on the darwin install,
//!    the multi-node scenarios on a 3-node cluster of both builds (native head), a short soak
//!    with faults on the darwin install (`cluster soak --jobs 300 --faults`, fixed seed), and
//!    Slurm's own Python suite (the subset in `ci/peer-subset.txt`) on both, whose per-test
//!    outcomes must agree.
//! 4. Darwin cross-build: `cargo xtask deps --target aarch64-apple-darwin` (json-c, libjwt,
//!    hwloc), then 24.11 (the pinned version) built for aarch64-apple-darwin with zig and those
//!    libraries, the installed programs, libslurmfull and plugins checked to be arm64 Mach-O.
//!    The build is the bottle's keg (`--prefix /opt/homebrew/Cellar/slurm-wlm/<v>`, staged
//!    with DESTDIR), then packed as the Homebrew bottle (`cargo xtask bottle`'s packaging:
//!    names fixed and re-signed, every signature verified, by ours and, when the driver is
//!    built with the `apple-codesign` feature as `.ci/run` builds it, by that crate too; no
//!    build-machine path).
//! 5. Plugin-linkage audit (`cargo xtask audit`) of the Mach-O, the native and the darwin install, each
//!    compared exactly with `ci/expectations/audit-<line>-<lane>.toml` (new and fixed
//!    findings both fail).
//!
//! A failed step does not stop independent steps; steps that need its output are skipped
//! with the reason printed. The command fails if any step failed.

mod cross;
mod disk;
mod tls;
pub mod verify;

use crate::audit::expect as audit_expectations;
use crate::build_slurm::BuildArgs;
use crate::build_slurm::{self, BuildOutput};
use crate::fetch::SourceArgs;
use crate::lines::row::Scope;
use crate::report::Report;
use clap::Args;
use driver_common::error::{Error, Result};
use driver_common::lines::CI_VERSION;
use driver_common::personality::Personality;
use driver_common::util::process::bounded::run_inherit_bounded;
use slurm_lab::check::{self, Results};
use slurm_lab::cli::PeerArgs;
use slurm_lab::expectations::make_check as check_expectations;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;
use xshell::{Shell, cmd};

#[derive(Debug, Args)]
pub struct CiArgs {
    /// Pinned version to build: CI's, the one release a package registry serves to CI's
    /// machines (Debian's slurm-wlm), not the users' default.
    #[arg(long, default_value = CI_VERSION)]
    pub version: String,
    /// A local Slurm source instead of the pinned version.
    #[arg(long)]
    pub source: Option<PathBuf>,
    /// Only the shim lane (tests, codegen --check, cross builds); no Slurm builds.
    #[arg(long)]
    pub shim_only: bool,
    /// Keep the pristine (unpatched) native build after its `make check` results are
    /// recorded; by default it is removed to halve the lanes' peak disk use (about 1.5 GiB).
    #[arg(long)]
    pub keep_builds: bool,
}

pub fn run(sh: &Shell, root: &Path, args: CiArgs) -> Result<()> {
    let start = crate::lines::row::Checkout::of(root);
    let mut report = Report::default();
    println!("ci: {}", disk::free_line(root));
    shim_lane(sh, root, &mut report);
    if args.shim_only {
        println!("\n(--shim-only: Slurm lanes not run)");
    } else {
        slurm_lanes(sh, root, &args, Scope::Ci, &mut report);
    }
    println!("\n{}", report.table());
    println!("{}", report.counts());
    println!("ci: {}", disk::free_line(root));
    if !args.shim_only && args.source.is_none() {
        // The line's row (docs/lines/<line>.toml and RELEASE-LINES.md's table): this run's
        // steps, whatever they gave. A row that cannot be written is said, not fatal.
        let command = format!("cargo xtask ci --version {}", args.version);
        let run = crate::lines::row::RunInfo {
            version: &args.version,
            scope: Scope::Ci,
            command: &command,
            start: &start,
        };
        if let Err(e) = crate::lines::record(root, &run, &report) {
            eprintln!("ci: the line's row was not written: {e}");
        }
    }
    report.result()
}

fn shim_lane(sh: &Shell, root: &Path, report: &mut Report) {
    let _dir = sh.push_dir(root);
    if crate::bottle::codesign::SECOND_VERIFIER {
        // This driver was built with `apple-codesign` (.ci/run builds it so): the workspace's
        // tests are built with the same features, so the crates both builds share compile
        // once (another feature set recompiles them: 10 minutes on a loaded 2-core machine),
        // and the bottle tests run with both verifiers.
        report.step(
            "cargo test --workspace --features build-driver/apple-codesign",
            || {
                // XTASK_CI: tests that need CI's fetched line fail without it (patches::tree)
                let test = cmd!(
                    sh,
                    "cargo test --workspace --features build-driver/apple-codesign"
                )
                .env("XTASK_CI", "1");
                run_inherit_bounded(test, "ci", CARGO_TEST_TIMEOUT)?;
                Ok("passed, the bottle tests with both signature verifiers".to_string())
            },
        );
    } else {
        report.step("cargo test --workspace", || {
            let test = cmd!(sh, "cargo test --workspace").env("XTASK_CI", "1");
            run_inherit_bounded(test, "ci", CARGO_TEST_TIMEOUT)?;
            Ok("passed".to_string())
        });
        report.step(
            "cargo test -p build-driver --features apple-codesign -- bottle::",
            || {
                // The second signature verifier is behind a feature `cargo test --workspace`
                // leaves off: its tests (and the bottle tests with both verifiers) run here.
                let test = cmd!(
                    sh,
                    "cargo test -p build-driver --features apple-codesign -- bottle::"
                );
                run_inherit_bounded(test, "ci", CARGO_TEST_TIMEOUT)?;
                Ok("passed".to_string())
            },
        );
    }
    report.step("cargo xtask codegen --check", || {
        crate::codegen::check(root)?;
        Ok("slurm_shim.h up to date".to_string())
    });
    report.step(
        "cargo check -p build-driver --target aarch64-apple-darwin",
        || {
            // The driver must build on the Mac of ci/macos-arm64.yml (lane 5): no Linux-only
            // API may slip into it unguarded.
            let check = cmd!(
                sh,
                "cargo check -p build-driver --all-targets --target aarch64-apple-darwin"
            );
            run_inherit_bounded(check, "ci", CARGO_BUILD_TIMEOUT)?;
            Ok("the driver type-checks for macOS".to_string())
        },
    );
    for target in ["aarch64-apple-darwin", "x86_64-apple-darwin"] {
        report.step(
            &format!("cargo build -p slurm-shim --release --target {target}"),
            || {
                let build = cmd!(sh, "cargo build -p slurm-shim --release --target {target}");
                run_inherit_bounded(build, "ci", CARGO_BUILD_TIMEOUT)?;
                Ok("built".to_string())
            },
        );
    }
}

/// Upper bounds, so a hanging test cannot eat CI's whole time budget.
const CARGO_TEST_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const CARGO_BUILD_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// One Slurm version's builds, as every lane requests them.
struct Builds<'a> {
    sh: &'a Shell,
    root: &'a Path,
    src: SourceArgs,
    keep_builds: bool,
    /// Build native and darwin with tls/s2n (`lines verify` of 25.05 and later).
    s2n: bool,
}

impl Builds<'_> {
    fn args(&self, personality: Personality, no_patches: bool) -> BuildArgs {
        BuildArgs {
            src: self.src.clone(),
            personality,
            no_patches,
            target: None,
            prefix: None,
            destdir: None,
            sysconfdir: None,
            localstatedir: None,
            jobs: None,
            deps_prefix: None,
            macos_min: None,
            with_s2n: self.s2n,
            s2n_prefix: None,
        }
    }

    fn build(&self, args: &BuildArgs) -> Result<(BuildOutput, String)> {
        build_slurm::build(self.sh, self.root, args).map(described)
    }
}

pub(crate) fn slurm_lanes(
    sh: &Shell,
    root: &Path,
    args: &CiArgs,
    scope: Scope,
    report: &mut Report,
) {
    let s2n = tls::tls_lane(sh, root, args, scope, report);
    let builds = Builds {
        sh,
        root,
        src: SourceArgs {
            version: args.source.is_none().then(|| args.version.clone()),
            source: args.source.clone(),
        },
        keep_builds: args.keep_builds,
        s2n,
    };
    let (patched, r_patched) = non_regression_lane(&builds, report);
    let darwin = darwin_lane(&builds, report, &r_patched);
    cluster_lanes(&builds, report, &patched, &darwin, scope);
    if scope == Scope::Full {
        const STEP: &str = "cluster TLS: native head + darwin node (tls/s2n, smd-407, mix)";
        match (&patched, &darwin, s2n) {
            (Some(native), Some(dar), true) => {
                report.step(STEP, || {
                    slurm_lab::cluster::tls_mix(sh, &native.prefix, &dar.prefix)
                        .map(|()| "smd-407-tls, mix-span and mix-clients passed".to_string())
                });
            }
            (_, _, false) => match tls::not_applicable_reason(root, args) {
                Some(why) => report.not_applicable(STEP, &why),
                None => report.skip(STEP, "s2n-tls did not build (step above)"),
            },
            _ => report.skip(STEP, "a build above did not succeed"),
        }
    }
    let macho = cross::cross_lane(&builds, report);
    // The Mach-O install's remaining findings (upstream link bugs, one slurmd-only function in
    // a /proc plugin) are recorded with their reasons in
    // ci/expectations/audit-<line>-macho-arm64.toml: any change fails.
    for (lane, build) in [
        ("macho-arm64", &macho),
        ("native", &patched),
        ("darwin", &darwin),
    ] {
        let name = match lane {
            "macho-arm64" => "audit: Mach-O install (plugin linkage)".to_string(),
            other => format!("audit: {other} install (plugin linkage)"),
        };
        report.step_after(&name, build, |b| audit(sh, root, b, lane));
    }
}

/// Lane 2: native builds without and with the series; `make check` must agree exactly.
fn non_regression_lane(
    builds: &Builds<'_>,
    report: &mut Report,
) -> (Option<BuildOutput>, Option<Results>) {
    let sh = builds.sh;
    let pristine = report.step("build-slurm native --no-patches", || {
        builds.build(&builds.args(Personality::Native, true))
    });
    let patched = report.step("build-slurm native (patched)", || {
        builds.build(&builds.args(Personality::Native, false))
    });
    // the hazard scan of the patched source: ci/expectations/lint-<line>.toml, exactly
    report.step_after("lint: patched source (hazard scan)", &patched, |b| {
        let file = driver_common::expectations::file(builds.root, &format!("lint-{}.toml", b.line));
        crate::lint::check(&b.src_dir, Some(&file))
    });
    let r_pristine = report.step_after("make check: native, no patches", &pristine, |b| {
        make_check(sh, b)
    });
    // Only its results are needed from here on: free the disk before the next builds.
    if let (Some(b), Some(_), false) = (&pristine, &r_pristine, builds.keep_builds) {
        disk::free_build(b);
    }
    let r_patched = report.step_after("make check: native, patched", &patched, |b| {
        make_check(sh, b)
    });
    match (&r_pristine, &r_patched) {
        (Some(a), Some(b)) => {
            report.step("non-regression: pristine vs patched results", || {
                let diff = check::compare(a, b);
                if diff.is_empty() {
                    Ok(format!("identical ({} results)", a.len()))
                } else {
                    Err(Error::Regression(diff.join("\n")))
                }
            });
        }
        _ => report.skip(
            "non-regression: pristine vs patched results",
            "a make check above did not run",
        ),
    }
    (patched, r_patched)
}

/// Lane 3, build and unit tests: the darwin personality, its `make check` against the
/// native patched results with the recorded expectations.
fn darwin_lane(
    builds: &Builds<'_>,
    report: &mut Report,
    r_patched: &Option<Results>,
) -> Option<BuildOutput> {
    let (sh, root) = (builds.sh, builds.root);
    let darwin = report.step("build-slurm --personality darwin", || {
        builds.build(&builds.args(Personality::Darwin, false))
    });
    let r_darwin = report.step_after("make check: darwin personality", &darwin, |b| {
        make_check(sh, b)
    });
    match (r_patched, &r_darwin, &darwin) {
        (Some(native), Some(dar), Some(built)) => {
            let file = check_expectations::path(root, &built.line);
            report.step(
                "darwin vs native results (with recorded expectations)",
                || {
                    let expectations = check_expectations::Expectations::load(&file)?;
                    check_expectations::judge(
                        &check::differences(native, dar),
                        &expectations,
                        &file,
                    )
                },
            );
        }
        _ => report.skip(
            "darwin vs native results (with recorded expectations)",
            "a make check above did not run",
        ),
    }
    darwin
}

/// Lane 3, live clusters: smoke scenarios on the native install, every scenario on the
/// darwin install, and Slurm's own Python suite (subset) on both.
fn cluster_lanes(
    builds: &Builds<'_>,
    report: &mut Report,
    patched: &Option<BuildOutput>,
    darwin: &Option<BuildOutput>,
    scope: Scope,
) {
    let (sh, root) = (builds.sh, builds.root);
    report.step_after("cluster smoke: native install", patched, |b| {
        slurm_lab::cluster::smoke(sh, root, &b.prefix)
            .map(|()| "sbatch, srun, scancel passed".to_string())
    });
    report.step_after("cluster scenarios: darwin install", darwin, |b| {
        slurm_lab::cluster::scenarios(sh, &b.prefix)
            .map(|()| "every scenario passed or is a listed gap".to_string())
    });
    report.step_after(
        "cluster scenarios: darwin install, profile macos-native",
        darwin,
        |b| {
            slurm_lab::cluster::macos_native_scenarios(sh, &b.prefix).map(|()| {
                "the macOS process plugins: accounting, OverMemoryKill, tracking".to_string()
            })
        },
    );
    if scope == Scope::Full {
        use slurm_lab::cluster::profile::Profile;
        for profile in [Profile::Default, Profile::MacosNative] {
            report.step_after(
                &format!(
                    "cluster local scenarios: darwin install, profile {}",
                    profile.name()
                ),
                darwin,
                |b| {
                    slurm_lab::cluster::local_scenarios(sh, &b.prefix, profile)
                        .map(|()| "every local scenario passed or is a listed gap".to_string())
                },
            );
        }
    }
    report.step_after(
        "cluster scenarios: darwin install, profile site (a cgroup site's config)",
        darwin,
        |b| {
            slurm_lab::cluster::site_scenarios(sh, &b.prefix).map(|()| {
                "the site's cgroup plugins run as the macOS ones: jobs, sstat, configless"
                    .to_string()
            })
        },
    );
    match (patched, darwin) {
        (Some(native), Some(dar)) => {
            report.step(
                "cluster multi-node: 3 nodes, native head + darwin node",
                || {
                    slurm_lab::cluster::multi_node_smoke(sh, &native.prefix, &dar.prefix)
                        .map(|()| "nodes-*, mix-* and PMI-2 scenarios passed".to_string())
                },
            );
        }
        _ => report.skip(
            "cluster multi-node: 3 nodes, native head + darwin node",
            "a build above did not succeed",
        ),
    }
    match (patched, darwin) {
        (Some(native), Some(dar)) => {
            report.step(
                "cluster bench --launch: native vs darwin, 3 steps a series",
                || {
                    slurm_lab::cluster::launch_bench_smoke(sh, root, &native.prefix, &dar.prefix)
                        .map(|()| "srun -n1, srun -n4, salloc steps measured on both".to_string())
                },
            );
        }
        _ => report.skip(
            "cluster bench --launch: native vs darwin, 3 steps a series",
            "a build above did not succeed",
        ),
    }
    report.step_after("cluster soak: darwin, 300 jobs, 2 faults", darwin, |b| {
        slurm_lab::cluster::short_soak(sh, &b.prefix)
            .map(|()| "every job accounted once, nothing left, daemons flat".to_string())
    });
    match (patched, darwin) {
        (Some(native), Some(dar)) => {
            report.step("peer suite subset: native vs darwin", || {
                // A pinned release whose tag has no suite runs the one its pin names.
                let suite = match (&builds.src.version, &builds.src.source) {
                    (Some(v), None) => crate::fetch::suite::resolve(root, v)?,
                    _ => None,
                };
                let args = PeerArgs {
                    native: native.prefix.clone(),
                    darwin: dar.prefix.clone(),
                    subset: None,
                    all: false,
                    suite,
                    timeout: 240,
                    keep: false,
                    profile: slurm_lab::cli::ProfileArg {
                        profile: slurm_lab::cluster::profile::Profile::Default,
                    },
                    nodes: 1,
                };
                slurm_lab::cluster::peer::run(sh, root, args)
                    .map(|()| "same outcomes (ci/peer-subset.txt)".to_string())
            });
        }
        _ => report.skip(
            "peer suite subset: native vs darwin",
            "a build above did not succeed",
        ),
    }
}

/// `cargo xtask audit` on an install, compared exactly with
/// `ci/expectations/audit-<line>-<lane>.toml`.
fn audit(sh: &Shell, root: &Path, b: &BuildOutput, lane: &str) -> Result<String> {
    let file = audit_expectations::path(root, &b.line, lane);
    crate::audit::check(sh, root, &b.prefix, Some(&file), &[])
}

/// The build result and a one-line description for the table.
fn described(b: BuildOutput) -> (BuildOutput, String) {
    let text = format!("{}", b.prefix.display());
    (b, text)
}

fn make_check(sh: &Shell, b: &BuildOutput) -> Result<(Results, String)> {
    let results = check::make_check(sh, &b.prefix)?;
    let summary = check::summary(&results);
    println!("results: {summary}");
    Ok((results, summary))
}
