//! The bottle's check, on the assembled keg: every Mach-O file carries a valid ad-hoc
//! signature (page hashes and CodeDirectory), accepted by our verifier and, with the
//! `apple-codesign` feature, by that crate too ([`super::codesign::bottle_verdict`]), and only install
//! names a poured keg may carry ([`super::linkage::violations`]); no file names a directory of
//! the build machine ([`super::scan`]); no text file keeps a literal Cellar or prefix path
//! (they must be placeholders); the programs the formula and the service name, and the node
//! tool, exist and are executables of the bottle's CPU ([`crate::cross::macho::check_file`]);
//! from 25.05 on, the TLS plugin `tls_s2n.so` is there and is a plugin of that CPU.

use super::{Layout, codesign, linkage, relocate, scan};
use crate::cross::macho::{Expect, check_file};
use driver_common::error::{Error, Result};
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

/// What was checked, and how long the signatures took.
#[derive(Debug, Default)]
pub struct Report {
    pub macho_files: usize,
    pub pages: usize,
    pub files: usize,
    pub signature_time: Duration,
}

impl Report {
    pub fn summary(&self) -> String {
        format!(
            "bottle check passed: {} Mach-O files signed ad hoc and verified by {} ({} pages, \
             {:.2}s), install names allowed; {} files free of build-machine paths",
            self.macho_files,
            if codesign::SECOND_VERIFIER {
                "ours and apple-codesign"
            } else {
                "ours (apple-codesign: the `apple-codesign` feature is off)"
            },
            self.pages,
            self.signature_time.as_secs_f64(),
            self.files
        )
    }
}

/// The programs the formula and the service name, and the node tool, relative to the keg.
pub const NAMED: &[&str] = &[
    "sbin/slurmd",
    "sbin/slurmstepd",
    "bin/sinfo",
    "bin/srun",
    "bin/sbatch",
    super::node_tool::KEG_PATH,
];

pub fn check(root: &Path, layout: &Layout, keg: &Path) -> Result<Report> {
    let needles = scan::needles(&driver_common::staging::host_dirs(root));
    let k = layout.keg();
    let mut report = Report::default();
    let mut problems = Vec::new();
    for rel in driver_common::util::fs::walk(keg)? {
        let abs = keg.join(&rel);
        let meta = fs::symlink_metadata(&abs).map_err(|e| Error::io(&abs, e))?;
        if !meta.is_file() {
            continue;
        }
        let data = fs::read(&abs).map_err(|e| Error::io(&abs, e))?;
        report.files += 1;
        let name = rel.display();
        for hit in scan::hits(&data, &needles) {
            problems.push(format!("{name}: build-machine path {hit}"));
        }
        if crate::macho::inspect(&data).is_ok() {
            report.macho_files += 1;
            let t = Instant::now();
            match codesign::bottle_verdict(&data) {
                Ok(v) => report.pages += v.pages,
                Err(e) => problems.push(format!("{name}: {e}")),
            }
            report.signature_time += t.elapsed();
            match linkage::violations(&k, &data) {
                Ok(v) => {
                    problems.extend(v.into_iter().map(|b| format!("{name}: install name {b}")))
                }
                Err(e) => problems.push(format!("{name}: load commands: {e}")),
            }
        } else if relocate::is_text(&data)
            && rel != Path::new(".brew").join(format!("{}.rb", layout.formula))
            && relocate::to_placeholders(&data, &layout.cellar(), &layout.homebrew_prefix).is_some()
        {
            problems.push(format!(
                "{name}: a literal {} path is left in a text file",
                layout.homebrew_prefix
            ));
        }
    }
    let cpu = crate::macho::cpu_type(layout.target)?;
    problems.extend(named_files(layout, keg, cpu));
    let plist = keg.join(slurm_mac::service::plist::file_name(
        slurm_mac::service::plist::Daemon::Slurmd,
    ));
    for n in [plist, keg.join("INSTALL_RECEIPT.json")] {
        if !n.is_file() {
            problems.push(format!("{} is missing", n.display()));
        }
    }
    if report.macho_files == 0 {
        problems.push("no Mach-O file at all".into());
    }
    if problems.is_empty() {
        Ok(report)
    } else {
        Err(Error::file(
            keg,
            format!("the bottle check failed:\n  {}", problems.join("\n  ")),
        ))
    }
}

/// What is wrong with the programs [`NAMED`] and, for a line with TLS, `tls_s2n.so`: missing,
/// or not of the bottle's CPU.
fn named_files(layout: &Layout, keg: &Path, cpu: u32) -> Vec<String> {
    let mut problems = Vec::new();
    for n in NAMED {
        let p = keg.join(n);
        if !p.is_file() {
            problems.push(format!("{n} is missing"));
        } else if let Some(bad) = check_file(&p, Expect::Program, cpu) {
            problems.push(format!("{n}: not a program of the bottle's CPU: {bad}"));
        }
    }
    if layout.has_tls() {
        let p = keg.join(crate::s2n::PLUGIN);
        let n = crate::s2n::PLUGIN;
        if !p.is_file() {
            problems.push(format!(
                "{n} is missing (Slurm {} has TLS: the build needs --with-s2n)",
                layout.line
            ));
        } else if let Some(bad) = check_file(&p, Expect::Plugin, cpu) {
            problems.push(format!("{n}: not a plugin of the bottle's CPU: {bad}"));
        }
    }
    problems
}
