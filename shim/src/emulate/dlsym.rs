//! `dlsym` as macOS answers it: no `close_range`, and the `RTLD_MAIN_ONLY` handle.
//!
//! Linux behaviour: glibc 2.34 and later export `close_range`; Slurm 26.11's `fd.c` probes
//! for it at run time (`dlsym(dlopen(NULL), "close_range")`, then its own
//! `close_range_internal`, defined only `#ifdef SYS_close_range`) and, when found, closes
//! every descriptor above the ones it keeps in one call.
//!
//! macOS behaviour: libSystem has no `close_range` and `<sys/syscall.h>` no
//! `SYS_close_range` (xnu-11417.101.15 bsd/kern/syscalls.master has none), so the probe
//! fails and `closeall()` takes its fallback: without `/proc/self/fd` (see
//! [`super::hidden_paths`]) a loop of `close()` up to the soft `RLIMIT_NOFILE`, which is
//! infinite once slurmd raised it (see [`super::rlimit`]): the proof of concept's ~187 s per
//! slurmstepd launch (POC-DEFECTS D13). The darwin personality's `sys/syscall.h` wrapper
//! removes `SYS_close_range`; this model makes `dlsym` of either name return NULL (with
//! `dlerror()` reporting nothing found, as dyld's `dlsym` sets it).
//!
//! `RTLD_MAIN_ONLY` (`((void *) -5)`, SDK dlfcn.h; dyld searches the main executable only):
//! patch 0019 (26.11) reads a daemon's strong `slurm_daemon` with it, and a client, which
//! defines none, gets NULL. glibc has no such handle; the model looks the name up in the
//! global scope and keeps the result only if it lies in a `PT_LOAD` segment of the main
//! program (the first object `dl_iterate_phdr` reports), else NULL.
//!
//! Portability problems not fixed: `dlsym(RTLD_NEXT, ...)` resolves relative to the shim's
//! library instead of the caller's (Slurm never uses `RTLD_NEXT`); with `RTLD_MAIN_ONLY`, a
//! symbol the main program defines but a library earlier in the global scope interposes is
//! not found (ELF's global scope starts with the main program, so only a preloaded library
//! can do that).
#![allow(clippy::missing_safety_doc)]

use libc::{c_char, c_void};
use std::ffi::CStr;

use super::{report, scope};

/// Model name (for [`scope::OFF_ENV`]).
pub const NAME: &str = "no-close-range";

/// The symbols libSystem does not have.
pub const MISSING: &[&[u8]] = &[b"close_range", b"close_range_internal"];

/// macOS's `RTLD_MAIN_ONLY` handle.
pub const RTLD_MAIN_ONLY: *mut c_void = -5isize as *mut c_void;

/// Whether `addr` lies in a loaded segment of the main program.
pub fn in_main_program(addr: usize) -> bool {
    struct Probe {
        addr: usize,
        found: bool,
    }
    unsafe extern "C" fn first_object(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our Probe.
        let (info, probe) = unsafe { (&*info, &mut *data.cast::<Probe>()) };
        // SAFETY: dlpi_phdr points at dlpi_phnum program headers.
        let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        probe.found = phdrs.iter().any(|ph| {
            let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
            ph.p_type == libc::PT_LOAD && (start..start + ph.p_memsz as usize).contains(&probe.addr)
        });
        1 // the first object is the main program: stop
    }
    let mut probe = Probe { addr, found: false };
    // SAFETY: the callback only reads what dl_iterate_phdr passes and writes the probe.
    unsafe { libc::dl_iterate_phdr(Some(first_object), (&raw mut probe).cast()) };
    probe.found
}

/// Whether macOS's `dlsym` finds nothing for `name`.
pub fn missing_on_macos(name: &[u8]) -> bool {
    MISSING.contains(&name)
}

/// `dlsym(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    crate::counted!(slurm_shim_dlsym);
    if handle == RTLD_MAIN_ONLY && !name.is_null() {
        report::applied("dlsym(RTLD_MAIN_ONLY) (macOS) answered from the main program's segments");
        // SAFETY: a NUL-terminated name, looked up in the global scope.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name) };
        return if !p.is_null() && in_main_program(p as usize) {
            p
        } else {
            std::ptr::null_mut()
        };
    }
    if !name.is_null() && scope::active(NAME) {
        // SAFETY: the caller passes a NUL-terminated symbol name.
        let n = unsafe { CStr::from_ptr(name) }.to_bytes();
        if missing_on_macos(n) {
            report::applied("dlsym(close_range) -> NULL (libSystem has no close_range)");
            // Leave dlerror() with a message, as a failed lookup does: look up a name that
            // cannot exist.
            // SAFETY: a NUL-terminated literal; the result is discarded.
            let _ = unsafe { libc::dlsym(handle, c"slurm_shim: no such symbol on macOS".as_ptr()) };
            return std::ptr::null_mut();
        }
    }
    // SAFETY: the arguments go to the real call unchanged.
    unsafe { libc::dlsym(handle, name) }
}
