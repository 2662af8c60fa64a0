//! `cargo xtask fetch`: get a Slurm source, verify it against its pin, and unpack it to
//! `slurm-src/<version>/` (the contents of the archive's single top directory).
//!
//! Sources:
//! - `--version V`: download the pin's tarball (curl, each URL in turn; `.part` file renamed
//!   after the sha256 check) or, for a git pin, fetch the pinned commit into a bare cache
//!   repository and `git archive` it.
//! - `--version V --from debian`: the orig tarball of the pin's Debian source package.
//! - `--source TARBALL`: checked against `--version`'s pin, or the pin with its sha256.
//! - `--source GIT_DIR`: the pinned commit (of `--version`'s git pin, or of the one git
//!   pin the repository contains) must exist (`git cat-file`); exported with `git archive`.
//! - `--source DIR`: an unpacked tree with configure.ac and META, copied as the unverified
//!   version `<META version>-local` (always re-copied).
//!
//! Downloads live in `slurm-src/downloads/`. Unpacking happens in `slurm-src/.tmp-*`, the
//! tree is renamed into place, and `slurm-src/.<version>.complete` (the pin identity) is
//! written last; a complete tree is reused. Unpacked trees are never modified.

pub(crate) mod archive;
mod args;
pub(crate) mod debian;
mod local;
pub(crate) mod suite;
use local::copy_local_tree;
#[cfg(test)]
use local::parse_meta;

use archive::Layout;
pub use args::{FetchArgs, Origin, SourceArgs};
use driver_common::error::{Error, Result};
use driver_common::pins::{Pin, PinSource, Pins};
use driver_common::util::fs::Staging;
use driver_common::util::fs::sha256_file;
use driver_common::util::process::logged;
use driver_common::util::process::{require_tool, run_checked};
use std::fs;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// A pristine, verified source tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceTree {
    /// `slurm-src/<version>/`, containing configure.ac. Never modified.
    pub path: PathBuf,
    pub version: String,
    /// Release line, selecting its entries of `patches/series`.
    pub line: String,
}

/// The `fetch` command.
pub fn run(sh: &Shell, root: &Path, args: FetchArgs) -> Result<SourceTree> {
    let tree = match (args.from, &args.src.source) {
        (Some(_), Some(_)) => {
            return Err(Error::Unsupported(
                "--from and --source exclude each other: --from downloads, --source takes a local file".into(),
            ));
        }
        (Some(Origin::Debian), None) => {
            let version = args.src.version.as_deref().ok_or(Error::NoSource)?;
            fetch_debian(sh, root, version)?
        }
        (None, Some(path)) => from_source(sh, root, path, args.src.version.as_deref())?,
        (None, None) => {
            let version = args.src.version.as_deref().ok_or(Error::NoSource)?;
            fetch_download(sh, root, version)?
        }
    };
    println!(
        "{} (line {}): {}",
        tree.version,
        tree.line,
        tree.path.display()
    );
    match driver_common::lines::Line::from_name(&tree.line, "fetch") {
        Ok(line) => println!("{}", line.skew_summary()),
        Err(e) => println!("note: {e}"),
    }
    Ok(tree)
}

/// The source tree for a build: `--version V` must already be fetched (else `NotFetched`);
/// `--source P` is fetched as by `fetch --source P [--version V]`.
pub fn resolve(sh: &Shell, root: &Path, args: &SourceArgs) -> Result<SourceTree> {
    if let Some(path) = &args.source {
        return from_source(sh, root, path, args.version.as_deref());
    }
    let version = args.version.as_deref().ok_or(Error::NoSource)?;
    let pins = Pins::load(root)?;
    let pin = pins.get(version)?;
    if matches!(pin.source, PinSource::Tarball { .. }) {
        pin.require_sha256(&pins.path)?;
    }
    let layout = Layout::new(root);
    if layout.is_complete(version, &pin.identity()) {
        Ok(tree_of(&layout, pin))
    } else {
        Err(Error::NotFetched {
            path: layout.tree(version),
            version: version.to_string(),
        })
    }
}

fn tree_of(layout: &Layout, pin: &Pin) -> SourceTree {
    SourceTree {
        path: layout.tree(&pin.version),
        version: pin.version.clone(),
        line: pin.line.clone(),
    }
}

fn already(layout: &Layout, pin: &Pin) -> Option<SourceTree> {
    if layout.is_complete(&pin.version, &pin.identity()) {
        eprintln!(
            "fetch: {} already fetched ({})",
            pin.version,
            layout.tree(&pin.version).display()
        );
        Some(tree_of(layout, pin))
    } else {
        None
    }
}

/// A long fetch step with a spinner (see [`logged::step`]).
fn step<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    logged::step("fetch", what, f)
}

fn tarball_parts<'p>(pin: &'p Pin, pins: &Pins) -> Result<(&'p str, &'p str, &'p [String])> {
    let sha = pin.require_sha256(&pins.path)?;
    match &pin.source {
        PinSource::Tarball { top_dir, urls, .. } => Ok((sha, top_dir, urls)),
        PinSource::Git { .. } => unreachable_git(pin),
    }
}

fn unreachable_git<T>(pin: &Pin) -> Result<T> {
    Err(Error::Unsupported(format!(
        "`{}` is a git pin, not a tarball pin",
        pin.version
    )))
}

/// Unpacks a verified tarball of `pin` and installs it.
fn install_tarball(
    layout: &Layout,
    pin: &Pin,
    tarball: &Path,
    top_dir: &str,
) -> Result<SourceTree> {
    step(&format!("unpacking {}", tarball.display()), || {
        archive::unpack_and_install(
            layout,
            &pin.version,
            tarball,
            Some(top_dir),
            &pin.identity(),
        )
    })?;
    Ok(tree_of(layout, pin))
}

/// A previously downloaded tarball of `pin` in `downloads/` with the right hash.
fn cached_tarball(layout: &Layout, pin: &Pin, sha: &str) -> Option<PathBuf> {
    let mut names = vec![format!("{}.tar.gz", pin.version)];
    if let Some(d) = &pin.debian {
        names.push(d.orig.clone());
    }
    names
        .into_iter()
        .map(|n| layout.downloads().join(n))
        .find(|p| p.is_file() && sha256_file(p).is_ok_and(|h| h == sha))
}

/// `fetch --version V`: from the pin's URLs (tarball) or repository (git).
fn fetch_download(sh: &Shell, root: &Path, version: &str) -> Result<SourceTree> {
    let pins = Pins::load(root)?;
    let pin = pins.get(version)?;
    let layout = Layout::new(root);
    if let PinSource::Git { repo, commit } = &pin.source {
        let mut wanted: Vec<&str> = Vec::new();
        let done = already(&layout, pin);
        if done.is_none() {
            wanted.push(commit);
        }
        wanted.extend(suite::wanted(&layout, pin));
        if let (Some(t), true) = (done, wanted.is_empty()) {
            return Ok(t);
        }
        require_tool(sh, "git", "fetch of a git pin", "install git")?;
        let bare = layout.downloads().join(format!("{version}.git"));
        if !bare.join("HEAD").is_file() {
            fs::create_dir_all(&bare).map_err(|e| Error::io(&bare, e))?;
            cmd!(sh, "git init -q --bare {bare}").quiet().run()?;
        }
        for commit in wanted {
            step(&format!("git fetch {repo} {commit}"), || {
                let fetch = cmd!(
                    sh,
                    "git --git-dir {bare} fetch -q --depth 1 {repo} {commit}"
                );
                run_checked(fetch, &format!("fetch {version}"), "git fetch")
            })?;
        }
        return export_git(sh, &layout, pin, &bare);
    }
    let (sha, top_dir, urls) = tarball_parts(pin, &pins)?;
    if let Some(t) = already(&layout, pin) {
        return Ok(t);
    }
    if let Some(cached) = cached_tarball(&layout, pin, sha) {
        eprintln!("fetch: using verified download {}", cached.display());
        return install_tarball(&layout, pin, &cached, top_dir);
    }
    pin.require_download(&pins.path)?;
    require_tool(
        sh,
        "curl",
        "downloading a pinned tarball",
        "install curl, or pass --source TARBALL",
    )?;
    let downloads = layout.downloads();
    fs::create_dir_all(&downloads).map_err(|e| Error::io(&downloads, e))?;
    let dest = downloads.join(format!("{version}.tar.gz"));
    let part = downloads.join(format!("{version}.tar.gz.part"));
    let mut last_err = None;
    for url in urls {
        let got = step(&format!("downloading {url}"), || {
            let curl = cmd!(
                sh,
                "curl -fsSL --retry 2 --connect-timeout 30 -o {part} {url}"
            );
            run_checked(curl, &format!("fetch {version} from {url}"), "curl")?;
            archive::verify_sha256(&part, sha)
        });
        match got {
            Ok(()) => {
                fs::rename(&part, &dest).map_err(|e| Error::io(&dest, e))?;
                return install_tarball(&layout, pin, &dest, top_dir);
            }
            Err(e) => {
                let _ = fs::remove_file(&part);
                eprintln!("fetch: {e}");
                last_err = Some(e);
            }
        }
    }
    Err(last_err.unwrap_or(Error::NoSource))
}

/// `fetch --version V --from debian`.
fn fetch_debian(sh: &Shell, root: &Path, version: &str) -> Result<SourceTree> {
    let pins = Pins::load(root)?;
    let pin = pins.get(version)?;
    let deb = pin.debian.as_ref().ok_or_else(|| {
        Error::Unsupported(format!(
            "pin `{version}` names no Debian source package; drop --from debian"
        ))
    })?;
    let (sha, top_dir, _) = tarball_parts(pin, &pins)?;
    let layout = Layout::new(root);
    if let Some(t) = already(&layout, pin) {
        return Ok(t);
    }
    let tarball = match cached_tarball(&layout, pin, sha) {
        Some(c) => {
            eprintln!("fetch: using verified download {}", c.display());
            c
        }
        None => debian::fetch_orig(sh, deb, sha, &layout.downloads())?,
    };
    install_tarball(&layout, pin, &tarball, top_dir)
}

/// The git directory of `path`: a bare repository (or a `.git` directory), or a checkout.
fn git_dir_of(path: &Path) -> Option<PathBuf> {
    if path.join(".git").exists() {
        Some(path.join(".git"))
    } else if path.join("HEAD").is_file() && path.join("objects").is_dir() {
        Some(path.to_path_buf())
    } else {
        None
    }
}

fn has_commit(sh: &Shell, git_dir: &Path, commit: &str) -> Result<bool> {
    let obj = format!("{commit}^{{commit}}");
    let out = cmd!(sh, "git --git-dir {git_dir} cat-file -e {obj}")
        .quiet()
        .ignore_status()
        .output()?;
    Ok(out.status.success())
}

/// `commit` must be in `git_dir`; `MissingCommit` naming `what` (the version) otherwise.
fn require_commit(sh: &Shell, git_dir: &Path, commit: &str, what: &str) -> Result<()> {
    if has_commit(sh, git_dir, commit)? {
        return Ok(());
    }
    Err(Error::MissingCommit {
        repo: git_dir.to_path_buf(),
        commit: commit.to_string(),
        version: what.to_string(),
    })
}

/// One git export into `slurm-src/`: `paths` of `commit` (all of it when empty) archived from
/// `git_dir`, unpacked in a staging directory and installed as the tree `name` (which must
/// have `must_have`) with `identity` in its marker; `what` names it in messages.
struct Export<'a> {
    commit: &'a str,
    paths: &'a [&'a str],
    name: &'a str,
    identity: &'a str,
    must_have: &'a str,
    what: &'a str,
}

/// Carries out an [`Export`]; returns the installed tree.
fn export_tree(sh: &Shell, layout: &Layout, git_dir: &Path, e: &Export<'_>) -> Result<PathBuf> {
    let staging = Staging::new(&layout.dir, e.name)?;
    let tar = staging.dir.join("export.tar");
    let (commit, paths) = (e.commit, e.paths);
    let top = format!("{}-{}", e.name, &commit[..12]);
    let prefix = format!("{top}/");
    step(&format!("git archive {commit} {}", paths.join(" ")), || {
        let archive = cmd!(
            sh,
            "git --git-dir {git_dir} archive --format=tar --prefix={prefix} -o {tar} {commit} {paths...}"
        );
        run_checked(archive, &format!("fetch {}", e.what), "git archive")
    })?;
    let unpacked = staging.dir.join("tree");
    fs::create_dir(&unpacked).map_err(|x| Error::io(&unpacked, x))?;
    step("unpacking the export", || {
        let t = archive::unpack_single_top(&tar, Some(&top), &unpacked)?;
        archive::install_with(layout, e.name, &t, e.identity, e.must_have)
    })
}

/// `git archive`s the pinned commit of a git pin from `git_dir` and installs it, then the
/// Python suite the pin names, if any ([`suite`]).
fn export_git(sh: &Shell, layout: &Layout, pin: &Pin, git_dir: &Path) -> Result<SourceTree> {
    let tree = export_source(sh, layout, pin, git_dir)?;
    suite::export(sh, layout, pin, git_dir)?;
    Ok(tree)
}

/// `git archive`s the pinned commit of a git pin from `git_dir` and installs it.
fn export_source(sh: &Shell, layout: &Layout, pin: &Pin, git_dir: &Path) -> Result<SourceTree> {
    let PinSource::Git { commit, .. } = &pin.source else {
        return unreachable_git(pin);
    };
    require_commit(sh, git_dir, commit, &pin.version)?;
    if let Some(t) = already(layout, pin) {
        return Ok(t);
    }
    let export = Export {
        commit,
        paths: &[],
        name: &pin.version,
        identity: &pin.identity(),
        must_have: archive::SOURCE_MARK,
        what: &pin.version,
    };
    export_tree(sh, layout, git_dir, &export)?;
    Ok(tree_of(layout, pin))
}

/// `--source PATH [--version V]` (see the module docs).
fn from_source(sh: &Shell, root: &Path, path: &Path, version: Option<&str>) -> Result<SourceTree> {
    let not_source = |detail: &str| Error::NotASource {
        path: path.to_path_buf(),
        detail: detail.into(),
    };
    let meta = fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let pins = Pins::load(root)?;
    let layout = Layout::new(root);
    if meta.is_file() {
        return from_tarball(&layout, &pins, path, version);
    }
    if !meta.is_dir() {
        return Err(not_source("neither a file nor a directory"));
    }
    let git = git_dir_of(path);
    let is_tree = path.join("configure.ac").is_file() && path.join("META").is_file();
    if let Some(v) = version {
        let pin = pins.get(v)?;
        return match (&pin.source, git) {
            (PinSource::Git { .. }, Some(g)) => {
                require_tool(sh, "git", "fetch --source GIT_DIR", "install git")?;
                export_git(sh, &layout, pin, &g)
            }
            (PinSource::Git { .. }, None) => Err(not_source(&format!(
                "`{v}` is pinned by git commit: pass a git directory (bare or checkout)"
            ))),
            (PinSource::Tarball { .. }, _) => Err(not_source(&format!(
                "`{v}` is pinned by tarball sha256: pass the tarball; a directory cannot be verified against it{}",
                if is_tree {
                    " (or drop --version to copy the tree as an unverified local version)"
                } else {
                    ""
                }
            ))),
        };
    }
    if is_tree {
        return copy_local_tree(&layout, path);
    }
    let Some(g) = git else {
        return Err(not_source(
            "not a tarball, not a git directory, and not an unpacked tree (configure.ac and META)",
        ));
    };
    from_git_dir(sh, &layout, &pins, path, &g)
}

/// `--source TARBALL [--version V]`: checked against `V`'s pin, or the pin with its sha256.
fn from_tarball(
    layout: &Layout,
    pins: &Pins,
    path: &Path,
    version: Option<&str>,
) -> Result<SourceTree> {
    let actual = step(&format!("sha256 of {}", path.display()), || {
        sha256_file(path)
    })?;
    let pin = match version {
        Some(v) => {
            let pin = pins.get(v)?;
            let expected = pin.require_sha256(&pins.path)?;
            if actual != expected {
                return Err(Error::HashMismatch {
                    what: path.display().to_string(),
                    expected: expected.into(),
                    actual,
                });
            }
            pin
        }
        None => pins
            .by_sha256(&actual)
            .ok_or_else(|| Error::UnknownTarball {
                path: path.to_path_buf(),
                actual: actual.clone(),
                known: pins.known(),
            })?,
    };
    let (_, top_dir, _) = tarball_parts(pin, pins)?;
    if let Some(t) = already(layout, pin) {
        return Ok(t);
    }
    install_tarball(layout, pin, path, top_dir)
}

/// `--source GIT_DIR` without `--version`: the one git pin whose commit the repository has.
fn from_git_dir(
    sh: &Shell,
    layout: &Layout,
    pins: &Pins,
    path: &Path,
    g: &Path,
) -> Result<SourceTree> {
    let not_source = |detail: &str| Error::NotASource {
        path: path.to_path_buf(),
        detail: detail.into(),
    };
    require_tool(sh, "git", "fetch --source GIT_DIR", "install git")?;
    let mut found = Vec::new();
    for pin in pins.git_pins() {
        if let PinSource::Git { commit, .. } = &pin.source {
            if has_commit(sh, g, commit)? {
                found.push(pin);
            }
        }
    }
    match found.as_slice() {
        [pin] => export_git(sh, layout, pin, g),
        [] => Err(not_source(&format!(
            "the repository contains none of the pinned commits ({})",
            pins.git_pins()
                .map(|p| format!("{} {}", p.version, p.identity()))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        several => Err(Error::Unsupported(format!(
            "{} contains the commits of several git pins ({}): pass --version",
            path.display(),
            several
                .iter()
                .map(|p| p.version.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A project root in a temp dir with the committed pins file plus a test pin whose
    /// tarball we make ourselves.
    fn project(extra_pins: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("slurm-src")).unwrap();
        let committed =
            fs::read_to_string(crate::project_root().join(driver_common::pins::PINS_FILE)).unwrap();
        fs::write(
            d.path().join(driver_common::pins::PINS_FILE),
            format!("{committed}\n{extra_pins}"),
        )
        .unwrap();
        d
    }

    fn fake_tgz(path: &Path, top: &str) {
        let gz = flate2::write::GzEncoder::new(
            fs::File::create(path).unwrap(),
            flate2::Compression::fast(),
        );
        let mut b = tar::Builder::new(gz);
        for (name, body) in [
            ("configure.ac", "AC_INIT\n"),
            ("META", "  Major:\t1\n  Minor:\t2\n  Version:\t1.2.3\n"),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o644);
            h.set_size(body.len() as u64);
            b.append_data(&mut h, format!("{top}/{name}"), body.as_bytes())
                .unwrap();
        }
        b.into_inner().unwrap().finish().unwrap().flush().unwrap();
    }

    fn args(version: Option<&str>, source: Option<&Path>) -> SourceArgs {
        SourceArgs {
            version: version.map(str::to_string),
            source: source.map(Path::to_path_buf),
        }
    }

    #[test]
    fn from_source__tarball_found_by_hash_then_reused_and_resolvable() {
        let (_d, tgz) = crate::testing::scratch("t.tar.gz");
        fake_tgz(&tgz, "top-1");
        let sha = sha256_file(&tgz).unwrap();
        let p = project(&format!(
            "[pin.\"1.2.3\"]\nline = \"1.2\"\nkind = \"tarball\"\nsha256 = \"{sha}\"\ntop_dir = \"top-1\"\n"
        ));
        let sh = Shell::new().unwrap();
        let e = resolve(&sh, p.path(), &args(Some("1.2.3"), None)).unwrap_err();
        assert!(matches!(e, Error::NotFetched { .. }), "{e}");
        let t = resolve(&sh, p.path(), &args(None, Some(&tgz))).unwrap();
        assert_eq!((t.version.as_str(), t.line.as_str()), ("1.2.3", "1.2"));
        assert_eq!(t.path, p.path().join("slurm-src/1.2.3"));
        assert!(t.path.join("configure.ac").is_file());
        assert_eq!(
            resolve(&sh, p.path(), &args(Some("1.2.3"), None)).unwrap(),
            t
        );
        // Reuse: the tree is not rebuilt (a file we drop in survives).
        fs::write(t.path.join("probe"), "x").unwrap();
        assert_eq!(
            resolve(&sh, p.path(), &args(Some("1.2.3"), Some(&tgz))).unwrap(),
            t
        );
        assert!(t.path.join("probe").exists());
    }

    #[test]
    fn from_source__unknown_or_mismatching_tarball_is_an_error() {
        let (_d, tgz) = crate::testing::scratch("t.tar.gz");
        fake_tgz(&tgz, "top-1");
        let p = project("");
        let sh = Shell::new().unwrap();
        let e = resolve(&sh, p.path(), &args(None, Some(&tgz))).unwrap_err();
        assert!(matches!(e, Error::UnknownTarball { .. }), "{e}");
        let e = resolve(&sh, p.path(), &args(Some("24.11.5"), Some(&tgz))).unwrap_err();
        assert!(
            matches!(e, Error::HashMismatch { ref expected, .. } if expected.starts_with("e1a5547e")),
            "{e}"
        );
        let e = resolve(&sh, p.path(), &args(Some("26.11.0"), Some(&tgz))).unwrap_err();
        assert!(matches!(e, Error::UnverifiedPin { .. }), "{e}");
        let e = resolve(&sh, p.path(), &args(Some("0.0.0"), Some(&tgz))).unwrap_err();
        assert!(matches!(e, Error::UnknownVersion { .. }), "{e}");
        let e = resolve(&sh, p.path(), &args(None, None)).unwrap_err();
        assert!(matches!(e, Error::NoSource), "{e}");
        let left: Vec<_> = fs::read_dir(p.path().join("slurm-src"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("pins.toml")]);
    }

    #[test]
    fn resolve__unverified_pin_is_an_error_not_not_fetched() {
        let p = project("");
        let sh = Shell::new().unwrap();
        let e = resolve(&sh, p.path(), &args(Some("26.11.0"), None)).unwrap_err();
        assert!(matches!(e, Error::UnverifiedPin { .. }), "{e}");
        let e = fetch_download(&sh, p.path(), "26.11.0").unwrap_err();
        assert!(matches!(e, Error::UnverifiedPin { .. }), "{e}");
    }

    /// `fetch --from debian` of the default version (a git pin): the fix is to drop
    /// --from debian, before anything is downloaded.
    #[test]
    fn fetch_debian__pin_without_debian_package_says_drop_from_debian() {
        let p = project("");
        let sh = Shell::new().unwrap();
        let v = driver_common::lines::DEFAULT_VERSION;
        let e = fetch_debian(&sh, p.path(), v).unwrap_err().to_string();
        crate::testing::assert_mentions(&e, &[v, "no Debian source package", "drop --from debian"]);
    }

    #[test]
    fn from_source__unpacked_tree_is_copied_as_local_version_without_git() {
        let (d, src) = crate::testing::scratch("tree");
        fs::create_dir_all(src.join(".git")).unwrap();
        fs::write(src.join(".git/HEAD"), "x").unwrap();
        fs::write(src.join("configure.ac"), "AC_INIT\n").unwrap();
        fs::write(
            src.join("META"),
            "  Major:\t25\n  Minor:\t05\n  Micro:\t1\n  Version:\t25.05.1\n",
        )
        .unwrap();
        let p = project("");
        let sh = Shell::new().unwrap();
        let t = resolve(&sh, p.path(), &args(None, Some(&src))).unwrap();
        assert_eq!(
            (t.version.as_str(), t.line.as_str()),
            ("25.05.1-local", "25.05")
        );
        assert!(t.path.join("META").is_file() && !t.path.join(".git").exists());
        // A tree cannot be verified against a tarball pin.
        let e = resolve(&sh, p.path(), &args(Some("24.11.5"), Some(&src))).unwrap_err();
        assert!(matches!(e, Error::NotASource { .. }), "{e}");
        let e = resolve(&sh, p.path(), &args(None, Some(d.path()))).unwrap_err();
        assert!(matches!(e, Error::NotASource { .. }), "{e}");
    }

    /// `dir/repo` with a configure.ac: the start of a git source.
    fn source_repo(dir: &Path) -> PathBuf {
        let repo = dir.join("repo");
        crate::testing::write(&repo.join("configure.ac"), "AC_INIT\n");
        repo
    }

    #[test]
    fn from_source__git_dir_exports_pinned_commit_or_names_missing_one() {
        let sh = Shell::new().unwrap();
        let d = tempfile::tempdir().unwrap();
        let repo = source_repo(d.path());
        fs::write(
            repo.join("META"),
            "  Major:\t9\n  Minor:\t1\n  Version:\t9.1.0\n",
        )
        .unwrap();
        let commit = crate::testing::git_commit_all(&sh, &repo, "one");
        fs::write(repo.join("later"), "x").unwrap();
        crate::testing::git_commit_all(&sh, &repo, "two");
        let p = project(&format!(
            "[pin.\"9.1-snap\"]\nline = \"9.1\"\nkind = \"git\"\nrepo = \"https://example.org/r.git\"\ncommit = \"{commit}\"\n"
        ));
        // A checkout with configure.ac: --version picks git mode; the export is the pinned commit.
        let t = resolve(&sh, p.path(), &args(Some("9.1-snap"), Some(&repo))).unwrap();
        assert_eq!((t.version.as_str(), t.line.as_str()), ("9.1-snap", "9.1"));
        assert!(t.path.join("configure.ac").is_file() && !t.path.join("later").exists());
        // A bare clone without --version: the one git pin it contains is chosen.
        let bare = d.path().join("bare.git");
        cmd!(sh, "git clone -q --bare {repo} {bare}")
            .quiet()
            .run()
            .unwrap();
        fs::remove_dir_all(&t.path).unwrap();
        let t2 = resolve(&sh, p.path(), &args(None, Some(&bare))).unwrap();
        assert_eq!(t2, t);
        // The committed 26.11-snapshot commit is not in this repository.
        let e = resolve(&sh, p.path(), &args(Some("26.11-snapshot"), Some(&bare))).unwrap_err();
        assert!(
            matches!(e, Error::MissingCommit { ref commit, .. } if commit.starts_with("284c3b95")),
            "{e}"
        );
        assert!(!p.path().join("slurm-src/26.11-snapshot").exists());
    }

    #[test]
    fn fetch_download__tries_urls_in_order_verifies_and_renames_part() {
        let Some(sh) = crate::testing::shell_with(&["curl"]) else {
            return;
        };
        let (d, tgz) = crate::testing::scratch("t.tar.gz");
        fake_tgz(&tgz, "top-1");
        let sha = sha256_file(&tgz).unwrap();
        let (missing, good) = (
            format!("file://{}/nope.tar.gz", d.path().display()),
            format!("file://{}", tgz.display()),
        );
        let p = project(&format!(
            "[pin.\"1.2.3\"]\nline = \"1.2\"\nkind = \"tarball\"\nsha256 = \"{sha}\"\ntop_dir = \"top-1\"\nurls = [\"{missing}\", \"{good}\"]\n\
             [pin.\"6.6.6\"]\nline = \"6.6\"\nkind = \"tarball\"\nsha256 = \"{zero}\"\ntop_dir = \"top-1\"\nurls = [\"{good}\"]\n",
            zero = "0".repeat(64)
        ));
        let t = fetch_download(&sh, p.path(), "1.2.3").unwrap();
        assert!(t.path.join("configure.ac").is_file());
        let dl = p.path().join("slurm-src/downloads");
        assert!(dl.join("1.2.3.tar.gz").is_file() && !dl.join("1.2.3.tar.gz.part").exists());
        // A download with the wrong hash: error, no .part, no tree, no marker.
        let e = fetch_download(&sh, p.path(), "6.6.6").unwrap_err();
        assert!(matches!(e, Error::HashMismatch { .. }), "{e}");
        assert!(!dl.join("6.6.6.tar.gz.part").exists() && !dl.join("6.6.6.tar.gz").exists());
        assert!(
            !p.path().join("slurm-src/6.6.6").exists()
                && !p.path().join("slurm-src/.6.6.6.complete").exists()
        );
    }

    #[test]
    fn fetch_download__git_pin_fetches_the_pinned_commit() {
        let sh = Shell::new().unwrap();
        let d = tempfile::tempdir().unwrap();
        let repo = source_repo(d.path());
        let commit = crate::testing::git_commit_all(&sh, &repo, "one");
        let url = format!("file://{}", repo.display());
        let p = project(&format!(
            "[pin.\"9-snap\"]\nline = \"9\"\nkind = \"git\"\nrepo = \"{url}\"\ncommit = \"{commit}\"\n"
        ));
        let t = fetch_download(&sh, p.path(), "9-snap").unwrap();
        assert!(t.path.join("configure.ac").is_file());
        assert!(
            p.path()
                .join("slurm-src/downloads/9-snap.git/HEAD")
                .is_file()
        );
    }

    #[test]
    fn fetch_download__python_suite_is_exported_from_its_own_commit() {
        let sh = Shell::new().unwrap();
        let d = tempfile::tempdir().unwrap();
        let repo = source_repo(d.path());
        crate::testing::write(&repo.join("testsuite/python/conftest.py"), "# suite\n");
        crate::testing::write(&repo.join("testsuite/python/tests/test_1.py"), "\n");
        let with_suite = crate::testing::git_commit_all(&sh, &repo, "suite");
        fs::remove_dir_all(repo.join("testsuite")).unwrap();
        let release = crate::testing::git_commit_all(&sh, &repo, "remove suite");
        // The suite's commit is no branch tip: let the test repository serve it by id.
        cmd!(
            sh,
            "git -C {repo} config uploadpack.allowAnySHA1InWant true"
        )
        .quiet()
        .run()
        .unwrap();
        let url = format!("file://{}", repo.display());
        let pin = format!(
            "[pin.\"9.9\"]\nline = \"9\"\nkind = \"git\"\nrepo = \"{url}\"\ncommit = \"{release}\"\n"
        );
        let p = project(&format!(
            "{pin}[pin.\"9.9\".python_suite]\ncommit = \"{with_suite}\"\nwhy = \"test\"\n"
        ));
        // Before fetch: the peer run is told to fetch.
        let e = suite::resolve(p.path(), "9.9").unwrap_err();
        assert!(
            e.to_string().contains("cargo xtask fetch --version 9.9"),
            "{e}"
        );
        let t = fetch_download(&sh, p.path(), "9.9").unwrap();
        assert!(!t.path.join("testsuite/python").exists());
        let dir = suite::resolve(p.path(), "9.9").unwrap().unwrap();
        assert_eq!(
            dir,
            p.path().join("slurm-src/9.9-python-suite/testsuite/python")
        );
        assert!(dir.join("tests/test_1.py").is_file());
        assert!(
            !dir.parent()
                .unwrap()
                .parent()
                .unwrap()
                .join("configure.ac")
                .exists()
        );
        // A source fetched before the pin named a suite: a second fetch adds only the suite.
        fs::remove_dir_all(p.path().join("slurm-src/9.9-python-suite")).unwrap();
        assert!(suite::resolve(p.path(), "9.9").is_err());
        fetch_download(&sh, p.path(), "9.9").unwrap();
        assert!(suite::resolve(p.path(), "9.9").unwrap().is_some());
        // Pins without one: nothing to take.
        assert_eq!(suite::resolve(p.path(), "25.05.8").unwrap(), None);
    }

    #[test]
    fn parse_meta__reads_version_and_line() {
        let text = "##\n  Meta:\t\t1\n  Name:\t\tslurm\n  Major:\t24\n  Minor:\t11\n  Micro:\t5\n  Version:\t24.11.5\n";
        assert_eq!(parse_meta(text), Some(("24.11.5".into(), "24.11".into())));
        assert_eq!(parse_meta("  Version:\t1\n"), None);
    }
}
