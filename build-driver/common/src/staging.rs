//! The staging manifest: what `cargo xtask build-slurm` staged for one install prefix, written
//! next to it as `<prefix>.staging.toml` after a successful build. Everything that later works
//! with a built prefix (`check`, `cluster`, `cluster peer`, `ci`) reads it instead of guessing
//! the source tree, build directory or make variables from the prefix's path.

use crate::error::{Error, Result};
use crate::personality::Personality;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One staged build.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The Slurm version (a pin, or `<META version>-local`).
    pub version: String,
    /// The release line, selecting its entries of `patches/series`.
    pub line: String,
    pub personality: Personality,
    /// The Rust target triple the build is for.
    pub target: String,
    /// Whether at least one patch was applied.
    pub patched: bool,
    /// Where the installed files are (absolute): the install prefix, or `<destdir>/<prefix>`
    /// for a build staged with `--destdir`.
    pub prefix: PathBuf,
    /// Set for a build staged with `--destdir`: the prefix the programs were configured for
    /// (e.g. `/opt/homebrew/Cellar/slurm-wlm/24.11.5`), which is not where the files are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_prefix: Option<PathBuf>,
    /// configure's `--sysconfdir`, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sysconfdir: Option<PathBuf>,
    /// configure's `--localstatedir`, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub localstatedir: Option<PathBuf>,
    /// The configured copy of the source (patched, regenerated).
    pub source: PathBuf,
    /// The build directory, kept after the install so `make check` can run in it.
    pub build_dir: PathBuf,
    /// The make variables every later `make` in `build_dir` needs (`V=0`, the shim's
    /// `LIB_LDFLAGS=...`), so nothing is relinked without the shim.
    pub make_vars: Vec<String>,
}

impl Manifest {
    /// Where the manifest of `prefix` lives: `<prefix>.staging.toml` beside it.
    pub fn path_for(prefix: &Path) -> PathBuf {
        let mut name = prefix.file_name().unwrap_or_default().to_os_string();
        name.push(".staging.toml");
        prefix.with_file_name(name)
    }

    /// Writes the manifest beside its prefix, atomically.
    pub fn write(&self) -> Result<()> {
        let text = toml::to_string(self).map_err(|e| Error::parse("the staging manifest", e))?;
        let text = format!(
            "# Written by `cargo xtask build-slurm`: what was staged for {}.\n{text}",
            self.prefix.display()
        );
        crate::util::fs::write_atomic(&Self::path_for(&self.prefix), text.as_bytes(), 0o644)
    }

    /// The manifest of `prefix`; [`Error::NotStaged`] when there is none.
    pub fn read(prefix: &Path) -> Result<Manifest> {
        let prefix = std::path::absolute(prefix).map_err(|e| Error::io(prefix, e))?;
        let path = Self::path_for(&prefix);
        let Some(text) = crate::util::fs::read_optional(&path)? else {
            return Err(Error::NotStaged {
                prefix,
                manifest: path,
            });
        };
        toml::from_str(&text).map_err(|e| Error::parse(format!("{}", path.display()), e))
    }

    /// [`Manifest::read`], requiring the given personality (a prefix passed where the other
    /// personality's belongs is a usage error, not a result).
    pub fn read_as(prefix: &Path, personality: Personality) -> Result<Manifest> {
        let m = Self::read(prefix)?;
        if m.personality != personality {
            return Err(Error::Usage(format!(
                "{} is a {} build; pass a {} one (cargo xtask build-slurm --personality {})",
                m.prefix.display(),
                m.personality.name(),
                personality.name(),
                personality.name()
            )));
        }
        Ok(m)
    }

    /// A name for this build made of lowercase letters, digits and `_` (cluster and
    /// database names): `<version>_<personality>`, plus `_nopatch` when unpatched.
    pub fn slug(&self) -> String {
        let mut s = format!("{}_{}", self.version, self.personality.name());
        if !self.patched {
            s.push_str("_nopatch");
        }
        name_part(&s)
    }
}

/// `s` as part of a cluster name (Slurm- and SQL-safe): lowercase, `_` for every character
/// other than a letter or digit (`26.11-snapshot` -> `26_11_snapshot`).
pub fn name_part(s: &str) -> String {
    s.to_ascii_lowercase()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
}

/// The programs the summary looks for: `(dir under the prefix, name)`.
pub const KEY_BINARIES: &[(&str, &str)] = &[
    ("sbin", "slurmctld"),
    ("sbin", "slurmd"),
    ("sbin", "slurmstepd"),
    ("bin", "sbatch"),
    ("bin", "srun"),
    ("bin", "scancel"),
    ("bin", "sinfo"),
    ("bin", "squeue"),
    ("bin", "scontrol"),
];

/// `<destdir>/<prefix>` (the prefix's leading `/` dropped), or `prefix` without a destdir.
pub fn staged_path(destdir: Option<&Path>, prefix: &Path) -> PathBuf {
    match destdir {
        Some(d) => d.join(prefix.strip_prefix("/").unwrap_or(prefix)),
        None => prefix.to_path_buf(),
    }
}

/// Cargo's target directory: `$CARGO_TARGET_DIR` (relative to `root` if relative), else
/// `<root>/target`.
pub fn cargo_target_dir(root: &Path, env: Option<String>) -> PathBuf {
    match env.filter(|s| !s.is_empty()) {
        Some(d) => root.join(d),
        None => root.join("target"),
    }
}

/// The build machine's directories for this project ([`crate::util::host_paths`]), with this
/// run's cargo target directory (`$CARGO_TARGET_DIR`).
pub fn host_dirs(root: &Path) -> Vec<crate::util::host_paths::PathMap> {
    let target = cargo_target_dir(root, std::env::var("CARGO_TARGET_DIR").ok());
    crate::util::host_paths::build_machine_dirs(root, &target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(prefix: &Path) -> Manifest {
        Manifest {
            version: "24.11.5".into(),
            line: "24.11".into(),
            personality: Personality::Darwin,
            target: "x86_64-unknown-linux-gnu".into(),
            patched: true,
            prefix: prefix.to_path_buf(),
            configured_prefix: None,
            sysconfdir: None,
            localstatedir: None,
            source: prefix.with_file_name("src"),
            build_dir: prefix.with_file_name("build"),
            make_vars: vec!["V=0".into(), "LIB_LDFLAGS=-Wl,/a b/x.o".into()],
        }
    }

    #[test]
    fn write_then_read__round_trip_beside_the_prefix() {
        let (d, prefix) = crate::testing::scratch("prefix");
        let m = manifest(&prefix);
        m.write().unwrap();
        assert!(d.path().join("prefix.staging.toml").is_file());
        assert_eq!(Manifest::read(&prefix).unwrap(), m);
        assert_eq!(Manifest::read_as(&prefix, Personality::Darwin).unwrap(), m);
        let e = Manifest::read_as(&prefix, Personality::Native).unwrap_err();
        assert!(e.to_string().contains("is a darwin build"), "{e}");
    }

    #[test]
    fn read__unstaged_prefix_names_the_manifest_and_the_fix() {
        let d = tempfile::tempdir().unwrap();
        let e = Manifest::read(&d.path().join("elsewhere")).unwrap_err();
        assert!(matches!(e, Error::NotStaged { .. }), "{e}");
        let s = e.to_string();
        crate::testing::assert_mentions(&s, &["elsewhere.staging.toml", "build-slurm"]);
    }

    #[test]
    fn slug__lowercase_sql_safe() {
        let mut m = manifest(Path::new("/s/prefix"));
        assert_eq!(m.slug(), "24_11_5_darwin");
        m.patched = false;
        m.version = "26.11-snapshot".into();
        assert_eq!(m.slug(), "26_11_snapshot_darwin_nopatch");
    }
}
