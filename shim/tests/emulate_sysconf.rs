//! `sysconf`/`getdtablesize` (shim/src/emulate/sysconf.rs) against glibc.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use slurm_shim::emulate::machine::MAC_RLIM_INFINITY;
use slurm_shim::emulate::sysconf::open_max_for;

#[test]
fn sysconf__open_max_of_an_infinite_limit_is_long_max() {
    assert_eq!(open_max_for(MAC_RLIM_INFINITY), libc::c_long::MAX);
    assert_eq!(open_max_for(256), 256);
}

const OPEN_MAX: &str = r#"#define _GNU_SOURCE
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

int main(void)
{
	struct rlimit r;
	getrlimit(RLIMIT_NOFILE, &r);
	r.rlim_cur = r.rlim_max; /* rlimits_use_max_nofile() */
	if (setrlimit(RLIMIT_NOFILE, &r))
		return 1;
	printf("%ld %ld %d\n", sysconf(_SC_OPEN_MAX), sysconf(_SC_NGROUPS_MAX),
	       getdtablesize() > 0);
	return 0;
}
"#;

#[test]
fn sysconf__after_rlimits_use_max_nofile_open_max_is_long_max() {
    let run = common::darwin_c::run("open-max", OPEN_MAX, &[], &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, format!("{} 16 1\n", libc::c_long::MAX));
    // glibc: the real (finite) hard limit and 65536 groups.
    let off = common::darwin_c::run(
        "open-max-off",
        OPEN_MAX,
        &[],
        &[("SLURM_SHIM_EMULATION_OFF", "sysconf,nofile-infinity")],
    );
    assert_eq!(off.code, Some(0), "{off:?}");
    assert_ne!(off.stdout, run.stdout);
    assert!(off.stdout.contains(" 65536 "), "{}", off.stdout);
}
