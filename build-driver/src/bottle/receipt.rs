//! `INSTALL_RECEIPT.json` (Homebrew's tab, `tab/tab.rb` `to_json` at aad366f) and the
//! `.bottle.json` `brew bottle --json` writes (`dev-cmd/bottle.rb`): the fields brew reads
//! at pour (`changed_files`: the files with placeholders; `built_as_bottle`; `arch`;
//! `source.versions`), no time of the build (reproducible), `runtime_dependencies` empty:
//! the third-party libraries are linked statically.

use super::Layout;
use driver_common::error::{Error, Result};
use serde_json::{Value, json};
use std::path::Path;

pub(crate) fn tab(layout: &Layout, changed: &[String], epoch: u64) -> Value {
    json!({
        "homebrew_version": null,
        "used_options": [],
        "unused_options": [],
        "built_as_bottle": true,
        "poured_from_bottle": false,
        "loaded_from_api": false,
        "installed_on_request": false,
        "changed_files": changed,
        "time": null,
        "source_modified_time": epoch,
        "compiler": "clang",
        "aliases": [],
        "runtime_dependencies": [],
        "source": {
            "path": null,
            "tap": layout.tap,
            "spec": "stable",
            "versions": { "stable": layout.version, "head": null, "version_scheme": 0 }
        },
        "arch": layout.target.apple_arch.unwrap_or("arm64"),
        "built_on": {
            "os": "Linux",
            "cross": format!("zig {} for {}", crate::cross::zig::ZIG_VERSION, layout.target.rust),
        }
    })
}

/// Writes `<keg>/INSTALL_RECEIPT.json`.
pub fn write_receipt(layout: &Layout, keg: &Path, changed: &[String], epoch: u64) -> Result<()> {
    let text = serde_json::to_string_pretty(&tab(layout, changed, epoch))
        .map_err(|e| Error::parse("INSTALL_RECEIPT.json", e))?;
    driver_common::util::fs::write_atomic(&keg.join("INSTALL_RECEIPT.json"), text.as_bytes(), 0o644)
}

/// The `.bottle.json` text.
pub fn bottle_json(
    layout: &Layout,
    keg: &Path,
    sha256: &str,
    changed: &[String],
    epoch: u64,
) -> Result<String> {
    let mut all_files = Vec::new();
    let mut exec_files = Vec::new();
    let mut size = 0u64;
    for rel in driver_common::util::fs::walk(keg)? {
        let abs = keg.join(&rel);
        let meta = std::fs::symlink_metadata(&abs).map_err(|e| Error::io(&abs, e))?;
        if meta.is_file() {
            use std::os::unix::fs::PermissionsExt;
            size += meta.len();
            let name = rel.display().to_string();
            let top = name.split('/').next().unwrap_or("");
            if (top == "bin" || top == "sbin") && meta.permissions().mode() & 0o111 != 0 {
                exec_files.push(name.clone());
            }
            all_files.push(name);
        }
    }
    let (org, repo) = layout.tap.split_once('/').unwrap_or((&layout.tap, ""));
    let tap_git_path = format!("Formula/{}.rb", layout.formula);
    let v = json!({
        format!("{}/{}", layout.tap, layout.formula): {
            "formula": {
                "name": layout.formula,
                "pkg_version": layout.version,
                "path": format!("Library/Taps/{org}/homebrew-{repo}/{tap_git_path}"),
                "tap_git_path": tap_git_path,
                "tap_git_revision": null,
                "tap_git_remote": null,
                "desc": super::formula::DESC,
                "license": super::formula::LICENSE_SPDX,
                "homepage": "https://slurm.schedmd.com/"
            },
            "bottle": {
                "root_url": layout.root_url,
                "cellar": layout.cellar(),
                "rebuild": 0,
                "date": rfc3339(epoch),
                "tags": {
                    layout.tag: {
                        "filename": layout.url_name(),
                        "local_filename": layout.bottle_name(),
                        "sha256": sha256,
                        "tab": tab(layout, changed, epoch),
                        "path_exec_files": exec_files,
                        "all_files": all_files,
                        "installed_size": size
                    }
                }
            }
        }
    });
    serde_json::to_string_pretty(&v).map_err(|e| Error::parse("the bottle JSON", e))
}

/// `2024-01-01T00:00:00Z`: what Ruby's `Time#utc.iso8601` writes (`brew bottle --json`'s
/// `date`), from seconds since 1970 (days to a civil date: Howard Hinnant's algorithm).
pub fn rfc3339(epoch: u64) -> String {
    let days = (epoch / 86_400) as i64;
    let secs = epoch % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}
