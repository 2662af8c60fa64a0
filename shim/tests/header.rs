//! The generated header `include/slurm_shim.h`: it compiles alone in every mode, its types
//! have the layout the Rust side exports (checked from C with `_Static_assert`, as libc's
//! ctest does), the darwin-emulation mode really re-targets glibc's calls, and a C program
//! written against the Linux names becomes an arm64 Mach-O executable when compiled with the
//! header and linked against the cross-built `libslurm_shim.a`.
//!
//! The macOS-target checks use zig as the C compiler (PyPI `ziglang`, pinned in `.ci/run`).
//! Without it they print why they did not run; with `SLURM_SHIM_REQUIRE_ZIG=1` (set by CI)
//! a missing zig is a failure.
#![allow(non_snake_case)]

use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use slurm_shim::cpuset::slurm_shim_cpu_set_t;
use slurm_shim::peercred::slurm_shim_ucred;
use slurm_shim::timer::{slurm_shim_itimerspec, slurm_shim_timer_t};
use slurm_shim::uptime::slurm_shim_sysinfo;

const STRICT: &[&str] = &["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"];

fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("header-tests")
        .join(name);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Runs a compiler command and panics with its output when it fails.
fn must_succeed(mut cmd: Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {cmd:?}\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `python3 -m ziglang cc`, if the PyPI package is installed.
fn zig_cc() -> Option<Command> {
    let probe = Command::new("python3")
        .args(["-m", "ziglang", "version"])
        .output();
    match probe {
        Ok(o) if o.status.success() => {
            let mut c = Command::new("python3");
            c.args(["-m", "ziglang", "cc"]);
            Some(c)
        }
        _ => {
            let msg = "zig (PyPI package ziglang) is not installed: `pip install ziglang` (version in .ci/run)";
            if std::env::var_os("SLURM_SHIM_REQUIRE_ZIG").is_some() {
                panic!("{msg}");
            }
            eprintln!("SKIP: {msg}");
            None
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write test source");
    p
}

const ALONE: &str = "#include \"slurm_shim.h\"\nint slurm_shim_header_test_unit;\n";

#[test]
fn header__compiles_alone_on_linux_native_mode() {
    let dir = scratch("alone-native");
    let src = write(&dir, "alone.c", ALONE);
    let mut cc = Command::new("cc");
    cc.args(STRICT)
        .arg("-I")
        .arg(include_dir())
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(dir.join("a.o"));
    must_succeed(cc, "native-mode header");
}

#[test]
fn header__compiles_alone_on_linux_emulation_mode() {
    let dir = scratch("alone-emulate");
    let src = write(&dir, "alone.c", ALONE);
    let mut cc = Command::new("cc");
    cc.args(STRICT)
        .arg("-DSLURM_SHIM_EMULATE_DARWIN")
        .arg("-I")
        .arg(include_dir())
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(dir.join("a.o"));
    must_succeed(cc, "emulation-mode header");
}

#[test]
fn header__compiles_alone_for_aarch64_and_x86_64_macos() {
    for target in ["aarch64-macos", "x86_64-macos"] {
        let Some(mut cc) = zig_cc() else { return };
        let dir = scratch(&format!("alone-{target}"));
        let src = write(&dir, "alone.c", ALONE);
        cc.args(["-target", target])
            .args(STRICT)
            .arg("-I")
            .arg(include_dir())
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(dir.join("a.o"));
        must_succeed(cc, &format!("header for {target}"));
    }
}

/// A translation unit that, like Slurm's, defines `_GNU_SOURCE` itself after the
/// force-included header and then calls the Linux names.
const EMULATED_CALLS: &str = r#"#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int use_them(int fd, cpu_set_t *set, timer_t *t, struct sigevent *sev)
{
	int p[2];
	uid_t r, e, s;
	char buf[64];
	/* strerror_r must still be the GNU flavour: the header fixed no feature macro. */
	char *msg = strerror_r(1, buf, sizeof(buf));
	return pipe2(p, O_CLOEXEC) + accept4(fd, NULL, NULL, SOCK_CLOEXEC) +
	       socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) + eventfd(0, EFD_CLOEXEC) +
	       timer_create(CLOCK_REALTIME, sev, t) + sched_getaffinity(0, sizeof(*set), set) +
	       setresuid(0, 0, -1) + getresuid(&r, &e, &s) + (msg != NULL);
}
"#;

#[test]
fn header__emulation_mode_links_the_linux_names_to_the_shim() {
    let dir = scratch("emulate-calls");
    let src = write(&dir, "calls.c", EMULATED_CALLS);
    let obj = dir.join("calls.o");
    let mut cc = Command::new("cc");
    cc.args(["-std=gnu99", "-Wall", "-Wextra", "-Werror"])
        .args(["-include"])
        .arg(include_dir().join("slurm_shim.h"))
        .arg("-DSLURM_SHIM_EMULATE_DARWIN")
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(&obj);
    must_succeed(cc, "emulation-mode translation unit");
    let nm = Command::new("nm")
        .arg("-u")
        .arg(&obj)
        .output()
        .expect("run nm");
    let undefined = String::from_utf8_lossy(&nm.stdout);
    let names: Vec<&str> = undefined.split_whitespace().filter(|w| *w != "U").collect();
    for linux in [
        "pipe2",
        "accept4",
        "socket",
        "eventfd",
        "timer_create",
        "sched_getaffinity",
        "setresuid",
        "getresuid",
    ] {
        let shim = format!("slurm_shim_{linux}");
        assert!(
            names.contains(&shim.as_str()),
            "{shim} not referenced; nm -u: {names:?}"
        );
        assert!(
            !names.contains(&linux),
            "glibc's {linux} still referenced; nm -u: {names:?}"
        );
    }
    assert!(names.contains(&"strerror_r") || names.contains(&"__xpg_strerror_r"));
    assert!(
        !names.contains(&"__xpg_strerror_r"),
        "strerror_r flavour changed: the header fixed glibc's feature set"
    );
}

/// A caller written against Linux's `int fexecve(int, char *const[], char *const[])`
/// (unistd.h), calling it and taking its address as that type.
const FEXECVE_CALLER: &str = r#"#define _GNU_SOURCE
#include <unistd.h>

int (*const linux_fexecve)(int, char *const[], char *const[]) = fexecve;

int run_fd(int fd, char *const argv[], char *const envp[])
{
	return fexecve(fd, argv, envp);
}
"#;

#[test]
fn header__fexecve_has_linuxs_prototype_in_emulation_mode_and_for_macos() {
    let dir = scratch("fexecve-emulate");
    let src = write(&dir, "fexecve.c", FEXECVE_CALLER);
    let mut cc = Command::new("cc");
    cc.args(["-std=gnu99", "-Wall", "-Wextra", "-Werror"])
        .arg("-include")
        .arg(include_dir().join("slurm_shim.h"))
        .arg("-DSLURM_SHIM_EMULATE_DARWIN")
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(dir.join("fexecve.o"));
    must_succeed(cc, "fexecve caller, emulation mode");
    for target in ["aarch64-macos", "x86_64-macos"] {
        let Some(mut cc) = zig_cc() else { return };
        let dir = scratch(&format!("fexecve-{target}"));
        let src = write(&dir, "fexecve.c", FEXECVE_CALLER);
        cc.args([
            "-target",
            target,
            "-std=gnu99",
            "-Wall",
            "-Wextra",
            "-Werror",
        ])
        .arg("-include")
        .arg(include_dir().join("slurm_shim.h"))
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(dir.join("fexecve.o"));
        must_succeed(cc, &format!("fexecve caller for {target}"));
    }
}

/// `_Static_assert`s of the Rust layouts, for a C compiler to check.
fn layout_asserts(
    cpu_set: &str,
    itimerspec: &str,
    ucred: &str,
    timer: &str,
    sysinfo: &str,
) -> String {
    let mut s = String::new();
    let mut a = |expr: String, n: usize| {
        s.push_str(&format!(
            "_Static_assert({expr} == {n}, \"{expr} differs from Rust ({n})\");\n"
        ));
    };
    a(
        format!("sizeof({cpu_set})"),
        size_of::<slurm_shim_cpu_set_t>(),
    );
    a(
        format!("_Alignof({cpu_set})"),
        std::mem::align_of::<slurm_shim_cpu_set_t>(),
    );
    a(
        format!("sizeof({itimerspec})"),
        size_of::<slurm_shim_itimerspec>(),
    );
    a(
        format!("offsetof({itimerspec}, it_interval)"),
        offset_of!(slurm_shim_itimerspec, it_interval),
    );
    a(
        format!("offsetof({itimerspec}, it_value)"),
        offset_of!(slurm_shim_itimerspec, it_value),
    );
    a(format!("sizeof({ucred})"), size_of::<slurm_shim_ucred>());
    a(
        format!("offsetof({ucred}, pid)"),
        offset_of!(slurm_shim_ucred, pid),
    );
    a(
        format!("offsetof({ucred}, uid)"),
        offset_of!(slurm_shim_ucred, uid),
    );
    a(
        format!("offsetof({ucred}, gid)"),
        offset_of!(slurm_shim_ucred, gid),
    );
    a(format!("sizeof({timer})"), size_of::<slurm_shim_timer_t>());
    a(
        format!("sizeof({sysinfo})"),
        size_of::<slurm_shim_sysinfo>(),
    );
    a(
        format!("offsetof({sysinfo}, uptime)"),
        offset_of!(slurm_shim_sysinfo, uptime),
    );
    a(
        format!("offsetof({sysinfo}, loads)"),
        offset_of!(slurm_shim_sysinfo, loads),
    );
    a(
        format!("offsetof({sysinfo}, totalram)"),
        offset_of!(slurm_shim_sysinfo, totalram),
    );
    a(
        format!("offsetof({sysinfo}, procs)"),
        offset_of!(slurm_shim_sysinfo, procs),
    );
    a(
        format!("offsetof({sysinfo}, mem_unit)"),
        offset_of!(slurm_shim_sysinfo, mem_unit),
    );
    s
}

#[test]
fn header__linux_types_have_the_rust_layout() {
    // In emulation mode the caller passes glibc's own types to the shim.
    let dir = scratch("abi-linux");
    let text = format!(
        "#define _GNU_SOURCE\n#include <sched.h>\n#include <time.h>\n#include <stddef.h>\n\
         #include <sys/socket.h>\n#include <sys/sysinfo.h>\n{}",
        layout_asserts(
            "cpu_set_t",
            "struct itimerspec",
            "struct ucred",
            "timer_t",
            "struct sysinfo"
        )
    );
    let src = write(&dir, "abi.c", &text);
    let mut cc = Command::new("cc");
    cc.args(["-std=gnu11", "-Wall", "-Werror", "-c"])
        .arg(&src)
        .arg("-o")
        .arg(dir.join("abi.o"));
    must_succeed(cc, "glibc layout vs Rust");
}

#[test]
fn header__macos_types_have_the_rust_layout() {
    // The Rust values are the host's (x86_64 Linux); aarch64-apple-darwin is LP64 with the
    // same sizes and alignments for these types, which this assertion pins down.
    assert_eq!(
        size_of::<libc::c_long>(),
        8,
        "the layout test assumes an LP64 host"
    );
    for target in ["aarch64-macos", "x86_64-macos"] {
        let Some(mut cc) = zig_cc() else { return };
        let dir = scratch(&format!("abi-{target}"));
        let text = format!(
            "#include \"slurm_shim.h\"\n{}",
            layout_asserts(
                "cpu_set_t",
                "struct itimerspec",
                "struct ucred",
                "timer_t",
                "struct sysinfo"
            )
        );
        let src = write(&dir, "abi.c", &text);
        cc.args(["-target", target, "-std=c11", "-Wall", "-Werror", "-I"])
            .arg(include_dir())
            .arg("-c")
            .arg(&src)
            .arg("-o")
            .arg(dir.join("abi.o"));
        must_succeed(cc, &format!("header layout for {target}"));
    }
}

/// A program written against Linux names only, as Slurm's sources are.
const LINUX_PROGRAM: &str = r#"#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void tick(union sigval v) { (void) v; }

int main(void)
{
	int p[2], sv[2];
	cpu_set_t set;
	timer_t t;
	struct itimerspec its = { { 0, 0 }, { 1, 0 } };
	struct sigevent sev = { 0 };
	uid_t r, e, s;

	sev.sigev_notify = SIGEV_THREAD;
	sev.sigev_notify_function = tick;
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return 1;
	if (eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) < 0)
		return 2;
	if (timer_create(CLOCK_REALTIME, &sev, &t) || timer_settime(t, TIMER_ABSTIME, &its, NULL))
		return 3;
	getresuid(&r, &e, &s);
	printf("%d %d\n", CPU_COUNT(&set), sched_getaffinity(0, sizeof(set), &set));
	return timer_delete(t);
}
"#;

#[test]
fn header__linux_program_links_into_an_arm64_macho_executable() {
    let Some(mut cc) = zig_cc() else { return };
    let dir = scratch("macho");
    // Cross-build the staticlib in a target dir of its own (the outer cargo holds its own).
    let target_dir = dir.join("target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args([
            "build",
            "-p",
            "slurm-shim",
            "--release",
            "--target",
            "aarch64-apple-darwin",
        ])
        .arg("--target-dir")
        .arg(&target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    must_succeed(
        build,
        "cross-build of libslurm_shim.a for aarch64-apple-darwin",
    );
    let lib = target_dir.join("aarch64-apple-darwin/release/libslurm_shim.a");
    assert!(lib.is_file(), "{} missing", lib.display());

    let src = write(&dir, "linux_names.c", LINUX_PROGRAM);
    let exe = dir.join("linux_names");
    cc.args(["-target", "aarch64-macos", "-std=c99", "-Wall", "-Werror"])
        .arg("-include")
        .arg(include_dir().join("slurm_shim.h"))
        .arg("-I")
        .arg(include_dir().join("compat"))
        .arg(&src)
        .arg(&lib)
        .arg("-o")
        .arg(&exe);
    must_succeed(cc, "compile and link for aarch64-macos");
    let bytes = std::fs::read(&exe).expect("read the linked executable");
    assert!(bytes.len() > 16, "output too short");
    let magic = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let cputype = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    let filetype = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
    assert_eq!(magic, 0xfeed_facf, "not a 64-bit Mach-O file");
    assert_eq!(cputype, 0x0100_000c, "not arm64 (CPU_TYPE_ARM64)");
    assert_eq!(filetype, 2, "not an executable (MH_EXECUTE)");
}
