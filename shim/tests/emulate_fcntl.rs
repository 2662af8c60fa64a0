//! `fcntl(F_GETPATH)` (shim/src/emulate/fcntl.rs) from a darwin-compiled C program (patch
//! 0020's fd_resolve_path), while every other command is glibc's.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

const GETPATH: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	char path[PATH_MAX];
	int p[2];
	int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || F_GETPATH != 50) return 1;
	if (fcntl(fd, F_GETPATH, path)) return 2;
	if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC)) return 3; /* other commands: glibc's */
	if (pipe(p) || fcntl(p[0], F_GETPATH, path) != -1 || errno != EBADF) return 4;
	printf("%s\n", path);
	return 0;
}
"#;

#[test]
fn fcntl__darwin_translation_unit_gets_the_path_behind_a_descriptor() {
    let run = common::darwin_c::run("getpath", GETPATH, &[], &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "/etc/passwd\n");
}
