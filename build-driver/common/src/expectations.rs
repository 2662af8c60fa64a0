//! Recorded expectations: the files under `ci/expectations/` that say which differences or
//! findings are known, each with its reason. One loader serves every kind: a missing file
//! means nothing is expected (and says so), a file that does not parse names itself and
//! what is wrong. The kinds: the laboratory's `make_check` (darwin vs native `make check` results) and
//! `proc_access`, the driver's `audit::expect` (accepted plugin-linkage findings, beside the
//! audit's report) and the lint's.

use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A file of `[[accepted]]` entries of kind `A` (the audit's and the lint's): each kind
/// checks its entries in its [`Recorded::parse`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, bound(deserialize = "A: Deserialize<'de>"))]
pub struct AcceptedList<A> {
    #[serde(default = "Vec::new")]
    pub accepted: Vec<A>,
}

impl<A> Default for AcceptedList<A> {
    fn default() -> Self {
        AcceptedList {
            accepted: Vec::new(),
        }
    }
}

/// One kind of `[[accepted]]` entry: what an unlisted one is called and how an entry is
/// checked (`seen` holds the keys of the entries before it, to refuse one listed twice).
/// Each kind implements this for its own entry type; the list's [`Recorded`] follows.
pub trait Entry: serde::de::DeserializeOwned {
    /// What an entry lists, for the message when there is no file.
    const UNLISTED: &'static str;
    /// What makes two entries the same.
    type Key: Ord;
    /// `Err` says what is wrong with this entry.
    fn check(
        &self,
        seen: &mut std::collections::BTreeSet<Self::Key>,
    ) -> std::result::Result<(), String>;
}

impl<A: Entry> Recorded for AcceptedList<A> {
    const UNLISTED: &'static str = A::UNLISTED;

    fn parse(text: &str) -> std::result::Result<Self, String> {
        parse_checked(text, |e: &Self| &e.accepted, A::check)
    }
}

impl<A> AcceptedList<A>
where
    Self: Recorded,
{
    /// Read the file; a missing file means nothing is accepted (and says so).
    pub fn load(path: &Path) -> Result<Self> {
        load(path)
    }
}

/// `ci/expectations/<name>` below `root`.
pub fn file(root: &Path, name: &str) -> PathBuf {
    root.join("ci/expectations").join(name)
}

/// A kind of expectations file.
pub trait Recorded: Default + Sized {
    /// What an entry lists, for the message when there is no file ("every {UNLISTED} fails").
    const UNLISTED: &'static str;

    /// Parses and checks the file's text; `Err` says what is wrong.
    fn parse(text: &str) -> std::result::Result<Self, String>;
}

/// The file's TOML as `T`, each entry of `entries(&t)` checked by `check` in order; `check`
/// records what it has seen in the set, to refuse an entry listed twice.
pub fn parse_checked<T: serde::de::DeserializeOwned, E, K: Ord>(
    text: &str,
    entries: impl Fn(&T) -> &[E],
    mut check: impl FnMut(&E, &mut std::collections::BTreeSet<K>) -> std::result::Result<(), String>,
) -> std::result::Result<T, String> {
    let t: T = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut seen = std::collections::BTreeSet::new();
    for e in entries(&t) {
        check(e, &mut seen)?;
    }
    Ok(t)
}

/// Reads an expectations file; a missing file means nothing is expected (and says so).
pub fn load<T: Recorded>(path: &Path) -> Result<T> {
    let Some(text) = crate::util::fs::read_optional(path)? else {
        println!(
            "no expectations file {}: every {} fails",
            path.display(),
            T::UNLISTED
        );
        return Ok(T::default());
    };
    T::parse(&text).map_err(|problem| Error::file(path, problem))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry kind of the tests' own: a name and a reason, each name once.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Probe {
        name: String,
        reason: String,
    }

    impl Entry for Probe {
        const UNLISTED: &'static str = "probe";
        type Key = String;

        fn check(
            &self,
            seen: &mut std::collections::BTreeSet<String>,
        ) -> std::result::Result<(), String> {
            if self.reason.trim().is_empty() {
                return Err(format!("entry for `{}` has an empty reason", self.name));
            }
            if !seen.insert(self.name.clone()) {
                return Err(format!("`{}` is listed twice", self.name));
            }
            Ok(())
        }
    }

    #[test]
    fn load__missing_is_empty_malformed_names_the_file() {
        let d = tempfile::tempdir().unwrap();
        let none = load::<AcceptedList<Probe>>(&d.path().join("none.toml")).unwrap();
        assert!(none.accepted.is_empty());
        let bad = d.path().join("bad.toml");
        std::fs::write(&bad, "[[accepted]]\nname = \"x.so\"\n").unwrap();
        let e = load::<AcceptedList<Probe>>(&bad).unwrap_err();
        assert!(matches!(e, Error::File { .. }), "{e}");
        assert!(e.to_string().contains("bad.toml"), "{e}");
    }

    #[test]
    fn accepted_list__checks_each_entry_in_order() {
        let ok = "[[accepted]]\nname = \"a\"\nreason = \"r\"\n";
        assert_eq!(AcceptedList::<Probe>::parse(ok).unwrap().accepted.len(), 1);
        let twice = format!("{ok}{ok}");
        let e = AcceptedList::<Probe>::parse(&twice).unwrap_err();
        assert!(e.contains("`a` is listed twice"), "{e}");
        let empty = "[[accepted]]\nname = \"b\"\nreason = \" \"\n";
        let e = AcceptedList::<Probe>::parse(empty).unwrap_err();
        assert!(e.contains("empty reason"), "{e}");
    }
}
