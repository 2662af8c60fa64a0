//! The lint against the C fixtures in `build-driver/tests/lint-fixtures/tree` (written for
//! these tests, in the shape of the Slurm code each class is about; every line that must
//! be reported says `finding`), against the pristine 24.11.5 tree when it is fetched, and
//! its error cases.

use super::*;
use driver_common::expectations::Recorded as _;
use std::fs;
use std::path::PathBuf;

fn fixture() -> PathBuf {
    crate::project_root().join("build-driver/tests/lint-fixtures/tree")
}

/// A Slurm-like tree: `META` with `meta`, `src/common/fd.c` with `fd_c`.
fn source_tree(meta: &str, fd_c: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    crate::testing::write(&dir.path().join("META"), meta);
    crate::testing::write(&dir.path().join("src/common/fd.c"), fd_c);
    dir
}

fn keys(r: &Report) -> Vec<(String, &'static str, String)> {
    r.findings
        .iter()
        .map(|f| (f.file.clone(), f.class.name(), f.subject.clone()))
        .collect()
}

#[test]
fn lint__fixture_findings_are_exactly_the_marked_lines() {
    let r = scan(&fixture()).unwrap();
    let k = keys(&r);
    let k: Vec<(&str, &str, &str)> = k
        .iter()
        .map(|(a, b, c)| (a.as_str(), *b, c.as_str()))
        .collect();
    assert_eq!(
        k,
        [
            ("src/common/fd.c", "fd-loop", "rlim_cur"),
            ("src/common/fd.c", "fd-loop", "soft_limit"),
            ("src/common/fd.c", "os-path", "/proc/self/fd"),
            ("src/common/fd.c", "os-path", "/run/maybe"),
            ("src/common/fd.c", "linux-api", "close_range"),
            (
                "src/common/slurm_protocol_socket.c",
                "af-wire",
                "pack16(ss_family)"
            ),
            (
                "src/common/slurm_protocol_socket.c",
                "af-wire",
                "ss_family = unpacked"
            ),
            (
                "src/plugins/proctrack/pgid/proctrack_pgid.c",
                "os-path",
                "/proc"
            ),
            ("src/scancel/scancel.c", "pthread-uninit", "max_delay_lock"),
            ("src/scancel/scancel.c", "pthread-uninit", "zeroed"),
            ("src/scancel/scancel.c", "pthread-uninit", "once"),
            ("src/scancel/scancel.c", "pthread-uninit", "local_bad"),
            ("src/slurmd/common/privileges.c", "setgroups-16", "ngids"),
            (
                "src/slurmd/slurmstepd/slurmstepd_job.h",
                "pthread-uninit",
                "io_cond"
            ),
            (
                "src/slurmd/slurmstepd/slurmstepd_job.h",
                "pthread-uninit",
                "io_mutex"
            ),
            (
                "src/slurmd/slurmstepd/ulimits.c",
                "rlimit-fatal",
                "RLIMIT_RSS"
            ),
            (
                "src/slurmd/slurmstepd/ulimits.c",
                "rlimit-fatal",
                "SLURM_RLIMIT_VSIZE (RLIMIT_AS)"
            ),
        ]
    );
    // the excluded plugin directory is listed, not scanned
    assert!(
        r.excluded
            .iter()
            .any(|(d, _)| d == "src/plugins/proctrack/linuxproc")
    );
    // every finding of a fixture line is on a line marked `finding`
    for f in &r.findings {
        let text = fs::read_to_string(fixture().join(&f.file)).unwrap();
        let line = text.lines().nth(f.line as usize - 1).unwrap_or("");
        assert!(
            line.contains("finding"),
            "{}:{} is not marked: {line}",
            f.file,
            f.line
        );
    }
}

/// On the pristine 24.11.5 tree the scan must find the proof of concept's defects.
#[test]
fn lint__pristine_24_11_5_has_the_poc_defects() {
    let tree = crate::project_root().join("slurm-src/24.11.5");
    if !tree.join("META").is_file() {
        println!(
            "lint__pristine_24_11_5_has_the_poc_defects skipped: {} is not fetched (cargo xtask fetch --version 24.11.5)",
            tree.display()
        );
        return;
    }
    let r = scan(&tree).unwrap();
    let k = keys(&r);
    let has = |file: &str, class: &str, subject: &str| {
        k.iter()
            .any(|(f, c, s)| f == file && *c == class && s == subject)
    };
    assert!(has(
        "src/scancel/scancel.c",
        "pthread-uninit",
        "max_delay_lock"
    ));
    for m in ["io_mutex", "io_cond"] {
        assert!(has(
            "src/slurmd/slurmstepd/slurmstepd_job.h",
            "pthread-uninit",
            m
        ));
    }
    assert!(has(
        "src/slurmd/slurmstepd/ulimits.c",
        "rlimit-fatal",
        "RLIMIT_RSS"
    ));
    assert!(has(
        "src/common/slurm_protocol_socket.c",
        "af-wire",
        "pack16(ss_family)"
    ));
    assert!(has(
        "src/slurmd/slurmstepd/req.c",
        "os-path",
        "/proc/%d/stat"
    ));
}

#[test]
fn lint__expectations_fail_on_new_and_on_stale_entries() {
    let r = scan(&fixture()).unwrap();
    let mut text = String::new();
    for f in &r.findings {
        text.push_str(&format!(
            "[[accepted]]\nclass = \"{}\"\nfile = \"{}\"\nsubjects = [\"{}\"]\nreason = \"fixture\"\n",
            f.class.name(),
            f.file,
            f.subject
        ));
    }
    let all = Expectations::parse(&text).unwrap();
    let d = all.compare(&r.findings);
    assert!(d.unexpected.is_empty() && d.stale.is_empty());
    assert_eq!(d.accepted.len(), r.findings.len());
    // one finding fewer accepted: that one is new
    let d = all.compare(&r.findings[..r.findings.len() - 1]);
    assert_eq!(d.stale.len(), 1);
    let d = Expectations::default().compare(&r.findings);
    assert_eq!(d.unexpected.len(), r.findings.len());
}

#[test]
fn lint__expectations_need_a_known_class_and_a_reason() {
    let e = Expectations::parse(
        "[[accepted]]\nclass = \"nope\"\nfile = \"a.c\"\nsubjects = [\"x\"]\nreason = \"r\"\n",
    )
    .unwrap_err();
    assert!(e.contains("unknown class `nope`"), "{e}");
    let e = Expectations::parse(
        "[[accepted]]\nclass = \"os-path\"\nfile = \"a.c\"\nsubjects = [\"x\"]\nreason = \" \"\n",
    )
    .unwrap_err();
    assert!(e.contains("empty reason"), "{e}");
}

#[test]
fn lint__a_directory_that_is_not_a_slurm_tree_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = scan(dir.path()).unwrap_err().to_string();
    crate::testing::assert_mentions(&e, &["is not a Slurm source", "src/common/fd.c"]);
    fs::create_dir_all(dir.path().join("src/common")).unwrap();
    fs::write(dir.path().join("src/common/fd.c"), "").unwrap();
    let e = scan(dir.path()).unwrap_err().to_string();
    assert!(e.contains("META"), "{e}");
}

#[test]
fn lint__an_unreadable_file_is_an_error_naming_it() {
    let dir = source_tree("  Major:\t24\n  Minor:\t11\n", "int x;\n");
    // a dangling symlink: listed as a .c file, cannot be read (root reads any mode)
    std::os::unix::fs::symlink(
        dir.path().join("missing"),
        dir.path().join("src/common/gone.c"),
    )
    .unwrap();
    let e = scan(dir.path()).unwrap_err().to_string();
    assert!(e.contains("src/common/gone.c"), "{e}");
}

#[test]
fn lint__unbalanced_conditionals_are_an_error_naming_the_file() {
    let dir = source_tree("  Major:\t24\n  Minor:\t11\n", "#if 1\nint x;\n");
    let e = scan(dir.path()).unwrap_err().to_string();
    assert!(e.contains("fd.c") && e.contains("not closed"), "{e}");
}

#[test]
fn lint__a_tree_of_an_unknown_line_is_an_error_naming_the_known_ones() {
    let dir = source_tree("  Major:\t23\n  Minor:\t02\n", "int x;\n");
    let e = scan(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("`23.02`")
            && e.contains("META")
            && e.contains("24.11, 25.05, 25.11, 26.05, 26.11"),
        "{e}"
    );
}
