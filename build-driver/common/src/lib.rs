//! What the build driver (`cargo xtask`), the node tool (`slurm-mac`) and the laboratory
//! share: the one error type, process running, the file system, Mach-O ad-hoc signatures,
//! the staging manifest, the source pins, the target table, the release lines and the
//! expectations loader. It depends on none of them.

// Test names read `subject__behaviour` across the driver's crates.
#![cfg_attr(test, allow(non_snake_case))]

pub mod codesign;
pub mod error;
pub mod expectations;
pub mod gate;
pub mod libressl;
pub mod lines;
pub mod node_files;
pub mod personality;
pub mod pins;
pub mod staging;
pub mod targets;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod util;

pub use error::{Error, Result};

/// The workspace root (this crate lives in `build-driver/common/`).
pub fn project_root() -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    dir.ancestors()
        .nth(2)
        .map(std::path::PathBuf::from)
        .unwrap_or(dir)
}
