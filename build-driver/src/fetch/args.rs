//! Where a Slurm source comes from (`SourceArgs`, also flattened into `build-slurm`'s
//! arguments), and `cargo xtask fetch`'s arguments.

use clap::builder::ArgPredicate;
use clap::{Args, ValueEnum};
use driver_common::lines::DEFAULT_VERSION;
use std::path::PathBuf;

/// Where a Slurm source comes from.
#[derive(Debug, Args, Clone)]
pub struct SourceArgs {
    /// A pinned version (see slurm-src/pins.toml), e.g. 24.11.5 or 26.11-snapshot; the
    /// default is the newest verified release. With --source there is no default: it names
    /// the pin the local source is checked against.
    #[arg(
        long,
        default_value = DEFAULT_VERSION,
        default_value_if("source", ArgPredicate::IsPresent, None)
    )]
    pub version: Option<String>,
    /// A local source, instead of downloading. A .tar.gz: checked against --version's pin, or
    /// else against the pin with the same sha256 (no such pin: error). A git directory (bare
    /// repository or checkout): the commit of --version's git pin, or else of the one git pin
    /// whose commit it contains, is exported with `git archive`. An unpacked tree (configure.ac
    /// and META): copied as unverified version `<META version>-local`, without --version.
    #[arg(long, value_name = "DIR|TARBALL|GIT_DIR")]
    pub source: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Origin {
    /// Debian's source package slurm-wlm, through a private apt state directory.
    Debian,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Without --source and --from, `fetch --version V` needs nothing but the pin and internet access: \
curl downloads the pinned tarball and checks its sha256, or git fetches the pinned commit of a git pin \
(no local mirror, clone or tarball). Offline, pass a local copy with --source."
)]
pub struct FetchArgs {
    #[command(flatten)]
    pub src: SourceArgs,
    /// Get the tarball from a distribution's source package instead of the pin's URLs.
    #[arg(long, value_enum)]
    pub from: Option<Origin>,
}
