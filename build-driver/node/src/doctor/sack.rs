//! The SACK directory (`--sack-dir`, default `/var/run/slurm` on macOS, `/run/slurm` on
//! Linux: patches/24.11/0011): where sackd and slurmd put the `sack.socket` that hands
//! auth/slurm credentials to local clients. Whoever can write there can put their own socket
//! in its place and answer every client's request for a credential, so it must be root's and
//! not world-writable. Absent is fine: auth/slurm creates it at start, mode 0755, owned by
//! SlurmUser, root in a configless node (24.11.5 `src/plugins/auth/slurm/sack.c`,
//! `_prepare_run_dir`).

use super::{Check, Finding, Problem};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SackProblem {
    NotADirectory { path: PathBuf },
    NotRoot { path: PathBuf, uid: u32 },
    WorldWritable { path: PathBuf, mode: u32 },
    Unreadable { path: PathBuf, error: String },
}

impl SackProblem {
    pub fn detail(&self) -> String {
        match self {
            SackProblem::NotADirectory { path } => format!(
                "{} is not a directory (auth/slurm's _prepare_run_dir refuses it and slurmd exits)",
                path.display()
            ),
            SackProblem::NotRoot { path, uid } => format!(
                "{} belongs to uid {uid}, not root: that user can replace the credential socket",
                path.display()
            ),
            SackProblem::WorldWritable { path, mode } => format!(
                "{} has mode {mode:04o}: every user can replace the credential socket",
                path.display()
            ),
            SackProblem::Unreadable { path, error } => {
                format!("{} cannot be examined ({error})", path.display())
            }
        }
    }

    pub fn fix(&self) -> String {
        match self {
            SackProblem::NotADirectory { path } | SackProblem::Unreadable { path, .. } => {
                format!(
                    "sudo rm {p} (slurmd makes the directory at start), or sudo mkdir -m 755 {p}",
                    p = path.display()
                )
            }
            SackProblem::NotRoot { path, .. } => format!("sudo chown root {}", path.display()),
            SackProblem::WorldWritable { path, .. } => {
                format!("sudo chmod 755 {}", path.display())
            }
        }
    }
}

pub fn check(dir: &Path) -> Finding {
    match problem(dir) {
        Ok(Some(p)) => Finding::fail(Check::SackDir, Problem::Sack(p)),
        Ok(None) => Finding::ok(
            Check::SackDir,
            format!("{}: root's, not world-writable", dir.display()),
        ),
        Err(()) => Finding::ok(
            Check::SackDir,
            format!(
                "{} is absent: slurmd creates it at start (mode 0755, root's)",
                dir.display()
            ),
        ),
    }
}

/// `Err(())` when the directory is absent.
fn problem(dir: &Path) -> Result<Option<SackProblem>, ()> {
    let path = dir.to_path_buf();
    let m = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(()),
        Err(e) => {
            return Ok(Some(SackProblem::Unreadable {
                path,
                error: e.to_string(),
            }));
        }
    };
    Ok(if !m.is_dir() {
        Some(SackProblem::NotADirectory { path })
    } else if m.uid() != 0 {
        Some(SackProblem::NotRoot { path, uid: m.uid() })
    } else if m.mode() & 0o002 != 0 {
        Some(SackProblem::WorldWritable {
            path,
            mode: m.mode() & 0o7777,
        })
    } else {
        None
    })
}
