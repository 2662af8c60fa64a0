//! Disk use of the lanes: a full run holds four Slurm builds (about 1.5 GiB each) and the
//! cargo target folder. CI machines' free space varies (a run once failed with "No space left
//! on device"), so the summary prints the free space at the start and end, and a build only
//! needed for its results is removed once they are recorded.

use crate::build_slurm::BuildOutput;
use std::path::Path;

/// Free bytes of the file system holding `path`, if it can be read.
fn free_bytes(path: &Path) -> Option<u64> {
    let st = nix::sys::statvfs::statvfs(path).ok()?;
    Some((st.blocks_available() as u64).saturating_mul(st.fragment_size() as u64))
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// "free disk: 34.2 GiB on <path>" (or why it is unknown).
pub fn free_line(path: &Path) -> String {
    match free_bytes(path) {
        Some(b) => format!("free disk: {} at {}", gib(b), path.display()),
        None => format!("free disk: unknown ({} could not be read)", path.display()),
    }
}

/// Remove a build's folder (source copy, build tree, prefix, stamp); a later run rebuilds it
/// (ccache makes that a few minutes). Failure to remove is reported, never fatal.
pub fn free_build(b: &BuildOutput) {
    let Some(folder) = b.prefix.parent() else {
        return;
    };
    let parent = folder.parent().unwrap_or(folder).to_path_buf();
    let before = free_bytes(&parent);
    match std::fs::remove_dir_all(folder) {
        Ok(()) => {
            let freed = match (before, free_bytes(&parent)) {
                (Some(b), Some(a)) => format!(" ({} freed)", gib(a.saturating_sub(b))),
                _ => String::new(),
            };
            println!(
                "ci: removed {}{freed}: its results are recorded (--keep-builds keeps it)",
                folder.display()
            );
        }
        Err(e) => println!("ci: could not remove {}: {e}", folder.display()),
    }
}
