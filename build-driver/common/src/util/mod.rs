//! The driver's one home for what every subcommand shares: running programs ([`process`]:
//! found on the PATH, checked, bounded by a deadline, logged with progress, detached),
//! signals, file-system helpers, the input stamp and the build machine's directories that
//! compiled output must not name. Subcommand modules use these; nothing
//! here knows a subcommand.

pub mod fs;
pub mod host_paths;
pub mod process;
pub mod signal;
pub mod stamp;
