//! Patch 0041's process tracker (`src/plugins/proctrack/darwin/darwin_proc.c`, shared by
//! proctrack/darwin and jobacct_gather/darwin) against a fake macOS process table
//! (`build-driver/tests/darwin-proc/harness.c`): what Linux's `/proc` cannot show, so the
//! live cluster cannot either. Re-parenting to launchd that keeps `p_puniqueid`; a pid
//! reused between a scan and the kill, with and without `proc_signal_with_audittoken`
//! (macOS 14.4+); the one-call window of the fallback; the double fork that escapes; a
//! process that vanishes while the table is read. The files are `patches/src/`'s as each line
//! gets them (`patches::own`), compiled with `cc` against the shim's stand-in headers
//! (the SDK's names and layouts); without `cc` or `git` the test prints why it is skipped.

use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// Where the tracker's files are, in Slurm's tree and below `patches/src/`.
const TRACKER: &str = "src/plugins/proctrack/darwin/darwin_proc";

fn root() -> PathBuf {
    crate::project_root()
}

/// The harness built from `line`'s patch, or `None` (printed why) when tools are missing.
fn harness(sh: &Shell, line: &str, dir: &Path) -> Option<PathBuf> {
    if cmd!(sh, "cc --version")
        .quiet()
        .ignore_stdout()
        .run()
        .is_err()
    {
        println!("darwin_proc ({line}) skipped: no C compiler `cc`");
        return None;
    }
    for (rel, text) in super::own::for_line(&root(), line).expect("our files") {
        if rel.starts_with(TRACKER) {
            crate::testing::write(&dir.join(&rel), &text);
        }
    }
    let src = dir.join("src/plugins/proctrack/darwin");
    let includes = [
        format!("-I{}", src.display()),
        format!("-I{}", root().join("shim/include/emulate").display()),
    ];
    let harness = root().join("build-driver/tests/darwin-proc/harness.c");
    let exe = dir.join("harness");
    let tracker = src.join("darwin_proc.c");
    crate::testing::cc(
        sh,
        &[
            "-Wextra".as_ref(),
            includes[0].as_ref(),
            includes[1].as_ref(),
            "-o".as_ref(),
            exe.as_ref(),
            harness.as_ref(),
            tracker.as_ref(),
            "-lpthread".as_ref(),
        ],
    );
    Some(exe)
}

fn run(sh: &Shell, exe: &Path, case: &str) -> String {
    let out = cmd!(sh, "{exe} {case}").output().expect("run the harness");
    assert!(
        out.status.success(),
        "{case}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn check_line(line: &str) {
    let sh = Shell::new().expect("shell");
    let tmp = tempfile::tempdir().expect("tempdir");
    let Some(exe) = harness(&sh, line, tmp.path()) else {
        return;
    };
    let r = |case| run(&sh, &exe, case);

    // SMD-109: a setsid child whose parent exits is remembered and killed; nothing else.
    // On macOS p_puniqueid still names the exited parent; on the Linux backend it names the
    // new one, and the child is found by its own remembered unique id.
    for case in ["setsid-reparented", "setsid-reparented-linux"] {
        assert_eq!(
            r(case),
            "before 101 102\nafter 102\nsent 1\nsignalled 102(uid 1004)\n",
            "{line} {case}"
        );
    }
    // macOS: a child forked just before its parent's exit, never seen, is found by its
    // p_puniqueid; on the Linux backend (p_puniqueid names the new parent) it is not.
    assert_eq!(r("reparented-unseen-child"), "members 103\n", "{line}");
    assert_eq!(r("reparented-unseen-child-linux"), "members\n", "{line}");
    // The documented escape: a double fork completed between two scans.
    assert_eq!(r("double-fork-escape"), "members 101\n", "{line}");
    // An orphan that kept the task's process group is found without being seen.
    assert_eq!(r("pgid-orphan"), "members 104\n", "{line}");
    // A pid reused between the scan and the kill is not signalled, either way.
    for case in ["reuse-before-kill-token", "reuse-before-kill-fallback"] {
        assert_eq!(r(case), "rc ESRCH\nsignalled\n", "{line} {case}");
    }
    // The window: a reuse right after the check. The kernel's token check closes it;
    // the fallback (macOS before 14.4) signals the new process.
    assert_eq!(r("window-token"), "rc ESRCH\nsignalled\n", "{line}");
    assert_eq!(
        r("window-fallback"),
        "rc sent\nsignalled 101(uid 1004)\n",
        "{line}"
    );
    // A process listed and gone when read is skipped and counted.
    assert_eq!(r("vanished"), "members 1 vanished 1\n", "{line}");
}

/// Issue 13: every release line in `patches/` carries the darwin plugins, and each line's
/// tracker makes the same decisions.
#[test]
fn darwin_proc__tracker_decisions_on_a_fake_process_table_every_line() {
    let lines: Vec<&str> = driver_common::lines::LINES.iter().map(|f| f.name).collect();
    for line in &lines {
        let ours = super::own::for_line(&root(), line).unwrap();
        assert!(
            ours.iter().any(|(rel, _)| rel == &format!("{TRACKER}.c")),
            "{line}: patches/src/{TRACKER}.c is not placed: every line carries the darwin plugins"
        );
        assert!(
            super::series::patch_of(&root(), line, "0041-proctrack-darwin.patch").is_ok(),
            "{line}: no 0041 (the plugin's build registration)"
        );
    }
    for line in &lines {
        check_line(line);
    }
}
