//! The build personality: what a Slurm build on this machine stands for. A domain type of the
//! build (the CLI, the build plan, CI and the staging manifest use it), not of the command line.

use crate::error::{Error, Result};
use crate::targets::{Os, Target};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Personality {
    /// Plain upstream behaviour: the shim header is inert and the shim is not linked.
    Native,
    /// Linux only: the shim replaces glibc's functions and configure sees macOS's answers.
    Darwin,
}

impl Personality {
    /// The command-line name (`native`, `darwin`).
    pub fn name(self) -> &'static str {
        match self {
            Personality::Native => "native",
            Personality::Darwin => "darwin",
        }
    }

    /// Refuses combinations that make no sense: the darwin personality emulates macOS on
    /// Linux, so it needs a Linux host and a Linux target.
    pub fn check(self, target: &Target, host: &Target) -> Result<()> {
        if self != Personality::Darwin {
            return Ok(());
        }
        if host.os != Os::Linux {
            return Err(Error::Unsupported(format!(
                "the darwin personality emulates macOS on a Linux host; this host is {}: build with \
                 --personality native, which on macOS is the real thing",
                host.rust
            )));
        }
        if target.os != Os::Linux {
            return Err(Error::Unsupported(format!(
                "the darwin personality builds for a Linux target; for {} use --personality native",
                target.rust
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::rows;

    #[test]
    fn check__darwin_needs_linux_host_and_target() {
        let linux = rows::linux_x86();
        let mac = rows::mac_arm();
        assert!(Personality::Darwin.check(linux, linux).is_ok());
        assert!(matches!(
            Personality::Darwin.check(linux, mac),
            Err(Error::Unsupported(_))
        ));
        assert!(matches!(
            Personality::Darwin.check(mac, linux),
            Err(Error::Unsupported(_))
        ));
        assert!(Personality::Native.check(mac, linux).is_ok());
        assert!(Personality::Native.check(linux, mac).is_ok());
    }

    #[test]
    fn name__round_trips_through_the_manifest_spelling() {
        for p in [Personality::Native, Personality::Darwin] {
            let text = toml::to_string(&std::collections::BTreeMap::from([("p", p)])).unwrap();
            assert_eq!(text.trim(), format!("p = \"{}\"", p.name()));
        }
    }
}
