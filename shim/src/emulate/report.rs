//! How an emulated macOS behaviour names itself: one log line per (behaviour, call site).
//!
//! When a model in [`crate::emulate`] makes a call fail (or answer) the way macOS would where
//! glibc would not, it calls [`applied`]. The first time a given behaviour is applied at a
//! given call site, one line is written:
//!
//! ```text
//! slurm-shim[1234]: macOS behaviour applied: pthread_mutex_lock on a never-initialised mutex -> EINVAL (libpthread: signature check) at libslurmfull.so(_add_delay+0x2c) [+0x8a1c2]
//! ```
//!
//! Where: the file named by the environment variable `SLURM_SHIM_EMULATION_LOG` (opened
//! for each line with `O_APPEND`, so several processes share it and no descriptor is kept
//! open across Slurm's `closeall()`); without it, nowhere (standard error is a job's output once
//! slurmstepd has set up the task: lines there ended up in `srun`'s stderr and broke the
//! scenarios' exact checks; a library never prints). The call site is the frame that
//! called the shim's exported `slurm_shim_*` entry point ([`pick_caller`]), named with
//! `dladdr` (object, nearest dynamic symbol, offset; a static function shows as its
//! nearest exported neighbour), and the offset in the object for `addr2line`.
//!
//! Cost: without a log (the variable unset or empty, [`log_wanted`]) a report is one
//! `getenv` and nothing else. With one, a model called for every process of every
//! accounting poll reports on every call.
//! `dladdr` walks an object's symbol table (tens of microseconds per frame in slurmstepd),
//! so each (behaviour, raw stack of return addresses) is resolved once ([`stack_key`]);
//! later calls through the same stack cost one `backtrace` and a table probe.
//!
//! With `SLURM_SHIM_EMULATION=observe` ([`MODE_ENV`]) the models that ask [`apply`] only
//! log ("observed") and keep glibc's answer: a diagnostic to list every site of a run,
//! since the first applied failure usually ends the process. `observe:slurmdbd` does that
//! in the named programs only.
//!
//! This is the one place the darwin personality's shim writes anything; a write error is
//! ignored (the emulated call's result must not depend on logging), and nothing here can
//! panic or allocate while holding a lock.
//!
//! Portability problems not fixed: the once-only memory is a fixed table of
//! [`SITES`] entries; past that many distinct (behaviour, site) pairs every further
//! application is logged again rather than forgotten silently; past [`STACKS`] raw stacks
//! (or a full probe window) a stack is resolved again on each call (slower, never a lost
//! line); two stacks whose 64-bit keys collide share one resolution, so the second one's
//! site, if it is a new site, goes unlogged.

use libc::{c_char, c_int, c_void};
use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Environment variable naming the log file.
pub const LOG_ENV: &CStr = c"SLURM_SHIM_EMULATION_LOG";

/// How many distinct (behaviour, call site) pairs are remembered.
pub const SITES: usize = 512;

static SEEN: [AtomicUsize; SITES] = [const { AtomicUsize::new(0) }; SITES];

unsafe extern "C" {
    // glibc <execinfo.h>; not in the libc crate.
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
}

/// Environment variable choosing the mode: unset (or anything else) applies the macOS
/// behaviour; `observe` only logs where it would apply and keeps glibc's answer, to list
/// every site of a run in one go (a diagnostic, never the default); `observe:p1,p2` observes
/// in the programs named so (glibc's `program_invocation_short_name`) and applies elsewhere,
/// so one daemon that would stop a whole cluster can be kept alive while the rest fail as
/// on macOS.
pub const MODE_ENV: &str = "SLURM_SHIM_EMULATION";

/// Whether the mode value `mode` observes (rather than applies) in the program `program`.
pub fn mode_observes(mode: &[u8], program: &[u8]) -> bool {
    match mode.strip_prefix(b"observe") {
        Some(b"") => true,
        Some(list) => list
            .strip_prefix(b":")
            .is_some_and(|l| l.split(|&c| c == b',').any(|p| p == program)),
        None => false,
    }
}

unsafe extern "C" {
    // glibc <errno.h> (_GNU_SOURCE): the program's name without directories.
    static program_invocation_short_name: *const c_char;
}

/// Report that `behaviour` (a short sentence: the call, the macOS answer and its source) was
/// applied. Logged once per call site.
pub fn applied(behaviour: &'static str) {
    log_once(behaviour, "applied", None);
}

/// [`applied`], naming what it was applied to (a refused path): the line says
/// `<behaviour> [<subject>]`. Still one line per (behaviour, call site): the first
/// subject seen at a site is the one named.
pub fn applied_to(behaviour: &'static str, subject: &[u8]) {
    log_once(behaviour, "applied", Some(subject));
}

/// Whether the model `model` is to apply `behaviour` here, reporting it like [`applied`]:
/// `false` without a line where the model does not apply ([`super::scope::active`]: the
/// controller daemons, or the model turned off by name), and `false` with an "observed"
/// line in the `observe` mode ([`MODE_ENV`]), where the caller keeps glibc's answer.
pub fn apply(model: &str, behaviour: &'static str) -> bool {
    if !super::scope::active(model) {
        return false;
    }
    let enforce = !observing();
    log_once(
        behaviour,
        if enforce {
            "applied"
        } else {
            "observed (glibc's answer kept)"
        },
        None,
    );
    enforce
}

fn log_once(behaviour: &'static str, verb: &str, subject: Option<&[u8]>) {
    // SAFETY: the name is NUL-terminated; getenv returns NULL or a C string, and takes no
    // lock (safe in a child of `fork`).
    let log = unsafe { libc::getenv(LOG_ENV.as_ptr()) };
    // SAFETY: a non-NULL result of getenv is a NUL-terminated string.
    let log = (!log.is_null()).then(|| unsafe { CStr::from_ptr(log) });
    let Some(log) = log.filter(|l| log_wanted(Some(l.to_bytes()))) else {
        return; // nowhere to write: resolving the site would be spent for nothing
    };
    let mut frames = [std::ptr::null_mut::<c_void>(); FRAMES];
    let frames = raw_frames(&mut frames);
    let stack = stack_key(behaviour, frames);
    if stack_known(stack) {
        return; // this behaviour from this very stack: its site was resolved and logged
    }
    let site = site_of(frames);
    let fresh = first_time(behaviour, site.as_ref().map_or(0, |s| s.addr));
    remember_stack(stack);
    if fresh {
        let subject = subject.map(String::from_utf8_lossy);
        let line = format_line_on(
            std::process::id(),
            verb,
            behaviour,
            subject.as_deref(),
            site.as_ref(),
        );
        write_line(log, &line);
    }
}

/// Whether a report has somewhere to go: [`LOG_ENV`]'s value (`None`: unset) names a file.
/// Unset or empty means no log, and then [`applied`] and [`apply`] resolve no call site
/// (31 `dladdr` lookups for each new stack in each new process: about 2 ms of a batch
/// job's slurmstepd and script launcher in the darwin personality, `docs/RESULTS.md`).
pub fn log_wanted(value: Option<&[u8]>) -> bool {
    value.is_some_and(|v| !v.is_empty())
}

/// Whether `SLURM_SHIM_EMULATION=observe`, read once. glibc's `getenv` takes no lock, so this
/// is safe in a child of `fork` (Rust's `std::env` would take its environment lock).
fn observing() -> bool {
    static MODE: AtomicUsize = AtomicUsize::new(0); // 0 unknown, 1 apply, 2 observe
    match MODE.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            // SAFETY: the name is NUL-terminated; getenv returns NULL or a C string.
            let v = unsafe { libc::getenv(c"SLURM_SHIM_EMULATION".as_ptr()) };
            // SAFETY: glibc sets the name before main; it is NULL or a C string.
            let name = unsafe { program_invocation_short_name };
            // SAFETY: non-NULL results of getenv and the name are NUL-terminated strings.
            let observe = !v.is_null()
                && unsafe {
                    let program = if name.is_null() {
                        &[][..]
                    } else {
                        CStr::from_ptr(name).to_bytes()
                    };
                    mode_observes(CStr::from_ptr(v).to_bytes(), program)
                };
            MODE.store(if observe { 2 } else { 1 }, Ordering::Relaxed);
            observe
        }
    }
}

/// The slots of `table` a non-zero `key` may live in: `probes` of them from its hash.
fn slots(
    table: &'static [AtomicUsize],
    key: usize,
    probes: usize,
) -> impl Iterator<Item = &'static AtomicUsize> {
    let start = key.wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize) % table.len();
    (0..probes.min(table.len())).map(move |i| &table[(start + i) % table.len()])
}

/// Puts the non-zero `key` into `table` (lock-free, `probes` slots tried): `false` when it
/// was there already, `true` when it is new or no tried slot was free.
fn insert(table: &'static [AtomicUsize], key: usize, probes: usize) -> bool {
    for slot in slots(table, key, probes) {
        match slot.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return true,
            Err(k) if k == key => return false,
            Err(_) => continue,
        }
    }
    true
}

/// Whether (behaviour, addr) is new; remembers it. Lock-free: a slot holds a non-zero key.
pub fn first_time(behaviour: &'static str, addr: usize) -> bool {
    let key = (behaviour.as_ptr() as usize).rotate_left(17) ^ addr | 1;
    insert(&SEEN, key, SITES)
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
    /// The address relative to the object's load base, for `addr2line -e <object>`.
    pub offset: usize,
}

/// The line written for one application (`verb`: "applied", or "observed ..." in the
/// observe mode).
pub fn format_line(pid: u32, verb: &str, behaviour: &str, site: Option<&Site>) -> String {
    format_line_on(pid, verb, behaviour, None, site)
}

/// [`format_line`] with what the behaviour was applied to, in brackets after it.
pub fn format_line_on(
    pid: u32,
    verb: &str,
    behaviour: &str,
    subject: Option<&str>,
    site: Option<&Site>,
) -> String {
    let on = subject.map(|s| format!(" [{s}]")).unwrap_or_default();
    let at = match site {
        None => "an unknown call site".to_string(),
        Some(s) => {
            let object = s.object.rsplit('/').next().unwrap_or(&s.object);
            match &s.symbol {
                Some((sym, off)) => format!("{object}({sym}+{off:#x}) [+{:#x}]", s.offset),
                None => format!("{object}(+{:#x})", s.offset),
            }
        }
    };
    format!("slurm-shim[{pid}]: macOS behaviour {verb}: {behaviour}{on} at {at}\n")
}

/// How many return addresses a report looks at.
const FRAMES: usize = 32;

/// This thread's return addresses, innermost first (`backtrace`: no symbol lookup).
fn raw_frames(buf: &mut [*mut c_void; FRAMES]) -> &[*mut c_void] {
    // SAFETY: the buffer has room for the FRAMES frames asked for.
    let n = unsafe { backtrace(buf.as_mut_ptr(), FRAMES as c_int) };
    &buf[..usize::try_from(n).unwrap_or(0).min(FRAMES)]
}

/// The call site of `frames` (the first is this module's own and is skipped), resolved
/// with `dladdr`: tens of microseconds in a program with many symbols, so done only for a
/// stack not seen before ([`stack_known`]).
fn site_of(frames: &[*mut c_void]) -> Option<Site> {
    let sites: Vec<Option<Site>> = frames
        .iter()
        .skip(1)
        .map(|&pc| resolve(pc as usize))
        .collect();
    pick_caller(&sites)
}

#[cfg(test)]
fn caller_site() -> Option<Site> {
    let mut frames = [std::ptr::null_mut::<c_void>(); FRAMES];
    site_of(raw_frames(&mut frames))
}

/// How many (behaviour, raw stack) pairs are remembered as already resolved.
pub const STACKS: usize = 1024;

static STACKS_SEEN: [AtomicUsize; STACKS] = [const { AtomicUsize::new(0) }; STACKS];

/// How many slots [`stack_known`] and [`remember_stack`] probe.
const STACK_PROBES: usize = 8;

/// A non-zero key of `behaviour` called through exactly the return addresses `frames`
/// (FNV-1a over the behaviour's address and every frame). The site [`site_of`] picks is a
/// function of the frames alone, so an equal key means the same site, already logged.
pub fn stack_key(behaviour: &'static str, frames: &[*mut c_void]) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let words = std::iter::once(behaviour.as_ptr() as u64).chain(frames.iter().map(|&f| f as u64));
    for w in words {
        h = (h ^ w).wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h as usize) | 1
}

/// Whether the stack `key` was resolved before ([`remember_stack`]). When the table is
/// full, a stack is not remembered and is resolved again each time: slower, never wrong.
pub fn stack_known(key: usize) -> bool {
    slots(&STACKS_SEEN, key, STACK_PROBES).any(|slot| slot.load(Ordering::Acquire) == key)
}

/// Remembers that the stack `key` was resolved (and its site logged, if new).
pub fn remember_stack(key: usize) {
    insert(&STACKS_SEEN, key, STACK_PROBES);
}

/// The caller's frame among `sites` (innermost first): the frame after the outermost one
/// that names a shim symbol. The shim's internal functions are not dynamic symbols, so
/// `dladdr` names them after whatever exported neighbour precedes them (a Slurm function,
/// or nothing); only the exported `slurm_shim_*` entry point is named reliably. Without
/// any named shim frame (an executable linked without `-rdynamic`), the first frame that
/// names a non-shim symbol.
pub fn pick_caller(sites: &[Option<Site>]) -> Option<Site> {
    let own = |s: &Option<Site>| {
        s.as_ref()
            .and_then(|s| s.symbol.as_ref())
            .is_some_and(|(n, _)| n.starts_with("slurm_shim_") || n.contains("slurm_shim"))
    };
    match sites.iter().rposition(own) {
        Some(i) => sites.get(i + 1).cloned().flatten(),
        None => sites.iter().flatten().find(|s| s.symbol.is_some()).cloned(),
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
        offset: addr.wrapping_sub(info.dli_fbase as usize),
    })
}

fn cstr(p: *const c_char) -> Option<String> {
    // SAFETY: dladdr gives NULL or a NUL-terminated string that lives as long as the object.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Appends `line` to the log file `path` (read by [`log_once`] with `getenv`, once).
fn write_line(path: &CStr, line: &str) {
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
    fn report__no_log_unset_or_empty() {
        assert!(!log_wanted(None));
        assert!(!log_wanted(Some(b"")));
        assert!(log_wanted(Some(b"/tmp/emulation.log")));
    }

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
            offset: 0x1234 - 0x1000,
        };
        assert_eq!(
            format_line(7, "applied", "X -> EINVAL", Some(&site)),
            "slurm-shim[7]: macOS behaviour applied: X -> EINVAL at libslurmfull.so(_add_delay+0x2c) [+0x234]\n"
        );
        let anonymous = Site {
            symbol: None,
            ..site
        };
        assert_eq!(
            format_line(7, "applied", "X", Some(&anonymous)),
            "slurm-shim[7]: macOS behaviour applied: X at libslurmfull.so(+0x234)\n"
        );
        assert_eq!(
            format_line(7, "applied", "X", None),
            "slurm-shim[7]: macOS behaviour applied: X at an unknown call site\n"
        );
        assert_eq!(
            format_line_on(7, "applied", "X", Some("/proc/self/fd"), None),
            "slurm-shim[7]: macOS behaviour applied: X [/proc/self/fd] at an unknown call site\n"
        );
    }

    fn site(addr: usize, sym: Option<&str>) -> Option<Site> {
        Some(Site {
            addr,
            object: "libslurmfull.so".into(),
            symbol: sym.map(|s| (s.to_string(), 4)),
            offset: addr,
        })
    }

    #[test]
    fn report__caller_is_the_frame_after_the_exported_entry_point() {
        // Internal shim frames resolve to an unrelated neighbour or to nothing.
        let frames = [
            site(1, Some("xstrdup")),
            None,
            site(3, Some("slurm_shim_pthread_mutex_lock")),
            site(4, Some("_add_delay")),
            site(5, Some("main")),
        ];
        assert_eq!(pick_caller(&frames), site(4, Some("_add_delay")));
        // No named entry point: the first named frame.
        let frames = [None, site(2, Some("main"))];
        assert_eq!(pick_caller(&frames), site(2, Some("main")));
        assert_eq!(pick_caller(&[None, None]), None);
    }

    #[test]
    fn report__observe_mode_for_all_or_named_programs() {
        assert!(mode_observes(b"observe", b"slurmd"));
        assert!(mode_observes(b"observe:slurmdbd", b"slurmdbd"));
        assert!(mode_observes(b"observe:slurmctld,slurmdbd", b"slurmdbd"));
        assert!(!mode_observes(b"observe:slurmdbd", b"slurmstepd"));
        assert!(!mode_observes(b"observe:", b"slurmd"));
        assert!(!mode_observes(b"observed", b"slurmd"));
        assert!(!mode_observes(b"", b"slurmd"));
        assert!(!mode_observes(b"apply", b"slurmd"));
    }

    #[test]
    fn report__a_stack_is_known_once_remembered_and_only_for_its_behaviour() {
        const B: &str = "test behaviour stack A";
        const C: &str = "test behaviour stack B";
        let frames = [0x1000usize as *mut c_void, 0x2000 as *mut c_void];
        let other = [0x1000usize as *mut c_void, 0x2004 as *mut c_void];
        let key = stack_key(B, &frames);
        assert!(!stack_known(key));
        remember_stack(key);
        assert!(stack_known(key));
        assert!(!stack_known(stack_key(C, &frames)));
        assert!(!stack_known(stack_key(B, &other)));
        assert!(!stack_known(stack_key(B, &frames[..1])));
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
