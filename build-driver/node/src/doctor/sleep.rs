//! Sleep: a Mac that sleeps stops answering slurmctld, which marks the node DOWN and requeues
//! or kills its jobs. On macOS `pmset -g` (the settings in force) must say `sleep 0`. On
//! Linux there is no pmset: skipped, with that reason. The reading of `pmset -g` is a pure
//! function tested on recorded output.

use super::{Check, Finding, Problem};
use std::time::Duration;

/// The `sleep` minutes of `pmset -g` output: the line ` sleep  N ...` (not `disksleep`,
/// `displaysleep`). `None` when there is no such line.
pub fn sleep_minutes(pmset_g: &str) -> Option<u32> {
    pmset_g.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        match (words.next(), words.next()) {
            (Some("sleep"), Some(n)) => n.parse().ok(),
            _ => None,
        }
    })
}

/// The verdict on `pmset -g` output.
pub fn judge(pmset_g: &str) -> Finding {
    match sleep_minutes(pmset_g) {
        Some(0) => Finding::ok(Check::Sleep, "pmset: sleep 0 (the system never sleeps)"),
        Some(minutes) => Finding::fail(Check::Sleep, Problem::Sleeps { minutes }),
        None => Finding::fail(
            Check::Sleep,
            Problem::Pmset("`pmset -g` printed no `sleep` line".into()),
        ),
    }
}

pub fn check(timeout: Duration) -> Finding {
    if !cfg!(target_os = "macos") {
        return Finding::skip(
            Check::Sleep,
            format!(
                "not applicable ({}): pmset is macOS's; a Linux node's sleep is systemd's and not checked",
                if cfg!(target_os = "linux") {
                    "Linux"
                } else {
                    std::env::consts::OS
                }
            ),
        );
    }
    let mut c = match driver_common::gate::Program::checked(std::path::Path::new("/usr/bin/pmset"))
    {
        Ok(p) => p.command(),
        Err(e) => return Finding::fail(Check::Sleep, Problem::Pmset(e.to_string())),
    };
    c.arg("-g");
    match driver_common::util::process::bounded::read_bounded(c, timeout) {
        Ok(out) => judge(&out),
        Err(e) => Finding::fail(Check::Sleep, Problem::Pmset(e.to_string())),
    }
}
