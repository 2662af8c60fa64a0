//! A private work directory for a probe run as root (the probe's own slurm.conf, key copy and
//! logs): made under `/tmp` (root's and sticky), mode 0700, never under the caller's
//! `TMPDIR`; removed when dropped.

use super::chain::{self, Owners};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Where work directories are made: a root-owned sticky directory on every Unix.
pub const BASE: &str = "/tmp";

#[derive(Debug)]
pub struct WorkDir {
    pub path: PathBuf,
}

impl WorkDir {
    /// A new directory `BASE/<stem>.XXXXXX`, mode 0700, after `BASE` itself was judged.
    pub fn new(stem: &str) -> Result<WorkDir> {
        chain::trusted_parent(Path::new(BASE), Owners::caller())?;
        let template = Path::new(BASE).join(format!("{stem}.XXXXXX"));
        let path = nix::unistd::mkdtemp(&template).map_err(|e| chain::errno(&template, e))?;
        // mkdtemp makes it 0700 and ours; judged like everything else root uses.
        chain::trusted(&path, Owners::caller())
            .map_err(|e| Error::file(&path, format!("the new work directory: {e}")))?;
        Ok(WorkDir { path })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
