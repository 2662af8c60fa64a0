//! `mlockall` is ENOSYS on macOS (shim/src/emulate/mlockall.rs); glibc locks.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

const LOCK: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int main(void)
{
	if (mlockall(MCL_CURRENT) == 0) { puts("locked"); munlockall(); return 0; }
	printf("%s\n", strerror(errno));
	return errno == ENOSYS ? 1 : 2;
}
"#;

#[test]
fn mlockall__darwin_translation_unit_gets_enosys() {
    let run = common::darwin_c::run("mlockall", LOCK, &[], &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "Function not implemented\n");
    assert!(run.log.contains("mlockall -> ENOSYS"), "{}", run.log);
    let off = common::darwin_c::run(
        "mlockall-off",
        LOCK,
        &[],
        &[("SLURM_SHIM_EMULATION_OFF", "mlockall")],
    );
    // glibc locks (root, or a small process under RLIMIT_MEMLOCK) or fails with another errno.
    assert_ne!(off.code, Some(1), "{off:?}");
}

#[test]
fn mlockall__without_a_log_nothing_is_printed() {
    // The report goes to SLURM_SHIM_EMULATION_LOG only: a task's stderr is the job's output.
    let run = common::darwin_c::run(
        "mlockall-quiet",
        LOCK,
        &[],
        &[("SLURM_SHIM_EMULATION_LOG", "")],
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stderr, "");
}
