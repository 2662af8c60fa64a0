//! `cargo xtask patches refresh`: every line's series checked against its pinned source after
//! a change to `patches/`. For each manifest whose source is fetched: the line's series is
//! re-derived entry by entry ([`super::derive`]: a redundant variant, a file that no longer
//! applies and which other files of the entry do), then the patched tree is built (no
//! compile) and compared with the manifest. A patch that no longer applies names
//! the line that needs a hand-made variant (`patches/<line>/<name>`, `LINE@LINE` in the
//! series); a tree equal to the manifest records the line's inputs, so its row stays
//! current; a different tree fails, unless `--accept` records it (the row is then stale
//! until the line is run again).

use super::tree::{self, Manifest};
use clap::Args;
use driver_common::error::{Error, Result};
use std::path::Path;
use xshell::Shell;

#[derive(Debug, Args)]
pub struct PatchesArgs {
    #[command(subcommand)]
    pub command: PatchesCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum PatchesCommand {
    /// Build every fetched line's patched tree (copy, our files, the series; no compile) and
    /// compare it with slurm-src/manifests/<version>.toml.
    Refresh(RefreshArgs),
    /// Write docs/PATCHES.md's generated table from the patch headers and patches/series.
    Doc(DocArgs),
}

#[derive(Debug, Args)]
pub struct DocArgs {
    /// Only check that the page is current.
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Args)]
pub struct RefreshArgs {
    /// Only these pinned versions (default: every manifest).
    #[arg(long = "version", value_name = "V")]
    pub versions: Vec<String>,
    /// Record a tree that differs as the line's new tree (its row goes stale); with
    /// `--version V` of a pin that has no manifest yet, record its first.
    #[arg(long)]
    pub accept: bool,
    /// Fail when a manifest's source is not fetched (default: say so and go on).
    #[arg(long)]
    pub require_sources: bool,
}

pub fn run(sh: &Shell, root: &Path, args: PatchesArgs) -> Result<()> {
    match args.command {
        PatchesCommand::Refresh(a) => refresh(sh, root, &a),
        PatchesCommand::Doc(a) => super::doc::run(root, a.check),
    }
}

/// What one manifest's check gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Equal,
    /// Recorded with `--accept`.
    Accepted,
    NotFetched,
    Differs(Vec<String>),
    NeedsVariant(String),
}

pub fn refresh(sh: &Shell, root: &Path, a: &RefreshArgs) -> Result<()> {
    let work = root.join("target").join("patches-refresh");
    let mut bad = Vec::new();
    let mut manifests = Manifest::all(root)?;
    for v in &a.versions {
        if !manifests.iter().any(|m| &m.version == v) {
            manifests.push(new_manifest(root, v, a.accept)?);
        }
    }
    for m in manifests {
        if !a.versions.is_empty() && !a.versions.contains(&m.version) {
            continue;
        }
        let outcome = check_one(sh, root, &m, &work, a.accept)?;
        println!(
            "patches refresh: {} (line {}): {outcome:?}",
            m.version, m.line
        );
        match outcome {
            Outcome::Equal | Outcome::Accepted => {}
            Outcome::NotFetched if !a.require_sources => {}
            o => bad.push(format!("{}: {o:?}", m.version)),
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "patches refresh:\n{}",
            bad.join("\n")
        )))
    }
}

fn describe(root: &Path, f: &super::derive::Finding) -> String {
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    match f {
        super::derive::Finding::Redundant {
            entry,
            variant,
            instead,
        } => format!(
            "{entry}: the variant {} is redundant, {} makes the same change (drop or change its `@` in patches/series)",
            rel(variant),
            rel(instead)
        ),
        super::derive::Finding::NeedsVariant { entry, applies } if applies.is_empty() => {
            format!("{entry}: does not apply; needs a hand-made variant")
        }
        super::derive::Finding::NeedsVariant { entry, applies } => format!(
            "{entry}: does not apply; these apply (check their result): {}",
            applies
                .iter()
                .map(|p| rel(p))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A pin without a manifest yet: with `--accept` its first manifest is recorded (an empty
/// one compared, so the tree is accepted as it is); else an error saying so.
fn new_manifest(root: &Path, version: &str, accept: bool) -> Result<Manifest> {
    let pins = driver_common::pins::Pins::load(root)?;
    let pin = pins.get(version)?;
    if !accept {
        return Err(Error::Usage(format!(
            "{version} has no manifest ({}): record its first with --accept",
            Manifest::path(root, version).display()
        )));
    }
    Ok(Manifest {
        version: pin.version.clone(),
        line: pin.line.clone(),
        files: 0,
        tree_sha256: String::new(),
        row_sha256: String::new(),
        inputs_sha256: None,
        changed: Default::default(),
        removed: Vec::new(),
    })
}

/// Checks one manifest; rewrites it when the tree is equal (new inputs) or accepted.
pub fn check_one(
    sh: &Shell,
    root: &Path,
    m: &Manifest,
    work: &Path,
    accept: bool,
) -> Result<Outcome> {
    let pristine = root.join("slurm-src").join(&m.version);
    if !pristine.join("configure.ac").is_file() {
        eprintln!(
            "patches refresh: {} is not fetched (cargo xtask fetch --version {}): not checked",
            m.version, m.version
        );
        return Ok(Outcome::NotFetched);
    }
    for f in super::derive::derive(sh, root, &m.line, &pristine, &work.join("derive"))? {
        println!("patches refresh: line {}: {}", m.line, describe(root, &f));
    }
    let c = match tree::compare(sh, root, m, &pristine, work) {
        Ok(c) => c,
        Err(Error::Patch { patch, file, .. }) => {
            return Ok(Outcome::NeedsVariant(format!(
                "{patch} does not apply to {file}: line {} needs a hand-made variant (patches/{}/{patch}, `{}@{}` in patches/series)",
                m.line, m.line, m.line, m.line
            )));
        }
        Err(e) => return Err(e),
    };
    let inputs = tree::inputs_sha256(root, &m.line)?;
    let equal = c.tree_sha256 == m.tree_sha256 && c.differ.is_empty();
    if !equal && !accept {
        return Ok(Outcome::Differs(c.differ));
    }
    let mut next = m.clone();
    next.inputs_sha256 = Some(inputs.clone());
    if !equal {
        next.tree_sha256 = c.tree_sha256;
        next.files = c.files;
        next.changed = c.changed;
        next.removed = c.removed;
        next.row_sha256 = inputs;
    }
    if &next != m {
        let p = Manifest::path(root, &m.version);
        std::fs::write(&p, next.render()).map_err(|e| Error::io(&p, e))?;
    }
    Ok(if equal {
        Outcome::Equal
    } else {
        Outcome::Accepted
    })
}
