//! PLACEHOLDER (being implemented): fork-safe close-on-exec emulation lock.
/// Runs `f` while holding the descriptor-creation side of the fork lock.
pub fn with_fork_lock<T>(f: impl FnOnce() -> T) -> T {
    f()
}
