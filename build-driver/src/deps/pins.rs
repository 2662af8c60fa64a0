//! `slurm-src/deps.toml`: the pinned third-party libraries, in build order.
//!
//! Every tarball is pinned by sha256 (a missing or malformed hash is an error, never a
//! pass); OpenSSL comes from the `openssl-src` crate, whose version must equal the pin (the
//! crate's own checksum is in `Cargo.lock`).

use driver_common::error::Result;
use driver_common::pins::Bad;
use serde::Deserialize;
use std::path::Path;

/// Location of the pins file, relative to the project root.
pub const DEPS_FILE: &str = "slurm-src/deps.toml";

/// How a library is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuildKind {
    /// CMake with a generated toolchain file (cross) or the native compiler.
    Cmake,
    /// A release tarball's `configure` (`--host` for cross builds).
    Autotools,
    /// The `openssl-src` crate's `Build` API.
    OpensslSrc,
}

/// The Debian source package carrying a pinned tarball as its orig file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DebianSource {
    pub package: String,
    pub suite: String,
}

/// A pinned tarball.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tarball {
    /// Lower-case hex sha256.
    pub sha256: String,
    /// File name, kept in `slurm-src/downloads/`.
    pub file: String,
    /// The archive's single top directory.
    pub top_dir: String,
    /// Download URLs (tried in order; the hash decides).
    pub urls: Vec<String>,
    pub debian: Option<DebianSource>,
}

/// One library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lib {
    pub name: String,
    pub version: String,
    pub build: BuildKind,
    /// Earlier libraries this one's build uses.
    pub needs: Vec<String>,
    /// Why Slurm needs it (shown in the README and in progress lines).
    pub why: String,
    pub options: Vec<String>,
    /// `None` only for `openssl-src`.
    pub tarball: Option<Tarball>,
    /// Earlier libraries whose archives are merged into this one's (see `deps.rs`, "Link
    /// form"): a subset of `needs`.
    pub bundle: Vec<String>,
    /// Files of ours copied onto the unpacked source before building:
    /// `build-driver/deps-overlay/<overlay>/` (see [`OVERLAY_DIR`]).
    pub overlay: Option<String>,
}

/// Where overlays live, relative to the project root.
pub const OVERLAY_DIR: &str = "build-driver/deps-overlay";

impl Lib {
    /// Everything that identifies this pin (for the build stamp).
    pub fn identity(&self) -> String {
        let t = self.tarball.as_ref().map_or(String::new(), |t| {
            format!("{} {} {}", t.file, t.sha256, t.top_dir)
        });
        format!(
            "{} {} {:?} needs={:?} bundle={:?} options={:?} overlay={:?} {t}",
            self.name,
            self.version,
            self.build,
            self.needs,
            self.bundle,
            self.options,
            self.overlay
        )
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    lib: Vec<RawLib>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLib {
    name: String,
    version: String,
    build: BuildKind,
    #[serde(default)]
    needs: Vec<String>,
    why: String,
    #[serde(default)]
    options: Vec<String>,
    sha256: Option<String>,
    file: Option<String>,
    top_dir: Option<String>,
    #[serde(default)]
    urls: Vec<String>,
    debian: Option<DebianSource>,
    overlay: Option<String>,
    #[serde(default)]
    bundle: Vec<String>,
}

/// The parsed, validated pins file.
#[derive(Debug, Clone)]
pub struct DepPins {
    /// In build order.
    pub libs: Vec<Lib>,
}

fn is_plain_name(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
}

impl DepPins {
    /// Reads `<root>/slurm-src/deps.toml`.
    pub fn load(root: &Path) -> Result<DepPins> {
        let (path, text) = driver_common::pins::read_file(root, DEPS_FILE)?;
        DepPins::parse(&text, &path)
    }

    /// Parses and validates the pins text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<DepPins> {
        let (raw, err): (RawFile, _) = driver_common::pins::parse_toml(path, text)?;
        let mut libs: Vec<Lib> = Vec::new();
        for r in raw.lib {
            check_order(&r, &libs, &err)?;
            let tarball = match r.build {
                BuildKind::OpensslSrc => {
                    check_openssl_src(&r, &err)?;
                    None
                }
                BuildKind::Cmake | BuildKind::Autotools => Some(tarball_of(&r, &err)?),
            };
            check_overlay_and_bundle(&r, &err)?;
            libs.push(Lib {
                bundle: r.bundle,
                overlay: r.overlay,
                name: r.name,
                version: r.version,
                build: r.build,
                needs: r.needs,
                why: r.why,
                options: r.options,
                tarball,
            });
        }
        if libs.is_empty() {
            return Err(err("no [[lib]] tables".into()));
        }
        Ok(DepPins { libs })
    }
}

/// A plain, new name whose needs are all listed before it (build order).
fn check_order(r: &RawLib, before: &[Lib], err: Bad) -> Result<()> {
    let n = &r.name;
    if !is_plain_name(n) {
        return Err(err(format!("library name `{n}` is not a plain file name")));
    }
    if before.iter().any(|l| &l.name == n) {
        return Err(err(format!("library `{n}` is listed twice")));
    }
    for need in &r.needs {
        if !before.iter().any(|l| &l.name == need) {
            return Err(err(format!(
                "`{n}` needs `{need}`, which is not listed before it (list libraries in build order)"
            )));
        }
    }
    Ok(())
}

/// An openssl-src library has no tarball and the crate's version.
fn check_openssl_src(r: &RawLib, err: Bad) -> Result<()> {
    let n = &r.name;
    if r.sha256.is_some() || r.file.is_some() || r.top_dir.is_some() {
        return Err(err(format!(
            "`{n}`: an openssl-src library takes its source from the crate; drop sha256/file/top_dir"
        )));
    }
    if r.version != openssl_src::version() {
        return Err(err(format!(
            "`{n}`: pinned version {} but the openssl-src crate in Cargo.lock is {}; update the pin or the crate",
            r.version,
            openssl_src::version()
        )));
    }
    Ok(())
}

/// A CMake or autotools library's tarball: a verified hash, plain names, a source.
fn tarball_of(r: &RawLib, err: Bad) -> Result<Tarball> {
    let n = &r.name;
    let sha256 = r.sha256.clone().unwrap_or_default();
    if !driver_common::pins::is_hex(&sha256, 64) {
        return Err(err(format!(
            "`{n}`: sha256 `{sha256}` is not 64 lower-case hex digits (every tarball must be pinned by its verified hash)"
        )));
    }
    let file = r.file.clone().unwrap_or_default();
    let top_dir = r.top_dir.clone().unwrap_or_default();
    if !is_plain_name(&file) || !is_plain_name(&top_dir) {
        return Err(err(format!(
            "`{n}`: file `{file}` and top_dir `{top_dir}` must be plain names"
        )));
    }
    if r.urls.is_empty() && r.debian.is_none() {
        return Err(err(format!(
            "`{n}`: no source: give urls or a [lib.debian] table"
        )));
    }
    Ok(Tarball {
        sha256,
        file,
        top_dir,
        urls: r.urls.clone(),
        debian: r.debian.clone(),
    })
}

/// An overlay belongs to a tarball library; what is bundled must be needed.
fn check_overlay_and_bundle(r: &RawLib, err: Bad) -> Result<()> {
    let n = &r.name;
    if let Some(o) = &r.overlay {
        if !is_plain_name(o) || r.build == BuildKind::OpensslSrc {
            return Err(err(format!(
                "`{n}`: overlay `{o}` must be a plain directory name of a tarball library"
            )));
        }
    }
    if let Some(b) = r.bundle.iter().find(|b| !r.needs.contains(b)) {
        return Err(err(format!(
            "`{n}` bundles `{b}`, which is not in its needs"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "c739578bf6b764aa0752db9a2fdadcfe921c78f1228c7ec0bb47fa804c55d17b";

    fn parse(t: &str) -> Result<DepPins> {
        DepPins::parse(t, Path::new("deps.toml"))
    }

    fn jansson(extra: &str) -> String {
        format!(
            "[[lib]]\nname = \"jansson\"\nversion = \"2.14\"\nbuild = \"cmake\"\nwhy = \"w\"\n\
             sha256 = \"{SHA}\"\nfile = \"jansson_2.14.orig.tar.gz\"\ntop_dir = \"jansson-2.14\"\n{extra}\
             [lib.debian]\npackage = \"jansson\"\nsuite = \"trixie\"\n"
        )
    }

    #[test]
    fn parse__the_committed_file_is_valid_and_in_dependency_order() {
        let root = crate::project_root();
        let pins = DepPins::load(&root).unwrap();
        let names: Vec<&str> = pins.libs.iter().map(|l| l.name.as_str()).collect();
        for need in ["openssl", "jansson", "json-c", "hwloc", "libjwt"] {
            assert!(names.contains(&need), "{names:?} lacks {need}");
        }
        let pos = |n: &str| names.iter().position(|x| *x == n).unwrap();
        assert!(pos("libjwt") > pos("jansson") && pos("libjwt") > pos("openssl"));
        let jwt = pins.libs.iter().find(|l| l.name == "libjwt").unwrap();
        assert_eq!(jwt.bundle, ["openssl", "jansson"]);
        assert!(
            jwt.version.starts_with("1."),
            "Slurm takes libjwt 1.x/2.x only"
        );
    }

    #[test]
    fn parse__tarball_pin_round_trips() {
        let p = parse(&jansson("")).unwrap();
        let l = &p.libs[0];
        assert_eq!(l.build, BuildKind::Cmake);
        let t = l.tarball.as_ref().unwrap();
        assert_eq!(t.sha256, SHA);
        assert_eq!(t.debian.as_ref().unwrap().suite, "trixie");
        assert!(l.identity().contains(SHA));
    }

    #[test]
    fn parse__rejects_missing_short_or_upper_case_hash() {
        for bad in ["", "abc", &SHA.to_uppercase(), &format!("{SHA}0")] {
            let t = jansson("").replace(SHA, bad);
            let e = parse(&t).unwrap_err().to_string();
            assert!(e.contains("is not 64 lower-case hex digits"), "{bad}: {e}");
        }
        let no_hash = jansson("").replace(&format!("sha256 = \"{SHA}\"\n"), "");
        assert!(parse(&no_hash).is_err());
    }

    #[test]
    fn parse__rejects_needs_out_of_order_duplicates_paths_and_unknown_keys() {
        let e = parse(&jansson("needs = [\"openssl\"]\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not listed before it"), "{e}");
        let e = parse(&jansson("bundle = [\"x\"]\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not in its needs"), "{e}");
        let twice = format!("{}{}", jansson(""), jansson(""));
        assert!(parse(&twice).unwrap_err().to_string().contains("twice"));
        let path = jansson("").replace("top_dir = \"jansson-2.14\"", "top_dir = \"../x\"");
        assert!(
            parse(&path)
                .unwrap_err()
                .to_string()
                .contains("plain names")
        );
        assert!(parse(&jansson("colour = \"red\"\n")).is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn parse__openssl_src_version_must_match_the_crate() {
        let ok = format!(
            "[[lib]]\nname = \"openssl\"\nversion = \"{}\"\nbuild = \"openssl-src\"\nwhy = \"w\"\n",
            openssl_src::version()
        );
        assert!(parse(&ok).unwrap().libs[0].tarball.is_none());
        let bad = ok.replace(openssl_src::version(), "1.0.0");
        let e = parse(&bad).unwrap_err().to_string();
        assert!(e.contains("openssl-src crate in Cargo.lock"), "{e}");
        let with_hash = format!("{ok}sha256 = \"{SHA}\"\n");
        assert!(parse(&with_hash).is_err());
    }
}
