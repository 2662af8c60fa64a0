//! `INSTALL_RECEIPT.json` (Homebrew's tab, `tab/tab.rb` `to_json` at aad366f) and the
//! `.bottle.json` `brew bottle --json` writes (`dev-cmd/bottle.rb`): the fields brew reads
//! at pour (`changed_files`: the files with placeholders; `built_as_bottle`; `arch`;
//! `source.versions`), no time of the build (reproducible), `runtime_dependencies` empty:
//! the third-party libraries are linked statically.

use super::Layout;
use driver_common::error::{Error, Result};
use serde_json::{Value, json};
use std::path::Path;

fn tab(layout: &Layout, changed: &[String], epoch: u64) -> Value {
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
            "tap": null,
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
    let v = json!({
        layout.formula.clone(): {
            "formula": {
                "name": layout.formula,
                "pkg_version": layout.version,
                "path": format!("Formula/{}.rb", layout.formula),
                "tap_git_path": format!("Formula/{}.rb", layout.formula),
                "tap_git_revision": null,
                "tap_git_remote": null,
                "desc": "Slurm workload manager: compute node (slurmd) and client commands for macOS",
                "license": "GPL-2.0-or-later",
                "homepage": "https://slurm.schedmd.com/"
            },
            "bottle": {
                "root_url": null,
                "cellar": layout.cellar(),
                "rebuild": 0,
                "date": epoch,
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
