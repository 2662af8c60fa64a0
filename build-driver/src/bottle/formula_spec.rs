//! What a formula is made from: its Slurm source, its third-party resources and the whole
//! [`Spec`] the template (formula.rs) and the method bodies (formula_body.rs) both read.

use super::Layout;

/// The formula's Slurm source: a release tarball by sha256, or a release tag by revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Tarball {
        url: String,
        sha256: String,
    },
    Git {
        url: String,
        tag: String,
        revision: String,
    },
}

impl Source {
    /// The `url` stanza (with `tag:`/`revision:` for a git source).
    pub(super) fn url_stanza(&self) -> String {
        match self {
            Source::Tarball { url, .. } => format!("url \"{url}\""),
            Source::Git { url, tag, revision } => format!(
                "url \"{url}\",\n      tag:      \"{tag}\",\n      revision: \"{revision}\""
            ),
        }
    }

    /// The `sha256` line, for a tarball only (a git source is pinned by its revision).
    pub(super) fn sha256_line(&self) -> String {
        match self {
            Source::Tarball { sha256, .. } => format!("  sha256 \"{sha256}\"\n"),
            Source::Git { .. } => String::new(),
        }
    }
}

/// A third-party tarball of `slurm-src/deps.toml` as a formula `resource`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DepResource {
    pub name: String,
    pub version: String,
    pub url: String,
    pub sha256: String,
    /// The file name the build driver looks for in `slurm-src/downloads/`.
    pub file: String,
}

/// Everything the template needs.
#[derive(Clone, Debug)]
pub struct Spec<'a> {
    pub layout: &'a Layout,
    /// Where Homebrew takes Slurm's source from.
    pub source: &'a Source,
    /// This project's repository, the commit the bottle was built from and its version.
    pub project_git: &'a str,
    pub project_commit: &'a str,
    pub project_version: &'a str,
    /// `(tag, sha256)` of each bottle; empty: no `bottle do` block (the `.brew/` copy).
    pub bottles: &'a [(String, String)],
    /// Where the bottles are served (`root_url`).
    pub root_url: Option<&'a str>,
    /// The third-party tarballs (built statically by the driver).
    pub resources: &'a [DepResource],
}
