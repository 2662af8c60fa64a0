//! `setpriority(PRIO_DARWIN_PROCESS, pid, PRIO_DARWIN_BG)`: macOS's background class for a
//! whole process (lower CPU priority, efficiency cores on Apple Silicon, throttled disk and
//! network I/O), modelled on Linux (darwin personality only). Every other `which` goes to
//! glibc's `setpriority`.
//!
//! macOS behaviour emulated (SDK `sys/resource.h`: `PRIO_DARWIN_THREAD` 3,
//! `PRIO_DARWIN_PROCESS` 4, `PRIO_DARWIN_BG` 0x1000, `PRIO_DARWIN_NONUI` 0x1001;
//! xnu-11417.101.15 bsd/kern/kern_resource.c `setpriority`, `do_background_proc`,
//! `do_background_thread`; osfmk/kern/task_policy.c):
//!
//! * `PRIO_DARWIN_PROCESS`, `who` a pid (0: the caller): `PRIO_DARWIN_BG` turns the task's
//!   `TASK_POLICY_DARWIN_BG` on, any other value off, `PRIO_DARWIN_NONUI` is ignored.
//!   The policy is inherited across `fork` (`task_policy_create` copies the requested
//!   darwinbg bits) and kept across `exec`, so a task started in the background class
//!   stays there with all its children. `proc_pidinfo(PROC_PIDTBSDINFO)` then shows
//!   `PROC_FLAG_DARWINBG`. No such process: `ESRCH`; the caller must be root or have the
//!   target's uid as its effective or real uid: `EPERM` otherwise.
//! * `PRIO_DARWIN_THREAD` (`who` must be 0: the calling thread): the same for one thread.
//!
//! Linux mechanism: every thread of the process (`/proc/<pid>/task`) gets the `SCHED_IDLE`
//! policy (runs only when nothing else wants the CPU, inherited across fork and exec) and
//! the idle I/O priority class (`ioprio_set(IOPRIO_WHO_PROCESS, tid, IOPRIO_CLASS_IDLE)`);
//! turning it off restores `SCHED_OTHER` and the default I/O class.
//!
//! Portability problems not fixed: Linux has no efficiency-core placement and no network
//! throttling in this model; an unprivileged thread may not leave `SCHED_IDLE` unless its
//! `RLIMIT_NICE` allows nice 0 (`EPERM`), where macOS lets a process clear its own
//! background state; `getpriority(PRIO_DARWIN_*)` is not modelled (glibc says `EINVAL`).
#![allow(clippy::missing_safety_doc)]

use libc::c_int;

use super::report;
use crate::errno::{self, Errno};

/// `PRIO_DARWIN_THREAD`.
pub const PRIO_DARWIN_THREAD: c_int = 3;
/// `PRIO_DARWIN_PROCESS`.
pub const PRIO_DARWIN_PROCESS: c_int = 4;
/// `PRIO_DARWIN_BG`.
pub const PRIO_DARWIN_BG: c_int = 0x1000;
/// `PRIO_DARWIN_NONUI`.
pub const PRIO_DARWIN_NONUI: c_int = 0x1001;

const IOPRIO_WHO_PROCESS: c_int = 1;
const IOPRIO_CLASS_SHIFT: c_int = 13;
const IOPRIO_CLASS_IDLE: c_int = 3;

/// Puts one Linux thread into (or out of) the background model.
pub fn thread_background(tid: i32, on: bool) -> Result<(), Errno> {
    let param = libc::sched_param { sched_priority: 0 };
    let policy = if on {
        libc::SCHED_IDLE
    } else {
        libc::SCHED_OTHER
    };
    // SAFETY: `param` is a valid sched_param.
    if unsafe { libc::sched_setscheduler(tid, policy, &param) } != 0 {
        return Err(Errno::last());
    }
    let ioprio = if on {
        IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT
    } else {
        0
    };
    // SAFETY: ioprio_set has no memory-safety preconditions.
    if unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, tid, ioprio) } != 0 {
        return Err(Errno::last());
    }
    Ok(())
}

/// Puts every thread of process `pid` into (or out of) the background model.
pub fn process_background(pid: i32, on: bool) -> Result<(), Errno> {
    let tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map_err(|_| Errno(libc::ESRCH))?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    if tids.is_empty() {
        return Err(Errno(libc::ESRCH));
    }
    tids.into_iter().try_for_each(|t| thread_background(t, on))
}

/// The darwin part of `setpriority`: `None` when `which` is not one of macOS's own.
pub fn darwin_setpriority(which: c_int, who: u32, prio: c_int) -> Option<Result<(), Errno>> {
    let on = prio == PRIO_DARWIN_BG;
    Some(match which {
        PRIO_DARWIN_PROCESS if prio == PRIO_DARWIN_NONUI => Ok(()),
        PRIO_DARWIN_PROCESS => {
            let pid = if who == 0 {
                // SAFETY: getpid cannot fail.
                unsafe { libc::getpid() }
            } else {
                who as i32
            };
            process_background(pid, on)
        }
        PRIO_DARWIN_THREAD if who != 0 => Err(Errno(libc::EINVAL)),
        PRIO_DARWIN_THREAD => {
            // SAFETY: gettid cannot fail.
            let tid = unsafe { libc::gettid() };
            thread_background(tid, on)
        }
        _ => return None,
    })
}

/// `setpriority(2)` with macOS's `PRIO_DARWIN_*` classes.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_setpriority(which: c_int, who: libc::id_t, prio: c_int) -> c_int {
    crate::counted!(slurm_shim_setpriority);
    match darwin_setpriority(which, who, prio) {
        None => {
            // SAFETY: setpriority has no memory-safety preconditions.
            unsafe { libc::setpriority(which as libc::__priority_which_t, who, prio) }
        }
        Some(result) => {
            report::applied(
                "setpriority(PRIO_DARWIN_*) (macOS background class) modelled as SCHED_IDLE + idle I/O class (darwin personality)",
            );
            errno::to_c(result.map(|()| 0))
        }
    }
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn darwin_setpriority__other_classes_are_left_to_glibc() {
        assert!(darwin_setpriority(libc::PRIO_PROCESS as c_int, 0, 0).is_none());
        assert_eq!(
            darwin_setpriority(PRIO_DARWIN_THREAD, 1, PRIO_DARWIN_BG),
            Some(Err(Errno(libc::EINVAL)))
        );
        assert_eq!(
            darwin_setpriority(PRIO_DARWIN_PROCESS, 0x7fff_fff0, PRIO_DARWIN_BG),
            Some(Err(Errno(libc::ESRCH)))
        );
    }
}
