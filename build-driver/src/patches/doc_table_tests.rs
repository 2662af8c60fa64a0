//! The series stay documented: every patch of every line starts with the three lines the
//! project promises (why, which OS, whether it can go upstream), and `docs/PATCHES.md`'s
//! table has one row per patch number of every series, no row for a number no series has.

use super::series;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// Every known release line (each has a series: `patches/series`' entries for it).
pub(super) fn lines(_root: &Path) -> Vec<String> {
    driver_common::lines::LINES
        .iter()
        .map(|f| f.name.to_string())
        .collect()
}

/// Every patch of the series: its main file, which carries the header (a line's variant,
/// `patches/<line>/<name>`, is the same change and says so).
fn all_patches(root: &Path) -> Vec<std::path::PathBuf> {
    let dir = root.join("patches");
    super::series::entries(root)
        .unwrap()
        .iter()
        .map(|e| dir.join(&e.name))
        .collect()
}

/// "0026" of ".../0026-slurmstepd-....patch".
fn number(p: &Path) -> String {
    let name = p.file_name().unwrap().to_string_lossy();
    name.split('-').next().unwrap().to_string()
}

/// Patch numbers in the table's first column: rows starting with "| `NNNN` |".
fn table_numbers(doc: &str) -> BTreeSet<String> {
    doc.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` |"))
        .map(|(n, _)| n.to_string())
        .filter(|n| n.len() == 4 && n.bytes().all(|b| b.is_ascii_digit()))
        .collect()
}

/// Header fields missing before the diffstat's `---` line.
fn missing_header_fields(text: &str) -> Vec<&'static str> {
    let head = text.split("\n---\n").next().unwrap_or("");
    ["Why:", "OS affected:", "Upstreamable:"]
        .into_iter()
        .filter(|f| !head.lines().any(|l| l.starts_with(f)))
        .collect()
}

#[test]
fn doc_table__lists_exactly_the_patches_of_every_series() {
    let root = crate::project_root();
    let numbers: BTreeSet<String> = all_patches(&root).iter().map(|p| number(p)).collect();
    let doc = fs::read_to_string(root.join("docs/PATCHES.md")).unwrap();
    let rows = table_numbers(&doc);
    let undocumented: Vec<_> = numbers.difference(&rows).collect();
    let stale: Vec<_> = rows.difference(&numbers).collect();
    assert!(
        undocumented.is_empty() && stale.is_empty(),
        "docs/PATCHES.md's table: add a row for {undocumented:?}; remove the rows of {stale:?} (no series has them)"
    );
}

#[test]
fn doc_table__every_patch_header_says_why_which_os_and_upstreamable() {
    let root = crate::project_root();
    let bad: Vec<String> = all_patches(&root)
        .iter()
        .filter_map(|p| {
            let missing = missing_header_fields(&fs::read_to_string(p).unwrap());
            (!missing.is_empty()).then(|| format!("{}: no {}", p.display(), missing.join(", ")))
        })
        .collect();
    assert!(bad.is_empty(), "patch headers:\n{}", bad.join("\n"));
}

#[test]
fn doc_table__parser_sees_rows_and_missing_fields() {
    let doc = "| patch | x |\n|---|---|\n| `0001` | C1 |\n| `0026` | D8 |\n| `abc` | no |\n";
    assert_eq!(
        table_numbers(doc),
        BTreeSet::from(["0001".to_string(), "0026".to_string()])
    );
    assert_eq!(
        missing_header_fields("Subject: x\n\nWhy: y\n\nUpstreamable: no\n---\n OS affected: z"),
        vec!["OS affected:"]
    );
}

/// `(number, line)` for every patch number some series has and `line`'s lacks.
fn absences(root: &Path) -> BTreeSet<(String, String)> {
    let lines = lines(root);
    let per_line: Vec<(String, BTreeSet<String>)> = lines
        .iter()
        .map(|l| {
            let n = series(root, l).unwrap().iter().map(|p| number(p)).collect();
            (l.clone(), n)
        })
        .collect();
    let every: BTreeSet<String> = per_line.iter().flat_map(|(_, n)| n.clone()).collect();
    per_line
        .iter()
        .flat_map(|(l, have)| {
            every
                .difference(have)
                .map(|n| (n.clone(), l.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// RELEASE-LINES.md's "Patches" section (the README's until issue 35) says "the same numbers in each where a patch applies" and
/// names each exception as "NNNN is not in LINE": exactly the absences the series have.
#[test]
fn release_lines__names_every_patch_a_line_lacks_and_no_other() {
    let root = crate::project_root();
    let readme = fs::read_to_string(root.join("docs/RELEASE-LINES.md")).unwrap();
    let section = readme
        .split("\n## Patches\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/RELEASE-LINES.md has a Patches section");
    let flat = section.split_whitespace().collect::<Vec<_>>().join(" ");
    let said: BTreeSet<(String, String)> = flat
        .match_indices(" is not in ")
        .flat_map(|(i, m)| {
            let n = flat[..i]
                .rsplit(' ')
                .next()
                .unwrap_or("")
                .trim_matches(|c: char| !c.is_ascii_digit())
                .to_string();
            // "NNNN is not in 24.11, 25.05 or 25.11": every line of the list
            let mut found = Vec::new();
            for word in flat[i + m.len()..].split(' ') {
                let line = word.trim_end_matches([',', ';', ')', ':', '.']);
                if matches!(line, "or" | "and") {
                    continue;
                }
                let is_line = line.len() == 5
                    && line.as_bytes()[2] == b'.'
                    && line.bytes().filter(u8::is_ascii_digit).count() == 4;
                if !is_line || n.len() != 4 {
                    break;
                }
                found.push((n.clone(), line.to_string()));
                if word.len() != line.len() && !word.ends_with(',') {
                    break;
                }
            }
            found
        })
        .collect();
    let real = absences(&root);
    assert_eq!(
        said, real,
        "docs/RELEASE-LINES.md's Patches section must name each (patch, line) the series lack, as \"NNNN is not in LINE[, LINE or LINE]\""
    );
}
