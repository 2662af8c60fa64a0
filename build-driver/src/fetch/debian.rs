//! `fetch --from debian`: the orig tarball of a Debian source package, through a private
//! apt state directory whose single `deb-src` line uses the Debian mirror this machine's
//! own apt configuration already uses (never a host name written here).

use super::archive::verify_sha256;
use driver_common::error::{Error, Result};
use driver_common::pins::DebianPin;
use driver_common::util::fs::Staging;
use driver_common::util::process::logged::step;
use driver_common::util::process::{require_tool, run_checked, tail};
use std::fs;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// Debian codenames and suite aliases (an entry for any of them, or `<it>-updates`,
/// `<it>-backports`, `<it>-proposed-updates`, is an entry of the main Debian archive).
const DEBIAN_SUITES: &[&str] = &[
    "hamm",
    "slink",
    "potato",
    "woody",
    "sarge",
    "etch",
    "lenny",
    "squeeze",
    "wheezy",
    "jessie",
    "stretch",
    "buster",
    "bullseye",
    "bookworm",
    "trixie",
    "forky",
    "duke",
    "sid",
    "oldoldstable",
    "oldstable",
    "stable",
    "testing",
    "unstable",
];
const SUITE_SUFFIXES: &[&str] = &["-updates", "-backports", "-proposed-updates"];

/// One apt source entry, from either format.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    types: Vec<String>,
    uris: Vec<String>,
    suites: Vec<String>,
    components: Vec<String>,
    enabled: bool,
}

/// Entries of a one-line-format file (`/etc/apt/sources.list`, `*.list`).
fn parse_one_line(text: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let mut toks = line.split_whitespace().peekable();
        let Some(ty) = toks.next() else { continue };
        if ty != "deb" && ty != "deb-src" {
            continue;
        }
        if toks.peek().is_some_and(|t| t.starts_with('[')) {
            for t in toks.by_ref() {
                if t.ends_with(']') {
                    break;
                }
            }
        }
        let (Some(uri), Some(suite)) = (toks.next(), toks.next()) else {
            continue;
        };
        out.push(Entry {
            types: vec![ty.to_string()],
            uris: vec![uri.to_string()],
            suites: vec![suite.to_string()],
            components: toks.map(str::to_string).collect(),
            enabled: true,
        });
    }
    out
}

/// Entries of a deb822 file (`*.sources`): paragraphs separated by blank lines.
fn parse_deb822(text: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut fields: Vec<(String, String)> = Vec::new();
    let flush = |fields: &mut Vec<(String, String)>, out: &mut Vec<Entry>| {
        if fields.is_empty() {
            return;
        }
        let get = |k: &str| -> Vec<String> {
            fields
                .iter()
                .filter(|(name, _)| name.eq_ignore_ascii_case(k))
                .flat_map(|(_, v)| v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
                .collect()
        };
        let enabled = get("Enabled")
            .first()
            .is_none_or(|v| !v.eq_ignore_ascii_case("no"));
        out.push(Entry {
            types: get("Types"),
            uris: get("URIs"),
            suites: get("Suites"),
            components: get("Components"),
            enabled,
        });
        fields.clear();
    };
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        if line.trim().is_empty() {
            flush(&mut fields, &mut out);
        } else if line.starts_with([' ', '\t']) {
            if let Some(last) = fields.last_mut() {
                last.1.push(' ');
                last.1.push_str(line.trim());
            }
        } else if let Some((k, v)) = line.split_once(':') {
            fields.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    flush(&mut fields, &mut out);
    out
}

/// 0 for a bare Debian codename/alias, 1 for `<codename>-updates` and the like, None for
/// anything else (security suites, other distributions, third-party repositories).
fn suite_rank(suite: &str) -> Option<u8> {
    if DEBIAN_SUITES.contains(&suite) {
        return Some(0);
    }
    SUITE_SUFFIXES
        .iter()
        .find_map(|sfx| suite.strip_suffix(sfx))
        .filter(|base| DEBIAN_SUITES.contains(base))
        .map(|_| 1)
}

fn serves_main_archive(uri: &str) -> bool {
    let scheme_ok = uri.starts_with("http://") || uri.starts_with("https://");
    let last = uri.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    scheme_ok && !last.ends_with("-security") && !last.ends_with("-ports")
}

/// The mirror URI of the main Debian archive among the given apt configuration files:
/// `one_line` holds the texts of `sources.list`/`*.list`, `deb822` those of `*.sources`.
/// Prefers an entry for a bare codename over `-updates`/`-backports`; file order breaks ties.
pub fn mirror_from_config(one_line: &[String], deb822: &[String]) -> Option<String> {
    let entries = one_line
        .iter()
        .flat_map(|t| parse_one_line(t))
        .chain(deb822.iter().flat_map(|t| parse_deb822(t)));
    let mut best: Option<(u8, String)> = None;
    for e in entries {
        if !e.enabled
            || !e.types.iter().any(|t| t == "deb" || t == "deb-src")
            || !e.components.iter().any(|c| c == "main")
        {
            continue;
        }
        let Some(rank) = e.suites.iter().filter_map(|s| suite_rank(s)).min() else {
            continue;
        };
        let Some(uri) = e.uris.iter().find(|u| serves_main_archive(u)) else {
            continue;
        };
        if best.as_ref().is_none_or(|(r, _)| rank < *r) {
            best = Some((rank, uri.trim_end_matches('/').to_string()));
        }
    }
    best.map(|(_, u)| u)
}

/// Reads this machine's apt configuration below `etc_apt` (normally `/etc/apt`): the
/// `sources.list` file and the `*.list` / `*.sources` files of `sources.list.d` (other
/// names are ignored, as apt does).
fn machine_config(etc_apt: &Path) -> (Vec<String>, Vec<String>) {
    let mut one_line = Vec::new();
    let mut deb822 = Vec::new();
    if let Ok(t) = fs::read_to_string(etc_apt.join("sources.list")) {
        one_line.push(t);
    }
    let mut names: Vec<PathBuf> = fs::read_dir(etc_apt.join("sources.list.d"))
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    names.sort();
    for p in names {
        let Ok(t) = fs::read_to_string(&p) else {
            continue;
        };
        match p.extension().and_then(|e| e.to_str()) {
            Some("list") => one_line.push(t),
            Some("sources") => deb822.push(t),
            _ => {}
        }
    }
    (one_line, deb822)
}

/// `apt-get source --download-only` of `deb` into `dl`, with the private apt state `opts`;
/// only the orig tarball must arrive.
fn download_orig(sh: &Shell, deb: &DebianPin, opts: &[String], dl: &Path) -> Result<()> {
    let package = &deb.package;
    let out = {
        let _d = sh.push_dir(dl);
        cmd!(sh, "apt-get {opts...} source --download-only {package}")
            .quiet()
            .ignore_status()
            .output()?
    };
    if dl.join(&deb.orig).is_file() {
        if !out.status.success() {
            // Known: mirrors may not serve the .dsc/.debian.tar.xz; the orig is what we need.
            eprintln!(
                "fetch: apt-get exited with {} but {} arrived; continuing (last message: {})",
                out.status,
                deb.orig,
                tail(&out.stderr, 1)
            );
        }
        return Ok(());
    }
    let arrived: Vec<String> = fs::read_dir(dl)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    Err(Error::Command {
        step: format!(
            "fetch --from debian: apt-get source {package} ({})",
            deb.suite
        ),
        program: "apt-get".into(),
        detail: format!(
            "{} did not arrive (got: [{}]): {}",
            deb.orig,
            arrived.join(", "),
            tail(&out.stderr, 15)
        ),
    })
}

/// Downloads `deb.orig` with `apt-get source --download-only` through a private apt state
/// directory, verifies it against `sha256`, and moves it to `downloads/<orig>`.
pub fn fetch_orig(sh: &Shell, deb: &DebianPin, sha256: &str, downloads: &Path) -> Result<PathBuf> {
    require_tool(
        sh,
        "apt-get",
        "fetch --from debian",
        "--from debian needs Debian's apt; fetch from the pin's URLs (drop --from) or pass --source TARBALL",
    )?;
    let (one_line, deb822) = machine_config(Path::new("/etc/apt"));
    let mirror = mirror_from_config(&one_line, &deb822).ok_or_else(|| {
        Error::Unsupported(
            "fetch --from debian: no Debian archive mirror (a deb/deb-src entry for a Debian suite with \
             component main, not -security) found in /etc/apt/sources.list or /etc/apt/sources.list.d/; \
             fetch from the pin's URLs (drop --from) or pass --source TARBALL"
                .into(),
        )
    })?;
    fs::create_dir_all(downloads).map_err(|e| Error::io(downloads, e))?;
    let staging = Staging::new(downloads, "apt")?;
    let s = &staging.dir;
    let (list, lists, cache, dl) = (
        s.join("sources.list"),
        s.join("lists"),
        s.join("cache"),
        s.join("dl"),
    );
    for d in [
        lists.join("partial"),
        cache.join("archives/partial"),
        dl.clone(),
    ] {
        fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
    }
    let line = format!("deb-src {mirror} {} main\n", deb.suite);
    fs::write(&list, &line).map_err(|e| Error::io(&list, e))?;
    eprintln!("fetch: private apt source: {}", line.trim_end());
    let opts = [
        "-o".to_string(),
        format!("Dir::Etc::SourceList={}", list.display()),
        "-o".into(),
        "Dir::Etc::SourceParts=/dev/null".into(),
        "-o".into(),
        format!("Dir::State::Lists={}", lists.display()),
        "-o".into(),
        format!("Dir::Cache={}", cache.display()),
    ];
    let opts = &opts;
    step(
        "fetch",
        &format!("apt-get update ({} {})", deb.suite, "deb-src"),
        || {
            let update = cmd!(sh, "apt-get {opts...} update");
            run_checked(update, "fetch --from debian: apt-get update", "apt-get")
        },
    )?;
    let orig = dl.join(&deb.orig);
    step(
        "fetch",
        &format!("apt-get source --download-only {}", deb.package),
        || download_orig(sh, deb, opts, &dl),
    )?;
    verify_sha256(&orig, sha256)?;
    let dest = downloads.join(&deb.orig);
    fs::rename(&orig, &dest).map_err(|e| Error::io(&dest, e))?;
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> Vec<String> {
        vec![t.to_string()]
    }

    #[test]
    fn mirror_from_config__deb822_skips_security_and_comments() {
        let sources = "Types: deb\n# http://snapshot.example.org/archive/debian/20250520T000000Z\n\
URIs: http://mirror.example.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n\
Types: deb\nURIs: http://mirror.example.org/debian-security\nSuites: bookworm-security\nComponents: main\n";
        assert_eq!(
            mirror_from_config(&[], &s(sources)).as_deref(),
            Some("http://mirror.example.org/debian")
        );
        // Security first in the file changes nothing.
        let swapped = "Types: deb\nURIs: http://sec.example.org/debian-security/\nSuites: trixie-security\n\
Components: main\n\nTypes: deb deb-src\nURIs: https://deb.example.org/debian/\nSuites: trixie\nComponents: main contrib\n";
        assert_eq!(
            mirror_from_config(&[], &s(swapped)).as_deref(),
            Some("https://deb.example.org/debian")
        );
    }

    #[test]
    fn mirror_from_config__one_line_with_options_and_third_party_repos() {
        let list = "# comment\n\
deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] https://packages.example.com/apt cloud-sdk-bookworm main\n\
deb http://security.example.org/debian-security bookworm-security main\n\
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://ftp.example.org/debian/ bookworm main non-free\n";
        assert_eq!(
            mirror_from_config(&s(list), &[]).as_deref(),
            Some("http://ftp.example.org/debian")
        );
    }

    #[test]
    fn mirror_from_config__ignores_non_debian_disabled_and_non_main() {
        let third_party = "Types: deb\nURIs: https://deb.example.com/node_20.x\nSuites: nodistro\nComponents: main\n\n\
Types: deb\nURIs: http://ubuntu.example.org/ubuntu\nSuites: jammy\nComponents: main\n\n\
Types: deb\nURIs: http://off.example.org/debian\nSuites: trixie\nComponents: main\nEnabled: no\n\n\
Types: deb\nURIs: http://contrib.example.org/debian\nSuites: trixie\nComponents: contrib\n\n\
Types: deb\nURIs: file:/srv/debian\nSuites: trixie\nComponents: main\n";
        assert_eq!(mirror_from_config(&[], &s(third_party)), None);
        assert_eq!(
            mirror_from_config(&s("deb cdrom:[Debian]/ bookworm main\n"), &[]),
            None
        );
    }

    #[test]
    fn mirror_from_config__prefers_bare_codename_over_updates() {
        let list = "deb http://upd.example.org/debian bookworm-updates main\n\
deb http://main.example.org/debian bookworm main\n";
        assert_eq!(
            mirror_from_config(&s(list), &[]).as_deref(),
            Some("http://main.example.org/debian")
        );
        let only_updates = "deb http://upd.example.org/debian bookworm-updates main\n";
        assert_eq!(
            mirror_from_config(&s(only_updates), &[]).as_deref(),
            Some("http://upd.example.org/debian")
        );
    }

    #[test]
    fn machine_config__reads_list_and_sources_files_only() {
        let d = tempfile::tempdir().unwrap();
        let etc = d.path();
        fs::create_dir_all(etc.join("sources.list.d")).unwrap();
        fs::write(
            etc.join("sources.list.d/off.list.disabled"),
            "deb http://off.example.org/debian sid main\n",
        )
        .unwrap();
        fs::write(
            etc.join("sources.list.d/a.list"),
            "deb http://a.example.org/debian sid-updates main\n",
        )
        .unwrap();
        fs::write(
            etc.join("sources.list.d/b.sources"),
            "Types: deb\nURIs: http://b.example.org/debian\nSuites: sid\nComponents: main\n",
        )
        .unwrap();
        let (one, d822) = machine_config(etc);
        assert_eq!((one.len(), d822.len()), (1, 1));
        assert_eq!(
            mirror_from_config(&one, &d822).as_deref(),
            Some("http://b.example.org/debian")
        );
    }
}
