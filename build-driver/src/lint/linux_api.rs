//! `linux-api`: calls, in code macOS compiles, to Linux-only functions the shim does not
//! provide.
//!
//! `close_range` and `prlimit` (both named by POC D8/D13), `memfd_create`, `epoll_*`,
//! `signalfd`, `inotify_*`, `timerfd_*`, `prctl`, `unshare`, `setns`, `pivot_root`,
//! `get_nprocs`, `malloc_trim`. macOS's SDK declares none of them, so such a call would not
//! even compile; they are found here before a Mach-O build has to. The functions the shim
//! does provide (`pipe2`, `accept4`, `eventfd`, `timer_*`, `sched_*affinity`, `setresuid`,
//! `sysinfo`, ...) are not listed. A name looked up at run time (`dlsym(h, "close_range")`,
//! 26.11's `fd.c`) is a string, not a call, and is not reported.

use super::{Class, Finding, Scanned};

const LINUX_ONLY: &[&str] = &[
    "close_range",
    "prlimit",
    "prlimit64",
    "memfd_create",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "signalfd",
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    "timerfd_create",
    "timerfd_settime",
    "prctl",
    "unshare",
    "setns",
    "pivot_root",
    "get_nprocs",
    "get_nprocs_conf",
    "malloc_trim",
];

pub fn scan(f: &Scanned, out: &mut Vec<Finding>) {
    let t = &f.mac;
    for k in 0..t.len() {
        let Some(id) = t[k].ident().filter(|id| LINUX_ONLY.contains(id)) else {
            continue;
        };
        let call = t.get(k + 1).is_some_and(|x| x.is("("));
        // `.prlimit(` / `->prlimit(` is a member; a preceding type word is a declaration
        let member = k > 0 && (t[k - 1].is(".") || t[k - 1].is("->"));
        let declared = k > 0 && (t[k - 1].is("int") || t[k - 1].is("*"));
        if call && !member && !declared {
            out.push(Finding {
                file: f.rel.clone(),
                line: t[k].line,
                class: Class::LinuxApi,
                subject: id.to_string(),
                message: format!(
                    "{id}() is Linux-only (not in the macOS SDK, not provided by the shim)"
                ),
            });
        }
    }
}
