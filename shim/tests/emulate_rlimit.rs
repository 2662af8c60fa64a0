//! `getrlimit`/`setrlimit`/`prlimit` in the darwin personality (shim/src/emulate/rlimit.rs):
//! the XNU model through its seam, where glibc answers differently, and a C translation unit
//! compiled as Slurm's are in the darwin personality, where a finite RLIMIT_RSS of a few GiB
//! must be refused (the CI negative check for POC-DEFECTS D8).
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use std::cell::RefCell;
use std::collections::HashMap;

use libc::{c_int, rlimit};
use slurm_shim::emulate::machine::{BASELINE_VSIZE, MAC_RLIM_INFINITY};
use slurm_shim::emulate::rlimit::*;
use slurm_shim::errno::Errno;

const GIB: u64 = 1 << 30;
const LINUX_INF: u64 = libc::RLIM_INFINITY;

/// A fake Linux: limits in a map, a fixed virtual size.
struct FakeOs {
    limits: RefCell<HashMap<c_int, rlimit>>,
    vsize: u64,
    root: bool,
}

impl FakeOs {
    fn new(root: bool) -> FakeOs {
        let mut m = HashMap::new();
        for r in [
            libc::RLIMIT_AS,
            libc::RLIMIT_DATA,
            libc::RLIMIT_RSS,
            libc::RLIMIT_CPU,
        ] {
            m.insert(r as c_int, lim(LINUX_INF, LINUX_INF));
        }
        m.insert(libc::RLIMIT_NOFILE as c_int, lim(1024, 524288));
        FakeOs {
            limits: RefCell::new(m),
            vsize: BASELINE_VSIZE + 200 * (1 << 20),
            root,
        }
    }
    fn real(&self, r: u32) -> rlimit {
        self.limits.borrow()[&(r as c_int)]
    }
}

impl RlimitOs for FakeOs {
    fn get(&self, resource: c_int) -> Result<rlimit, Errno> {
        self.limits
            .borrow()
            .get(&resource)
            .copied()
            .ok_or(Errno(libc::EINVAL))
    }
    fn set(&self, resource: c_int, value: &rlimit) -> Result<(), Errno> {
        self.limits.borrow_mut().insert(resource, *value);
        Ok(())
    }
    fn vsize(&self) -> u64 {
        self.vsize
    }
    fn is_root(&self) -> bool {
        self.root
    }
}

fn lim(cur: u64, max: u64) -> rlimit {
    rlimit {
        rlim_cur: cur,
        rlim_max: max,
    }
}

fn same(a: rlimit, b: rlimit) -> bool {
    a.rlim_cur == b.rlim_cur && a.rlim_max == b.rlim_max
}

#[test]
fn setrlimit__rss_is_the_address_space_limit() {
    assert_eq!(
        classify(libc::RLIMIT_RSS as c_int, true),
        MacResource::AddressSpace
    );
    assert_eq!(
        classify(libc::RLIMIT_AS as c_int, true),
        MacResource::AddressSpace
    );
    // glibc: RLIMIT_RSS is its own resource.
    assert_eq!(
        classify(libc::RLIMIT_RSS as c_int, false),
        MacResource::Plain(libc::RLIMIT_RSS as c_int)
    );
}

#[test]
fn setrlimit__a_typical_mem_request_is_einval() {
    let os = FakeOs::new(true);
    let st = NofileState::default();
    for mib in [2048u64, 4096, 16384, 131072] {
        let bytes = mib << 20;
        assert_eq!(
            mac_set(&os, &st, MacResource::AddressSpace, lim(bytes, bytes)),
            Err(Errno(libc::EINVAL)),
            "{mib} MB"
        );
        assert_eq!(
            mac_set(&os, &st, MacResource::Data, lim(bytes, bytes)),
            Err(Errno(libc::EINVAL)),
            "{mib} MB DATA"
        );
    }
    // Nothing changed on the real process.
    assert_eq!(os.real(libc::RLIMIT_AS).rlim_cur, LINUX_INF);
}

#[test]
fn setrlimit__address_space_above_the_vm_size_is_enforced_shifted() {
    let os = FakeOs::new(true);
    let st = NofileState::default();
    let want = BASELINE_VSIZE + 4 * GIB;
    assert_eq!(
        mac_set(&os, &st, MacResource::AddressSpace, lim(want, want)),
        Ok(SetOutcome::Set)
    );
    assert!(same(os.real(libc::RLIMIT_AS), lim(4 * GIB, 4 * GIB)));
    let back = mac_get(&os, &st, MacResource::AddressSpace).expect("get");
    assert!(same(back, lim(want, want)));
}

#[test]
fn getrlimit__infinity_is_the_macos_value() {
    let os = FakeOs::new(true);
    let st = NofileState::default();
    let v = mac_get(&os, &st, MacResource::AddressSpace).expect("get");
    assert!(same(v, lim(MAC_RLIM_INFINITY, MAC_RLIM_INFINITY)));
    let c = mac_get(&os, &st, MacResource::Plain(libc::RLIMIT_CPU as c_int)).expect("cpu");
    assert_eq!(c.rlim_max, MAC_RLIM_INFINITY);
    assert_ne!(MAC_RLIM_INFINITY, LINUX_INF, "glibc's infinity differs");
}

#[test]
fn getrlimit__nofile_hard_limit_is_infinite() {
    let os = FakeOs::new(true);
    let st = NofileState::default();
    let v = mac_get(&os, &st, MacResource::Nofile).expect("get");
    assert!(same(v, lim(1024, MAC_RLIM_INFINITY)));
}

#[test]
fn setrlimit__nofile_soft_to_the_hard_limit_becomes_infinite() {
    // rlimits_use_max_nofile(): rlim_cur = rlim_max (infinite), as root.
    let os = FakeOs::new(true);
    let st = NofileState::default();
    let cur = mac_get(&os, &st, MacResource::Nofile).expect("get");
    let r = mac_set(
        &os,
        &st,
        MacResource::Nofile,
        lim(cur.rlim_max, cur.rlim_max),
    );
    assert_eq!(r, Ok(SetOutcome::NofileInfinite));
    // Stored as the mark under the real hard limit: inherited over exec, read back as
    // infinite by a fresh process.
    assert!(same(
        os.real(libc::RLIMIT_NOFILE),
        lim(infinity_mark(524288), 524288)
    ));
    let fresh = NofileState::default();
    let v = mac_get(&os, &fresh, MacResource::Nofile).expect("get");
    assert_eq!(v.rlim_cur, MAC_RLIM_INFINITY);
    // glibc refuses an infinite soft limit under a finite hard one (Linux's hard limit is
    // at most fs.nr_open).
    let mut real = lim(0, 0);
    // SAFETY: `real` is a writable struct rlimit.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut real) };
    assert_eq!(rc, 0);
    assert_ne!(real.rlim_max, LINUX_INF);
    let inf = lim(LINUX_INF, real.rlim_max);
    // SAFETY: a valid struct rlimit; the call fails, changing nothing.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &inf) }, -1);
}

#[test]
fn getrlimit__nofile_soft_equal_to_hard_stays_finite() {
    // A Linux start state of soft == hard (20000/20000) is a finite soft limit, as a Mac
    // daemon started with a finite soft limit has.
    let os = FakeOs::new(true);
    os.set(libc::RLIMIT_NOFILE as c_int, &lim(20000, 20000))
        .expect("set");
    let v = mac_get(&os, &NofileState::default(), MacResource::Nofile).expect("get");
    assert!(same(v, lim(20000, MAC_RLIM_INFINITY)));
}

#[test]
fn setrlimit__nofile_finite_soft_stays_finite() {
    let os = FakeOs::new(false);
    let st = NofileState::default();
    assert_eq!(
        mac_set(&os, &st, MacResource::Nofile, lim(4096, MAC_RLIM_INFINITY)),
        Ok(SetOutcome::Set)
    );
    assert_eq!(
        mac_get(&os, &st, MacResource::Nofile)
            .expect("get")
            .rlim_cur,
        4096
    );
    // Above the real hard limit: stored as the real hard limit, still finite.
    assert_eq!(
        mac_set(
            &os,
            &st,
            MacResource::Nofile,
            lim(600000, MAC_RLIM_INFINITY)
        ),
        Ok(SetOutcome::Set)
    );
    assert_eq!(os.real(libc::RLIMIT_NOFILE).rlim_cur, 524288);
    assert_eq!(
        mac_get(&os, &st, MacResource::Nofile)
            .expect("get")
            .rlim_cur,
        524288
    );
}

#[test]
fn setrlimit__nofile_lowered_hard_limit_needs_root_to_raise() {
    let os = FakeOs::new(false);
    let st = NofileState::default();
    assert_eq!(
        mac_set(&os, &st, MacResource::Nofile, lim(256, 1000)),
        Ok(SetOutcome::Set)
    );
    assert!(same(
        mac_get(&os, &st, MacResource::Nofile).expect("get"),
        lim(256, 1000)
    ));
    assert_eq!(
        mac_set(&os, &st, MacResource::Nofile, lim(256, 2000)),
        Err(Errno(libc::EPERM))
    );
    assert_eq!(
        mac_set(&os, &st, MacResource::Nofile, lim(2000, 1000)),
        Err(Errno(libc::EINVAL))
    );
}

#[test]
fn getrlimit__linux_only_resources_are_einval() {
    let os = FakeOs::new(true);
    let st = NofileState::default();
    for r in [libc::RLIMIT_NICE, libc::RLIMIT_RTPRIO, libc::RLIMIT_LOCKS] {
        assert_eq!(classify(r as c_int, true), MacResource::Invalid);
        assert_eq!(
            mac_get(&os, &st, classify(r as c_int, true)).map(drop),
            Err(Errno(libc::EINVAL))
        );
    }
    // glibc answers them.
    let mut v = lim(0, 0);
    // SAFETY: `v` is a writable struct rlimit.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NICE, &mut v) }, 0);
}

#[test]
fn setrlimit__glibc_accepts_the_limit_macos_refuses() {
    // In a child (limits are per process): Linux takes a 4 GiB RLIMIT_RSS and RLIMIT_AS.
    // SAFETY: the child only makes async-signal-safe calls before _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid == 0 {
        let l = lim(4 * GIB, 4 * GIB);
        // SAFETY: valid struct rlimit; the child exits at once.
        unsafe {
            let ok = libc::setrlimit(libc::RLIMIT_RSS, &l) == 0
                && libc::setrlimit(libc::RLIMIT_AS, &l) == 0;
            libc::_exit(if ok { 0 } else { 1 });
        }
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
}

/// A Slurm-like translation unit: set_user_limits()'s RSS step with a 4096 MB job.
const SLURMSTEPD_RSS: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

int main(void)
{
	struct rlimit r;
	unsigned long long task_mem_bytes = 4096ULL * 1024 * 1024;
	if (RLIM_INFINITY != 0x7fffffffffffffffULL || RLIMIT_RSS != RLIMIT_AS)
		return 10;
	if (getrlimit(RLIMIT_RSS, &r) || r.rlim_max <= task_mem_bytes)
		return 11;
	r.rlim_max = r.rlim_cur = task_mem_bytes;
	if (setrlimit(RLIMIT_RSS, &r) == 0)
		return 12;
	printf("setrlimit(RLIMIT_RSS, 4096 MB): %s\n", strerror(errno));
	errno = 0;
	if (prlimit(0, RLIMIT_NOFILE, NULL, &r) != -1 || errno != ENOSYS)
		return 13;
	if (getrlimit(RLIMIT_NOFILE, &r) || r.rlim_max != RLIM_INFINITY)
		return 14;
	return errno == EINVAL ? 20 : 0;
}
"#;

#[test]
fn setrlimit__darwin_translation_unit_refuses_a_finite_rss_of_a_few_gib() {
    let run = common::darwin_c::run("rss", SLURMSTEPD_RSS, &[], &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run.stdout,
        "setrlimit(RLIMIT_RSS, 4096 MB): Invalid argument\n"
    );
    assert!(
        run.log.contains("below the VM map size -> EINVAL"),
        "{}",
        run.log
    );
    assert!(run.log.contains("prlimit -> ENOSYS"), "{}", run.log);
}

#[test]
fn setrlimit__vm_model_off_accepts_and_does_not_apply() {
    let os = FakeOs::new(true);
    let st = NofileState::default();
    let r = MacResource::Unenforced(libc::RLIMIT_AS as c_int);
    assert_eq!(
        mac_set(&os, &st, r, lim(1 << 20, 1 << 20)),
        Ok(SetOutcome::Set)
    );
    assert_eq!(os.real(libc::RLIMIT_AS).rlim_cur, LINUX_INF);
}

#[test]
fn setrlimit__off_switch_gives_glibc_behaviour_back() {
    let run = common::darwin_c::run(
        "rss-off",
        SLURMSTEPD_RSS,
        &[],
        &[("SLURM_SHIM_EMULATION_OFF", "rlimit-vm-size")],
    );
    assert_eq!(run.code, Some(12), "{run:?}");
}
