//! The node commands' arguments (clap), shared by `slurm-mac` and `cargo xtask`: each is
//! defined with its command; this module only gathers them for the two front ends.

pub use crate::doctor::DoctorArgs;
pub use crate::gres_conf::GresConfArgs;
pub use crate::install::{InstallArgs, UninstallArgs};
pub use crate::join::JoinArgs;
pub use crate::keg::CopyKegArgs;
pub use crate::power::PowerArgs;
pub use crate::service::{ServiceAction, ServiceArgs, ServiceOptions};
