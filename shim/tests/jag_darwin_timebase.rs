//! jobacct_gather/darwin's own conversion of Mach absolute time units (issue 13 item 1): the
//! plugin's `timebase`, `_units_to_usec()` and `init()` are taken as text from
//! the plugin's one source (`patches/src/src/plugins/jobacct_gather/darwin/jobacct_gather_darwin.c`), compiled in
//! darwin-personality mode against the shim's stand-in headers and linked to the shim, with
//! a few stand-ins for Slurm's logging. The program measures a child that burnt 0.6 s of CPU
//! with `proc_pid_rusage(RUSAGE_INFO_V4)` (the shim's answer, in the units of
//! `SLURM_SHIM_MACH_TIMEBASE`), converts user + system time with the plugin's function and
//! prints it beside the child's `/proc/<pid>/stat` utime + stime. With a fake timebase of
//! 125/3 (Apple Silicon) and of 1/1 (Intel) the two must agree: a plugin that ignored the
//! timebase (HTCondor's reading: units as nanoseconds) reports 3/125 of the time under 125/3.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use std::path::{Path, PathBuf};

/// Where the plugin's source lives once for every line (issue 36: our own C as files).
const PLUGIN: &str = "patches/src/src/plugins/jobacct_gather/darwin/jobacct_gather_darwin.c";

/// The plugin's source, `patches/src/`'s file (the definitions this test takes have no
/// per-line `SLURM_VERSION` block; `line` names the line in messages).
fn plugin_source(line: &str) -> String {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(PLUGIN);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{} ({line}): {e}", path.display()))
}

/// From the line that starts with `head` to the first line that is `}` (a whole top-level
/// definition), or the one line when `head` ends with `;`.
fn definition<'a>(src: &'a str, head: &str, line: &str) -> &'a str {
    let at = src
        .find(&format!("\n{head}"))
        .unwrap_or_else(|| panic!("{line}, {PLUGIN}: no definition starting `{head}`"))
        + 1;
    let end = if head.ends_with(';') {
        at + head.len()
    } else {
        at + src[at..]
            .find("\n}\n")
            .unwrap_or_else(|| panic!("{line}, {PLUGIN}: `{head}` never closes"))
            + 2
    };
    &src[at..end]
}

/// The plugin's conversion and its `init()`, with stand-ins for what they use of Slurm, and a
/// `main` that measures a child as `_measure()` does.
fn harness(line: &str) -> String {
    let src = plugin_source(line);
    let pieces = [
        definition(
            &src,
            "static mach_timebase_info_data_t timebase = { 1, 1 };",
            line,
        ),
        definition(&src, "static uint64_t _units_to_usec(uint64_t units)", line),
        definition(&src, "extern int init(void)", line),
    ];
    format!("{HEAD}\n{}\n{MAIN}", pieces.join("\n\n"))
}

const HEAD: &str = r#"#define _GNU_SOURCE
#include <libproc.h>
#include <mach/mach_time.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What the plugin's init() uses of Slurm. */
#define SLURM_SUCCESS 0
#define SLURM_ERROR -1
#define error(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr))
#define debug(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr))
static const char plugin_name[] = "Job accounting gather macOS plugin";
static const char plugin_type[] = "jobacct_gather/darwin";
static bool running_in_slurmstepd(void) { return true; }
static void jag_common_init(long frequency) { (void) frequency; }
extern int init(void);
"#;

const MAIN: &str = r#"
static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	struct rusage_info_v4 ri;
	unsigned long long utime, stime;
	int ready[2], status;
	char c, path[64];
	volatile unsigned long spin = 0;
	FILE *f;
	pid_t child;

	if (pipe(ready))
		return 10;
	if (!(child = fork())) {
		while (cpu_seconds() < 0.6)
			spin++;
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	if (read(ready[0], &c, 1) != 1)
		return 11;
	if (init() != SLURM_SUCCESS) {
		printf("init-failed\n");
		return 0;
	}
	if (proc_pid_rusage(child, RUSAGE_INFO_V4, (rusage_info_t *) &ri))
		return 12;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int) child);
	if (!(f = fopen(path, "r")) ||
	    (fscanf(f, "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
		    &utime, &stime) != 2))
		return 13;
	fclose(f);
	printf("timebase %u/%u plugin-usec %llu proc-ticks %llu\n", timebase.numer,
	       timebase.denom,
	       (unsigned long long) (_units_to_usec(ri.ri_user_time + ri.ri_child_user_time) +
				     _units_to_usec(ri.ri_system_time + ri.ri_child_system_time)),
	       utime + stime);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	return 0;
}
"#;

/// Runs the plugin's conversion of `line` under `timebase`; returns (the timebase it read,
/// the plugin's microseconds, /proc's microseconds).
fn convert(line: &str, timebase: &str) -> (String, u64, u64) {
    let name = format!("jag-timebase-{}", line.replace('.', "-"));
    let exe = common::darwin_c::build(&name, &harness(line), &[]);
    // The child's /proc/<pid>/stat is read by the harness itself: the path-hiding model is
    // off for it (the shim's own procfs reads never go through it).
    let env = [
        ("SLURM_SHIM_MACH_TIMEBASE", timebase),
        ("SLURM_SHIM_EMULATION_OFF", "hidden-paths"),
    ];
    let run = common::darwin_c::exec(&name, &exe, &[], &env);
    assert_eq!(run.code, Some(0), "{line} {timebase}: {run:?}");
    let w: Vec<&str> = run.stdout.split_whitespace().collect();
    assert!(
        w.len() == 6 && w[0] == "timebase" && w[2] == "plugin-usec" && w[4] == "proc-ticks",
        "{line} {timebase}: unexpected output {run:?}"
    );
    let plugin: u64 = w[3].parse().expect("plugin-usec");
    let ticks: u64 = w[5].parse().expect("proc-ticks");
    // SAFETY: sysconf only reads a constant of the C library.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    assert!(hz > 0, "sysconf(_SC_CLK_TCK) = {hz}");
    (w[1].to_string(), plugin, ticks * 1_000_000 / hz as u64)
}

fn check_line(line: &str) {
    for timebase in ["125/3", "1/1"] {
        let (seen, plugin, proc) = convert(line, timebase);
        assert_eq!(
            seen, timebase,
            "{line}: the plugin's init() read another timebase"
        );
        assert!(proc >= 500_000, "{line}: the child burnt only {proc} us");
        // The shim turns /proc's ticks into units, the plugin turns them back: equal but for
        // rounding (1 ms allowed); ignoring the timebase gives 3/125 of it under 125/3.
        assert!(
            plugin.abs_diff(proc) <= 1_000,
            "{line} timebase {timebase}: jobacct_gather/darwin converted the child's CPU to {plugin} us, /proc says {proc} us"
        );
    }
}

#[test]
fn jobacct_gather_darwin__converts_mach_units_with_the_timebase_24_11() {
    check_line("24.11");
}

#[test]
fn jobacct_gather_darwin__converts_mach_units_with_the_timebase_26_11() {
    check_line("26.11");
}
