//! Patch 0027's `_darwin_fd_end()` (a static function its fd.c hunk adds, in the main file,
//! for 26.05 and 26.11, and in 24.11's, 25.05's and 25.11's variants): where closeall() on
//! macOS stops closing. Every copy of the function is
//! the main file's; the function is taken from the main file's added lines and compiled as
//! Slurm's darwin build compiles fd.c (darwin personality: the shim's libproc answers from
//! /proc), and for aarch64-macos against the SDK headers zig bundles (lane 4: the macOS
//! declarations it uses exist and match).
//!
//! Before it the bound was getdtablesize(), MIN(soft RLIMIT_NOFILE, kern.maxfilesperproc):
//! tens of thousands of close() calls in each prolog and epilog launcher, which made a
//! darwin node's `srun -n1` about twice as slow as a native one's (docs/RESULTS.md, "Step
//! launch").
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use std::path::Path;

const PATCH: &str = "0027-closeall-bound-by-getdtablesize-on-macos.patch";

/// The lines whose variant of patch 0027 still has the first form (getdtablesize() only):
/// recorded, so that a variant losing the second form fails here, and one gaining it says
/// to shorten the list. None: every line's variant (or the main file) has the second form.
const FIRST_FORM: &[&str] = &[];

/// The `#if defined(__APPLE__)` block the patch adds after fd.c's includes (its added
/// lines, from `#include <libproc.h>` to the `#endif` after the function).
fn added_block(rel: &str) -> String {
    let added = added_lines(rel);
    let from = added
        .iter()
        .position(|l| *l == "#include <libproc.h>")
        .unwrap_or_else(|| panic!("{rel}: no `#include <libproc.h>` added"));
    let to = from
        + added[from..]
            .iter()
            .position(|l| *l == "#endif")
            .unwrap_or_else(|| panic!("{rel}: the block never ends"));
    assert!(
        added[from..to]
            .iter()
            .any(|l| l.starts_with("static int _darwin_fd_end(void)")),
        "{rel}: the block defines no _darwin_fd_end()"
    );
    added[from..to].join("\n") + "\n"
}

/// The main file of patch 0027, relative to the checkout.
fn main_file() -> String {
    format!("patches/{PATCH}")
}

/// The lines a patch file adds, without their `+`.
fn added_lines(rel: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .map(|l| l[1..].to_string())
        .collect()
}

fn header() -> String {
    let main = added_block(&main_file());
    // what fd.c includes before the block
    format!("#include <errno.h>\n#include <stddef.h>\n#include <unistd.h>\n{main}")
}

/// Prints `_darwin_fd_end()` in four states; the child of a process with a second thread
/// closes as closeall() does and reports what is left.
const MAIN: &str = r#"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static void *idle(void *arg)
{
	(void) arg;
	pause();
	return NULL;
}

int main(void)
{
	pthread_t t;
	int low_full = 1, status;
	pid_t child;

	/* only what this program opens: none inherited from the test's environment */
	for (int fd = 3; fd < 65536; fd++)
		close(fd);
	if (dup2(1, 40) != 40 || dup2(1, 100) != 100)
		return 10;
	errno = 1234;
	printf("high %d\n", _darwin_fd_end());
	printf("errno %d\n", errno);
	close(100);
	printf("after-close %d\n", _darwin_fd_end());

	/* every number from 3 to 63 open: the list must not name a closed one above */
	for (int fd = 3; fd <= 63; fd++)
		if (fcntl(fd, F_GETFD) < 0 && dup2(1, fd) != fd)
			low_full = 0;
	printf("dense %d %d\n", low_full, _darwin_fd_end());
	fflush(stdout);

	if (pthread_create(&t, NULL, idle, NULL))
		return 11;
	if ((child = fork()) == 0) {
		int end = _darwin_fd_end(), left = 0;

		for (int fd = 3; fd < end; fd++)
			close(fd);
		for (int fd = 3; fd < 4096; fd++)
			if (fcntl(fd, F_GETFD) >= 0)
				left++;
		printf("child %d %d\n", end, left);
		fflush(stdout);
		_exit(0);
	}
	if (child < 0 || waitpid(child, &status, 0) != child)
		return 12;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 13;
}
"#;

#[test]
fn darwin_fd_end__is_one_past_the_highest_open_descriptor_in_the_darwin_build() {
    let source = format!("#define _GNU_SOURCE\n{}\n{MAIN}", header());
    let run = common::darwin_c::run("darwin-fd-end", &source, &[], &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "high 101",
            "errno 1234",
            "after-close 41",
            "dense 1 64",
            "child 64 0"
        ],
        "{run:?}"
    );
    assert!(
        run.log.contains("proc_pidinfo(PROC_PIDLISTFDS)"),
        "the answer came from the shim's libproc: {}",
        run.log
    );
}

/// Every variant that defines `_darwin_fd_end()` defines the main file's, and calls it where
/// closeall() takes its bound; the variants without it are exactly [`FIRST_FORM`].
#[test]
fn darwin_fd_end__every_copy_is_the_main_files() {
    let main = added_block(&main_file());
    let calls = |rel: &str| {
        added_lines(rel)
            .iter()
            .filter(|l| l.contains("= _darwin_fd_end();"))
            .count()
    };
    let main_file = main_file();
    assert_eq!(
        calls(&main_file),
        1,
        "{main_file}: closeall_except()'s bound"
    );
    let patches = Path::new(env!("CARGO_MANIFEST_DIR")).join("../patches");
    let mut first_form = Vec::new();
    let mut second_form = Vec::new();
    for entry in std::fs::read_dir(&patches).unwrap() {
        let dir = entry.unwrap().path();
        let line = dir.file_name().unwrap().to_string_lossy().into_owned();
        if !dir.join(PATCH).is_file() {
            continue;
        }
        let rel = format!("patches/{line}/{PATCH}");
        if !added_lines(&rel)
            .iter()
            .any(|l| l.contains("_darwin_fd_end"))
        {
            first_form.push(line);
            continue;
        }
        assert_eq!(
            added_block(&rel),
            main,
            "{rel}: its _darwin_fd_end() differs from the main file's"
        );
        assert!(
            calls(&rel) >= 1,
            "{rel}: defines _darwin_fd_end() but never takes it as the bound"
        );
        second_form.push(line);
    }
    first_form.sort();
    second_form.sort();
    println!("second form in the variants of {second_form:?}; first form in {first_form:?}");
    assert_eq!(
        first_form, FIRST_FORM,
        "the variants of patch 0027 without _darwin_fd_end(): update FIRST_FORM when a line gains it"
    );
    assert!(!second_form.is_empty(), "no variant was compared");
}

#[test]
fn darwin_fd_end__compiles_against_the_macos_sdk() {
    let source = format!(
        "{}\nint probe(void) {{ return _darwin_fd_end(); }}\n",
        header()
    );
    common::darwin_c::compile_against_sdk(
        "darwin-fd-end-sdk",
        &source,
        "_darwin_fd_end()'s macOS calls",
    );
}
