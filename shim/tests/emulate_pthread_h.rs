//! `shim/include/emulate/pthread.h` and the pthread models, from C: one program compiled
//! twice, with the darwin personality's flags (`-include slurm_shim.h
//! -DSLURM_SHIM_EMULATE_DARWIN -DSLURM_SHIM_EMULATE_MACOS -Iinclude/emulate`, linked to the release staticlib, as
//! Slurm is built) and natively (glibc alone). Every check states both answers; the
//! program prints one line per check and exits with the number of failures.
//!
//! This is the CI negative check of issue 10: `emulate_pthread_h__darwin_personality_*`
//! fails if a zeroed mutex is not refused with `EINVAL` in the darwin personality.
#![allow(non_snake_case)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use slurm_shim::emulate::pthread_sig as sig;

fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("emulate-pthread")
        .join(name);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// The layout and value claims of `pthread_sig` and `pthread.h`, for the C compiler.
fn layout_asserts() -> String {
    let mut s = String::new();
    let a = |s: &mut String, expr: &str, v: u64| {
        s.push_str(&format!(
            "_Static_assert({expr} == {v}UL, \"{expr} differs from shim/src/emulate/pthread_sig.rs\");\n"
        ));
    };
    a(
        &mut s,
        "offsetof(pthread_mutex_t, __data.__list.__prev)",
        sig::MUTEX_SIG_OFFSET as u64,
    );
    a(
        &mut s,
        "offsetof(pthread_rwlock_t, __data.__pad2)",
        sig::RWLOCK_SIG_OFFSET as u64,
    );
    a(&mut s, "sizeof(((pthread_rwlock_t *)0)->__data.__pad2)", 8);
    a(
        &mut s,
        "offsetof(pthread_cond_t, __data.__wrefs)",
        sig::COND_WREFS_OFFSET as u64,
    );
    a(&mut s, "sizeof(pthread_mutex_t)", 40);
    a(&mut s, "sizeof(pthread_rwlock_t)", 56);
    a(&mut s, "sizeof(pthread_cond_t)", 48);
    s.push_str("#ifdef SLURM_SHIM_EMULATE_DARWIN\n");
    a(&mut s, "SLURM_SHIM_MUTEX_SIG_INIT", sig::MUTEX_SIG_INIT);
    a(
        &mut s,
        "SLURM_SHIM_ERRORCHECK_MUTEX_SIG_INIT",
        sig::MUTEX_SIG_INIT_ERRORCHECK,
    );
    a(
        &mut s,
        "SLURM_SHIM_RECURSIVE_MUTEX_SIG_INIT",
        sig::MUTEX_SIG_INIT_RECURSIVE,
    );
    a(&mut s, "SLURM_SHIM_RWLOCK_SIG_INIT", sig::RWLOCK_SIG_INIT);
    a(&mut s, "SLURM_SHIM_COND_MARK", u64::from(sig::COND_MARK));
    s.push_str("#endif\n");
    s
}

const PROGRAM: &str = include_str!("emulate_pthread_h/checks.c");

/// Compiles the checks in one mode and runs them; returns (exit code, stdout, stderr).
fn run(mode: &str, darwin: bool, env: &[(&str, &Path)]) -> (i32, String, String) {
    let dir = scratch(mode);
    let src = dir.join("checks.c");
    std::fs::write(
        &src,
        format!(
            "#define _GNU_SOURCE\n#include <stddef.h>\n#include <pthread.h>\n{}\n{PROGRAM}",
            layout_asserts()
        ),
    )
    .expect("write checks.c");
    let exe = dir.join("checks");
    let mut cc = Command::new("cc");
    cc.args(["-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror"]);
    if darwin {
        cc.arg("-include")
            .arg(include_dir().join("slurm_shim.h"))
            .arg("-DSLURM_SHIM_EMULATE_DARWIN")
            .arg("-DSLURM_SHIM_EMULATE_MACOS")
            .arg("-I")
            .arg(include_dir().join("emulate"));
    }
    cc.arg(&src).arg("-o").arg(&exe).arg("-rdynamic");
    if darwin {
        cc.arg(common::release_staticlib()).args([
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
        ]);
    } else {
        cc.arg("-lpthread");
    }
    let out = cc.output().expect("run cc");
    assert!(
        out.status.success(),
        "compiling the checks ({mode}) failed: {cc:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut run = Command::new(&exe);
    for (k, v) in env {
        run.env(k, v);
    }
    let out = run.output().expect("run the checks");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_all_passed(mode: &str, code: i32, stdout: &str, stderr: &str) {
    let failed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(
        failed.is_empty() && code == 0,
        "{mode}: {} checks failed (exit {code}):\n{}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        failed.len(),
        failed.join("\n")
    );
    let passed = stdout.lines().filter(|l| l.starts_with("ok ")).count();
    assert!(
        passed >= 40,
        "{mode}: only {passed} checks ran:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("done\n"),
        "{mode}: did not finish:\n{stdout}"
    );
}

#[test]
fn emulate_pthread_h__darwin_personality_refuses_uninitialised_objects_as_macos() {
    let dir = scratch("darwin-log");
    let log = dir.join("emulation.log");
    let _ = std::fs::remove_file(&log);
    // Observing in another program only: here the model applies.
    let (code, out, err) = run(
        "darwin",
        true,
        &[
            ("SLURM_SHIM_EMULATION_LOG", &log),
            ("SLURM_SHIM_EMULATION", Path::new("observe:slurmdbd")),
        ],
    );
    assert_all_passed("darwin personality", code, &out, &err);
    assert!(
        out.contains("ok zeroed static mutex: lock = 22\n"),
        "the CI negative check did not run:\n{out}"
    );
    // Each refusal named itself once per call site, in the log, at the caller.
    let text = std::fs::read_to_string(&log).expect("emulation log written");
    let lock_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("pthread_mutex_lock on a never-initialised"))
        .collect();
    assert!(
        !lock_lines.is_empty() && lock_lines.iter().all(|l| l.contains("checks(")),
        "log lines do not name the calling program:\n{text}"
    );
    let sites: std::collections::BTreeSet<&str> = lock_lines
        .iter()
        .filter_map(|l| l.rsplit(" at ").next())
        .collect();
    assert_eq!(
        sites.len(),
        lock_lines.len(),
        "one line per call site:\n{text}"
    );
}

#[test]
fn emulate_pthread_h__native_build_shows_glibcs_answers() {
    let (code, out, err) = run("native", false, &[]);
    assert_all_passed("native glibc", code, &out, &err);
    assert!(
        out.contains("ok zeroed static mutex: lock = 0\n"),
        "glibc accepts a zeroed mutex:\n{out}"
    );
}

#[test]
fn emulate_pthread_h__observe_mode_logs_the_site_and_keeps_glibcs_answer() {
    let dir = scratch("observe-log");
    let log = dir.join("emulation.log");
    let _ = std::fs::remove_file(&log);
    let (_, out, err) = run(
        "darwin-observe",
        true,
        &[
            ("SLURM_SHIM_EMULATION_LOG", &log),
            ("SLURM_SHIM_EMULATION", Path::new("observe:slurmdbd,checks")),
        ],
    );
    assert!(out.contains("done\n"), "did not finish:\n{out}\n{err}");
    assert!(
        out.contains("FAIL zeroed static mutex: lock = 0, want 22\n"),
        "observe mode must keep glibc's answer:\n{out}"
    );
    let text = std::fs::read_to_string(&log).expect("emulation log written");
    assert!(
        text.contains("macOS behaviour observed (glibc's answer kept): pthread_mutex_lock on a never-initialised"),
        "observe mode must still name the site:\n{text}"
    );
    assert!(
        !text.contains("behaviour applied"),
        "nothing applied:\n{text}"
    );
}
