//! Helpers the unit tests of every driver crate share (compiled for tests, or with the
//! `testing` feature for the other crates' tests).

use std::path::Path;
use xshell::{Shell, cmd};

/// Writes `text` to `path`, creating its directories.
pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The file at `path` holds exactly `want` (the message names the file).
pub fn assert_file(path: &Path, want: &str) {
    let have = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(have, want, "{}", path.display());
}

/// A temporary directory and the path `rel` below it: the usual start of a test that
/// works on files (the directory lives as long as the first value).
pub fn scratch(rel: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(rel);
    (d, p)
}

/// Compiles a C test harness: `cc -std=gnu11 -Wall -Werror ARGS...`; the test fails if it
/// does not build.
pub fn cc(sh: &Shell, args: &[&std::ffi::OsStr]) {
    cmd!(sh, "cc -std=gnu11 -Wall -Werror {args...}")
        .quiet()
        .run()
        .unwrap();
}

/// A shell if every program is on the PATH; `None` (the reason printed: the calling test
/// is skipped) if not.
pub fn shell_with(programs: &[&str]) -> Option<Shell> {
    let sh = Shell::new().unwrap();
    have(&sh, programs).then_some(sh)
}

/// Every line of `want` is one of `have`; the message names the one missing.
pub fn assert_has_lines<S: AsRef<str> + std::fmt::Debug>(have: &[S], want: &[&str]) {
    for w in want {
        assert!(
            have.iter().any(|h| h.as_ref() == *w),
            "{w} missing: {have:?}"
        );
    }
}

/// `text` mentions every one of `words`; the message names the first missing and the text.
pub fn assert_mentions(text: &str, words: &[&str]) {
    for w in words {
        assert!(text.contains(w), "{w:?} missing: {text}");
    }
}

/// Runs `c`, which must succeed (the message: `what` and its stderr); its output.
pub fn output_ok(c: &mut std::process::Command, what: &str) -> std::process::Output {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Whether every program is on the PATH; if not, prints why the calling test is skipped.
pub fn have(sh: &Shell, programs: &[&str]) -> bool {
    let missing: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|p| !crate::util::process::on_path(sh, p))
        .collect();
    if !missing.is_empty() {
        eprintln!("SKIP: {} not installed", missing.join(", "));
    }
    missing.is_empty()
}

/// `git -C repo ARGS...` with a fixed identity; its trimmed output.
pub fn git(sh: &Shell, repo: &Path, args: &[&str]) -> String {
    cmd!(
        sh,
        "git -C {repo} -c user.name=t -c user.email=t@example.org {args...}"
    )
    .quiet()
    .read()
    .unwrap()
}

/// `git init` in `repo`, then one commit of everything in it; the commit id.
pub fn git_commit_all(sh: &Shell, repo: &Path, message: &str) -> String {
    if !repo.join(".git").exists() {
        git(sh, repo, &["init", "-q"]);
    }
    git(sh, repo, &["add", "."]);
    git(sh, repo, &["commit", "-q", "-m", message]);
    git(sh, repo, &["rev-parse", "HEAD"])
}

/// A `configure.ac` of an automake project (`extra` before `AC_CONFIG_FILES`) and an empty
/// `Makefile.am` in `tree`.
pub fn automake_tree(tree: &Path, extra: &str) {
    write(
        &tree.join("configure.ac"),
        &format!(
            "AC_INIT([t], [1])\nAM_INIT_AUTOMAKE([foreign])\n{extra}AC_CONFIG_FILES([Makefile])\nAC_OUTPUT\n"
        ),
    );
    write(&tree.join("Makefile.am"), "");
}
