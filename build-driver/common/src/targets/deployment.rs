//! `--macos-min`: a deployment target other than the table's for one build.
//!
//! The table's `macos_min` (12.0) is what bottles are built for and stays so. A build for an
//! older macOS userland (Darling's is macOS 11.7.4, built for 11.0: the x86_64 lane that
//! executes our Mach-O files) names its own minimum; the build and the `deps` prefix then
//! live in directories of their own (see [`Target::label`]), so the two never share objects.

use super::{Os, Target, lookup};
use crate::error::{Error, Result};

/// The oldest deployment target accepted: macOS 11.0 (Big Sur), the first release with
/// Apple Silicon and the first whose `LC_BUILD_VERSION` zig writes for every Apple target.
pub const OLDEST: (u32, u32) = (11, 0);

/// `MAJOR.MINOR`, both decimal without sign or leading `+`; anything else is refused with
/// the expected form.
pub fn parse(text: &str) -> Result<(u32, u32)> {
    let bad = |why: &str| {
        Error::Usage(format!(
            "--macos-min {text:?}: {why}; write MAJOR.MINOR, for example 11.0 (oldest {}.{})",
            OLDEST.0, OLDEST.1
        ))
    };
    let (major, minor) = text.split_once('.').ok_or_else(|| bad("no '.'"))?;
    let number = |s: &str| {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 3 {
            Err(bad("not a version number"))
        } else {
            s.parse::<u32>().map_err(|_| bad("not a version number"))
        }
    };
    let v = (number(major)?, number(minor)?);
    if v < OLDEST {
        return Err(bad("older than the oldest macOS built for"));
    }
    Ok(v)
}

impl Target {
    /// This row with another deployment target (`None`: the row itself). Apple rows only.
    /// The new row is leaked: a build makes one, and rows are `&'static` throughout.
    pub fn with_macos_min(&'static self, min: Option<&str>) -> Result<&'static Target> {
        let Some(text) = min else { return Ok(self) };
        if self.os != Os::Apple {
            return Err(self.not_apple("--macos-min applies to macOS targets only"));
        }
        let (major, minor) = parse(text)?;
        let canonical = format!("{major}.{minor}");
        if self.macos_min == Some(canonical.as_str()) {
            return Ok(self);
        }
        let min: &'static str = Box::leak(canonical.into_boxed_str());
        Ok(Box::leak(Box::new(Target {
            macos_min: Some(min),
            ..*self
        })))
    }

    /// The triple, plus `-macos<min>` when the deployment target is not the table's: the
    /// name of this build's directories (Slurm's staging, the `deps` prefix).
    pub fn label(&self) -> String {
        let table = lookup(self.rust).ok().and_then(|t| t.macos_min);
        match self.macos_min {
            Some(min) if Some(min) != table => format!("{}-macos{min}", self.rust),
            _ => self.rust.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::rows;
    use super::*;

    #[test]
    fn parse__major_minor_at_least_eleven() {
        assert_eq!(parse("11.0").unwrap(), (11, 0));
        assert_eq!(parse("14.5").unwrap(), (14, 5));
        for bad in [
            "10.15", "11", "11.", ".0", "11.0.1", "+11.0", "eleven", "", "11.x", "99999.0",
        ] {
            match parse(bad) {
                Err(Error::Usage(m)) => assert!(m.contains("MAJOR.MINOR"), "{bad}: {m}"),
                other => panic!("{bad:?}: expected a usage error, got {other:?}"),
            }
        }
    }

    #[test]
    fn with_macos_min__changes_zig_target_and_label_only() {
        let x = rows::mac_x86();
        let eleven = x.with_macos_min(Some("11.0")).unwrap();
        assert_eq!(eleven.zig_target().unwrap(), "x86_64-macos.11.0");
        assert_eq!(eleven.label(), "x86_64-apple-darwin-macos11.0");
        assert_eq!((eleven.rust, eleven.bottle_tag), (x.rust, x.bottle_tag));
        // The table's own value and no value give the row itself, and its plain label.
        assert!(std::ptr::eq(x.with_macos_min(Some("12.0")).unwrap(), x));
        assert!(std::ptr::eq(x.with_macos_min(None).unwrap(), x));
        assert_eq!(x.label(), "x86_64-apple-darwin");
        // The table is untouched.
        assert_eq!(rows::mac_x86().zig_target().unwrap(), "x86_64-macos.12.0");
    }

    #[test]
    fn with_macos_min__refused_for_linux_rows() {
        let l = rows::linux_x86();
        assert!(matches!(
            l.with_macos_min(Some("11.0")),
            Err(Error::Unsupported(_))
        ));
        assert!(std::ptr::eq(l.with_macos_min(None).unwrap(), l));
        assert_eq!(l.label(), "x86_64-unknown-linux-gnu");
    }
}
