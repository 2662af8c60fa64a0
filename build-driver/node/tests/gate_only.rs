#![allow(non_snake_case)]
//! Every program the node tool starts goes through the gate (`driver_common::gate::Program`):
//! no other way of starting one in `build-driver/node` or `build-driver/common`, outside
//! tests and the gate itself. Each allowed exception below says why it is no root path.

use std::path::{Path, PathBuf};

/// What starts a program without the gate.
const STARTERS: &[&str] = &[
    "Command::new(",
    "cmd!(",
    "execv",
    "execve(",
    "fexecve",
    "posix_spawn",
    "libc::system(",
];

/// Files that may start programs, and why.
const ALLOWED: &[(&str, &str)] = &[
    ("common/src/gate/program/mod.rs", "the gate itself"),
    (
        "common/src/testing.rs",
        "test helpers (the `testing` feature, dev-dependencies only)",
    ),
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "tests") {
                sources(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The text of a source file that is not test code: test files are left out, and a file's
/// inline `#[cfg(test)] mod` block (last in the file, by the house's rule) is cut off.
fn non_test(p: &Path) -> Option<String> {
    let name = p.file_name()?.to_str()?;
    if matches!(name, "tests.rs" | "attacks.rs") {
        return None;
    }
    let text = std::fs::read_to_string(p).ok()?;
    let cut = text
        .match_indices("#[cfg(test)]\nmod tests {")
        .map(|(i, _)| i)
        .next()
        .unwrap_or(text.len());
    Some(text[..cut].to_string())
}

/// `(file, line, starter)` of every start outside the gate under `root`'s crates.
fn starts(root: &Path) -> Vec<(String, usize, &'static str)> {
    let mut files = Vec::new();
    for c in ["node/src", "common/src"] {
        sources(&root.join(c), &mut files);
    }
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        if ALLOWED.iter().any(|(a, _)| *a == rel) {
            continue;
        }
        let Some(text) = non_test(&f) else { continue };
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for s in STARTERS {
                if line.contains(s) {
                    found.push((rel.clone(), n + 1, *s));
                }
            }
        }
    }
    found
}

fn driver_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn gate__no_program_is_started_but_through_the_gate() {
    let found = starts(&driver_root());
    assert!(
        found.is_empty(),
        "programs started without driver_common::gate::Program (check them with \
         Program::checked/system and start them with .command()):\n{found:#?}"
    );
}

#[test]
fn gate__the_scan_finds_a_start_outside_the_gate() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("node/src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(d.path().join("common/src")).unwrap();
    std::fs::write(
        src.join("sleep.rs"),
        "fn pmset() {\n    let c = std::process::Command::new(\"/usr/bin/pmset\");\n}\n\
         #[cfg(test)]\nmod tests {\n    fn t() { std::process::Command::new(\"true\"); }\n}\n",
    )
    .unwrap();
    let found = starts(d.path());
    assert_eq!(
        found,
        vec![("node/src/sleep.rs".to_string(), 2, "Command::new(")]
    );
}
