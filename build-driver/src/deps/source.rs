//! Getting a pinned tarball: a verified copy in `slurm-src/downloads/` is reused; else the
//! Debian source package's orig file through a private apt state directory (mirror derived
//! from this machine's apt configuration, see `fetch::debian`), else the pin's URLs with
//! curl (`.part`, sha256 check, rename). Every path checks the sha256 before the file is
//! used; unpacking goes into a [`Staging`] directory that disappears with it.

use super::pins::{Lib, Tarball};
use crate::fetch::archive::verify_sha256;
use crate::fetch::debian;
use driver_common::error::{Error, Result};
use driver_common::pins::DebianPin;
use driver_common::util::fs::Staging;
use driver_common::util::fs::sha256_file;
use driver_common::util::process::logged::step;
use driver_common::util::process::{require_tool, run_checked};
use std::fs;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// The path of a source package's file in a Debian mirror's pool: `pool/main/<p>/<pkg>/`,
/// where `<p>` is the package's first letter, or its first four for `lib*` packages.
pub fn pool_url(mirror: &str, package: &str, file: &str) -> String {
    let letter = if package.starts_with("lib") && package.len() > 3 {
        &package[..4]
    } else {
        &package[..package.len().min(1)]
    };
    format!(
        "{}/pool/main/{letter}/{package}/{file}",
        mirror.trim_end_matches('/')
    )
}

/// The verified tarball of `lib` in `downloads`, fetched if needed (`mirror`: a Debian
/// mirror for machines without apt).
pub fn tarball(
    sh: &Shell,
    lib: &Lib,
    t: &Tarball,
    downloads: &Path,
    mirror: Option<&str>,
) -> Result<PathBuf> {
    let dest = downloads.join(&t.file);
    if dest.is_file() {
        if sha256_file(&dest)? == t.sha256 {
            return Ok(dest);
        }
        // A stale or corrupt file under the pinned name: never used, fetched again.
        eprintln!("deps: {}: sha256 mismatch, fetching again", dest.display());
        fs::remove_file(&dest).map_err(|e| Error::io(&dest, e))?;
    }
    fs::create_dir_all(downloads).map_err(|e| Error::io(downloads, e))?;
    let mut errors: Vec<String> = Vec::new();
    if let Some(deb) = &t.debian {
        if require_tool(sh, "apt-get", "", "").is_ok() {
            let pin = DebianPin {
                package: deb.package.clone(),
                orig: t.file.clone(),
                suite: deb.suite.clone(),
            };
            match debian::fetch_orig(sh, &pin, &t.sha256, downloads) {
                Ok(p) => return Ok(p),
                Err(e) => errors.push(format!("Debian {} ({}): {e}", deb.package, deb.suite)),
            }
        } else {
            errors.push(format!(
                "Debian {} ({}): apt-get is not available here",
                deb.package, deb.suite
            ));
        }
    }
    let mut urls = t.urls.clone();
    if let (Some(m), Some(deb)) = (mirror, &t.debian) {
        urls.push(pool_url(m, &deb.package, &t.file));
    }
    if !urls.is_empty() {
        match download(sh, &urls, &t.sha256, &dest) {
            Ok(()) => return Ok(dest),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(Error::Unsupported(format!(
        "deps: no source for {} {}: {}; or put the pinned file {} (sha256 {}) into {}",
        lib.name,
        lib.version,
        errors.join("; "),
        t.file,
        t.sha256,
        downloads.display()
    )))
}

/// Tries each URL: curl into `<dest>.part`, verify, rename. A bad hash removes the part.
pub fn download(sh: &Shell, urls: &[String], sha256: &str, dest: &Path) -> Result<()> {
    require_tool(
        sh,
        "curl",
        "downloading a pinned tarball",
        "install curl, or put the pinned file into slurm-src/downloads/",
    )?;
    let part = dest.with_extension("part");
    let mut last = None;
    for url in urls {
        let got = step("deps", &format!("downloading {url}"), || {
            let curl = cmd!(
                sh,
                "curl -fsSL --retry 2 --connect-timeout 30 -o {part} {url}"
            );
            run_checked(curl, &format!("deps: download {url}"), "curl")?;
            verify_sha256(&part, sha256)
        });
        match got {
            Ok(()) => return fs::rename(&part, dest).map_err(|e| Error::io(dest, e)),
            Err(e) => {
                let _ = fs::remove_file(&part);
                last = Some(e);
            }
        }
    }
    Err(last.unwrap_or_else(|| Error::Unsupported("deps: no download URL".into())))
}

/// Unpacks `archive` (any format `tar` detects: gz, xz, bz2) into a new staging directory
/// below `parent`; the archive must have exactly the one top directory `top_dir`. Returns
/// the staging directory (removed when dropped) and the source tree inside it.
pub fn unpack(
    sh: &Shell,
    archive: &Path,
    top_dir: &str,
    parent: &Path,
) -> Result<(Staging, PathBuf)> {
    require_tool(
        sh,
        "tar",
        "unpacking a third-party tarball",
        "install tar (and xz-utils, bzip2)",
    )?;
    let staging = Staging::new(parent, "src")?;
    let into = &staging.dir;
    let out = cmd!(sh, "tar -xf {archive} -C {into}")
        .quiet()
        .ignore_status()
        .output()?;
    if !out.status.success() {
        return Err(Error::Unpack {
            what: archive.display().to_string(),
            detail: driver_common::util::process::tail(&out.stderr, 5),
        });
    }
    let tops: Vec<String> = fs::read_dir(into)
        .map_err(|e| Error::io(into, e))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    if tops != [top_dir] {
        return Err(Error::Unpack {
            what: archive.display().to_string(),
            detail: format!(
                "expected the single top directory `{top_dir}`, found [{}]",
                tops.join(", ")
            ),
        });
    }
    let tree = into.join(top_dir);
    Ok((staging, tree))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deps::pins::BuildKind;

    fn lib(t: &Tarball) -> Lib {
        Lib {
            name: "x".into(),
            version: "1".into(),
            build: BuildKind::Cmake,
            needs: vec![],
            why: String::new(),
            options: vec![],
            tarball: Some(t.clone()),
            overlay: None,
            bundle: vec![],
        }
    }

    fn tarball_of(dir: &Path, top: &str) -> (PathBuf, String) {
        let sh = Shell::new().unwrap();
        let src = dir.join("mk");
        fs::create_dir_all(src.join(top)).unwrap();
        fs::write(src.join(top).join("CMakeLists.txt"), "x").unwrap();
        let out = dir.join("x.tar.xz");
        cmd!(sh, "tar -cJf {out} -C {src} {top}")
            .quiet()
            .run()
            .unwrap();
        let sha = sha256_file(&out).unwrap();
        (out, sha)
    }

    /// A shell, a temporary directory and the tarball `x-1` in it with its sha256.
    fn shell_and_x1_tarball() -> (Shell, tempfile::TempDir, PathBuf, String) {
        let d = tempfile::tempdir().unwrap();
        let (tx, sha) = tarball_of(d.path(), "x-1");
        (Shell::new().unwrap(), d, tx, sha)
    }

    #[test]
    fn tarball__verified_cached_file_is_used_and_a_wrong_hash_is_refetched_or_refused() {
        let (sh, d, tx, sha) = shell_and_x1_tarball();
        let downloads = d.path().join("downloads");
        fs::create_dir_all(&downloads).unwrap();
        fs::copy(&tx, downloads.join("x.tar.xz")).unwrap();
        let t = Tarball {
            sha256: sha.clone(),
            file: "x.tar.xz".into(),
            top_dir: "x-1".into(),
            urls: vec![],
            debian: None,
        };
        assert_eq!(
            tarball(&sh, &lib(&t), &t, &downloads, None).unwrap(),
            downloads.join("x.tar.xz")
        );
        // Same name, other hash: the file is removed and, with no source, a clear error.
        let other = Tarball {
            sha256: "0".repeat(64),
            ..t.clone()
        };
        let e = tarball(&sh, &lib(&other), &other, &downloads, None).unwrap_err();
        assert!(e.to_string().contains("no source for x 1"), "{e}");
        assert!(!downloads.join("x.tar.xz").exists());
    }

    #[test]
    fn pool_url__lib_packages_use_four_letters() {
        assert_eq!(
            pool_url(
                "http://m.example/debian/",
                "libjwt",
                "libjwt_1.17.2.orig.tar.xz"
            ),
            "http://m.example/debian/pool/main/libj/libjwt/libjwt_1.17.2.orig.tar.xz"
        );
        assert_eq!(
            pool_url("http://m.example/debian", "json-c", "f"),
            "http://m.example/debian/pool/main/j/json-c/f"
        );
    }

    #[test]
    fn download__hash_mismatch_leaves_no_file() {
        let Some(sh) = crate::testing::shell_with(&["curl"]) else {
            return;
        };
        let d = tempfile::tempdir().unwrap();
        let (tx, sha) = tarball_of(d.path(), "x-1");
        let url = format!("file://{}", tx.display());
        let dest = d.path().join("got.tar.xz");
        let e = download(&sh, std::slice::from_ref(&url), &"1".repeat(64), &dest).unwrap_err();
        assert!(matches!(e, Error::HashMismatch { .. }), "{e}");
        assert!(!dest.exists() && !dest.with_extension("part").exists());
        download(&sh, &[url], &sha, &dest).unwrap();
        assert_eq!(sha256_file(&dest).unwrap(), sha);
    }

    #[test]
    fn unpack__checks_the_top_directory_and_cleans_up() {
        let (sh, d, tx, _) = shell_and_x1_tarball();
        let parent = d.path().join("build");
        {
            let (staging, tree) = unpack(&sh, &tx, "x-1", &parent).unwrap();
            assert!(tree.join("CMakeLists.txt").is_file());
            assert!(staging.dir.starts_with(&parent));
        }
        assert_eq!(fs::read_dir(&parent).unwrap().count(), 0, "staging removed");
        let e = unpack(&sh, &tx, "y-1", &parent).unwrap_err();
        assert!(e.to_string().contains("single top directory `y-1`"), "{e}");
        assert_eq!(fs::read_dir(&parent).unwrap().count(), 0);
    }
}
