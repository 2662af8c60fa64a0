//! The staticlib exports exactly the export table's `slurm_shim_*` functions: no row
//! without a definition, no `slurm_shim_` symbol outside the table, and never a bare Linux
//! name that could interpose glibc or libSystem.
#![allow(non_snake_case)]

mod common;

use slurm_shim::table::{ENTRIES, PREFIX};
use std::collections::BTreeSet;
use std::process::Command;

#[test]
fn exports__staticlib_defines_exactly_the_table() {
    let lib = common::release_staticlib();
    let out = Command::new("nm")
        .args(["--defined-only", "--extern-only", "--format=posix"])
        .arg(&lib)
        .output()
        .expect("run nm");
    assert!(
        out.status.success(),
        "nm failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let defined: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|s| s.starts_with(PREFIX))
        .collect();
    let table: BTreeSet<&str> = ENTRIES
        .iter()
        .filter(|e| e.defined_on(std::env::consts::OS))
        .map(|e| e.symbol)
        .collect();
    assert_eq!(
        defined, table,
        "staticlib exports and shim/src/table.rs differ"
    );
    let all: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for e in ENTRIES {
        assert!(
            !all.contains(e.linux_name()),
            "the bare name {} is exported",
            e.linux_name()
        );
    }
}
