//! `qsort_r` with the GNU argument order.
//!
//! Linux behaviour emulated: glibc's `qsort_r(base, nmemb, size, compar, arg)` with
//! `compar(a, b, arg)` (qsort(3)). Slurm 26.11's `slurm_step_layout.c` calls it this way
//! (DARWIN-CATALOG A9).
//!
//! macOS mechanism: Darwin has a `qsort_r` with the BSD order, `qsort_r(base, nel, width,
//! thunk, compar(thunk, a, b))` (qsort(3), FreeBSD before 14). Calling it with GNU
//! arguments compiles with at most a warning and crashes at run time. The shim packs
//! `{compar, arg}` into a [`Thunk`] on the stack and passes [`trampoline`] as the BSD
//! comparator. On Linux the same thunk and trampoline run behind the [`BsdQsortR`] seam,
//! whose Linux implementation is glibc's `qsort_r` with an argument-swapping adapter.
//!
//! Portability problems not fixed:
//! * A NULL comparator with more than one element is undefined in glibc; the shim then
//!   leaves the array unchanged.
//! * Neither sort is stable; equal elements may end in a different order than with glibc.
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, c_void, size_t};

/// A GNU-order comparator.
pub type GnuCompar = unsafe extern "C" fn(*const c_void, *const c_void, *mut c_void) -> c_int;
/// A BSD-order comparator (thunk first).
pub type BsdCompar = unsafe extern "C" fn(*mut c_void, *const c_void, *const c_void) -> c_int;

/// What the trampoline receives as the BSD thunk.
#[repr(C)]
#[derive(Debug)]
pub struct Thunk {
    /// The caller's GNU comparator.
    pub compar: GnuCompar,
    /// The caller's argument.
    pub arg: *mut c_void,
}

/// BSD comparator that forwards to the GNU comparator stored in the thunk.
///
/// # Safety
/// `thunk` points at a live [`Thunk`]; `a`/`b` are what the comparator expects.
pub unsafe extern "C" fn trampoline(
    thunk: *mut c_void,
    a: *const c_void,
    b: *const c_void,
) -> c_int {
    // SAFETY: the sort passes back the thunk pointer it was given, a live &Thunk.
    let t = unsafe { &*thunk.cast::<Thunk>() };
    // SAFETY: forwarding the sort's element pointers and the caller's argument, as the
    // caller's comparator expects under the GNU contract.
    unsafe { (t.compar)(a, b, t.arg) }
}

/// The OS's BSD-order `qsort_r`.
pub trait BsdQsortR {
    /// Sorts with a BSD-order comparator.
    ///
    /// # Safety
    /// As BSD `qsort_r(3)`: `base` holds `nmemb` elements of `size` bytes.
    unsafe fn qsort_r(
        &self,
        base: *mut c_void,
        nmemb: usize,
        size: usize,
        thunk: *mut c_void,
        compar: BsdCompar,
    );
}

/// The real OS: Darwin's `qsort_r`, or on Linux glibc's through an adapter.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealQsort;

#[cfg(target_os = "linux")]
#[repr(C)]
struct BsdAdapter {
    thunk: *mut c_void,
    compar: BsdCompar,
}

#[cfg(target_os = "linux")]
unsafe extern "C" fn bsd_adapter(a: *const c_void, b: *const c_void, ctx: *mut c_void) -> c_int {
    // SAFETY: glibc passes back the adapter pointer it was given, a live &BsdAdapter.
    let ad = unsafe { &*ctx.cast::<BsdAdapter>() };
    // SAFETY: forwarding glibc's element pointers and the thunk to the BSD comparator.
    unsafe { (ad.compar)(ad.thunk, a, b) }
}

impl BsdQsortR for RealQsort {
    unsafe fn qsort_r(
        &self,
        base: *mut c_void,
        nmemb: usize,
        size: usize,
        thunk: *mut c_void,
        compar: BsdCompar,
    ) {
        #[cfg(target_vendor = "apple")]
        // SAFETY: the caller's contract is Darwin qsort_r's contract.
        unsafe {
            libc::qsort_r(base, nmemb, size, thunk, Some(compar))
        }
        #[cfg(target_os = "linux")]
        {
            let mut ad = BsdAdapter { thunk, compar };
            // SAFETY: `ad` outlives the call; glibc's GNU qsort_r hands it to bsd_adapter.
            unsafe {
                libc::qsort_r(
                    base,
                    nmemb,
                    size,
                    Some(bsd_adapter),
                    (&raw mut ad).cast::<c_void>(),
                )
            }
        }
    }
}

/// GNU `qsort_r` on top of a BSD-order `qsort_r`.
///
/// # Safety
/// As glibc `qsort_r(3)`.
pub unsafe fn qsort_r_impl(
    os: &impl BsdQsortR,
    base: *mut c_void,
    nmemb: usize,
    size: usize,
    compar: Option<GnuCompar>,
    arg: *mut c_void,
) {
    if nmemb < 2 || size == 0 || base.is_null() {
        return;
    }
    let Some(compar) = compar else { return };
    let mut thunk = Thunk { compar, arg };
    // SAFETY: `thunk` outlives the sort; the caller's contract covers base/nmemb/size.
    unsafe {
        os.qsort_r(
            base,
            nmemb,
            size,
            (&raw mut thunk).cast::<c_void>(),
            trampoline,
        )
    }
}

/// `qsort_r(3)` with the GNU argument order.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_qsort_r(
    base: *mut c_void,
    nmemb: size_t,
    size: size_t,
    compar: Option<unsafe extern "C" fn(*const c_void, *const c_void, *mut c_void) -> c_int>,
    arg: *mut c_void,
) {
    crate::counted!(slurm_shim_qsort_r);
    // SAFETY: the caller's contract is glibc qsort_r's contract.
    unsafe { qsort_r_impl(&RealQsort, base, nmemb, size, compar, arg) }
}
