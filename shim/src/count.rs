//! Calls per exported API, counted when `SLURM_SHIM_CALL_COUNTS=<file>` is set, so a benchmark
//! can say how often a step goes through the shim and through which API.
//!
//! Every exported `slurm_shim_*` function starts with [`counted!`] naming itself. Without the
//! variable a call costs one atomic load (the variable is read once per process, with glibc's
//! `getenv`, which takes no lock and so is safe in a child of `fork`). With it, each call adds
//! one to the counter of its row of [`crate::table::ENTRIES`], and at `exit` (an `atexit`
//! handler) the process appends one line per API it called to the file:
//!
//! ```text
//! slurmstepd 4242 slurm_shim_sysctl 12
//! ```
//!
//! (program, pid, symbol, calls), all lines of a process in one `O_APPEND` write, so processes
//! sharing the file do not interleave within a process's block. A child of `fork` starts from
//! zero (a `pthread_atfork` child handler), so every process reports its own calls only; a
//! process that ends in `_exit`, `exec` or a signal writes nothing (slurmd and slurmstepd
//! return from `main`; a task's child between `fork` and `exec` does not count).
//!
//! Portability problems not fixed: a call made before the first counted call of a process
//! has read the variable is counted as usual (the read happens in that first call); calls
//! made by other `atexit` handlers that run after the dump are lost.

use libc::c_int;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::table::ENTRIES;

/// Environment variable naming the file the counts are appended to.
pub const ENV: &str = "SLURM_SHIM_CALL_COUNTS";

const ROWS: usize = ENTRIES.len();

static COUNTS: [AtomicU64; ROWS] = [const { AtomicU64::new(0) }; ROWS];
static ON: AtomicBool = AtomicBool::new(false);
static INIT: Once = Once::new();

/// A slot's value before its row is looked up.
pub const UNRESOLVED: usize = usize::MAX;

/// Counts one call of the exported function `f` (its own name, checked against the table).
#[macro_export]
macro_rules! counted {
    ($f:ident) => {{
        static SLOT: ::std::sync::atomic::AtomicUsize =
            ::std::sync::atomic::AtomicUsize::new($crate::count::UNRESOLVED);
        $crate::count::hit(&SLOT, stringify!($f));
    }};
}

/// The row of `symbol` in [`ENTRIES`].
pub fn row_of(symbol: &str) -> Option<usize> {
    ENTRIES.iter().position(|e| e.symbol == symbol)
}

/// Counts a call of `symbol`; `slot` caches its row (one per call site, [`counted!`]).
pub fn hit(slot: &AtomicUsize, symbol: &'static str) {
    INIT.call_once(init);
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    let mut row = slot.load(Ordering::Relaxed);
    if row == UNRESOLVED {
        // A symbol missing from the table counts nowhere; a test makes sure none is.
        row = row_of(symbol).unwrap_or(ROWS);
        slot.store(row, Ordering::Relaxed);
    }
    if let Some(c) = COUNTS.get(row) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// The calls counted so far in this process, by row.
pub fn snapshot() -> Vec<(&'static str, u64)> {
    ENTRIES
        .iter()
        .zip(&COUNTS)
        .map(|(e, c)| (e.symbol, c.load(Ordering::Relaxed)))
        .filter(|&(_, n)| n > 0)
        .collect()
}

fn init() {
    // SAFETY: the name is NUL-terminated; getenv returns NULL or a C string.
    if unsafe { libc::getenv(c"SLURM_SHIM_CALL_COUNTS".as_ptr()) }.is_null() {
        return;
    }
    // SAFETY: plain function pointers with C linkage; registered once (`INIT`).
    unsafe {
        libc::atexit(dump_at_exit);
        libc::pthread_atfork(None, None, Some(zero_in_child));
    }
    ON.store(true, Ordering::Relaxed);
}

extern "C" fn zero_in_child() {
    for c in &COUNTS {
        c.store(0, Ordering::Relaxed);
    }
}

extern "C" fn dump_at_exit() {
    // SAFETY: as in `init`.
    let path = unsafe { libc::getenv(c"SLURM_SHIM_CALL_COUNTS".as_ptr()) };
    if path.is_null() {
        return;
    }
    // SAFETY: getpid cannot fail.
    let text = format_counts(&program_name(), unsafe { libc::getpid() }, &snapshot());
    if text.is_empty() {
        return;
    }
    // SAFETY: `path` is a C string; the descriptor is written once and closed.
    unsafe {
        let fd = libc::open(
            path,
            libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
            0o666 as libc::c_uint,
        );
        if fd >= 0 {
            let _ = libc::write(fd, text.as_ptr().cast(), text.len());
            libc::close(fd);
        }
    }
}

/// The lines a process writes: `<program> <pid> <symbol> <calls>`.
pub fn format_counts(program: &str, pid: c_int, counts: &[(&str, u64)]) -> String {
    counts
        .iter()
        .map(|(s, n)| format!("{program} {pid} {s} {n}\n"))
        .collect()
}

/// The program's name, `?` if unknown. On Linux the kernel's (`/proc/self/comm`, set at
/// `exec` from the file name): at exit glibc's `program_invocation_short_name` is gone in
/// Slurm's daemons, whose `setproctitle` reuses the memory of `argv` (seen: every line of a
/// run named no program). Elsewhere `getprogname()`.
pub fn program_name() -> String {
    #[cfg(target_os = "linux")]
    {
        std::fs::read_to_string("/proc/self/comm")
            .map(|s| s.trim_end().to_string())
            .ok()
            .filter(|s| !s.is_empty() && !s.contains(char::is_whitespace))
            .unwrap_or_else(|| "?".into())
    }
    #[cfg(not(target_os = "linux"))]
    {
        // SAFETY: getprogname returns NULL or a C string the C library keeps.
        let p: *const libc::c_char = unsafe { libc::getprogname() };
        if p.is_null() {
            return "?".into();
        }
        // SAFETY: as above.
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_str()
            .unwrap_or("?")
            .to_string()
    }
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn count__every_row_resolves() {
        for e in ENTRIES {
            assert_eq!(row_of(e.symbol).map(|r| ENTRIES[r].symbol), Some(e.symbol));
        }
        assert_eq!(row_of("slurm_shim_no_such_api"), None);
    }

    #[test]
    fn count__program_name_is_one_word() {
        let name = program_name();
        assert!(
            !name.is_empty() && name != "?" && !name.contains(' '),
            "{name:?}"
        );
    }

    #[test]
    fn count__lines_name_program_pid_symbol_calls() {
        let text = format_counts(
            "slurmd",
            7,
            &[("slurm_shim_pipe2", 3), ("slurm_shim_sysctl", 1)],
        );
        assert_eq!(
            text,
            "slurmd 7 slurm_shim_pipe2 3\nslurmd 7 slurm_shim_sysctl 1\n"
        );
    }

    /// Every exported function of the table counts itself, with its own name (a source
    /// check: a function added without `counted!`, or one that names another, fails here).
    #[test]
    fn count__every_exported_function_counts_itself() {
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        for e in ENTRIES {
            let file = if e.map == crate::table::Map::Emulate {
                format!("{src}/emulate/{}.rs", e.module)
            } else {
                format!("{src}/{}.rs", e.module)
            };
            // The module's file and its children's (timer.rs keeps its C ABI in timer/abi.rs).
            let mut text = std::fs::read_to_string(&file).unwrap();
            if let Ok(children) = std::fs::read_dir(file.trim_end_matches(".rs")) {
                for c in children.flatten() {
                    text.push_str(&std::fs::read_to_string(c.path()).unwrap());
                }
            }
            let head = format!("extern \"C\" fn {}(", e.symbol);
            let Some(at) = text.find(&head) else {
                // Made by emulate::pthread_sig's `checked_entry!`, which counts `$name`.
                let call = format!("{}(", e.symbol);
                let made = text.split("checked_entry!(").skip(1).any(|inv| {
                    inv.lines()
                        .find(|l| !l.trim_start().starts_with("///") && !l.trim().is_empty())
                        .is_some_and(|l| l.trim_start().starts_with(&call))
                });
                assert!(made, "{file}: no {}", e.symbol);
                let macro_src =
                    std::fs::read_to_string(format!("{src}/emulate/pthread_sig.rs")).unwrap();
                assert!(macro_src.contains("crate::counted!($name);"));
                continue;
            };
            let body = &text[at..];
            let open = body.find(") ").and_then(|_| body.find('{')).unwrap();
            let first = body[open + 1..].trim_start();
            assert!(
                first.starts_with(&format!("crate::counted!({});", e.symbol)),
                "{file}: {} does not start with crate::counted!({})",
                e.symbol,
                e.symbol
            );
        }
    }
}
