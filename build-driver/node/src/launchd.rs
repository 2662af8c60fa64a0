//! The names launchd knows a Mac's Slurm daemons by: which daemons there are, their labels,
//! and where system LaunchDaemons live. A leaf: the CLI names them in its arguments, and
//! `service` writes and loads their property lists (`service/plist.rs`).

/// Where system LaunchDaemons live.
pub const LAUNCH_DAEMONS: &str = "/Library/LaunchDaemons";

/// The label prefix; the label is `<prefix>.<daemon>`.
pub const LABEL_PREFIX: &str = "org.slurm-on-mac";

/// A daemon a Mac runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Daemon {
    /// The compute node.
    Slurmd,
    /// The client-side auth and configless cache for a login-only Mac.
    Sackd,
}

impl Daemon {
    pub fn name(self) -> &'static str {
        match self {
            Daemon::Slurmd => "slurmd",
            Daemon::Sackd => "sackd",
        }
    }

    pub fn label(self) -> String {
        format!("{LABEL_PREFIX}.{}", self.name())
    }
}
