//! `launchctl` for system daemons: `bootstrap system <plist>`, `bootout system/<label>`, and
//! `print system/<label>` to see whether launchd still holds the label.
//!
//! The bootout race: `launchctl bootout` returns while launchd may still be tearing the job
//! down (it waits up to `ExitTimeOut` for the process); a `bootstrap` of the same label in
//! that window fails with "Bootstrap failed: 5: Input/output error" (macOS launchctl's
//! message for a label still present). So after a bootout we poll `print` until the label is
//! gone, bounded.

use driver_common::error::{Error, Result};
use driver_common::gate::Program;
use driver_common::util::process::bounded::{poll, run_bounded};
use std::path::Path;
use std::time::Duration;
use xshell::Shell;

/// How long a bootout may take to make the label disappear (ExitTimeOut plus margin).
pub const BOOTOUT_WAIT: Duration = Duration::from_secs(super::plist::EXIT_TIMEOUT + 30);
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// A `launchctl` program (the system's, or a stand-in for tests), trusted by the gate.
#[derive(Clone, Debug)]
pub struct Launchctl {
    pub program: Program,
}

impl Launchctl {
    fn run(&self, _sh: &Shell, args: &[&str]) -> Result<std::process::Output> {
        let mut c = self.program.command();
        c.args(args);
        run_bounded(c, CALL_TIMEOUT)
    }

    /// Whether launchd has the label in the system domain.
    pub fn loaded(&self, sh: &Shell, label: &str) -> Result<bool> {
        Ok(self
            .run(sh, &["print", &format!("system/{label}")])?
            .status
            .success())
    }

    /// `launchctl print system/<label>`'s text.
    pub fn print(&self, sh: &Shell, label: &str) -> Result<String> {
        let out = self.run(sh, &["print", &format!("system/{label}")])?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Loads and starts the daemon of `plist`.
    pub fn bootstrap(&self, sh: &Shell, plist: &Path) -> Result<()> {
        let p = plist.display().to_string();
        let out = self.run(sh, &["bootstrap", "system", &p])?;
        if !out.status.success() {
            return Err(Error::Command {
                step: format!("loading {p}"),
                program: format!("{} bootstrap system", self.program.shown.display()),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(())
    }

    /// Stops and unloads the label, then waits until launchd no longer has it.
    pub fn bootout(&self, sh: &Shell, label: &str, wait: Duration) -> Result<()> {
        if !self.loaded(sh, label)? {
            return Ok(());
        }
        let out = self.run(sh, &["bootout", &format!("system/{label}")])?;
        // bootout may report an error while the job is already going away: the wait decides.
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        poll(
            &format!("launchd to remove {label} after bootout ({stderr})"),
            wait,
            Duration::from_millis(200),
            || Ok((!self.loaded(sh, label)?).then_some(())),
        )
    }
}
