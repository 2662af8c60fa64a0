//! `cargo xtask tap --tap ORG/REPO --root-url URL [--bottles DIR] [--out DIR]
//! [--debian-mirror URL] [--git]`: the Homebrew tap of the bottles `cargo xtask bottle` made.
//!
//! Since Homebrew 5.0 `brew install ./x.bottle.tar.gz` is refused unless `HOMEBREW_DEVELOPER`
//! is set (`HOMEBREW_FORBID_PACKAGES_FROM_PATHS`, Homebrew/brew `env_config.rb`,
//! `formulary.rb`): a third-party formula comes from a tap (`brew install ORG/REPO/slurm-wlm`),
//! whose `Formula/` holds it and whose `bottle do root_url` names where its bottles are. The
//! tap written here:
//!
//! * `Formula/slurm-wlm.rb`: the bottles' version, one `bottle do` with every tag's sha256
//!   read from the `.bottle.json` files (arm64 and Intel merged), `root_url`;
//! * `Formula/slurm-wlm@<line>.rb` for each other pinned release line (keg-only, built from
//!   source, its own service label);
//! * `bottles/`: each bottle under the name brew asks `root_url` for
//!   (`<name>-<version>.<tag>.bottle.tar.gz`, Homebrew/brew `bottle.rb` `Filename#url_encode`);
//! * `README.md`: `brew tap ORG/REPO URL && brew install ORG/REPO/slurm-wlm`.

use super::formula::{DepResource, Source, Spec};
pub use super::tap_files::Bottled;
use super::{FORMULA, Layout, PROJECT_GIT, formula, source_of};
use clap::Args;
use driver_common::error::{Error, Result};
use driver_common::util::fs::write_atomic;
use serde_json::Value;
use std::path::{Path, PathBuf};
use xshell::Shell;

#[derive(Debug, Args)]
pub struct TapArgs {
    /// The tap (`ORG/REPO`): `brew install ORG/REPO/slurm-wlm`.
    #[arg(long, value_name = "ORG/REPO")]
    pub tap: String,
    /// Where the bottles are served (`bottle do root_url`; file names
    /// `<name>-<version>.<tag>.bottle.tar.gz`).
    #[arg(long, value_name = "URL")]
    pub root_url: String,
    /// Where `cargo xtask bottle` wrote the bottles and their .bottle.json (default:
    /// target/bottle/).
    #[arg(long, value_name = "DIR")]
    pub bottles: Option<PathBuf>,
    /// The tap directory (default: target/tap/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// A Debian mirror's base URL: the third-party resources' URLs (pool/ paths), unless
    /// slurm-src/deps.toml gives `urls`.
    #[arg(long, value_name = "URL")]
    pub debian_mirror: Option<String>,
    /// Make the tap directory a git repository with one commit (for `brew tap ORG/REPO
    /// file://DIR`).
    #[arg(long)]
    pub git: bool,
}

/// This project's source as the formula's `slurm-on-mac` resource.
#[derive(Clone, Debug)]
pub struct Project {
    pub commit: String,
    /// `<crate version>-g<7 hex>` (`brew audit`: a git resource needs a `version`).
    pub version: String,
}

impl Project {
    /// The commit the checkout at `root` is at (`unknown` outside git).
    pub fn of(root: &Path) -> Project {
        let commit = Shell::new()
            .ok()
            .and_then(|sh| {
                xshell::cmd!(sh, "git -C {root} rev-parse HEAD")
                    .quiet()
                    .ignore_stderr()
                    .read()
                    .ok()
            })
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        Project::at(&commit)
    }

    pub fn at(commit: &str) -> Project {
        let short: String = commit.chars().take(7).collect();
        Project {
            commit: commit.to_string(),
            version: format!("{}-g{short}", env!("CARGO_PKG_VERSION")),
        }
    }

    pub fn spec<'a>(
        &'a self,
        layout: &'a Layout,
        source: &'a Source,
        bottles: &'a [(String, String)],
        resources: &'a [DepResource],
    ) -> Spec<'a> {
        Spec {
            layout,
            source,
            project_git: PROJECT_GIT,
            project_commit: &self.commit,
            project_version: &self.version,
            bottles,
            root_url: layout.root_url.as_deref(),
            resources,
        }
    }
}

/// `ORG/REPO` as brew spells a tap (letters, digits, `-`, `_`; the repository on the
/// server is `ORG/homebrew-REPO`).
pub fn check_tap_name(tap: &str) -> Result<()> {
    let ok_part = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    match tap.split_once('/') {
        Some((org, repo)) if ok_part(org) && ok_part(repo) && !repo.starts_with("homebrew-") => {
            Ok(())
        }
        _ => Err(Error::Usage(format!(
            "--tap {tap}: a tap is ORG/REPO (e.g. {}; the repository is ORG/homebrew-REPO)",
            super::DEFAULT_TAP
        ))),
    }
}

/// Each tarball of `slurm-src/deps.toml` as a resource: its first `urls` entry, else the
/// pool/ path on the Debian mirror given; an error names the library without either.
pub fn dep_resources(root: &Path, mirror: Option<&str>) -> Result<Vec<DepResource>> {
    let deps = crate::deps::pins::DepPins::load(root)?;
    let mut out = Vec::new();
    for lib in &deps.libs {
        let Some(t) = &lib.tarball else { continue };
        let url = match (t.urls.first(), mirror, &t.debian) {
            (Some(u), _, _) => u.clone(),
            (None, Some(m), Some(d)) => {
                crate::deps::source::pool_url(m.trim_end_matches('/'), &d.package, &t.file)
            }
            _ => {
                return Err(Error::Usage(format!(
                    "no URL for {}'s tarball {}: give --debian-mirror URL (a Debian mirror's \
                     base) or add `urls` to slurm-src/deps.toml",
                    lib.name, t.file
                )));
            }
        };
        out.push(DepResource {
            name: lib.name.clone(),
            version: lib.version.clone(),
            url,
            sha256: t.sha256.clone(),
            file: t.file.clone(),
        });
    }
    Ok(out)
}

/// Reads one `.bottle.json` (`brew bottle --json`'s shape: one formula, one tag).
pub fn read_bottle_json(path: &Path) -> Result<Vec<Bottled>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| Error::parse(path.display().to_string(), e))?;
    let bad = |what: &str| Error::file(path, format!("not a bottle JSON: {what}"));
    let (_, f) = v
        .as_object()
        .and_then(|o| o.iter().next())
        .ok_or_else(|| bad("no formula"))?;
    let s = |x: &Value| x.as_str().map(str::to_string);
    let version = s(&f["formula"]["pkg_version"]).ok_or_else(|| bad("no pkg_version"))?;
    let tags = f["bottle"]["tags"]
        .as_object()
        .ok_or_else(|| bad("no tags"))?;
    let mut out = Vec::new();
    for (tag, t) in tags {
        out.push(Bottled {
            version: version.clone(),
            root_url: s(&f["bottle"]["root_url"]),
            tap: s(&t["tab"]["source"]["tap"]),
            tag: tag.clone(),
            sha256: s(&t["sha256"]).ok_or_else(|| bad("no sha256"))?,
            filename: s(&t["filename"]).ok_or_else(|| bad("no filename"))?,
            local_filename: s(&t["local_filename"]).ok_or_else(|| bad("no local_filename"))?,
        });
    }
    Ok(out)
}

/// Every `*.bottle.json` in `dir`, checked against the tap and root_url asked for.
pub fn collect(dir: &Path, tap: &str, root_url: &str) -> Result<Vec<Bottled>> {
    let mut all = Vec::new();
    for rel in driver_common::util::fs::walk_files(dir)? {
        let name = rel.to_string_lossy();
        if rel.components().count() == 1 && name.ends_with(".bottle.json") {
            all.extend(read_bottle_json(&dir.join(&rel))?);
        }
    }
    let Some(first) = all.first() else {
        return Err(Error::Usage(format!(
            "no *.bottle.json in {}: run `cargo xtask bottle --tap {tap} --root-url {root_url}` \
             for each target first",
            dir.display()
        )));
    };
    for b in &all {
        let mismatch = if b.version != first.version {
            Some(format!(
                "version {} (another is {})",
                b.version, first.version
            ))
        } else if b.tap.as_deref() != Some(tap) {
            Some(format!("receipt's tap {:?}", b.tap))
        } else if b.root_url.as_deref() != Some(root_url) {
            Some(format!("root_url {:?}", b.root_url))
        } else {
            None
        };
        if let Some(m) = mismatch {
            return Err(Error::Usage(format!(
                "bottle {} has {m}: rebuild it with `cargo xtask bottle --tap {tap} --root-url {root_url}`",
                b.local_filename
            )));
        }
    }
    all.sort_by(|a, b| {
        tag_rank(&a.tag)
            .cmp(&tag_rank(&b.tag))
            .then(a.tag.cmp(&b.tag))
    });
    all.dedup_by(|a, b| a.tag == b.tag);
    Ok(all)
}

/// arm64 tags first, as `brew bottle --merge` writes them.
fn tag_rank(tag: &str) -> u8 {
    u8::from(!tag.starts_with("arm64_"))
}

/// `cargo xtask tap`.
pub fn run(sh: &Shell, root: &Path, args: TapArgs) -> Result<PathBuf> {
    check_tap_name(&args.tap)?;
    let target =
        driver_common::staging::cargo_target_dir(root, std::env::var("CARGO_TARGET_DIR").ok());
    let bottles_dir = args
        .bottles
        .clone()
        .unwrap_or_else(|| target.join("bottle"));
    let out = match &args.out {
        Some(o) => std::path::absolute(o).map_err(|e| Error::io(o, e))?,
        None => target.join("tap"),
    };
    let bottled = collect(&bottles_dir, &args.tap, &args.root_url)?;
    let resources = dep_resources(root, args.debian_mirror.as_deref())?;
    let files = write(root, &args, &bottled, &resources, &out)?;
    for b in &bottled {
        let src = bottles_dir.join(&b.local_filename);
        if src.is_file() {
            let dst = out.join("bottles").join(&b.filename);
            std::fs::create_dir_all(out.join("bottles")).map_err(|e| Error::io(&out, e))?;
            std::fs::copy(&src, &dst).map_err(|e| Error::io(&dst, e))?;
        }
    }
    if args.git {
        super::tap_files::commit(sh, &out, &bottled[0].version)?;
    }
    println!(
        "tap {}: {} ({} files)",
        args.tap,
        out.display(),
        files.len()
    );
    Ok(out)
}

/// The tap's files, into `out`; returns their paths relative to it.
pub fn write(
    root: &Path,
    args: &TapArgs,
    bottled: &[Bottled],
    resources: &[DepResource],
    out: &Path,
) -> Result<Vec<PathBuf>> {
    let version = &bottled[0].version;
    let pins = driver_common::pins::Pins::load(root)?;
    let pin = pins.get(version)?.clone();
    let project = Project::of(root);
    let layout = Layout {
        tap: args.tap.clone(),
        root_url: Some(args.root_url.clone()),
        mirror: args.debian_mirror.clone(),
        ..Layout::new(FORMULA, version, &pin.line, "aarch64-apple-darwin")?
    };
    let tags: Vec<(String, String)> = bottled
        .iter()
        .map(|b| (b.tag.clone(), b.sha256.clone()))
        .collect();
    let mut files = Vec::new();
    let source = source_of(&pin)?;
    let main = formula::render(&project.spec(&layout, &source, &tags, resources));
    files.push(put(out, &format!("Formula/{FORMULA}.rb"), &main)?);
    for other in super::tap_files::other_lines(&pins, &pin.line) {
        let l = Layout {
            formula: format!("{FORMULA}@{}", other.line),
            version: other.version.clone(),
            line: other.line.clone(),
            ..layout.clone()
        };
        let src = source_of(&other)?;
        let text = formula::render(&project.spec(&l, &src, &[], resources));
        files.push(put(out, &format!("Formula/{}.rb", l.formula), &text)?);
    }
    let readme = super::tap_files::readme(&args.tap, &args.root_url, bottled);
    files.push(put(out, "README.md", &readme)?);
    Ok(files)
}

fn put(out: &Path, rel: &str, text: &str) -> Result<PathBuf> {
    let p = out.join(rel);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
    }
    write_atomic(&p, text.as_bytes(), 0o644)?;
    Ok(PathBuf::from(rel))
}
