//! The driver's one home for what every subcommand shares: running programs ([`process`]:
//! found on the PATH, checked, bounded by a deadline, logged with progress, detached),
//! signals, file-system helpers and the input stamp. Subcommand modules use these; nothing
//! here knows a subcommand.

pub mod fs;
pub mod process;
pub mod signal;
pub mod stamp;
