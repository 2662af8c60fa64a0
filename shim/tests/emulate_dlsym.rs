//! `dlsym` finds no `close_range` (shim/src/emulate/dlsym.rs), and `SYS_close_range` is gone
//! from the darwin personality's `<sys/syscall.h>`; glibc 2.34+ has both.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use slurm_shim::emulate::dlsym::missing_on_macos;

#[test]
fn dlsym__close_range_names_are_missing() {
    assert!(missing_on_macos(b"close_range"));
    assert!(missing_on_macos(b"close_range_internal"));
    assert!(!missing_on_macos(b"close"));
}

/// Slurm 26.11 fd.c's probe, reduced.
const PROBE: &str = r#"#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	void *self = dlopen(NULL, RTLD_LAZY);
	void *f = dlsym(self, "close_range");
	void *c = dlsym(self, "close");
#ifdef SYS_close_range
	puts("SYS_close_range");
#endif
	printf("close_range %s, close %s, dlerror %s\n", f ? "found" : "missing",
	       c ? "found" : "missing", dlerror() ? "set" : "clear");
	return 0;
}
"#;

#[test]
fn dlsym__darwin_probe_finds_no_close_range() {
    let run = common::darwin_c::run("close-range", PROBE, &[], &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run.stdout,
        "close_range missing, close found, dlerror clear\n"
    );
    // The dlerror() message of the failed lookup is consumed by the later successful one's
    // call order here; what matters is the NULL. glibc finds it:
    let off = common::darwin_c::run(
        "close-range-off",
        PROBE,
        &[],
        &[("SLURM_SHIM_EMULATION_OFF", "no-close-range")],
    );
    assert!(off.stdout.contains("close_range found"), "{off:?}");
    // Without the personality's include directory glibc's header has the number.
    let plain = std::process::Command::new("sh")
        .args(["-c", "printf '#include <sys/syscall.h>\\n#ifdef SYS_close_range\\nyes\\n#endif\\n' | cc -E -P - | grep -c yes"])
        .output()
        .expect("cc -E");
    assert_eq!(String::from_utf8_lossy(&plain.stdout).trim(), "1");
}

/// patch 0019's lookup: a daemon's own definition is found, a library's is not.
const MAIN_ONLY: &str = r#"#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

unsigned int slurm_shim_test_daemon = 7;

int main(void)
{
	unsigned int *p = dlsym(RTLD_MAIN_ONLY, "slurm_shim_test_daemon");
	void *q = dlsym(RTLD_MAIN_ONLY, "printf");
	printf("%u %s\n", p ? *p : 0, q ? "printf found" : "printf not in main");
	return 0;
}
"#;

#[test]
fn dlsym__main_only_searches_the_main_program() {
    let run = common::darwin_c::run("main-only", MAIN_ONLY, &["-rdynamic"], &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "7 printf not in main\n");
}
