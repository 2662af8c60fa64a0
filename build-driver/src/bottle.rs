//! `cargo xtask bottle --version V --target aarch64-apple-darwin|x86_64-apple-darwin
//! [--out DIR]`: a Homebrew bottle of Slurm, built on Linux.
//!
//! 1. The target's third-party libraries (`cargo xtask deps`), static, so the bottle needs no
//!    Homebrew formula at run time; for 25.05 and later also s2n-tls (`cargo xtask s2n
//!    --target T`), linked into the keg's `tls_s2n.so`.
//! 2. The Mach-O build (`build-slurm --target T`) configured for the keg:
//!    `--prefix <cellar>/slurm-wlm/<v> --sysconfdir <hb>/etc/slurm --localstatedir <hb>/var`
//!    and staged with DESTDIR under `target/bottle/stage/<triple>` ([`build_args`]; `cargo xtask
//!    ci` builds exactly this, so the bottle step reuses its build).
//! 3. The node tool `slurm-mac` cross-built by cargo for the target ([`node_tool`]).
//! 4. The keg ([`keg`]): the node tool in `bin/`, names fixed for Homebrew and re-signed,
//!    text placeholders, the plist, the receipt and `.brew/slurm-wlm.rb`.
//! 5. The check ([`check`]): every Mach-O file's ad-hoc signature verified page by page, every
//!    install name allowed, no build-machine directory in any file, the named programs and the
//!    node tool executables of the target's CPU.
//! 6. `slurm-wlm--<v>.<tag>.bottle.tar.gz` ([`archive`]: reproducible), its `.bottle.json`,
//!    the formula with the `bottle do` block, and the versioned formula of the line.
//!
//! Layout facts and their sources: docs/PACKAGING.md.

pub mod archive;
pub mod check;
pub mod codesign;
pub mod formula;
pub mod formula_body;
pub mod formula_spec;
pub mod keg;
pub mod linkage;
pub mod node_tool;
pub mod receipt;
pub mod relocate;
pub mod scan;
pub mod tap;
pub mod tap_files;

use crate::build_slurm::BuildArgs;
use crate::deps::DepsArgs;
use crate::fetch::SourceArgs;
use clap::Args;
use driver_common::error::{Error, Result};
use driver_common::lines::DEFAULT_VERSION;
use driver_common::personality::Personality;
use driver_common::targets::{self, Os, Target};
use std::path::{Path, PathBuf};
use std::time::Instant;
use xshell::Shell;

#[derive(Debug, Args)]
pub struct BottleArgs {
    /// A pinned Slurm version (slurm-src/pins.toml), fetched first (`cargo xtask fetch`); the
    /// default is the newest verified release.
    #[arg(long, default_value = DEFAULT_VERSION)]
    pub version: String,
    /// aarch64-apple-darwin (tag arm64_sonoma, /opt/homebrew) or x86_64-apple-darwin
    /// (tag sonoma, /usr/local).
    #[arg(long)]
    pub target: String,
    /// Where the bottle, its .bottle.json and the formula go (default: target/bottle/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Parallel make jobs for the Slurm build (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Where apt is absent (macOS): a Debian mirror's base URL for the pinned third-party
    /// tarballs (as `cargo xtask deps --debian-mirror`).
    #[arg(long, value_name = "URL")]
    pub debian_mirror: Option<String>,
    /// The tap the receipt names (`ORG/REPO`; the repository is ORG/homebrew-REPO).
    #[arg(long, value_name = "ORG/REPO", default_value = DEFAULT_TAP)]
    pub tap: String,
    /// Where the bottle will be served (the JSON's root_url; `cargo xtask tap` requires it).
    #[arg(long, value_name = "URL")]
    pub root_url: Option<String>,
}

/// The formula's name (core's `slurm` is another program).
pub const FORMULA: &str = "slurm-wlm";
/// The tap a bottle's receipt names when `--tap` is not given (`<org>/<repo>`: the
/// repository `<org>/homebrew-<repo>`).
pub const DEFAULT_TAP: &str = "slurm-on-mac/slurm";
/// Where this project's source is (the formula's build-from-source resource).
pub const PROJECT_GIT: &str = "https://github.com/slurm-on-mac/slurm-on-mac.git";
/// Every file's time in the tarball, and the receipt's `source_modified_time` (2024-01-01
/// UTC; `SOURCE_DATE_EPOCH` overrides it).
pub const DEFAULT_EPOCH: u64 = 1_704_067_200;

/// Where a bottle's keg lives on the Mac, for one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub formula: String,
    pub version: String,
    pub line: String,
    pub target: &'static Target,
    /// The bottle tag (`arm64_sonoma`).
    pub tag: &'static str,
    /// Homebrew's prefix on that Mac (`/opt/homebrew`, `/usr/local` on Intel).
    pub homebrew_prefix: String,
    /// The tap the formula lives in (the receipt's `source.tap`).
    pub tap: String,
    /// Where the bottles are served (`bottle do root_url`, the JSON's `root_url`).
    pub root_url: Option<String>,
    /// A Debian mirror's base URL for the formula's third-party resources (deps.toml's own
    /// `urls` come first).
    pub mirror: Option<String>,
}

impl Layout {
    /// The layout for a pinned version and an Apple target; an error names the fix.
    pub fn new(formula: &str, version: &str, line: &str, triple: &str) -> Result<Layout> {
        let target = targets::lookup(triple)?;
        let (Os::Apple, Some(tag)) = (target.os, target.bottle_tag) else {
            return Err(Error::Usage(format!(
                "--target {triple} is not an Apple target: bottles are for macOS \
                 (--target aarch64-apple-darwin or --target x86_64-apple-darwin)"
            )));
        };
        let homebrew_prefix = match target.apple_arch()? {
            "arm64" => "/opt/homebrew",
            _ => "/usr/local",
        };
        Ok(Layout {
            formula: formula.to_string(),
            version: version.to_string(),
            line: line.to_string(),
            target,
            tag,
            homebrew_prefix: homebrew_prefix.to_string(),
            tap: DEFAULT_TAP.to_string(),
            root_url: None,
            mirror: None,
        })
    }

    pub fn cellar(&self) -> String {
        format!("{}/Cellar", self.homebrew_prefix)
    }
    /// `<cellar>/<formula>/<version>`: the prefix Slurm is configured for.
    pub fn keg_path(&self) -> String {
        format!("{}/{}/{}", self.cellar(), self.formula, self.version)
    }
    pub fn opt(&self) -> String {
        format!("{}/opt/{}", self.homebrew_prefix, self.formula)
    }
    pub fn etc(&self) -> String {
        format!("{}/etc/slurm", self.homebrew_prefix)
    }
    pub fn var(&self) -> String {
        format!("{}/var", self.homebrew_prefix)
    }
    /// The root of the root-owned copy of the keg the LaunchDaemon runs (`slurm-mac
    /// copy-keg`): `/opt/slurmmac` for `/opt/homebrew`, `/opt/slurm` for `/usr/local`.
    pub fn copy_root(&self) -> String {
        slurm_mac::keg::default_root(&self.homebrew_prefix)
            .unwrap_or_else(|| self.homebrew_prefix.clone())
    }
    /// The copy's opt directory (`<copy root>/opt/<formula>`): the prefix the plist runs.
    pub fn copy_opt(&self) -> String {
        format!("{}/opt/{}", self.copy_root(), self.formula)
    }
    pub fn keg(&self) -> linkage::Keg {
        linkage::Keg {
            cellar: self.keg_path(),
            opt: self.opt(),
        }
    }
    /// Whether the keg has Slurm's TLS (`tls/s2n` with s2n-tls linked in statically): lines
    /// from [`crate::s2n::FIRST_LINE`] on, where the plugin exists.
    pub fn has_tls(&self) -> bool {
        driver_common::lines::Line::from_name(&self.line, "the bottle's line")
            .is_ok_and(|l| l >= crate::s2n::FIRST_LINE)
    }
    /// `<formula>/<version>`: the tarball's top directories.
    pub fn top(&self) -> PathBuf {
        Path::new(&self.formula).join(&self.version)
    }
    /// `slurm-wlm--24.11.5.arm64_sonoma.bottle.tar.gz` (brew's local file name).
    pub fn bottle_name(&self) -> String {
        format!(
            "{}--{}.{}.bottle.tar.gz",
            self.formula, self.version, self.tag
        )
    }
    /// `slurm-wlm-24.11.5.arm64_sonoma.bottle.tar.gz` (the name under a `root_url`).
    pub fn url_name(&self) -> String {
        format!(
            "{}-{}.{}.bottle.tar.gz",
            self.formula, self.version, self.tag
        )
    }
    pub fn json_name(&self) -> String {
        format!(
            "{}--{}.{}.bottle.json",
            self.formula, self.version, self.tag
        )
    }
}

/// The DESTDIR the bottle's Mach-O build is staged in.
pub fn stage_dir(root: &Path, target: &Target) -> PathBuf {
    driver_common::staging::cargo_target_dir(root, std::env::var("CARGO_TARGET_DIR").ok())
        .join("bottle")
        .join("stage")
        .join(target.rust)
}

/// The Mach-O build a bottle is made from (CI's cross lane builds the same).
pub fn build_args(root: &Path, layout: &Layout, deps: &Path, jobs: Option<usize>) -> BuildArgs {
    BuildArgs {
        src: SourceArgs {
            version: Some(layout.version.clone()),
            source: None,
        },
        personality: Personality::Native,
        no_patches: false,
        target: Some(layout.target.rust.to_string()),
        prefix: Some(layout.keg_path().into()),
        destdir: Some(stage_dir(root, layout.target)),
        sysconfdir: Some(layout.etc().into()),
        localstatedir: Some(layout.var().into()),
        jobs,
        deps_prefix: Some(deps.to_path_buf()),
        macos_min: None,
        with_s2n: layout.has_tls(),
        s2n_prefix: None,
    }
}

/// What `bottle` made.
#[derive(Debug)]
pub struct Made {
    pub bottle: PathBuf,
    pub sha256: String,
    pub report: check::Report,
}

/// The release line of a pinned version (an unknown version is an error listing the pins).
pub fn pinned(root: &Path, version: &str) -> Result<driver_common::pins::Pin> {
    let pins = driver_common::pins::Pins::load(root)?;
    pins.get(version).cloned()
}

pub fn run(sh: &Shell, root: &Path, args: BottleArgs) -> Result<Made> {
    let pin = pinned(root, &args.version)?;
    // The formula needs the release tarball's url and sha256: refused before any build.
    source_of(&pin)?;
    let layout = Layout {
        tap: args.tap.clone(),
        root_url: args.root_url.clone(),
        mirror: args.debian_mirror.clone(),
        ..Layout::new(FORMULA, &args.version, &pin.line, &args.target)?
    };
    tap::check_tap_name(&layout.tap)?;
    let deps = crate::deps::run(
        sh,
        root,
        DepsArgs {
            target: layout.target.rust.to_string(),
            jobs: args.jobs,
            debian_mirror: args.debian_mirror.clone(),
            build_all: true,
            macos_min: None,
        },
    )?;
    if layout.has_tls() {
        crate::s2n::run(
            sh,
            root,
            crate::s2n::S2nArgs {
                jobs: args.jobs,
                target: Some(layout.target.rust.to_string()),
            },
        )?;
    }
    let built =
        crate::build_slurm::build(sh, root, &build_args(root, &layout, &deps.dir, args.jobs))?;
    let t = Instant::now();
    let node_tool = node_tool::build(sh, root, layout.target)?;
    println!(
        "node tool: {} in {:.1}s",
        node_tool.display(),
        t.elapsed().as_secs_f64()
    );
    let out = match &args.out {
        Some(o) => std::path::absolute(o).map_err(|e| Error::io(o, e))?,
        None => {
            driver_common::staging::cargo_target_dir(root, std::env::var("CARGO_TARGET_DIR").ok())
                .join("bottle")
        }
    };
    let t = Instant::now();
    let made = package(root, &layout, &pin, &built.prefix, &node_tool, &out)?;
    println!(
        "bottle: {} ({} bytes, sha256 {}) in {:.1}s",
        made.bottle.display(),
        std::fs::metadata(&made.bottle)
            .map(|m| m.len())
            .unwrap_or(0),
        made.sha256,
        t.elapsed().as_secs_f64()
    );
    println!("{}", made.report.summary());
    Ok(made)
}

/// Keg, check, tarball and its JSON from a staged build and the node tool's binary
/// ([`node_tool::build`]), into `out` (`cargo xtask tap` writes the formulae from the JSON
/// files).
pub fn package(
    root: &Path,
    layout: &Layout,
    pin: &driver_common::pins::Pin,
    staged: &Path,
    node_tool: &Path,
    out: &Path,
) -> Result<Made> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let work = driver_common::util::fs::Staging::new(out, "bottle")?;
    let keg = work.dir.join(layout.top());
    let source = source_of(pin)?;
    let project = tap::Project::of(root);
    // The keg's `.brew/` copy: brew keeps it with the keg; the tap's formula installs. Without
    // a URL for the third-party tarballs (no --debian-mirror) it lists none.
    let resources = tap::dep_resources(root, layout.mirror.as_deref()).unwrap_or_default();
    let brew_copy = formula::render(&project.spec(layout, &source, &[], &resources));
    let assembled = keg::assemble(layout, staged, node_tool, &keg, &brew_copy)?;
    let epoch = epoch();
    receipt::write_receipt(layout, &keg, &assembled.changed_files, epoch)?;
    let report = check::check(root, layout, &keg)?;
    let bottle = out.join(layout.bottle_name());
    archive::write(&work.dir, &layout.top(), &bottle, epoch)?;
    let sha256 = driver_common::util::fs::sha256_file(&bottle)?;
    let json = receipt::bottle_json(layout, &keg, &sha256, &assembled.changed_files, epoch)?;
    driver_common::util::fs::write_atomic(&out.join(layout.json_name()), json.as_bytes(), 0o644)?;
    Ok(Made {
        bottle,
        sha256,
        report,
    })
}

/// The pinned tarball's first URL and sha256 (a pin without them cannot make a formula).
pub fn source_of(pin: &driver_common::pins::Pin) -> Result<formula::Source> {
    match &pin.source {
        driver_common::pins::PinSource::Tarball {
            sha256: Some(s),
            urls,
            ..
        } if !urls.is_empty() => Ok(formula::Source::Tarball {
            url: urls[0].clone(),
            sha256: s.clone(),
        }),
        // A release by its tag and commit (Homebrew's `url ..., tag:, revision:`): a line no
        // registry serves a verified tarball of (docs/RELEASE-LINES.md).
        driver_common::pins::PinSource::Git { repo, commit }
            if release_tag(&pin.version).is_some() =>
        {
            Ok(formula::Source::Git {
                url: repo.clone(),
                tag: release_tag(&pin.version).unwrap_or_default(),
                revision: commit.clone(),
            })
        }
        _ => Err(Error::Usage(format!(
            "version {} has neither a verified release tarball nor a release tag: a formula needs a url and sha256, or a tag and revision (bottle a release such as 24.11.5 or 25.11.7)",
            pin.version
        ))),
    }
}

/// Upstream's tag of a release `X.Y.Z`: `slurm-X-Y-Z-1`; `None` for anything else (a
/// snapshot).
fn release_tag(version: &str) -> Option<String> {
    driver_common::pins::release_numbers(version)
        .map(|_| format!("slurm-{}-1", version.replace('.', "-")))
}

/// `SOURCE_DATE_EPOCH`, or [`DEFAULT_EPOCH`].
pub fn epoch() -> u64 {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_EPOCH)
}

#[cfg(test)]
mod brew_rules;
#[cfg(test)]
mod copy_keg_tests;
#[cfg(test)]
mod tests;
