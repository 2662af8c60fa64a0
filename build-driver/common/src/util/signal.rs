//! Signals to processes by PID, through nix's safe wrappers: existence checks (signal 0) and
//! killing a whole process group.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Whether a process exists and we may signal it (signal 0 sends nothing).
pub fn process_exists(pid: u32) -> bool {
    i32::try_from(pid).is_ok_and(|raw| nix::sys::signal::kill(Pid::from_raw(raw), None).is_ok())
}

/// Sends `signal` to the process `pid`; errors (it is gone) are ignored.
pub fn kill(pid: u32, signal: Signal) {
    if let Ok(raw) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(Pid::from_raw(raw), signal);
    }
}

/// Sends SIGKILL to the process group `pgid` (a group leader we started and have not reaped,
/// so the id cannot have been reused). Errors (the group is gone) are ignored.
pub fn kill_group(pgid: u32) {
    if let Ok(raw) = i32::try_from(pgid) {
        let _ = killpg(Pid::from_raw(raw), Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_exists__self_yes_absent_no() {
        assert!(process_exists(std::process::id()));
        assert!(!process_exists(u32::MAX));
        assert!(!process_exists(4_194_303 + 1));
    }
}
