//! `sysinfo` against glibc's, and the uptime logic through the seam.
//!
//! glibc is the oracle, so this file runs on Linux only (for macOS targets the shim is
//! compiled, and linked into a Mach-O program by tests/header.rs).
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

use core::mem::{offset_of, size_of};

use libc::timeval;
use slurm_shim::errno::{self, Errno};
use slurm_shim::uptime::*;

fn tv(sec: i64, usec: i64) -> timeval {
    timeval {
        tv_sec: sec as _,
        tv_usec: usec as _,
    }
}

#[test]
fn sysinfo__layout_matches_glibc_struct_sysinfo() {
    assert_eq!(size_of::<slurm_shim_sysinfo>(), size_of::<libc::sysinfo>());
    assert_eq!(size_of::<slurm_shim_sysinfo>(), 112);
    assert_eq!(
        core::mem::align_of::<slurm_shim_sysinfo>(),
        core::mem::align_of::<libc::sysinfo>()
    );
    macro_rules! same {
        ($($f:ident),*) => { $( assert_eq!(offset_of!(slurm_shim_sysinfo, $f), offset_of!(libc::sysinfo, $f), stringify!($f)); )* };
    }
    same!(
        uptime, loads, totalram, freeram, sharedram, bufferram, totalswap, freeswap, procs, pad,
        totalhigh, freehigh, mem_unit
    );
}

#[test]
fn sysinfo__close_to_glibc() {
    // SAFETY: zeroed struct sysinfo is valid.
    let mut g: libc::sysinfo = unsafe { core::mem::zeroed() };
    let mut s = slurm_shim_sysinfo::default();
    errno::set(4321);
    // SAFETY: valid out-pointers.
    let (gr, sr) = unsafe { (libc::sysinfo(&mut g), slurm_shim_sysinfo(&mut s)) };
    assert_eq!((gr, sr), (0, 0));
    assert_eq!(errno::get(), 4321, "errno preserved on success");
    assert!(
        (s.uptime - g.uptime).abs() <= 1,
        "uptime shim {} glibc {}",
        s.uptime,
        g.uptime
    );
    assert_eq!(s.mem_unit, 1);
    assert_eq!(
        u128::from(s.totalram),
        u128::from(g.totalram) * u128::from(g.mem_unit)
    );
    // Free memory moves between the two reads: allow 1/16 of the RAM.
    let gfree = i128::from(g.freeram) * i128::from(g.mem_unit);
    assert!(gfree > 0, "glibc reports no free memory");
    assert!(
        (i128::from(s.freeram) - gfree).abs() <= i128::from(s.totalram) / 16,
        "freeram shim {} glibc {gfree}",
        s.freeram
    );
    for i in 0..3 {
        // Both scaled by 65536; the kernel's fixed point has 11 fraction bits, so allow
        // one kernel step (32 units) plus a change between the two reads.
        let d = (s.loads[i] as i128 - g.loads[i] as i128).abs();
        assert!(
            d <= 65536 / 10,
            "load {i}: shim {} glibc {}",
            s.loads[i],
            g.loads[i]
        );
    }
}

#[test]
fn sysinfo__null_is_efault() {
    errno::set(0);
    // SAFETY: NULL is checked.
    assert_eq!(unsafe { slurm_shim_sysinfo(core::ptr::null_mut()) }, -1);
    assert_eq!(errno::get(), libc::EFAULT);
}

struct Fake {
    now: timeval,
    boot: Result<timeval, Errno>,
    loads: ([f64; 3], usize),
    ram: u64,
    free: Result<u64, Errno>,
}
impl UptimeOs for Fake {
    fn now(&self) -> Result<timeval, Errno> {
        Ok(self.now)
    }
    fn boot_time(&self) -> Result<timeval, Errno> {
        self.boot
    }
    fn loadavg(&self) -> ([f64; 3], usize) {
        self.loads
    }
    fn total_ram(&self) -> Result<u64, Errno> {
        Ok(self.ram)
    }
    fn free_ram(&self) -> Result<u64, Errno> {
        self.free
    }
}

fn fake(now: timeval, boot: timeval) -> Fake {
    Fake {
        now,
        boot: Ok(boot),
        loads: ([1.5, 0.25, 2.0], 3),
        ram: 64 << 30,
        free: Ok(3 << 30),
    }
}

#[test]
fn sysinfo__seam_normal_boot() {
    let v = sysinfo_impl(&fake(tv(1_800_000_100, 0), tv(1_800_000_000, 0))).expect("ok");
    assert_eq!(v.uptime, 100);
    assert_eq!(v.loads, [98304, 16384, 131072]);
    assert_eq!(v.totalram, 64 << 30);
    assert_eq!(v.mem_unit, 1);
    assert_eq!(v.freeram, 3 << 30);
    assert_eq!((v.procs, v.totalswap), (0, 0));
    // Partial seconds round up like the kernel.
    assert_eq!(
        uptime_seconds(tv(1_800_000_100, 1), tv(1_800_000_000, 0)),
        Ok(101)
    );
    assert_eq!(
        uptime_seconds(tv(1_800_000_100, 0), tv(1_800_000_000, 500_000)),
        Ok(100)
    );
    assert_eq!(
        uptime_seconds(tv(1_800_000_000, 0), tv(1_800_000_000, 0)),
        Ok(0)
    );
}

#[test]
fn sysinfo__seam_boot_in_future_is_einval() {
    let f = fake(tv(1_800_000_000, 0), tv(1_800_000_001, 0));
    assert_eq!(sysinfo_impl(&f), Err(Errno(libc::EINVAL)));
    assert_eq!(
        uptime_seconds(tv(1_800_000_000, 0), tv(1_800_000_000, 1)),
        Err(Errno(libc::EINVAL))
    );
}

#[test]
fn sysinfo__seam_out_of_range_boot_is_einval() {
    for boot in [tv(0, 0), tv(-5, 0), tv(1_000, -1), tv(1_000, 1_000_000)] {
        let f = fake(tv(1_800_000_000, 0), boot);
        assert_eq!(
            sysinfo_impl(&f),
            Err(Errno(libc::EINVAL)),
            "boot {:?}",
            (boot.tv_sec, boot.tv_usec)
        );
    }
    // The OS error is passed on.
    let f = Fake {
        boot: Err(Errno(libc::ENOMEM)),
        ..fake(tv(1, 0), tv(1, 0))
    };
    assert_eq!(sysinfo_impl(&f), Err(Errno(libc::ENOMEM)));
}

#[test]
fn sysinfo__seam_missing_loads_are_zero() {
    let f = Fake {
        loads: ([3.0, f64::NAN, 7.0], 1),
        ..fake(tv(1_800_000_100, 0), tv(1_800_000_000, 0))
    };
    assert_eq!(sysinfo_impl(&f).expect("ok").loads, [3 * 65536, 0, 0]);
}

#[test]
fn sysinfo__seam_free_memory_failure_gives_zero_not_an_error() {
    let mut f = fake(tv(1_800_000_100, 0), tv(1_800_000_000, 0));
    f.free = Err(Errno(libc::EINVAL));
    let v = sysinfo_impl(&f).expect("uptime still answered");
    assert_eq!((v.uptime, v.freeram, v.totalram), (100, 0, 64 << 30));
}
