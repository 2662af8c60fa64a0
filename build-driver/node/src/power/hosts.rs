//! The node names of a hostlist expression as slurmctld passes it (`mac[1-3],mini`). An
//! expression with brackets goes to `scontrol show hostnames`, Slurm's own parser, so the
//! tool never disagrees with slurmctld about a range; a plain comma list (no `[`) is split
//! here, which needs no Slurm install (tests, a hand call). `scontrol` (`--scontrol`, or the
//! name looked up in the system directories only, never the caller's PATH) goes through the
//! gate.

use super::PowerError;
use driver_common::gate::Program;
use driver_common::util::process::bounded::read_bounded;
use std::path::Path;
use std::time::Duration;

/// The names in `expr`, in order.
pub fn expand(expr: &str, scontrol: &Path, timeout: Duration) -> Result<Vec<String>, PowerError> {
    let names: Vec<String> = if expr.contains('[') {
        let fail = |detail: String| PowerError::Hostlist {
            expr: expr.to_string(),
            scontrol: scontrol.to_path_buf(),
            detail,
        };
        let program =
            Program::system(&scontrol.to_string_lossy()).map_err(|e| fail(e.to_string()))?;
        let mut cmd = program.command();
        cmd.args(["show", "hostnames", expr]);
        // slurmctld gives its programs SLURM_CONF: passed on only when the gate trusts it.
        if let Some(conf) = std::env::var_os("SLURM_CONF").filter(|c| !c.is_empty()) {
            driver_common::gate::file::read_trusted(Path::new(&conf))?;
            driver_common::gate::env::allow(&mut cmd, "SLURM_CONF", conf);
        }
        let out = read_bounded(cmd, timeout).map_err(|e| fail(e.to_string()))?;
        out.split_whitespace().map(str::to_string).collect()
    } else {
        plain(expr)
    };
    if names.is_empty() {
        return Err(PowerError::NoNodes(expr.to_string()));
    }
    Ok(names)
}

/// A comma (or space) separated list without brackets.
pub fn plain(expr: &str) -> Vec<String> {
    expr.split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}
