//! No `/proc`, `/run`, `/sys`, `/dev/shm` for Slurm's code (shim/src/emulate/hidden_paths.rs):
//! the predicate, and a C translation unit compiled as the darwin personality compiles
//! Slurm's, where glibc finds what macOS does not have.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use slurm_shim::emulate::hidden_paths::is_hidden;

#[test]
fn hidden_paths__proc_run_sys_and_below_are_hidden() {
    for p in [
        "/proc",
        "/proc/self/fd",
        "/run",
        "/run/slurm/conf",
        "/sys/fs/cgroup",
        "/dev/shm/x",
    ] {
        assert!(is_hidden(p.as_bytes()), "{p}");
    }
    for p in [
        "/var/run/slurm",
        "/processes",
        "/runner",
        "/system",
        "proc/self",
        "/dev/fd/3",
        "/tmp",
    ] {
        assert!(!is_hidden(p.as_bytes()), "{p}");
    }
}

/// closeall()'s, slurmd's and configless' first steps, as Slurm spells them.
const SLURM_PATHS: &str = r#"#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

static int gone(int rc) { return rc == -1 && errno == ENOENT; }

int main(void)
{
	char buf[256];
	struct stat st;
	struct statfs fs;
	FILE *f;
	if (opendir("/proc/self/fd") || errno != ENOENT) return 1;
	if (!gone(readlink("/proc/self/exe", buf, sizeof(buf)))) return 2;
	if ((f = fopen("/proc/self/stat", "r")) || errno != ENOENT) return 3;
	if (!gone(open("/proc/self/oom_score_adj", O_WRONLY))) return 4;
	if (!gone(stat("/run/slurm/conf/slurm.conf", &st))) return 5;
	if (!gone(statfs("/sys/fs/cgroup/", &fs))) return 6;
	if (!gone(mkdir("/run/slurm-shim-test", 0700))) return 7;
	if (!gone(access("/sys/devices/system/cpu", F_OK))) return 8;
	/* /var/run is macOS's /private/var/run: it stays. */
	if (stat("/var/run", &st)) return 9;
	if (open("/etc/hostname", O_RDONLY) < 0 && open("/etc/passwd", O_RDONLY) < 0) return 10;
	puts("hidden");
	return 0;
}
"#;

#[test]
fn open__darwin_translation_unit_finds_no_proc_run_or_sys() {
    let run = common::darwin_c::run("hidden-paths", SLURM_PATHS, &[], &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "hidden\n");
    assert!(
        run.log.contains("opendir of a path macOS does not have"),
        "{}",
        run.log
    );
    assert!(run.log.contains("statfs of a path"), "{}", run.log);
    // Each refused path is named (the PoC-plan scenario smd-306 lists them).
    for path in [
        "[/proc/self/fd]",
        "[/sys/fs/cgroup/]",
        "[/run/slurm/conf/slurm.conf]",
    ] {
        assert!(run.log.contains(path), "{path} not named in:\n{}", run.log);
    }
}

#[test]
fn open__glibc_finds_them() {
    // The same program with the model off: glibc finds /proc (exit 1 = opendir succeeded).
    let run = common::darwin_c::run(
        "hidden-paths-off",
        SLURM_PATHS,
        &[],
        &[("SLURM_SHIM_EMULATION_OFF", "hidden-paths")],
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(std::path::Path::new("/proc/self/fd").is_dir());
}

#[test]
fn open__controller_daemons_keep_proc() {
    // scope: a program named slurmctld keeps glibc's file system.
    let run = common::darwin_c::run("slurmctld", SLURM_PATHS, &[], &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.log.is_empty(), "{}", run.log);
}

#[test]
fn open__var_run_maps_to_run_only_where_it_is_a_symlink() {
    use slurm_shim::emulate::hidden_paths::mac_path_for;
    assert_eq!(
        mac_path_for(b"/var/run", true).as_deref(),
        Some(&b"/run"[..])
    );
    assert_eq!(
        mac_path_for(b"/var/run/slurm/sack.socket", true).as_deref(),
        Some(&b"/run/slurm/sack.socket"[..])
    );
    assert_eq!(mac_path_for(b"/var/runner", true), None);
    assert_eq!(mac_path_for(b"/var/run", false), None);
}

/// auth/slurm's `_prepare_run_dir()`: macOS's /var/run is a real directory.
const RUN_DIR: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	int fd = open("/var/run", O_DIRECTORY | O_NOFOLLOW);
	printf("%s\n", fd >= 0 ? "opened" : strerror(errno));
	return fd < 0;
}
"#;

#[test]
fn open__var_run_is_a_directory_as_on_macos() {
    if std::fs::read_link("/var/run").is_err() {
        eprintln!("SKIP: /var/run is not a symlink here: nothing to map");
        return;
    }
    let run = common::darwin_c::run("var-run", RUN_DIR, &[], &[]);
    assert_eq!(run.stdout, "opened\n", "{run:?}");
    // Linux: the last component is the symlink (ENOTDIR with O_DIRECTORY, else ELOOP).
    let c = std::ffi::CString::new("/var/run").expect("path");
    // SAFETY: a NUL-terminated path; a descriptor is not returned on this failure.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_DIRECTORY | libc::O_NOFOLLOW) };
    assert_eq!((fd, common::errno()), (-1, libc::ENOTDIR));
}
