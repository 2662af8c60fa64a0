//! The driver's one home for what every subcommand shares: running programs (found on the
//! PATH, checked, bounded by a deadline, logged with progress), signals, file-system helpers
//! and the input stamp. Subcommand modules use these; nothing here knows a subcommand.

pub mod bounded;
pub mod fs;
pub mod logged;
pub mod process;
pub mod signal;
pub mod stamp;
