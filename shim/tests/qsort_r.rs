//! GNU-order `qsort_r` against glibc's.
//!
//! glibc is the oracle, so this file runs on Linux only (for macOS targets the shim is
//! compiled, and linked into a Mach-O program by tests/header.rs).
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

use libc::{c_int, c_void};
use slurm_shim::qsort_r::*;

/// Sorts u32 by `value % modulus` then value; counts calls in `arg`.
#[repr(C)]
struct Ctx {
    modulus: u32,
    calls: usize,
}

unsafe extern "C" fn cmp(a: *const c_void, b: *const c_void, arg: *mut c_void) -> c_int {
    // SAFETY: the sort passes element pointers into a u32 array and our Ctx.
    let (a, b, ctx) = unsafe { (*a.cast::<u32>(), *b.cast::<u32>(), &mut *arg.cast::<Ctx>()) };
    ctx.calls += 1;
    (a % ctx.modulus, a).cmp(&(b % ctx.modulus, b)) as c_int
}

fn data(n: usize) -> Vec<u32> {
    let mut x: u32 = 12345;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            x >> 8
        })
        .collect()
}

#[test]
fn qsort_r__same_order_as_glibc() {
    for n in [0usize, 1, 2, 3, 10, 100, 1000] {
        let mut a = data(n);
        let mut b = a.clone();
        let mut ca = Ctx {
            modulus: 7,
            calls: 0,
        };
        let mut cb = Ctx {
            modulus: 7,
            calls: 0,
        };
        // SAFETY: valid u32 arrays, matching comparator and context.
        unsafe {
            libc::qsort_r(a.as_mut_ptr().cast(), n, 4, Some(cmp), (&raw mut ca).cast());
            slurm_shim_qsort_r(b.as_mut_ptr().cast(), n, 4, Some(cmp), (&raw mut cb).cast());
        }
        assert_eq!(a, b, "n {n}");
        assert!(b.windows(2).all(|w| (w[0] % 7, w[0]) <= (w[1] % 7, w[1])));
        if n >= 2 {
            assert!(cb.calls > 0, "the caller's argument reached the comparator");
        }
    }
}

#[test]
fn qsort_r__degenerate_inputs_do_not_crash() {
    let mut c = Ctx {
        modulus: 3,
        calls: 0,
    };
    // SAFETY: n == 0 or size == 0 never touches base.
    unsafe {
        slurm_shim_qsort_r(core::ptr::null_mut(), 0, 4, Some(cmp), (&raw mut c).cast());
        slurm_shim_qsort_r(core::ptr::null_mut(), 5, 0, Some(cmp), (&raw mut c).cast());
    }
    let mut v = [3u32, 1, 2];
    // SAFETY: NULL comparator: the shim leaves the array alone.
    unsafe { slurm_shim_qsort_r(v.as_mut_ptr().cast(), 3, 4, None, core::ptr::null_mut()) };
    assert_eq!(v, [3, 1, 2]);
    assert_eq!(c.calls, 0);
}

/// A pure-Rust BSD-order qsort_r (insertion sort) to run the trampoline exactly as Darwin
/// would call it: thunk first.
struct RustBsd {
    calls: std::cell::Cell<usize>,
}
impl BsdQsortR for RustBsd {
    unsafe fn qsort_r(
        &self,
        base: *mut c_void,
        n: usize,
        size: usize,
        thunk: *mut c_void,
        compar: BsdCompar,
    ) {
        let base = base.cast::<u8>();
        let mut tmp = vec![0u8; size];
        for i in 1..n {
            let mut j = i;
            // SAFETY: indices stay within the n elements of `size` bytes.
            unsafe {
                while j > 0
                    && compar(
                        thunk,
                        base.add((j - 1) * size).cast(),
                        base.add(j * size).cast(),
                    ) > 0
                {
                    self.calls.set(self.calls.get() + 1);
                    core::ptr::copy_nonoverlapping(base.add(j * size), tmp.as_mut_ptr(), size);
                    core::ptr::copy(base.add((j - 1) * size), base.add(j * size), size);
                    core::ptr::copy_nonoverlapping(tmp.as_ptr(), base.add((j - 1) * size), size);
                    j -= 1;
                }
            }
        }
    }
}

#[test]
fn qsort_r__trampoline_through_bsd_order_sort() {
    let os = RustBsd {
        calls: std::cell::Cell::new(0),
    };
    let mut a = data(200);
    let mut b = a.clone();
    let mut ca = Ctx {
        modulus: 11,
        calls: 0,
    };
    let mut cb = Ctx {
        modulus: 11,
        calls: 0,
    };
    // SAFETY: valid arrays and contexts.
    unsafe {
        libc::qsort_r(
            a.as_mut_ptr().cast(),
            200,
            4,
            Some(cmp),
            (&raw mut ca).cast(),
        );
        qsort_r_impl(
            &os,
            b.as_mut_ptr().cast(),
            200,
            4,
            Some(cmp),
            (&raw mut cb).cast(),
        );
    }
    assert_eq!(a, b);
    assert!(os.calls.get() > 0 && cb.calls > 0);
}

#[test]
fn qsort_r__wide_elements() {
    // 24-byte records sorted by their first u64 key.
    unsafe extern "C" fn by_key(a: *const c_void, b: *const c_void, arg: *mut c_void) -> c_int {
        // SAFETY: elements are [u64; 3]; arg is a &i32 sign.
        let (a, b, sign) = unsafe {
            (
                *a.cast::<[u64; 3]>(),
                *b.cast::<[u64; 3]>(),
                *arg.cast::<i32>(),
            )
        };
        sign * a[0].cmp(&b[0]) as c_int
    }
    let mut v: Vec<[u64; 3]> = data(50).into_iter().map(|x| [u64::from(x), 1, 2]).collect();
    let mut g = v.clone();
    let mut sign: i32 = -1;
    // SAFETY: valid arrays of 24-byte elements.
    unsafe {
        slurm_shim_qsort_r(
            v.as_mut_ptr().cast(),
            50,
            24,
            Some(by_key),
            (&raw mut sign).cast(),
        );
        libc::qsort_r(
            g.as_mut_ptr().cast(),
            50,
            24,
            Some(by_key),
            (&raw mut sign).cast(),
        );
    }
    assert_eq!(v, g);
    assert!(v.windows(2).all(|w| w[0][0] >= w[1][0]));
}
