//! The TLS part of `lines verify` (25.05 and later): s2n-tls for this machine, and the
//! reason recorded when a run has no TLS step.

use crate::ci::CiArgs;
use crate::lines::row::Scope;
use crate::report::Report;
use std::path::Path;
use xshell::Shell;

/// The release line of the version `args` names (`None` for a local source).
pub(super) fn pinned_line(root: &Path, args: &CiArgs) -> Option<driver_common::lines::Line> {
    if args.source.is_some() {
        return None;
    }
    let pins = driver_common::pins::Pins::load(root).ok()?;
    let line = pins.get(&args.version).ok()?.line.clone();
    driver_common::lines::Line::from_name(&line, "pins.toml").ok()
}

/// Why a full run has no TLS step by design (recorded as not applicable in the line's row):
/// a line before tls/s2n, or a local source; `None` when it should have had one.
pub(super) fn not_applicable_reason(root: &Path, args: &CiArgs) -> Option<String> {
    match pinned_line(root, args) {
        Some(l) if l < crate::s2n::FIRST_LINE => Some(format!(
            "Slurm {} has no tls/s2n (it came in {})",
            l.name(),
            crate::s2n::FIRST_LINE.name()
        )),
        None => Some("a local source: its line is not pinned".into()),
        Some(_) => None,
    }
}

/// `lines verify` of 25.05 and later: s2n-tls for this machine, so that the native and
/// darwin builds get tls/s2n; whether they do.
pub(super) fn tls_lane(
    sh: &Shell,
    root: &Path,
    args: &CiArgs,
    scope: Scope,
    report: &mut Report,
) -> bool {
    let wanted = scope == Scope::Full
        && pinned_line(root, args).is_some_and(|l| l >= crate::s2n::FIRST_LINE);
    if !wanted {
        return false;
    }
    report
        .step("s2n: s2n-tls for tls/s2n (pinned crate source)", || {
            crate::s2n::run(
                sh,
                root,
                crate::s2n::S2nArgs {
                    jobs: None,
                    target: None,
                },
            )
            .map(|p| format!("installed in {}", p.display()))
        })
        .is_some()
}
