//! `setgroups` with macOS's 16 groups (shim/src/emulate/setgroups.rs) against glibc.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use slurm_shim::emulate::setgroups::mac_refuses;

#[test]
fn setgroups__more_than_16_is_refused() {
    assert!(!mac_refuses(16));
    assert!(mac_refuses(17));
}

const SEVENTEEN: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	gid_t g[17];
	for (int i = 0; i < 17; i++)
		g[i] = 60000 + i;
	if (setgroups(17, g) == 0) { puts("17 set"); return 0; }
	printf("17: %s\n", strerror(errno));
	if (setgroups(16, g)) return 2;
	puts("16 set");
	return 1;
}
"#;

#[test]
fn setgroups__darwin_translation_unit_cannot_set_17_groups() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIP: setgroups needs root (CAP_SETGID) to show glibc's answer");
        return;
    }
    let run = common::darwin_c::run("setgroups17", SEVENTEEN, &[], &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "17: Invalid argument\n16 set\n");
    let off = common::darwin_c::run(
        "setgroups17-off",
        SEVENTEEN,
        &[],
        &[("SLURM_SHIM_EMULATION_OFF", "setgroups-16")],
    );
    assert_eq!(off.stdout, "17 set\n", "{off:?}");
}
