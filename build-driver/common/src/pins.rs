//! Source pins: `slurm-src/pins.toml`, one table per version name.
//!
//! A pin says where a Slurm source comes from and how it is verified: a release tarball by
//! sha256 (with the single top directory the archive must have), or a development snapshot
//! by git commit. A tarball pin may also name the Debian source package that carries the
//! same file as its `.orig.tar.gz`. A tarball pin whose `sha256` is `""` is a placeholder
//! for a release whose hash has not been verified yet: using it is an error, never a pass.

use crate::error::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Location of the pins file, relative to the project root.
pub const PINS_FILE: &str = "slurm-src/pins.toml";

/// One pinned source, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The version name, the key in pins.toml (e.g. `24.11.5`, `26.11-snapshot`).
    pub version: String,
    /// The release line, selecting its entries of the patch series `patches/series` (e.g. `24.11`).
    pub line: String,
    pub source: PinSource,
    /// The Debian source package carrying this tarball as its orig file, if any.
    pub debian: Option<DebianPin>,
    /// Where Slurm's Python test suite comes from when the pinned commit has none.
    pub python_suite: Option<PythonSuitePin>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinSource {
    Tarball {
        /// Lower-case hex sha256, or `None` while the release's hash is not yet verified.
        sha256: Option<String>,
        /// The archive's single top directory.
        top_dir: String,
        /// Download URLs, tried in order.
        urls: Vec<String>,
    },
    Git {
        /// Clone URL of the repository.
        repo: String,
        /// Full 40-hex commit id.
        commit: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DebianPin {
    /// Source package name (`apt-get source <package>`).
    pub package: String,
    /// File name of the orig tarball, e.g. `slurm-wlm_24.11.5.orig.tar.gz`.
    pub orig: String,
    /// Debian suite whose `deb-src` index lists the package, e.g. `trixie`.
    pub suite: String,
}

/// `[pin."<version>".python_suite]`: SchedMD removes `testsuite/python` from a release
/// branch (25.11 and later) before its releases are tagged, so a git pin of such a release
/// names the commit of the same repository whose `testsuite/python` the peer suite runs: the
/// branch's last commit before the removal.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonSuitePin {
    /// Full 40-hex commit id in the pin's repository.
    pub commit: String,
    /// Why this commit (the removal commit it precedes).
    pub why: String,
}

/// The name under `slurm-src/` of the suite exported for `version`.
pub fn python_suite_name(version: &str) -> String {
    format!("{version}-python-suite")
}

/// All pins, in version-name order, and the file they came from (for error messages).
#[derive(Debug, Clone)]
pub struct Pins {
    pub path: PathBuf,
    pub pins: BTreeMap<String, Pin>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    pin: BTreeMap<String, RawPin>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPin {
    line: String,
    kind: String,
    sha256: Option<String>,
    top_dir: Option<String>,
    #[serde(default)]
    urls: Vec<String>,
    repo: Option<String>,
    commit: Option<String>,
    debian: Option<DebianPin>,
    python_suite: Option<PythonSuitePin>,
}

/// `s` is `len` lower-case hex digits (a sha256, a git commit id).
pub fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The numbers of a release version `MAJOR.MINOR.MICRO` (`26.05.3` -> `[26, 5, 3]`), in
/// release order when compared; `None` for anything else (`26.11-snapshot`).
pub fn release_numbers(version: &str) -> Option<[u32; 3]> {
    let mut parts = version.split('.').map(|p| {
        (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
    });
    let numbers = [parts.next()??, parts.next()??, parts.next()??];
    parts.next().is_none().then_some(numbers)
}

/// The text of the pins file `rel` below `root` (`slurm-src/pins.toml`, `slurm-src/deps.toml`).
pub fn read_file(root: &Path, rel: &str) -> Result<(PathBuf, String)> {
    let path = root.join(rel);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    Ok((path, text))
}

/// A pins file's TOML, and the error for any problem found in it later.
pub fn parse_toml<'p, T: serde::de::DeserializeOwned>(
    path: &'p Path,
    text: &str,
) -> Result<(T, impl Fn(String) -> Error + 'p)> {
    let bad = move |detail: String| Error::Pins {
        path: path.to_path_buf(),
        detail,
    };
    let raw = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
    Ok((raw, bad))
}

/// The error a pins file's problem becomes (see [`parse_toml`]).
pub type Bad<'a> = &'a dyn Fn(String) -> Error;

/// A version name and its line must both be usable as directory names.
fn check_names(version: &str, line: &str, bad: Bad) -> Result<()> {
    let is_dir_name = |s: &str| !s.is_empty() && !s.contains(['/', '\\']) && !s.starts_with('.');
    if !is_dir_name(version) {
        return Err(bad(format!(
            "`{version}` is not usable as a directory name"
        )));
    }
    if !is_dir_name(line) {
        return Err(bad(format!(
            "pin `{version}`: line `{line}` is not a directory name"
        )));
    }
    Ok(())
}

/// A `kind = "tarball"` pin: a sha256 (`""` while unverified), a top directory, urls.
fn tarball_source(version: &str, r: &RawPin, bad: Bad) -> Result<PinSource> {
    if r.repo.is_some() || r.commit.is_some() {
        return Err(bad(format!(
            "pin `{version}`: a tarball pin has no repo/commit"
        )));
    }
    let sha256 = match r.sha256.as_deref() {
        None => {
            return Err(bad(format!(
                "pin `{version}`: missing sha256 (write sha256 = \"\" while it is not verified)"
            )));
        }
        Some("") => None,
        Some(h) if is_hex(h, 64) => Some(h.to_string()),
        Some(h) => {
            return Err(bad(format!(
                "pin `{version}`: sha256 `{h}` is not 64 lower-case hex digits"
            )));
        }
    };
    let top_dir = r
        .top_dir
        .clone()
        .filter(|t| !t.is_empty() && !t.contains('/'))
        .ok_or_else(|| {
            bad(format!(
                "pin `{version}`: a tarball pin needs top_dir (the archive's top directory)"
            ))
        })?;
    Ok(PinSource::Tarball {
        sha256,
        top_dir,
        urls: r.urls.clone(),
    })
}

/// A `kind = "git"` pin: a repository and a full commit id, nothing else.
fn git_source(version: &str, r: &RawPin, bad: Bad) -> Result<PinSource> {
    if r.sha256.is_some() || r.top_dir.is_some() || !r.urls.is_empty() || r.debian.is_some() {
        return Err(bad(format!(
            "pin `{version}`: a git pin has only repo and commit (no sha256/top_dir/urls/debian)"
        )));
    }
    let repo = r
        .repo
        .clone()
        .filter(|r| !r.is_empty())
        .ok_or_else(|| bad(format!("pin `{version}`: a git pin needs repo")))?;
    let commit = r
        .commit
        .clone()
        .ok_or_else(|| bad(format!("pin `{version}`: a git pin needs commit")))?;
    if !is_hex(&commit, 40) {
        return Err(bad(format!(
            "pin `{version}`: commit `{commit}` is not a full 40-hex commit id"
        )));
    }
    Ok(PinSource::Git { repo, commit })
}

/// A `python_suite` table: only on a git pin, with a full commit id and a reason.
fn python_suite(version: &str, r: &RawPin, bad: Bad) -> Result<Option<PythonSuitePin>> {
    let Some(s) = &r.python_suite else {
        return Ok(None);
    };
    if r.kind != "git" {
        return Err(bad(format!(
            "pin `{version}`: python_suite needs a git pin (its commit is in the pin's repository)"
        )));
    }
    if !is_hex(&s.commit, 40) {
        return Err(bad(format!(
            "pin `{version}`: python_suite commit `{}` is not a full 40-hex commit id",
            s.commit
        )));
    }
    if s.why.trim().is_empty() {
        return Err(bad(format!(
            "pin `{version}`: python_suite needs `why` (the commit that removed the suite)"
        )));
    }
    Ok(Some(s.clone()))
}

impl Pins {
    /// Reads `slurm-src/pins.toml` below `root`.
    pub fn load(root: &Path) -> Result<Pins> {
        let (path, text) = read_file(root, PINS_FILE)?;
        Pins::parse(&path, &text)
    }

    /// Parses and validates the text of a pins file.
    pub fn parse(path: &Path, text: &str) -> Result<Pins> {
        let (raw, bad): (RawFile, _) = parse_toml(path, text)?;
        let mut pins = BTreeMap::new();
        for (version, r) in raw.pin {
            check_names(&version, &r.line, &bad)?;
            let source = match r.kind.as_str() {
                "tarball" => tarball_source(&version, &r, &bad)?,
                "git" => git_source(&version, &r, &bad)?,
                other => {
                    return Err(bad(format!(
                        "pin `{version}`: kind `{other}` is not `tarball` or `git`"
                    )));
                }
            };
            let python_suite = python_suite(&version, &r, &bad)?;
            pins.insert(
                version.clone(),
                Pin {
                    version,
                    line: r.line,
                    source,
                    debian: r.debian,
                    python_suite,
                },
            );
        }
        Ok(Pins {
            path: path.to_path_buf(),
            pins,
        })
    }

    /// The pin named `version`, or `UnknownVersion` listing the known names.
    pub fn get(&self, version: &str) -> Result<&Pin> {
        self.pins.get(version).ok_or_else(|| Error::UnknownVersion {
            version: version.to_string(),
            known: self.known(),
        })
    }

    /// Comma-separated version names, for messages.
    pub fn known(&self) -> String {
        self.pins.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    /// The tarball pin whose (verified) sha256 is `sha256`.
    pub fn by_sha256(&self, sha256: &str) -> Option<&Pin> {
        self.pins
            .values()
            .find(|p| p.verified_sha256() == Some(sha256))
    }

    /// The newest release (`MAJOR.MINOR.MICRO`) whose source is verified: a tarball with
    /// its sha256, or a git commit. [`crate::lines::DEFAULT_VERSION`] must name it (tested).
    pub fn newest_verified_release(&self) -> Option<&Pin> {
        self.pins
            .values()
            .filter(|p| p.is_verified())
            .filter_map(|p| Some((release_numbers(&p.version)?, p)))
            .max_by_key(|(n, _)| *n)
            .map(|(_, p)| p)
    }

    /// All git pins, in version-name order.
    pub fn git_pins(&self) -> impl Iterator<Item = &Pin> {
        self.pins
            .values()
            .filter(|p| matches!(p.source, PinSource::Git { .. }))
    }
}

impl Pin {
    /// The verified sha256 of a tarball pin (None for git pins and unverified tarballs).
    pub fn verified_sha256(&self) -> Option<&str> {
        match &self.source {
            PinSource::Tarball {
                sha256: Some(h), ..
            } => Some(h),
            _ => None,
        }
    }

    /// Whether the pin verifies what it gets: a git commit, or a tarball's filled-in sha256.
    pub fn is_verified(&self) -> bool {
        matches!(self.source, PinSource::Git { .. }) || self.verified_sha256().is_some()
    }

    /// That `fetch --version V` can get this pin over the internet with nothing local (no
    /// mirror, clone or tarball): a git pin (its repository and commit), or a verified
    /// tarball pin with at least one URL. The error names what the pin lacks and the fix.
    pub fn require_download(&self, pins_path: &Path) -> Result<()> {
        let PinSource::Tarball { urls, .. } = &self.source else {
            return Ok(());
        };
        self.require_sha256(pins_path)?;
        if urls.is_empty() {
            return Err(Error::Pins {
                path: pins_path.to_path_buf(),
                detail: format!(
                    "pin `{}` has no download URL: add `urls`, or fetch it with --from debian or --source TARBALL",
                    self.version
                ),
            });
        }
        Ok(())
    }

    /// The sha256 a tarball pin requires; `UnverifiedPin` if it is still a placeholder, and an
    /// `Unsupported` error for a git pin.
    pub fn require_sha256(&self, pins_path: &Path) -> Result<&str> {
        match &self.source {
            PinSource::Tarball {
                sha256: Some(h), ..
            } => Ok(h),
            PinSource::Tarball { sha256: None, .. } => Err(Error::UnverifiedPin {
                version: self.version.clone(),
                path: pins_path.to_path_buf(),
            }),
            PinSource::Git { .. } => Err(Error::Unsupported(format!(
                "`{}` is pinned by git commit, not by a tarball hash: pass its git directory with --source, \
                 or fetch it without --source",
                self.version
            ))),
        }
    }

    /// What identifies the pinned content; written into the completion marker so that a
    /// changed pin makes an old unpacked tree stale.
    pub fn identity(&self) -> String {
        match &self.source {
            PinSource::Tarball { sha256, .. } => {
                format!("sha256 {}", sha256.as_deref().unwrap_or(""))
            }
            PinSource::Git { commit, .. } => format!("commit {commit}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed() -> Pins {
        let root = crate::project_root();
        Pins::load(&root).unwrap()
    }

    #[test]
    fn load__committed_pins_file_is_valid() {
        let pins = committed();
        let p = pins.get("24.11.5").unwrap();
        assert_eq!(p.line, "24.11");
        assert_eq!(
            p.verified_sha256(),
            Some("e1a5547edd212c38b5e3230a284133f777b32746551f094aaa81cc4af375e332")
        );
        match &p.source {
            PinSource::Tarball { top_dir, urls, .. } => {
                assert_eq!(top_dir, "slurm-slurm-24-11-5-1");
                assert!(
                    urls.iter().any(|u| u.ends_with("slurm-24-11-5-1.tar.gz")),
                    "{urls:?}"
                );
            }
            other => panic!("24.11.5 should be a tarball pin: {other:?}"),
        }
        let d = p.debian.as_ref().unwrap();
        assert_eq!(
            (d.package.as_str(), d.orig.as_str(), d.suite.as_str()),
            ("slurm-wlm", "slurm-wlm_24.11.5.orig.tar.gz", "trixie")
        );
        let s = pins.get("26.11-snapshot").unwrap();
        assert_eq!(s.line, "26.11");
        assert_eq!(
            s.identity(),
            "commit 284c3b95f08a2dc2478499837b03355e1b9c5c75"
        );
    }

    #[test]
    fn require_sha256__unverified_release_is_a_clear_error() {
        let pins = committed();
        let p = pins.get("26.11.0").unwrap();
        assert_eq!(p.verified_sha256(), None);
        let e = p.require_sha256(&pins.path).unwrap_err();
        assert!(
            matches!(e, Error::UnverifiedPin { ref version, .. } if version == "26.11.0"),
            "{e}"
        );
        assert!(e.to_string().contains("no verified sha256"), "{e}");
    }

    #[test]
    fn get__unknown_version_lists_known_ones() {
        let pins = committed();
        let e = pins.get("9.9.9").unwrap_err();
        let msg = e.to_string();
        crate::testing::assert_mentions(&msg, &["9.9.9", "24.11.5", "26.11-snapshot"]);
    }

    #[test]
    fn by_sha256__matches_only_verified_tarballs() {
        let pins = committed();
        let p = pins
            .by_sha256("e1a5547edd212c38b5e3230a284133f777b32746551f094aaa81cc4af375e332")
            .unwrap();
        assert_eq!(p.version, "24.11.5");
        assert!(pins.by_sha256("").is_none());
        assert!(pins.by_sha256(&"0".repeat(64)).is_none());
    }

    /// Every line can be fetched from its pin alone over the internet: a git pin (repository
    /// and commit) or a verified tarball with a URL; so can every verified release.
    #[test]
    fn require_download__every_line_has_a_pin_fetchable_from_the_internet() {
        let pins = committed();
        for f in crate::lines::LINES {
            let fetchable: Vec<_> = pins
                .pins
                .values()
                .filter(|p| p.line == f.name && p.require_download(&pins.path).is_ok())
                .map(|p| p.version.as_str())
                .collect();
            assert!(
                !fetchable.is_empty(),
                "line {}: no pin `fetch --version` can download alone",
                f.name
            );
        }
        for p in pins.pins.values().filter(|p| p.is_verified()) {
            if let Err(e) = p.require_download(&pins.path) {
                panic!("{}: {e}", p.version);
            }
        }
        // What the error says for a verified tarball without URLs.
        let text = format!(
            "[pin.\"1.2.3\"]\nline='1.2'\nkind='tarball'\nsha256='{}'\ntop_dir='x'\n",
            "0".repeat(64)
        );
        let no_url = Pins::parse(Path::new("p.toml"), &text).unwrap();
        let e = no_url.get("1.2.3").unwrap().require_download(&no_url.path);
        crate::testing::assert_mentions(
            &e.unwrap_err().to_string(),
            &["p.toml", "`1.2.3`", "no download URL", "urls"],
        );
    }

    /// The users' default is the newest verified release (26.11.0 replaces 26.05.3 once its
    /// sha256 is filled in), and CI's version is the one with a Debian source package.
    #[test]
    fn default_version__is_the_newest_verified_release() {
        use crate::lines::{CI_VERSION, DEFAULT_VERSION};
        let pins = committed();
        let newest = pins.newest_verified_release().unwrap();
        assert_eq!(newest.version, DEFAULT_VERSION);
        assert!(pins.get(CI_VERSION).unwrap().debian.is_some());
        // An unverified newer release does not count; a verified one does.
        let text = "[pin.\"9.05.1\"]\nline='9.05'\nkind='git'\nrepo='r'\ncommit='284c3b95f08a2dc2478499837b03355e1b9c5c75'\n\
                    [pin.\"10.05.0\"]\nline='10.05'\nkind='tarball'\nsha256=''\ntop_dir='x'\n\
                    [pin.\"11.05-snapshot\"]\nline='11.05'\nkind='git'\nrepo='r'\ncommit='284c3b95f08a2dc2478499837b03355e1b9c5c75'\n";
        let p = Pins::parse(Path::new("p.toml"), text).unwrap();
        assert_eq!(p.newest_verified_release().unwrap().version, "9.05.1");
    }

    #[test]
    fn release_numbers__only_major_minor_micro() {
        assert_eq!(release_numbers("26.05.3"), Some([26, 5, 3]));
        assert!(release_numbers("9.05.1") < release_numbers("10.05.0"));
        for v in [
            "26.11-snapshot",
            "26.05",
            "26.05.3.1",
            "26..3",
            "26.05.3-1",
            "",
        ] {
            assert_eq!(release_numbers(v), None, "{v}");
        }
    }

    #[test]
    fn parse__rejects_bad_hash_commit_and_kind() {
        let p = Path::new("pins.toml");
        for text in [
            "[pin.\"1\"]\nline='1'\nkind='tarball'\nsha256='ABC'\ntop_dir='x'\n",
            "[pin.\"1\"]\nline='1'\nkind='tarball'\ntop_dir='x'\n",
            "[pin.\"1\"]\nline='1'\nkind='tarball'\nsha256=''\n",
            "[pin.\"1\"]\nline='1'\nkind='git'\nrepo='r'\ncommit='abc'\n",
            "[pin.\"1\"]\nline='1'\nkind='svn'\n",
            "[pin.\"1\"]\nline='1'\nkind='git'\nrepo=''\ncommit='284c3b95f08a2dc2478499837b03355e1b9c5c75'\n",
            "[pin.\"1\"]\nline='1'\nkind='git'\nrepo='r'\ncommit='284c3b95f08a2dc2478499837b03355e1b9c5c75'\nsha256=''\n",
            "[pin.\"../x\"]\nline='1'\nkind='tarball'\nsha256=''\ntop_dir='x'\n",
            "[pin.\"1\"]\nline='1'\nkind='tarball'\nsha256=''\ntop_dir='x'\nmirror='y'\n",
        ] {
            let e = Pins::parse(p, text).unwrap_err();
            assert!(matches!(e, Error::Pins { .. }), "{text}: {e}");
        }
    }

    #[test]
    fn parse__python_suite_only_on_git_pins_with_commit_and_reason() {
        let p = Path::new("pins.toml");
        let git = "[pin.\"1\"]\nline='1'\nkind='git'\nrepo='r'\ncommit='284c3b95f08a2dc2478499837b03355e1b9c5c75'\n";
        let tar = "[pin.\"1\"]\nline='1'\nkind='tarball'\nsha256=''\ntop_dir='x'\n";
        let suite = |commit: &str, why: &str| {
            format!("[pin.\"1\".python_suite]\ncommit='{commit}'\nwhy='{why}'\n")
        };
        let good = suite("58df2deb50daf71deae1d5f83ff5a9283ffed963", "removed by x");
        let pins = Pins::parse(p, &format!("{git}{good}")).unwrap();
        let s = pins.get("1").unwrap().python_suite.clone().unwrap();
        assert_eq!(s.commit, "58df2deb50daf71deae1d5f83ff5a9283ffed963");
        for (text, says) in [
            (format!("{tar}{good}"), "needs a git pin"),
            (format!("{git}{}", suite("58df2deb", "r")), "full 40-hex"),
            (
                format!(
                    "{git}{}",
                    suite("58df2deb50daf71deae1d5f83ff5a9283ffed963", " ")
                ),
                "needs `why`",
            ),
        ] {
            let e = Pins::parse(p, &text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn committed__release_tags_without_the_suite_name_one() {
        // 25.11 and later release branches have no testsuite/python (removed upstream):
        // their pins must say where the peer suite comes from.
        let pins = committed();
        for v in ["25.11.7", "26.05.3"] {
            assert!(pins.get(v).unwrap().python_suite.is_some(), "{v}");
        }
        assert!(pins.get("25.05.8").unwrap().python_suite.is_none());
    }
}
