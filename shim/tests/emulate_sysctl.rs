//! `sysctl`/`sysctlbyname` (shim/src/emulate/sysctl.rs) and the stand-in
//! shim/include/emulate/sys/sysctl.h: the layout the C side sees is the Rust side's and the
//! macOS SDK's (when zig is installed), and a darwin-compiled C program that queries as
//! patch 0013 and slurmstepd's `_wait_extern_pid` do gets what /proc says.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use std::process::Command;

use slurm_shim::emulate::procfs::ProcStat;
use slurm_shim::emulate::sysctl::*;

#[test]
fn sysctl__kinfo_proc_has_the_sdk_size() {
    assert_eq!(std::mem::size_of::<kinfo_proc>(), KINFO_PROC_SIZE);
}

#[test]
fn sysctl__linux_states_map_to_macos_states() {
    assert_eq!(mac_state(b'R'), SRUN);
    assert_eq!(mac_state(b'S'), SSLEEP);
    assert_eq!(mac_state(b'D'), SSLEEP);
    assert_eq!(mac_state(b'T'), SSTOP);
    assert_eq!(mac_state(b'Z'), SZOMB);
}

#[test]
fn sysctl__pgrp_selects_the_group_members() {
    let p = |pid, pgrp| ProcStat {
        pid,
        pgrp,
        ..Default::default()
    };
    let all = vec![p(10, 10), p(11, 10), p(12, 12)];
    let g: Vec<i32> = select(mib::KERN_PROC_PGRP, 10, all.clone().into_iter())
        .iter()
        .map(|s| s.pid)
        .collect();
    assert_eq!(g, [10, 11]);
    assert_eq!(select(mib::KERN_PROC_PID, 12, all.into_iter()).len(), 1);
}

#[test]
fn sysctlbyname__unknown_and_apple_silicon_absent_names_are_enoent() {
    assert_eq!(
        query_of_name(b"hw.cpufrequency"),
        Err(slurm_shim::errno::Errno(libc::ENOENT))
    );
    assert!(query_of_name(b"hw.memsize").is_ok());
}

/// `sizeof`/`offsetof` of the stand-in as C sees it.
const LAYOUT: &str = r#"#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/sysctl.h>

int main(void)
{
	printf("%zu %zu %zu %zu %zu %zu %zu\n", sizeof(struct kinfo_proc),
	       offsetof(struct kinfo_proc, kp_proc.p_stat),
	       offsetof(struct kinfo_proc, kp_proc.p_pid),
	       offsetof(struct kinfo_proc, kp_proc.p_comm),
	       offsetof(struct kinfo_proc, kp_eproc.e_ppid),
	       offsetof(struct kinfo_proc, kp_eproc.e_pgid),
	       offsetof(struct kinfo_proc, kp_eproc.e_ucred.cr_uid));
	return 0;
}
"#;

fn rust_layout() -> String {
    use std::mem::offset_of;
    let e = offset_of!(kinfo_proc, kp_eproc);
    format!(
        "{} {} {} {} {} {} {}\n",
        std::mem::size_of::<kinfo_proc>(),
        offset_of!(extern_proc, p_stat),
        offset_of!(extern_proc, p_pid),
        offset_of!(extern_proc, p_comm),
        e + offset_of!(eproc, e_ppid),
        e + offset_of!(eproc, e_pgid),
        e + offset_of!(eproc, e_ucred) + offset_of!(ucred, cr_uid)
    )
}

#[test]
fn sysctl__stand_in_layout_is_the_rust_layout() {
    let run = common::darwin_c::run("kinfo-layout", LAYOUT, &[], &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, rust_layout());
}

#[test]
fn sysctl__stand_in_layout_is_the_macos_sdk_layout() {
    // The SDK headers zig bundles (any-darwin-any), compiled for arm64 macOS: the object's
    // data section holds the numbers; compare them by evaluating them as static asserts.
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
    let want: Vec<usize> = rust_layout()
        .split_whitespace()
        .map(|s| s.parse().expect("number"))
        .collect();
    let src = format!(
        "#include <stddef.h>\n#include <sys/types.h>\n#include <sys/sysctl.h>\n\
         _Static_assert(sizeof(struct kinfo_proc) == {}, \"size\");\n\
         _Static_assert(offsetof(struct kinfo_proc, kp_proc.p_stat) == {}, \"p_stat\");\n\
         _Static_assert(offsetof(struct kinfo_proc, kp_proc.p_pid) == {}, \"p_pid\");\n\
         _Static_assert(offsetof(struct kinfo_proc, kp_proc.p_comm) == {}, \"p_comm\");\n\
         _Static_assert(offsetof(struct kinfo_proc, kp_eproc.e_ppid) == {}, \"e_ppid\");\n\
         _Static_assert(offsetof(struct kinfo_proc, kp_eproc.e_pgid) == {}, \"e_pgid\");\n\
         _Static_assert(offsetof(struct kinfo_proc, kp_eproc.e_ucred.cr_uid) == {}, \"cr_uid\");\n\
         _Static_assert(CTL_KERN == 1 && KERN_PROC == 14 && KERN_PROC_PID == 1 && KERN_PROC_PGRP == 2 && KERN_MAXFILESPERPROC == 29 && HW_MEMSIZE == 24 && SZOMB == 5, \"mib\");\n\
         int slurm_shim_layout_probe;\n",
        want[0], want[1], want[2], want[3], want[4], want[5], want[6]
    );
    common::darwin_c::compile_against_sdk("kinfo-sdk", &src, "the stand-in");
}

/// patch 0013's group listing and `_wait_extern_pid`'s parent lookup, reduced.
const QUERY: &str = r#"#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/sysctl.h>
#include <unistd.h>

int main(void)
{
	int mib[4] = { CTL_KERN, KERN_PROC, KERN_PROC_PGRP, (int) getpgrp() };
	size_t len = 0;
	struct kinfo_proc *kp, one;
	int found = 0;
	unsigned long long mem = 0;
	int files = 0;
	if (sysctl(mib, 4, NULL, &len, NULL, 0) || !len) return 1;
	kp = malloc(len);
	if (sysctl(mib, 4, kp, &len, NULL, 0)) return 2;
	for (size_t i = 0; i < len / sizeof(*kp); i++)
		if (kp[i].kp_proc.p_pid == getpid() && kp[i].kp_proc.p_stat != SZOMB)
			found = 1;
	mib[2] = KERN_PROC_PID; mib[3] = getpid(); len = sizeof(one);
	if (sysctl(mib, 4, &one, &len, NULL, 0) || len != sizeof(one)) return 3;
	if (one.kp_eproc.e_ppid != getppid() || one.kp_eproc.e_pgid != getpgrp()) return 4;
	mib[3] = 0x7ffffff0; len = sizeof(one);
	if (sysctl(mib, 4, &one, &len, NULL, 0) || len != 0) return 5; /* no such pid: 0 bytes */
	len = sizeof(mem);
	if (sysctlbyname("hw.memsize", &mem, &len, NULL, 0) || len != 8 || !mem) return 6;
	len = sizeof(files);
	if (sysctlbyname("kern.maxfilesperproc", &files, &len, NULL, 0) || files < 10240) return 7;
	printf("%d\n", found);
	return 0;
}
"#;

#[test]
fn sysctl__darwin_translation_unit_lists_its_group_and_parent() {
    let run = common::darwin_c::run("sysctl-query", QUERY, &[], &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "1\n");
    assert!(run.log.contains("sysctl (macOS)"), "{}", run.log);
}

/// slurmd's node metrics (patch 0052), reduced: the CPU's brand and its perf levels.
const CPU: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/sysctl.h>

static int get(const char *name)
{
	int v = -1;
	size_t len = sizeof(v);
	if (sysctlbyname(name, &v, &len, NULL, 0))
		return errno == ENOENT ? -2 : -3;
	return len == sizeof(v) ? v : -4;
}

int main(void)
{
	char brand[64], name[32], tiny[4];
	size_t len = sizeof(brand), nlen = sizeof(name), tlen = sizeof(tiny);
	if (sysctlbyname("machdep.cpu.brand_string", brand, &len, NULL, 0))
		return 1;
	if (len != strlen(brand) + 1)
		return 2; /* the NUL is part of the answer */
	if (sysctlbyname("hw.perflevel0.name", name, &nlen, NULL, 0))
		return 3;
	if (!sysctlbyname("machdep.cpu.brand_string", tiny, &tlen, NULL, 0) || errno != ENOMEM)
		return 4;
	printf("%s|%d|%d/%d|%d/%d|%s\n", brand, get("hw.nperflevels"),
	       get("hw.perflevel0.physicalcpu"), get("hw.perflevel0.logicalcpu"),
	       get("hw.perflevel1.physicalcpu"), get("hw.perflevel1.logicalcpu"), name);
	return 0;
}
"#;

#[test]
fn sysctlbyname__default_mac_is_m4_pro_with_ten_performance_and_four_efficiency_cores() {
    let run = common::darwin_c::run(
        "sysctl-cpu-default",
        CPU,
        &[],
        &[("SLURM_SHIM_MAC_HARDWARE", "")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Apple M4 Pro|2|10/10|4/4|Performance\n");
}

#[test]
fn sysctlbyname__the_hardware_file_sets_the_cpu_and_one_level_hides_perflevel1() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("sysctl-hw");
    std::fs::create_dir_all(&dir).expect("dir");
    let hw = dir.join("intel");
    std::fs::write(
        &hw,
        "machdep.cpu.brand_string = Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz\n\
         hw.nperflevels = 1\nhw.perflevel0.physicalcpu = 8\nhw.perflevel0.logicalcpu = 16\n",
    )
    .expect("write");
    let run = common::darwin_c::run(
        "sysctl-cpu-file",
        CPU,
        &[],
        &[("SLURM_SHIM_MAC_HARDWARE", hw.to_str().expect("utf-8"))],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run.stdout,
        "Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz|1|8/16|-2/-2|Performance\n"
    );
    std::fs::write(&hw, "hw.nperflevels = two\n").expect("write");
    let run = common::darwin_c::run(
        "sysctl-cpu-broken",
        CPU,
        &[],
        &[("SLURM_SHIM_MAC_HARDWARE", hw.to_str().expect("utf-8"))],
    );
    assert_eq!(run.code, Some(1), "a broken file fails the query: {run:?}");
    assert!(
        run.log.contains("cannot be read or parsed -> EIO"),
        "{}",
        run.log
    );
}
