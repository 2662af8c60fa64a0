//! How an emulated macOS behaviour names itself: one log line per (behaviour, call site).
//!
//! When a model in [`crate::emulate`] makes a call fail (or answer) the way macOS would where
//! glibc would not, it calls [`applied`]. The first time a given behaviour is applied at a
//! given call site, one line is written:
//!
//! ```text
//! slurm-shim[1234]: macOS behaviour applied: pthread_mutex_lock on a never-initialised mutex -> EINVAL (libpthread: signature check) at libslurmfull.so(_add_delay+0x2c)
//! ```
//!
//! Where: the file named by the environment variable `SLURM_SHIM_EMULATION_LOG` (opened
//! for each line with `O_APPEND`, so several processes share it and no descriptor is kept
//! open across Slurm's `closeall()`); without it, nowhere. (Standard error is a job's
//! output once slurmstepd has set up the task: lines there ended up in `srun`'s stderr and
//! broke the scenarios' exact checks. A library never prints.) The call site is the first
//! frame of the caller's stack outside the shim, named with `dladdr` (object, nearest
//! dynamic symbol, offset; a static function shows as its nearest exported neighbour).
//!
//! This is the one place the darwin personality's shim writes anything; a write error is
//! ignored (the emulated call's result must not depend on logging), and nothing here can
//! panic or allocate while holding a lock.
//!
//! Portability problems not fixed: the once-only memory is a fixed table of
//! [`SITES`] entries; past that many distinct (behaviour, site) pairs every further
//! application is logged again rather than forgotten silently.

use libc::{c_char, c_int, c_void};
use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Environment variable naming the log file.
pub const LOG_ENV: &str = "SLURM_SHIM_EMULATION_LOG";

/// How many distinct (behaviour, call site) pairs are remembered.
pub const SITES: usize = 512;

static SEEN: [AtomicUsize; SITES] = [const { AtomicUsize::new(0) }; SITES];

unsafe extern "C" {
    // glibc <execinfo.h>; not in the libc crate.
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
}

/// Report that `behaviour` (a short sentence: the call, the macOS answer and its source) was
/// applied. Logged once per call site.
pub fn applied(behaviour: &'static str) {
    let site = caller_site();
    if first_time(behaviour, site.as_ref().map_or(0, |s| s.addr)) {
        let line = format_line(std::process::id(), behaviour, site.as_ref());
        write_line(&line);
    }
}

/// Whether (behaviour, addr) is new; remembers it. Lock-free: a slot holds a non-zero key.
pub fn first_time(behaviour: &'static str, addr: usize) -> bool {
    let key = (behaviour.as_ptr() as usize).rotate_left(17) ^ addr | 1;
    let start = key.wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize) % SITES;
    for i in 0..SITES {
        let slot = &SEEN[(start + i) % SITES];
        match slot.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return true,
            Err(k) if k == key => return false,
            Err(_) => continue,
        }
    }
    true
}

/// A resolved call site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The return address in the caller.
    pub addr: usize,
    /// The object file that holds it.
    pub object: String,
    /// The nearest dynamic symbol at or below it, and the offset from it.
    pub symbol: Option<(String, usize)>,
}

/// The line written for one application.
pub fn format_line(pid: u32, behaviour: &str, site: Option<&Site>) -> String {
    let at = match site {
        None => "an unknown call site".to_string(),
        Some(s) => {
            let object = s.object.rsplit('/').next().unwrap_or(&s.object);
            match &s.symbol {
                Some((sym, off)) => format!("{object}({sym}+{off:#x})"),
                None => format!("{object}({:#x})", s.addr),
            }
        }
    };
    format!("slurm-shim[{pid}]: macOS behaviour applied: {behaviour} at {at}\n")
}

fn caller_site() -> Option<Site> {
    let mut frames = [std::ptr::null_mut::<c_void>(); 32];
    // SAFETY: the buffer has room for the 32 frames asked for.
    let n = unsafe { backtrace(frames.as_mut_ptr(), frames.len() as c_int) };
    let n = usize::try_from(n).unwrap_or(0).min(frames.len());
    let sites: Vec<Site> = frames[..n]
        .iter()
        .skip(1)
        .filter_map(|&pc| resolve(pc as usize))
        .collect();
    pick_site(sites)
}

fn is_own(site: &Site) -> bool {
    site.symbol
        .as_ref()
        .is_some_and(|(s, _)| s.starts_with("slurm_shim_") || s.contains("slurm_shim"))
}

/// The caller's frame among the resolved frames (innermost first): the first one after the
/// exported `slurm_shim_*` function that was entered. The shim's internal helpers, linked
/// into libslurmfull without dynamic symbols, resolve to no symbol or to a neighbour's, so
/// frames are skipped up to and including the last shim frame of the innermost run; without
/// any shim frame (a model called from a test), the first frame that is not the shim's.
pub fn pick_site(sites: Vec<Site>) -> Option<Site> {
    match sites.iter().position(is_own) {
        Some(first) => sites.into_iter().skip(first).find(|s| !is_own(s)),
        None => sites.into_iter().find(|s| !is_own(s)),
    }
}

fn resolve(addr: usize) -> Option<Site> {
    // SAFETY: Dl_info is plain data; all-zero is a valid value for dladdr to fill in.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and writes `info`.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 {
        return None;
    }
    let object = cstr(info.dli_fname).unwrap_or_else(|| "?".into());
    let symbol = cstr(info.dli_sname).map(|s| (s, addr.wrapping_sub(info.dli_saddr as usize)));
    Some(Site {
        addr,
        object,
        symbol,
    })
}

fn cstr(p: *const c_char) -> Option<String> {
    // SAFETY: dladdr gives NULL or a NUL-terminated string that lives as long as the object.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

fn write_line(line: &str) {
    let Some(path) = std::env::var_os(LOG_ENV) else {
        return;
    };
    let Ok(path) = std::ffi::CString::new(path.as_encoded_bytes()) else {
        return;
    };
    // SAFETY: `path` is NUL-terminated; flags and mode are plain values.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
            0o644 as libc::c_uint,
        )
    };
    if fd < 0 {
        return;
    }
    // SAFETY: the buffer is valid for its length; a short or failed write is ignored.
    let _ = unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) };
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn report__first_time_once_per_behaviour_and_site() {
        const B: &str = "test behaviour A";
        const C: &str = "test behaviour B";
        assert!(first_time(B, 0x1000));
        assert!(!first_time(B, 0x1000));
        assert!(first_time(B, 0x2000));
        assert!(first_time(C, 0x1000));
        assert!(!first_time(C, 0x1000));
    }

    #[test]
    fn report__line_names_behaviour_object_and_symbol() {
        let site = Site {
            addr: 0x1234,
            object: "/opt/x/lib/slurm/libslurmfull.so".into(),
            symbol: Some(("_add_delay".into(), 0x2c)),
        };
        assert_eq!(
            format_line(7, "X -> EINVAL", Some(&site)),
            "slurm-shim[7]: macOS behaviour applied: X -> EINVAL at libslurmfull.so(_add_delay+0x2c)\n"
        );
        assert_eq!(
            format_line(7, "X", None),
            "slurm-shim[7]: macOS behaviour applied: X at an unknown call site\n"
        );
    }

    #[test]
    fn report__site_is_the_frame_after_the_exported_shim_function() {
        let f = |addr, sym: Option<&str>| Site {
            addr,
            object: "libslurmfull.so".into(),
            symbol: sym.map(|s| (s.to_string(), 0)),
        };
        // applied (resolves to nothing), an internal helper (to a Slurm neighbour), the
        // exported function, then Slurm's caller.
        let frames = vec![
            f(1, None),
            f(2, Some("list_sort")),
            f(3, Some("slurm_shim_opendir")),
            f(4, Some("closeall_except")),
        ];
        assert_eq!(pick_site(frames).map(|s| s.addr), Some(4));
        assert_eq!(pick_site(vec![f(5, Some("main"))]).map(|s| s.addr), Some(5));
    }

    #[test]
    fn report__caller_site_is_outside_the_shim() {
        // Called from this test function (inside the test binary, not the shim's exported
        // functions): a site is found and it is not one of the slurm_shim_ symbols.
        let site = caller_site();
        if let Some(s) = site {
            assert!(!s.symbol.is_some_and(|(n, _)| n.starts_with("slurm_shim_")));
        }
    }
}
