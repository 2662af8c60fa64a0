//! The build machine's own directories, which must never reach an installed file (a bottle
//! is poured on another machine): the project root, the cargo target directory, `$HOME`,
//! cargo's and rustup's homes. Each is mapped to a neutral name at the source, for C
//! (`-ffile-prefix-map`: `__FILE__` in Slurm's log macros and OpenSSL's error calls, debug
//! paths) and for Rust (`--remap-path-prefix`: panic locations of the shim and its crates),
//! and the bottle's scan ([`crate::bottle::scan`]) looks for the same directories.
//!
//! Order does not matter for clang: it keeps the maps sorted in reverse (longest first among
//! common prefixes, clang `MacroPrefixMap` is a `std::map<..., std::greater<>>`), so
//! `<root>/target` is mapped before `<root>`.

use std::path::{Path, PathBuf};

/// A directory of the build machine and the name it becomes in compiled output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathMap {
    pub from: PathBuf,
    pub to: String,
}

impl PathMap {
    fn new(from: impl Into<PathBuf>, to: &str) -> PathMap {
        PathMap {
            from: from.into(),
            to: to.to_string(),
        }
    }
}

/// The build machine's directories for a project at `root` whose cargo target directory is
/// `target_dir` (both absolute): those two, `$HOME`, `$CARGO_HOME` and `$RUSTUP_HOME` (their
/// defaults below `$HOME` when unset). Duplicates and `/` itself are left out.
pub fn build_machine_dirs(root: &Path, target_dir: &Path) -> Vec<PathMap> {
    let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
    let home = env("HOME");
    let mut maps = vec![
        PathMap::new(root, "/slurm-on-mac"),
        PathMap::new(target_dir, "/slurm-on-mac/target"),
    ];
    if let Some(h) = &home {
        maps.push(PathMap::new(h, "/home"));
    }
    let cargo_home = env("CARGO_HOME").or_else(|| home.as_ref().map(|h| h.join(".cargo")));
    if let Some(c) = cargo_home {
        maps.push(PathMap::new(c, "/cargo"));
    }
    let rustup_home = env("RUSTUP_HOME").or_else(|| home.as_ref().map(|h| h.join(".rustup")));
    if let Some(r) = rustup_home {
        maps.push(PathMap::new(r, "/rustup"));
    }
    let mut seen = Vec::new();
    maps.retain(|m| {
        let keep = m.from.is_absolute() && m.from != Path::new("/") && !seen.contains(&m.from);
        seen.push(m.from.clone());
        keep
    });
    maps
}

/// `-ffile-prefix-map=FROM=TO` for each map (covers `__FILE__`, debug info and coverage).
pub fn cc_flags(maps: &[PathMap]) -> Vec<String> {
    maps.iter()
        .map(|m| format!("-ffile-prefix-map={}={}", m.from.display(), m.to))
        .collect()
}

/// What every C compile for a shipped file gets last: [`cc_flags`] and `-g0`. Without debug
/// information the linker writes no `N_OSO` stabs (the absolute path of every object file)
/// into a Mach-O image; Homebrew's own compiler wrapper (superenv) drops `-g` as well.
pub fn cc_reproducible(maps: &[PathMap]) -> Vec<String> {
    let mut v = cc_flags(maps);
    v.push("-g0".to_string());
    v
}

/// `--remap-path-prefix=FROM=TO` for each map (rustc: panic locations, `file!()`, debug info).
pub fn rust_flags(maps: &[PathMap]) -> Vec<String> {
    maps.iter()
        .map(|m| format!("--remap-path-prefix={}={}", m.from.display(), m.to))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_machine_dirs__root_target_and_homes_once_each() {
        let maps = build_machine_dirs(Path::new("/r/proj"), Path::new("/r/proj/target"));
        assert_eq!(maps[0], PathMap::new("/r/proj", "/slurm-on-mac"));
        assert!(maps.iter().any(|m| m.to == "/slurm-on-mac/target"));
        let mut froms: Vec<_> = maps.iter().map(|m| &m.from).collect();
        let n = froms.len();
        froms.dedup();
        assert_eq!(froms.len(), n);
        assert!(
            maps.iter()
                .all(|m| m.from.is_absolute() && m.from != Path::new("/"))
        );
    }

    #[test]
    fn flags__one_per_map_in_each_compilers_spelling() {
        let maps = [PathMap::new("/a b/c", "/x")];
        assert_eq!(cc_flags(&maps), vec!["-ffile-prefix-map=/a b/c=/x"]);
        assert_eq!(rust_flags(&maps), vec!["--remap-path-prefix=/a b/c=/x"]);
    }
}
