//! `sched_getaffinity`/`sched_setaffinity` and the CPU_* helpers against glibc.
//!
//! glibc is the oracle, so this file runs on Linux only (for macOS targets the shim is
//! compiled, and linked into a Mach-O program by tests/header.rs).
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

use core::mem::size_of;

use libc::{c_ulong, cpu_set_t, pid_t};
use slurm_shim::cpuset::*;
use slurm_shim::errno::{self, Errno};

fn glibc_get(pid: pid_t, size: usize, mask: *mut cpu_set_t) -> (i32, i32) {
    errno::set(0);
    // SAFETY: test buffers are at least `size` bytes (or NULL on purpose).
    let rc = unsafe { libc::sched_getaffinity(pid, size, mask) };
    (rc, if rc == -1 { errno::get() } else { 0 })
}

fn shim_get(pid: pid_t, size: usize, mask: *mut slurm_shim_cpu_set_t) -> (i32, i32) {
    errno::set(0);
    // SAFETY: as above.
    let rc = unsafe { slurm_shim_sched_getaffinity(pid, size, mask) };
    (rc, if rc == -1 { errno::get() } else { 0 })
}

fn online() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) as usize }
}

/// glibc's mask equals "all online CPUs" only for an unrestricted process.
fn unrestricted() -> bool {
    // SAFETY: zeroed cpu_set_t is valid.
    let mut set: cpu_set_t = unsafe { core::mem::zeroed() };
    let (rc, _) = glibc_get(0, size_of::<cpu_set_t>(), &mut set);
    // SAFETY: `set` is a valid cpu_set_t.
    rc == 0
        && unsafe { libc::CPU_COUNT(&set) } as usize == online()
        && (0..online()).all(|i| unsafe { libc::CPU_ISSET(i, &set) })
}

#[test]
fn sched_getaffinity__same_mask_as_glibc_for_own_process() {
    if !unrestricted() {
        eprintln!(
            "skipped: this process's affinity is restricted (taskset/cpuset), glibc's mask is not all online CPUs"
        );
        return;
    }
    for pid in [0, std::process::id() as pid_t, 1] {
        // SAFETY: zeroed cpu_set_t is valid; fill with garbage to see the zero-fill.
        let mut g: cpu_set_t = unsafe { core::mem::zeroed() };
        let mut s = slurm_shim_cpu_set_t { __bits: [!0; 16] };
        assert_eq!(glibc_get(pid, size_of::<cpu_set_t>(), &mut g), (0, 0));
        assert_eq!(
            shim_get(pid, size_of::<slurm_shim_cpu_set_t>(), &mut s),
            (0, 0)
        );
        // SAFETY: same size and layout (checked in another test).
        let g_words: [c_ulong; 16] = unsafe { core::mem::transmute(g) };
        assert_eq!(s.__bits, g_words, "pid {pid}");
    }
}

#[test]
fn sched_getaffinity__layout_matches_glibc_cpu_set_t() {
    assert_eq!(size_of::<slurm_shim_cpu_set_t>(), size_of::<cpu_set_t>());
    assert_eq!(size_of::<slurm_shim_cpu_set_t>(), 128);
    assert_eq!(
        core::mem::align_of::<slurm_shim_cpu_set_t>(),
        core::mem::align_of::<cpu_set_t>()
    );
}

#[test]
fn sched_getaffinity__errors_match_glibc() {
    let mut g = [0 as c_ulong; 32];
    let mut s = [0 as c_ulong; 32];
    let gp = g.as_mut_ptr().cast::<cpu_set_t>();
    let sp = s.as_mut_ptr().cast::<slurm_shim_cpu_set_t>();
    let big = size_of::<cpu_set_t>();
    let cases: &[(pid_t, usize, bool, i32)] = &[
        (0, 0, true, libc::EINVAL),             // too small for any CPU
        (0, 4, true, libc::EINVAL),             // not a multiple of sizeof(long)
        (0, 12, true, libc::EINVAL),            // idem
        (0, big, false, libc::EFAULT),          // NULL mask
        (-5, big, true, libc::ESRCH),           // negative pid
        (0x3fff_fff0, big, true, libc::ESRCH),  // no such process
        (0x3fff_fff0, 4, true, libc::EINVAL),   // size is checked before the pid
        (0x3fff_fff0, big, false, libc::ESRCH), // pid before the pointer
    ];
    for &(pid, size, ptr, want) in cases {
        let g_res = glibc_get(pid, size, if ptr { gp } else { core::ptr::null_mut() });
        let s_res = shim_get(pid, size, if ptr { sp } else { core::ptr::null_mut() });
        assert_eq!(g_res, (-1, want), "glibc pid={pid} size={size} ptr={ptr}");
        assert_eq!(s_res, g_res, "shim pid={pid} size={size} ptr={ptr}");
    }
}

#[test]
fn sched_getaffinity__sizes_larger_and_smaller_than_cpu_set_t() {
    if !unrestricted() {
        eprintln!(
            "skipped: this process's affinity is restricted, glibc's mask is not all online CPUs"
        );
        return;
    }
    for size in [8usize, 16, 128, 256] {
        let mut g = vec![!0 as c_ulong; size / 8];
        let mut s = vec![!0 as c_ulong; size / 8];
        assert_eq!(
            glibc_get(0, size, g.as_mut_ptr().cast()),
            (0, 0),
            "size {size}"
        );
        assert_eq!(
            shim_get(0, size, s.as_mut_ptr().cast()),
            (0, 0),
            "size {size}"
        );
        assert_eq!(s, g, "size {size}");
    }
}

#[test]
fn sched_getaffinity__errno_preserved_on_success_for_other_pid() {
    errno::set(1234);
    let mut s = slurm_shim_cpu_set_t { __bits: [0; 16] };
    // SAFETY: valid mask of the stated size; pid 1 exists (kill may fail with EPERM inside).
    let rc = unsafe { slurm_shim_sched_getaffinity(1, 128, &mut s) };
    assert_eq!(rc, 0);
    assert_eq!(errno::get(), 1234);
}

struct Fake(usize);
impl CpuOs for Fake {
    fn online_cpus(&self) -> Result<usize, Errno> {
        Ok(self.0)
    }
    fn own_pid(&self) -> pid_t {
        100
    }
    fn check_pid(&self, pid: pid_t) -> Result<(), Errno> {
        if pid == 200 {
            Ok(())
        } else {
            Err(Errno(libc::ESRCH))
        }
    }
}

#[test]
fn sched_getaffinity__seam_many_cpus() {
    // 100 CPUs do not fit in 8 bytes, fit in 16.
    assert_eq!(getaffinity_impl(&Fake(100), 0, 8), Err(Errno(libc::EINVAL)));
    assert_eq!(getaffinity_impl(&Fake(100), 100, 16), Ok(100));
    assert_eq!(getaffinity_impl(&Fake(100), 200, 16), Ok(100));
    assert_eq!(
        getaffinity_impl(&Fake(100), 300, 16),
        Err(Errno(libc::ESRCH))
    );
    let mut w = [0 as c_ulong; 3];
    fill_mask(&mut w, 100);
    assert_eq!(w, [!0, (1 << 36) - 1, 0]);
    fill_mask(&mut w, 128);
    assert_eq!(w, [!0, !0, 0]);
}

#[test]
fn sched_setaffinity__full_mask_succeeds_partial_is_enotsup() {
    let n = online();
    // SAFETY: zeroed cpu_set_t is valid.
    let mut full: cpu_set_t = unsafe { core::mem::zeroed() };
    for i in 0..n {
        // SAFETY: index < 1024.
        unsafe { libc::CPU_SET(i, &mut full) };
    }
    let fullp = (&raw const full).cast::<slurm_shim_cpu_set_t>();
    // SAFETY: valid mask of the stated size.
    assert_eq!(unsafe { slurm_shim_sched_setaffinity(0, 128, fullp) }, 0);
    if n >= 2 {
        // SAFETY: zeroed cpu_set_t is valid.
        let mut one: cpu_set_t = unsafe { core::mem::zeroed() };
        // SAFETY: index < 1024.
        unsafe { libc::CPU_SET(0, &mut one) };
        errno::set(0);
        // SAFETY: valid mask.
        let rc = unsafe { slurm_shim_sched_setaffinity(0, 128, (&raw const one).cast()) };
        assert_eq!((rc, errno::get()), (-1, libc::ENOTSUP));
    } else {
        eprintln!("skipped partial-mask half: only one CPU online");
    }
    // The seam with a fake 100-CPU machine.
    let mut m = [0u8; 16];
    m[..12].fill(0xff);
    m[12] = 0x0f;
    assert_eq!(setaffinity_impl(&Fake(100), 0, Some(&m)), Ok(()));
    m[12] = 0x07;
    assert_eq!(
        setaffinity_impl(&Fake(100), 0, Some(&m)),
        Err(Errno(libc::ENOTSUP))
    );
}

#[test]
fn sched_setaffinity__errors_match_glibc() {
    // SAFETY: zeroed cpu_set_t is valid.
    let empty: cpu_set_t = unsafe { core::mem::zeroed() };
    // SAFETY: zeroed cpu_set_t is valid.
    let mut cpu0: cpu_set_t = unsafe { core::mem::zeroed() };
    // SAFETY: index < 1024.
    unsafe { libc::CPU_SET(0, &mut cpu0) };
    let cases: &[(pid_t, usize, *const cpu_set_t, i32)] = &[
        (0, 128, core::ptr::null(), libc::EFAULT),
        (0, 128, &empty, libc::EINVAL),
        (0, 0, core::ptr::null(), libc::EINVAL),
        (0x3fff_fff0, 128, &cpu0, libc::ESRCH),
        (-3, 128, &cpu0, libc::ESRCH),
        (0x3fff_fff0, 128, core::ptr::null(), libc::EFAULT),
    ];
    for &(pid, size, mask, want) in cases {
        errno::set(0);
        // SAFETY: masks are valid or NULL on purpose; glibc checks NULL via the kernel.
        let g = unsafe { libc::sched_setaffinity(pid, size, mask) };
        let ge = errno::get();
        errno::set(0);
        // SAFETY: as above.
        let s = unsafe { slurm_shim_sched_setaffinity(pid, size, mask.cast()) };
        let se = errno::get();
        assert_eq!((g, ge), (-1, want), "glibc pid={pid} size={size}");
        assert_eq!((s, se), (g, ge), "shim pid={pid} size={size}");
    }
}

#[test]
fn sched_cpucount__matches_glibc_CPU_COUNT_S() {
    // SAFETY: zeroed cpu_set_t is valid.
    let mut set: cpu_set_t = unsafe { core::mem::zeroed() };
    for i in [0usize, 1, 2, 63, 64, 65, 500, 1023] {
        // SAFETY: index < 1024.
        unsafe { libc::CPU_SET(i, &mut set) };
    }
    let p = (&raw const set).cast::<slurm_shim_cpu_set_t>();
    for size in [0usize, 7, 8, 9, 16, 64, 128] {
        // SAFETY: `set` has 128 readable bytes.
        let s = unsafe { slurm_shim_sched_cpucount(size, p) };
        // SAFETY: `set` is a valid cpu_set_t and size <= its size.
        let g = unsafe { libc::CPU_COUNT_S(size, &set) };
        assert_eq!(s, g, "size {size}");
    }
    // SAFETY: as above.
    assert_eq!(unsafe { slurm_shim_sched_cpucount(128, p) }, 8);
    // SAFETY: valid set.
    assert_eq!(unsafe { libc::CPU_COUNT(&set) }, 8);
}

#[test]
fn sched_cpualloc__sizes_match_CPU_ALLOC_SIZE_and_memory_is_zeroed() {
    for count in [0usize, 1, 63, 64, 65, 1024, 1025, 4096] {
        // glibc's <bits/cpu-set.h>: ((count + __NCPUBITS - 1) / __NCPUBITS) * sizeof(__cpu_mask).
        // (The libc crate's CPU_ALLOC_SIZE computes (count + 63) / 8, which is not glibc's.)
        let want = count.div_ceil(64) * 8;
        assert_eq!(alloc_size(count), Some(want), "count {count}");
        let p = slurm_shim_sched_cpualloc(count);
        if want > 0 {
            assert!(!p.is_null());
            // SAFETY: `p` holds `want` zeroed bytes.
            let b = unsafe { core::slice::from_raw_parts(p.cast::<u8>(), want) };
            assert!(b.iter().all(|&x| x == 0));
            // SAFETY: the set has `want` bytes.
            assert_eq!(unsafe { slurm_shim_sched_cpucount(want, p) }, 0);
        }
        // SAFETY: `p` came from slurm_shim_sched_cpualloc.
        unsafe { slurm_shim_sched_cpufree(p) };
    }
    errno::set(0);
    assert!(slurm_shim_sched_cpualloc(usize::MAX).is_null());
    assert_eq!(errno::get(), libc::ENOMEM);
}
