//! A node's suspend command, from the map, run with a deadline. Its output is passed on
//! (slurmctld keeps neither, but a site's wrapper may log it); a failure names the node.

use super::PowerError;
use super::map::Node;
use driver_common::util::process::bounded::run_bounded;
use std::io::Write as _;
use std::time::Duration;

/// Runs `node`'s suspend command; it must exit 0 within `timeout`.
pub fn run(node: &Node, timeout: Duration) -> Result<(), PowerError> {
    let command = node.suspend.as_deref().unwrap_or_default();
    let shown = command.join(" ");
    let fail = |detail: String| PowerError::Suspend {
        node: node.name.clone(),
        command: shown.clone(),
        detail,
    };
    let (program, args) = command
        .split_first()
        .ok_or_else(|| fail("the command is empty".to_string()))?;
    // A name without `/` (`ssh`) comes from the system directories, never the caller's PATH;
    // either way the gate judges it before it runs, with a clean environment.
    let mut cmd = driver_common::gate::Program::system(program)?.command();
    cmd.args(args);
    let out = run_bounded(cmd, timeout).map_err(|e| fail(e.to_string()))?;
    std::io::stdout().write_all(&out.stdout).ok();
    std::io::stderr().write_all(&out.stderr).ok();
    if !out.status.success() {
        return Err(fail(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}
