//! The darwin plugins' macOS process APIs (shim/src/emulate/{proc_bsdinfo,proc_listpids,
//! proc_rusage,proc_signal,timebase,darwin_bg}.rs) and their stand-in headers
//! (shim/include/emulate/{libproc.h,sys/proc_info.h,sys/resource.h,mach/mach_time.h}): the
//! layouts C sees are the Rust side's and the macOS SDK's (when zig is installed), and a
//! darwin-compiled C program that measures a child as jobacct_gather/darwin does gets what
//! Linux says, in Mach units of the modelled timebase.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use std::process::Command;

use slurm_shim::emulate::proc_bsdinfo::*;
use slurm_shim::emulate::proc_rusage::rusage_info_v6;
use slurm_shim::emulate::timebase::Timebase;

/// The numbers both sides print: sizes and a few offsets.
fn rust_layout() -> String {
    use std::mem::{offset_of, size_of};
    format!(
        "{} {} {} {} {} {} {} {} {} {}\n",
        size_of::<proc_bsdinfo>(),
        offset_of!(proc_bsdinfo, pbi_pgid),
        offset_of!(proc_bsdinfo, pbi_start_tvsec),
        size_of::<proc_bsdshortinfo>(),
        offset_of!(proc_bsdshortinfo, pbsi_flags),
        size_of::<proc_taskinfo>(),
        offset_of!(proc_taskinfo, pti_threadnum),
        offset_of!(rusage_info_v6, ri_runnable_time) + 8,
        offset_of!(rusage_info_v6, ri_lifetime_max_phys_footprint),
        size_of::<Timebase>(),
    )
}

const LAYOUT_EXPR: &[&str] = &[
    "sizeof(struct proc_bsdinfo)",
    "offsetof(struct proc_bsdinfo, pbi_pgid)",
    "offsetof(struct proc_bsdinfo, pbi_start_tvsec)",
    "sizeof(struct proc_bsdshortinfo)",
    "offsetof(struct proc_bsdshortinfo, pbsi_flags)",
    "sizeof(struct proc_taskinfo)",
    "offsetof(struct proc_taskinfo, pti_threadnum)",
    "sizeof(struct rusage_info_v4)",
    "offsetof(struct rusage_info_v4, ri_lifetime_max_phys_footprint)",
    "sizeof(mach_timebase_info_data_t)",
];

const HEADERS: &str = "#include <stddef.h>\n#include <stdio.h>\n#include <libproc.h>\n\
                       #include <sys/resource.h>\n#include <mach/mach_time.h>\n";

#[test]
fn proc_info__stand_in_layout_is_the_rust_layout() {
    let args: Vec<String> = LAYOUT_EXPR
        .iter()
        .map(|e| format!("(size_t) {e}"))
        .collect();
    let src = format!(
        "#define _GNU_SOURCE\n{HEADERS}int main(void)\n{{\n\tprintf(\"{}\\n\", {});\n\treturn 0;\n}}\n",
        vec!["%zu"; LAYOUT_EXPR.len()].join(" "),
        args.join(", ")
    );
    let run = common::darwin_c::run("proc-info-layout", &src, &[], &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, rust_layout());
}

#[test]
fn proc_info__stand_in_layout_and_constants_are_the_macos_sdks() {
    let probe = Command::new("python3")
        .args(["-m", "ziglang", "version"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        let msg = "zig (PyPI ziglang) is not installed: the SDK comparison did not run";
        if std::env::var_os("SLURM_SHIM_REQUIRE_ZIG").is_some() {
            panic!("{msg}");
        }
        eprintln!("SKIP: {msg}");
        return;
    }
    let layout = rust_layout();
    let want: Vec<&str> = layout.split_whitespace().collect();
    let mut src = String::from(HEADERS);
    for (expr, value) in LAYOUT_EXPR.iter().zip(&want) {
        src.push_str(&format!("_Static_assert({expr} == {value}, \"{expr}\");\n"));
    }
    for (name, value) in [
        ("PROC_ALL_PIDS", 1),
        ("PROC_PGRP_ONLY", 2),
        ("PROC_PPID_ONLY", 6),
        ("PROC_PIDLISTFDS", 1),
        ("PROC_PIDTBSDINFO", 3),
        ("PROC_PIDTASKINFO", 4),
        ("PROC_PIDT_SHORTBSDINFO", 13),
        ("PROC_FLAG_DARWINBG", 0x8000),
        ("PROC_FLAG_SLEADER", 0x20),
        ("RUSAGE_INFO_V4", 4),
        ("RUSAGE_INFO_CURRENT", 6),
        ("PRIO_DARWIN_THREAD", 3),
        ("PRIO_DARWIN_PROCESS", 4),
        ("PRIO_DARWIN_BG", 0x1000),
        ("sizeof(audit_token_t)", 32),
    ] {
        src.push_str(&format!("_Static_assert({name} == {value}, \"{name}\");\n"));
    }
    src.push_str("int slurm_shim_layout_probe;\n");
    common::darwin_c::compile_against_sdk("proc-info-sdk", &src, "the stand-ins");
}

/// A child that burns CPU, touches memory and writes a file with fsync, measured by its
/// parent through the macOS calls, as jobacct_gather/darwin measures a task. Prints the
/// timebase, the child's CPU seconds as the parent converts them and as raw units, its
/// footprint, peak and written bytes, then the tree and kill checks.
const MEASURE: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libproc.h>
#include <mach/mach_time.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Private flavor (bsd/sys/proc_info_private.h): declared by its users, not the SDK. */
#define PROC_PIDT_BSDINFOWITHUNIQID 18
struct proc_uniqidentifierinfo {
	uint8_t p_uuid[16];
	uint64_t p_uniqueid;
	uint64_t p_puniqueid;
	int32_t p_idversion;
	int32_t p_orig_ppidversion;
	uint64_t p_reserve2;
	uint64_t p_reserve3;
};
struct proc_bsdinfowithuniqid {
	struct proc_bsdinfo pbsd;
	struct proc_uniqidentifierinfo p_uniqidentifier;
};

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int go[2], done[2];
	char c = 0;
	pid_t child;
	mach_timebase_info_data_t tb;
	struct rusage_info_v4 ri;
	struct proc_bsdinfowithuniqid mine, kid;
	audit_token_t tok;
	int pids[4096], n, found = 0, rc;
	(void) argc;

	if (pipe(go) || pipe(done))
		return 10;
	if (mach_timebase_info(&tb) != KERN_SUCCESS) {
		printf("timebase-refused\n");
		return 0;
	}
	child = fork();
	if (child == 0) {
		size_t size = 64 << 20;
		char *mem = malloc(size);
		int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
		memset(mem, 1, size);
		if (write(fd, mem, 4 << 20) != 4 << 20 || fsync(fd))
			_exit(11);
		close(fd);
		while (cpu_now() < 0.5)
			;
		if (argv[2][0] == 'b' &&
		    setpriority(PRIO_DARWIN_PROCESS, 0, PRIO_DARWIN_BG))
			_exit(12);
		write(done[1], "x", 1);
		read(go[0], &c, 1);
		_exit(0);
	}
	if (read(done[0], &c, 1) != 1)
		return 13;
	if (proc_pid_rusage(child, RUSAGE_INFO_V4, (rusage_info_t *) &ri))
		return 14;
	printf("timebase %u/%u\n", tb.numer, tb.denom);
	printf("cpu %.2f raw-as-ns %.4f\n",
	       (ri.ri_user_time + ri.ri_system_time) * (double) tb.numer / tb.denom / 1e9,
	       (ri.ri_user_time + ri.ri_system_time) / 1e9);
	printf("footprint-mib %llu peak-ge-footprint %d written-mib %llu\n",
	       (unsigned long long) (ri.ri_phys_footprint >> 20),
	       ri.ri_lifetime_max_phys_footprint >= ri.ri_phys_footprint,
	       (unsigned long long) (ri.ri_diskio_byteswritten >> 20));
	n = proc_listchildpids(getpid(), pids, sizeof(pids));
	for (int i = 0; i < n; i++)
		found |= pids[i] == child;
	printf("child-listed %d\n", found);
	if (proc_pidinfo(getpid(), PROC_PIDT_BSDINFOWITHUNIQID, 0, &mine, sizeof(mine)) !=
	    sizeof(mine) ||
	    proc_pidinfo(child, PROC_PIDT_BSDINFOWITHUNIQID, 0, &kid, sizeof(kid)) != sizeof(kid))
		return 15;
	printf("puniqueid-is-parent %d ppid-is-parent %d background %d\n",
	       kid.p_uniqidentifier.p_puniqueid == mine.p_uniqidentifier.p_uniqueid,
	       kid.pbsd.pbi_ppid == (uint32_t) getpid(),
	       !!(kid.pbsd.pbi_flags & PROC_FLAG_DARWINBG));
	memset(&tok, 0, sizeof(tok));
	tok.val[5] = child;
	tok.val[7] = kid.p_uniqidentifier.p_idversion + 1;
	rc = proc_signal_with_audittoken(&tok, SIGKILL);
	printf("stale-token %s alive %d\n", rc == ESRCH ? "ESRCH" : "signalled", kill(child, 0) == 0);
	tok.val[7] = kid.p_uniqidentifier.p_idversion;
	rc = proc_signal_with_audittoken(&tok, SIGKILL);
	waitpid(child, &rc, 0);
	printf("token-kill %d\n", WIFSIGNALED(rc) && WTERMSIG(rc) == SIGKILL);
	return 0;
}
"#;

fn measure(name: &str, background: bool, env: &[(&str, &str)]) -> common::darwin_c::Run {
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.out"));
    let exe = common::darwin_c::build(name, MEASURE, &[]);
    let run = common::darwin_c::exec(
        name,
        &exe,
        &[
            out.to_str().expect("path"),
            if background { "bg" } else { "fg" },
        ],
        env,
    );
    let _ = std::fs::remove_file(out);
    run
}

fn field<'a>(run: &'a common::darwin_c::Run, key: &str) -> Vec<&'a str> {
    run.stdout
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no `{key}` line: {run:?}"))
        .split_whitespace()
        .collect()
}

#[test]
fn proc_pid_rusage__cpu_in_apple_silicon_units_converts_with_the_timebase() {
    let run = measure("rusage-apple", false, &[("SLURM_SHIM_MACH_TIMEBASE", "")]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(field(&run, "timebase"), ["timebase", "125/3"]);
    let cpu: f64 = field(&run, "cpu")[1].parse().expect("cpu");
    let raw: f64 = field(&run, "cpu")[3].parse().expect("raw");
    // 0.5 s burnt (plus the memset): converted within 10 %, while reading the units as
    // nanoseconds (HTCondor's reading) gives 3/125 of it.
    assert!((0.45..0.9).contains(&cpu), "cpu {cpu}: {run:?}");
    assert!(raw < cpu / 20.0, "raw {raw} vs {cpu}");
    let mem = field(&run, "footprint-mib");
    let footprint: u64 = mem[1].parse().expect("footprint");
    assert!((64..96).contains(&footprint), "{mem:?}");
    assert_eq!(mem[3], "1", "peak below footprint: {mem:?}");
    let written: u64 = mem[5].parse().expect("written");
    assert!((4..6).contains(&written), "{mem:?}");
    assert_eq!(field(&run, "child-listed"), ["child-listed", "1"]);
    assert_eq!(
        field(&run, "puniqueid-is-parent"),
        [
            "puniqueid-is-parent",
            "1",
            "ppid-is-parent",
            "1",
            "background",
            "0"
        ]
    );
    assert_eq!(
        field(&run, "stale-token"),
        ["stale-token", "ESRCH", "alive", "1"]
    );
    assert_eq!(field(&run, "token-kill"), ["token-kill", "1"]);
    assert!(
        run.log.contains("proc_pid_rusage (macOS libproc)"),
        "{}",
        run.log
    );
}

#[test]
fn proc_pid_rusage__intel_timebase_units_are_nanoseconds() {
    let run = measure(
        "rusage-intel",
        false,
        &[("SLURM_SHIM_MACH_TIMEBASE", "1/1")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(field(&run, "timebase"), ["timebase", "1/1"]);
    let cpu: f64 = field(&run, "cpu")[1].parse().expect("cpu");
    let raw: f64 = field(&run, "cpu")[3].parse().expect("raw");
    assert!((0.45..0.9).contains(&cpu), "cpu {cpu}: {run:?}");
    assert!((raw - cpu).abs() < 1e-6, "raw {raw} vs {cpu}");
}

#[test]
fn mach_timebase_info__malformed_variable_is_refused_and_named() {
    let run = measure(
        "rusage-badtb",
        false,
        &[("SLURM_SHIM_MACH_TIMEBASE", "125:3")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "timebase-refused\n");
    assert!(
        run.log.contains("SLURM_SHIM_MACH_TIMEBASE is not"),
        "{}",
        run.log
    );
}

#[test]
fn setpriority__darwin_background_class_shows_in_bsdinfo_flags() {
    let run = measure("rusage-bg", true, &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        field(&run, "puniqueid-is-parent"),
        [
            "puniqueid-is-parent",
            "1",
            "ppid-is-parent",
            "1",
            "background",
            "1"
        ]
    );
}

/// `/proc/<pid>/<file>` as text.
fn proc_text(pid: u32, file: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/{file}")).expect("procfs file")
}

/// A sleeping child whose sizes do not move while it is measured.
fn sleeper() -> std::process::Child {
    let child = Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("spawn sleep");
    // Let it finish exec'ing so its sizes are those of `sleep`.
    std::thread::sleep(std::time::Duration::from_millis(200));
    child
}

#[test]
fn proc_pidinfo__taskinfo_sizes_are_what_statm_says() {
    let mut child = sleeper();
    let pid = child.id();
    let mut ti = proc_taskinfo::default();
    // SAFETY: `ti` is a `proc_taskinfo`, the size given.
    let n = unsafe {
        slurm_shim::emulate::libproc::slurm_shim_proc_pidinfo(
            pid as i32,
            PROC_PIDTASKINFO,
            0,
            (&raw mut ti).cast(),
            std::mem::size_of::<proc_taskinfo>() as i32,
        )
    };
    let statm: Vec<u64> = proc_text(pid, "statm")
        .split_whitespace()
        .map(|v| v.parse().expect("statm number"))
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(n as usize, std::mem::size_of::<proc_taskinfo>());
    let page = slurm_shim::emulate::procfs::page_size();
    assert_eq!(
        ti.pti_virtual_size,
        statm[0] * page + slurm_shim::emulate::machine::BASELINE_VSIZE,
        "virtual size: statm's size plus the modelled baseline"
    );
    // stat's rss reads the mm's per-CPU counters without summing them (Linux 6.2+), statm
    // sums them: they differ by at most one batch (max(32, 2 * CPUs) pages) per CPU.
    // SAFETY: sysconf has no memory-safety preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as u64;
    let slack = cpus * (2 * cpus).max(32) * page;
    assert!(
        ti.pti_resident_size.abs_diff(statm[1] * page) <= slack,
        "resident {} is not statm's {} within {slack} bytes",
        ti.pti_resident_size,
        statm[1] * page
    );
}

#[test]
fn procfs__read_into_gives_a_whole_status_file_in_one_call() {
    let mut child = sleeper();
    let pid = child.id();
    let mut path = [0u8; 64];
    let mut buf = [0u8; 4096];
    let cpath =
        slurm_shim::emulate::procfs::proc_path(pid as i32, "status", &mut path).expect("path fits");
    let ours = slurm_shim::emulate::procfs::read_into(cpath, &mut buf).map(str::to_owned);
    let std_read = proc_text(pid, "status");
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        ours.as_deref().map(|t| t.lines().count()),
        Some(std_read.lines().count()),
        "read_into cut the file short"
    );
    assert!(ours.is_some_and(|t| t.ends_with('\n') && t.contains("VmHWM:")));
}

#[test]
fn procfs__path_is_built_in_place_and_refused_when_too_long() {
    let mut buf = [0u8; 64];
    assert_eq!(
        slurm_shim::emulate::procfs::proc_path(4242, "io", &mut buf).map(|c| c.to_bytes()),
        Some(&b"/proc/4242/io"[..])
    );
    let long = "x".repeat(60);
    assert!(slurm_shim::emulate::procfs::proc_path(4242, &long, &mut buf).is_none());
}
