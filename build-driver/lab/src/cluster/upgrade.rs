//! `cluster test --upgrade-to P2`: the build scenario smd-410 upgrades a running cluster to,
//! checked before the cluster starts. Slurm supports upgrading the daemons from up to
//! three prior major releases (since 24.11; two before), controller first: slurmdbd, then
//! slurmctld, then each slurmd, whose state and spool files the newer release reads
//! (Slurm's upgrade guide, doc/html/upgrades.shtml of 24.11 and later). Major releases are
//! `YY.MM`, two a year (`.02`/`.05` and `.11`).

use driver_common::error::{Error, Result};
use std::path::{Path, PathBuf};

/// How many major releases an upgrade may skip forward, at most.
pub const WINDOW: u32 = 3;

/// The ordinal of a major release (`24.11.5` -> 24*2+1): consecutive releases differ by one.
pub fn release_ordinal(version: &str) -> Option<u32> {
    let mut it = version.split(['.', '-']);
    let yy: u32 = it.next()?.parse().ok()?;
    let mm: u32 = it.next()?.parse().ok()?;
    let half = match mm {
        1..=6 => 0,
        7..=12 => 1,
        _ => return None,
    };
    Some(yy * 2 + half)
}

/// How many major releases `to` is after `from`, if both parse.
pub fn distance(from: &str, to: &str) -> Option<i64> {
    Some(i64::from(release_ordinal(to)?) - i64::from(release_ordinal(from)?))
}

/// `to` as an absolute prefix once it is a staged build, and a newer major release than
/// `from` within [`WINDOW`]; else a usage error saying which rule it breaks.
pub fn check_upgrade(from: &Path, to: &Path) -> Result<PathBuf> {
    let to = std::path::absolute(to).map_err(|e| Error::io(to, e))?;
    super::host::check_prefix(&to)?;
    let (a, b) = (
        driver_common::staging::Manifest::read(from)?,
        driver_common::staging::Manifest::read(&to)?,
    );
    let bad = |why: String| {
        Error::Usage(format!(
            "--upgrade-to {} ({}) from {} ({}): {why}",
            to.display(),
            b.version,
            from.display(),
            a.version
        ))
    };
    if std::fs::canonicalize(&b.prefix).ok() != std::fs::canonicalize(&to).ok() {
        return Err(bad(format!(
            "the build was configured for {}; pass that prefix (the cluster loads each build's plugins from where it was configured)",
            b.prefix.display()
        )));
    }
    match distance(&a.version, &b.version) {
        None => Err(bad("a version is not of the form YY.MM[.P]".into())),
        Some(d) if d < 1 => Err(bad(
            "not a newer major release (the upgrade scenario goes forward)".into(),
        )),
        Some(d) if d > i64::from(WINDOW) => Err(bad(format!(
            "{d} major releases later: Slurm supports upgrades from at most {WINDOW} prior releases"
        ))),
        Some(_) => Ok(to),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance__counts_major_releases() {
        assert_eq!(distance("25.11.7", "26.05.3"), Some(1));
        assert_eq!(distance("24.11.5", "26.11-snapshot"), Some(4));
        assert_eq!(distance("23.11.1", "24.05.0"), Some(1));
        assert_eq!(distance("23.02.7", "23.11.0"), Some(1));
        assert_eq!(distance("26.05.3", "25.11.7"), Some(-1));
        assert_eq!(distance("x", "25.11.7"), None);
        assert_eq!(distance("25.13", "25.11.7"), None);
    }
}
