//! `proc_pidpath`/`proc_pidinfo(PROC_PIDLISTFDS)` (shim/src/emulate/libproc.rs), from a
//! darwin-compiled C program (patch 0014's self lookup; the descriptor list a closeall()
//! without /proc needs), against what Linux's /proc says.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use slurm_shim::emulate::libproc::*;

#[test]
fn proc_pidinfo__lists_this_process_with_types() {
    // SAFETY: plain calls on descriptors this test owns.
    let (p, me) = unsafe {
        let mut p = [0; 2];
        assert_eq!(libc::pipe(p.as_mut_ptr()), 0);
        (p, libc::getpid())
    };
    let list = list_fds(me).expect("own descriptors");
    let find = |fd| list.iter().find(|i| i.proc_fd == fd).map(|i| i.proc_fdtype);
    assert_eq!(find(p[0]), Some(PROX_FDTYPE_PIPE));
    common::close(p[0]);
    common::close(p[1]);
    assert_eq!(
        list_fds(0x7ffffff0),
        Err(slurm_shim::errno::Errno(libc::ESRCH))
    );
}

const SELF: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <libproc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char path[PROC_PIDPATHINFO_MAXSIZE], real[PATH_MAX];
	struct proc_fdinfo *fds;
	int n, size, found = 0;
	(void) argc;
	if (proc_pidpath(getpid(), path, 10) != 0 || errno != EINVAL) return 1;
	if (proc_pidpath(getpid(), path, sizeof(path)) <= 0) return 2;
	if (!realpath(argv[0], real) || strcmp(real, path)) return 3;
	size = proc_pidinfo(getpid(), PROC_PIDLISTFDS, 0, NULL, 0);
	if (size < (int) (3 * PROC_PIDLISTFD_SIZE)) return 4;
	fds = malloc(size);
	n = proc_pidinfo(getpid(), PROC_PIDLISTFDS, 0, fds, size) / (int) PROC_PIDLISTFD_SIZE;
	for (int i = 0; i < n; i++)
		if (fds[i].proc_fd == 2)
			found = 1;
	printf("%d\n", found);
	return 0;
}
"#;

#[test]
fn proc_pidpath__darwin_translation_unit_finds_itself_and_its_descriptors() {
    let run = common::darwin_c::run("libproc-self", SELF, &[], &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "1\n");
    assert!(
        run.log.contains("proc_pidpath (macOS libproc)"),
        "{}",
        run.log
    );
}
