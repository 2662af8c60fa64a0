use super::row::{self, Row, Step};
use super::table;
use crate::testing::{assert_mentions, scratch};
use std::path::Path;

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A checkout with one line's series (two patches) and the doc with its markers.
fn checkout() -> tempfile::TempDir {
    let (d, dir) = scratch("patches");
    write(&dir.join("series"), "0001-a.patch\n0002-b.patch  # why\n");
    write(&dir.join("0001-a.patch"), "a\n");
    write(&dir.join("0002-b.patch"), "b\n");
    write(
        &d.path().join(table::DOC),
        &format!(
            "# Lines\n\nbefore\n\n{}\nold table\n{}\n\nafter\n",
            table::BEGIN,
            table::END
        ),
    );
    d
}

fn row(root: &Path, result: &str) -> Row {
    Row {
        line: "24.11".into(),
        version: "24.11.5".into(),
        suite: "full".into(),
        command: "cargo xtask lines verify --version 24.11.5".into(),
        date: "2026-12-03T19:00:00Z".into(),
        commit: "0123456789abcdef".into(),
        dirty: false,
        series_sha256: row::series_sha256(root, "24.11").unwrap(),
        result: result.into(),
        seconds: 125,
        steps: vec![
            Step {
                name: "build-slurm --personality darwin".into(),
                result: "ok".into(),
                seconds: 100,
                detail: "prefix".into(),
            },
            Step {
                name: "cluster scenarios: darwin install".into(),
                result: if result == "passed" { "ok" } else { "FAILED" }.into(),
                seconds: 25,
                detail: "cluster: srun failed".into(),
            },
        ],
    }
}

#[test]
fn series_sha256__changes_with_a_patch_the_series_or_its_order() {
    let d = checkout();
    let root = d.path();
    let first = row::series_sha256(root, "24.11").unwrap();
    assert_eq!(first, row::series_sha256(root, "24.11").unwrap());
    let dir = root.join("patches");
    write(&dir.join("0002-b.patch"), "b changed\n");
    let patched = row::series_sha256(root, "24.11").unwrap();
    assert_ne!(first, patched, "an edited patch must change the hash");
    write(&dir.join("series"), "0002-b.patch  # why\n0001-a.patch\n");
    assert_ne!(patched, row::series_sha256(root, "24.11").unwrap(), "order");
}

#[test]
fn stale__a_row_older_than_its_series_names_the_command() {
    let d = checkout();
    let root = d.path();
    let r = row(root, "passed");
    row::write(root, &r).unwrap();
    let rows = row::load_all(root).unwrap();
    assert_eq!(rows, vec![r]);
    assert!(row::stale(root, &rows).unwrap().is_empty());
    write(&root.join("patches/0001-a.patch"), "a, edited\n");
    let stale = row::stale(root, &rows).unwrap();
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert_mentions(
        &stale[0],
        &[
            "24.11",
            "older than its series (patches/series for line 24.11)",
            "cargo xtask lines verify --version 24.11.5",
        ],
    );
    // CI's line: its row comes from `cargo xtask ci`, and the message says to run that
    let mut ci_row = rows[0].clone();
    ci_row.suite = "ci".into();
    ci_row.command = "cargo xtask ci --version 24.11.5".into();
    let stale = row::stale(root, &[ci_row]).unwrap();
    assert_mentions(&stale[0], &["run `cargo xtask ci --version 24.11.5`"]);
    assert!(!stale[0].contains("lines verify"), "{}", stale[0]);
}

#[test]
fn load_all__a_row_under_another_lines_name_or_garbage_is_an_error() {
    let d = checkout();
    let root = d.path();
    let r = row(root, "passed");
    let text = std::fs::read_to_string(row::write(root, &r).unwrap()).unwrap();
    write(&root.join(row::DIR).join("25.05.toml"), &text);
    let e = row::load_all(root).unwrap_err().to_string();
    assert_mentions(&e, &["25.05.toml", "holds the row of line 24.11"]);
    write(&root.join(row::DIR).join("25.05.toml"), "line = 3\n");
    let e = row::load_all(root).unwrap_err().to_string();
    assert_mentions(&e, &["25.05.toml", "not a line's row"]);
}

#[test]
fn render__every_line_listed_failed_steps_named_missing_rows_said() {
    let d = checkout();
    let t = table::render(&[row(d.path(), "failed")]);
    let l24 = t.lines().find(|l| l.starts_with("| 24.11 |")).unwrap();
    assert_mentions(
        l24,
        &[
            "24.11.5",
            "**failed**",
            "cluster scenarios: darwin install (FAILED)",
            "3 min",
            "2026-12-03",
            "`0123456789`",
        ],
    );
    for f in driver_common::lines::LINES.iter().skip(1) {
        let l = t
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", f.name)))
            .unwrap_or_else(|| panic!("no row for {}:\n{t}", f.name));
        assert!(l.contains("not verified"), "{l}");
    }
}

#[test]
fn regenerate__replaces_only_the_part_between_the_markers() {
    let d = checkout();
    let root = d.path();
    row::write(root, &row(root, "passed")).unwrap();
    table::regenerate(root).unwrap();
    let text = std::fs::read_to_string(root.join(table::DOC)).unwrap();
    assert!(text.starts_with("# Lines\n\nbefore\n\n"), "{text}");
    assert!(
        text.ends_with(&format!("{}\n\nafter\n", table::END)),
        "{text}"
    );
    assert!(!text.contains("old table"), "{text}");
    assert!(
        text.contains("| 24.11 | 24.11.5 | **passed** | none |"),
        "{text}"
    );
}

#[test]
fn regenerate__missing_markers_are_an_error_that_changes_nothing() {
    let d = checkout();
    let root = d.path();
    write(&root.join(table::DOC), "no markers\n");
    let e = table::regenerate(root).unwrap_err().to_string();
    assert_mentions(&e, &["RELEASE-LINES.md", "no line", "marker"]);
    assert_eq!(
        std::fs::read_to_string(root.join(table::DOC)).unwrap(),
        "no markers\n"
    );
}

#[test]
fn precheck__unknown_version_and_unfetched_source_are_refused_before_any_build() {
    let root = driver_common::project_root();
    let e = crate::ci::verify::precheck(&root, "1.2.3")
        .unwrap_err()
        .to_string();
    assert_mentions(&e, &["1.2.3", "24.11.5"]);
    // each pinned version: fetched here (fine) or refused naming the command that fetches it
    let mut refused = 0;
    for v in ["24.11.5", "25.05.8", "25.11.7", "26.05.3", "26.11-snapshot"] {
        if let Err(e) = crate::ci::verify::precheck(&root, v) {
            let e = e.to_string();
            assert_mentions(
                &e,
                &["not fetched", &format!("cargo xtask fetch --version {v}")],
            );
            refused += 1;
        }
    }
    println!("precheck: {refused} of 5 pinned versions not fetched here, each refused");
}

/// The committed rows are current and the committed table is what they give.
#[test]
fn committed_rows__current_and_the_table_generated_from_them() {
    let root = driver_common::project_root();
    let rows = row::load_all(&root).unwrap();
    let stale = row::stale(&root, &rows).unwrap();
    assert!(stale.is_empty(), "{}", stale.join("\n"));
    // No committed row names this checkout's absolute path (rows are written relative to it).
    let here = format!("{}/", root.display());
    for r in &rows {
        for st in &r.steps {
            assert!(
                !st.detail.contains(&here),
                "{} row, step {}: {}",
                r.line,
                st.name,
                st.detail
            );
        }
    }
    let text = std::fs::read_to_string(root.join(table::DOC)).unwrap();
    let want = table::splice(&text, &table::render(&rows)).unwrap();
    assert!(
        want == text,
        "docs/RELEASE-LINES.md's generated table is not what docs/lines/ gives: regenerate it with `cargo xtask lines table`"
    );
}

/// A row's details name paths below the checkout relative to it.
#[test]
fn relative_to__the_checkout_path_is_left_out() {
    let root = Path::new("/some/checkout");
    assert_eq!(
        row::relative_to(
            root,
            "/some/checkout/target/slurm/x/prefix and /some/checkout/ci/e.toml"
        ),
        "target/slurm/x/prefix and ci/e.toml"
    );
    assert_eq!(
        row::relative_to(root, "/some/checkoutX/y"),
        "/some/checkoutX/y"
    );
    assert_eq!(row::relative_to(Path::new("/"), "/a/b"), "/a/b");
}

/// A row names the commit its run started at; a checkout that moved or had uncommitted
/// changes at either end makes the row "not one commit's" (dirty).
#[test]
fn checkout__row_names_the_start_commit_and_a_moved_or_changed_checkout_is_dirty() {
    use super::row::Checkout;
    let at = |c: &str, dirty: bool| Checkout {
        commit: c.into(),
        dirty,
    };
    let start = at("aaa", false);
    assert_eq!(start.judged_with(&at("aaa", false)), ("aaa".into(), false));
    assert_eq!(start.judged_with(&at("bbb", false)), ("aaa".into(), true));
    assert_eq!(start.judged_with(&at("aaa", true)), ("aaa".into(), true));
    assert_eq!(
        at("aaa", true).judged_with(&at("aaa", false)),
        ("aaa".into(), true)
    );
}

/// A step that does not apply by design (`n/a`, with its reason) leaves the row passed; a
/// step skipped because another failed does not.
#[test]
fn from_report__not_applicable_passes_and_skipped_fails() {
    use crate::report::Report;
    let d = checkout();
    let start = row::Checkout::of(d.path());
    let run = row::RunInfo {
        version: "24.11.5",
        scope: crate::lines::row::Scope::Full,
        command: "cargo xtask lines verify --version 24.11.5",
        start: &start,
    };
    let mut report = Report::default();
    report.step("build", || Ok("built".to_string()));
    report.not_applicable("bottle", "a snapshot has no release to bottle");
    report.result().unwrap();
    let r = Row::from_report(d.path(), &run, "24.11", &report).unwrap();
    assert_eq!(r.result, "passed");
    assert_eq!(r.steps[1].result, "n/a");
    assert_eq!(r.failed_steps().count(), 0);
    report.skip("audit", "the step it depends on failed");
    assert!(report.result().is_err());
    let r = Row::from_report(d.path(), &run, "24.11", &report).unwrap();
    assert_eq!(r.result, "failed");
    let not_ok: Vec<&str> = r.failed_steps().map(|s| s.name.as_str()).collect();
    assert_eq!(not_ok, ["audit"]);
}
