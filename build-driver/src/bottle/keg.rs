//! The keg: the staged install turned into what Homebrew's Cellar holds,
//! `<formula>/<version>/` with `INSTALL_RECEIPT.json`, `.brew/<formula>.rb` and the
//! LaunchDaemon plist (`<label>.plist`, where `service do name macos:` finds it), libtool's
//! the node tool ([`super::node_tool`], cross-built by cargo) added as `bin/slurm-mac` and
//! signed, libtool's
//! `.la` files and the plugins' static archives removed (Homebrew's cleaner removes `.la`
//! files too), every Mach-O file's names fixed and re-signed ([`super::linkage`]), and text
//! files relocated to placeholders ([`super::relocate`]).

use super::node_tool::KEG_PATH;
use super::{Layout, codesign, linkage, relocate};
use driver_common::error::{Error, Result};
use slurm_mac::service::plist::{Daemon, Service, file_name};
use std::fs;
use std::path::{Path, PathBuf};

/// What assembling did.
#[derive(Debug, Default)]
pub struct Assembled {
    /// Mach-O files whose names were rewritten (and that were re-signed).
    pub relinked: Vec<PathBuf>,
    /// Text files that got placeholders (the receipt's `changed_files`).
    pub changed_files: Vec<String>,
}

fn is_macho(data: &[u8]) -> bool {
    crate::macho::inspect(data).is_ok()
}

/// Copies `staged` to `keg`, adds the node tool (`node_tool`, the binary) and makes it a keg.
pub fn assemble(
    layout: &Layout,
    staged: &Path,
    node_tool: &Path,
    keg: &Path,
    formula_text: &str,
) -> Result<Assembled> {
    if let Some(parent) = keg.parent() {
        fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    driver_common::util::fs::copy_tree(staged, keg)?;
    // Before the walk: its names are checked and fixed like every other Mach-O file's. Signed
    // here by the bottle's signer whatever the linker did: zig signs arm64 images only, and
    // the check wants every Mach-O file of either bottle signed.
    let mut tool = fs::read(node_tool).map_err(|e| Error::io(node_tool, e))?;
    codesign::sign(&mut tool, "slurm-mac")
        .map_err(|e| Error::file(node_tool, format!("signing the node tool: {e}")))?;
    let to = keg.join(KEG_PATH);
    if let Some(bin) = to.parent() {
        fs::create_dir_all(bin).map_err(|e| Error::io(bin, e))?;
    }
    driver_common::util::fs::write_atomic(&to, &tool, 0o755)?;
    let mut out = Assembled::default();
    let k = layout.keg();
    for rel in driver_common::util::fs::walk(keg)? {
        let abs = keg.join(&rel);
        let meta = fs::symlink_metadata(&abs).map_err(|e| Error::io(&abs, e))?;
        if !meta.is_file() {
            continue;
        }
        let name = rel.to_string_lossy();
        let plugin_archive = name.starts_with("lib/slurm/") && name.ends_with(".a");
        if name.ends_with(".la") || plugin_archive {
            fs::remove_file(&abs).map_err(|e| Error::io(&abs, e))?;
            continue;
        }
        let mut data = fs::read(&abs).map_err(|e| Error::io(&abs, e))?;
        if is_macho(&data) {
            let changed = linkage::fix(&k, &rel, &mut data)
                .map_err(|e| Error::file(&abs, format!("fixing install names: {e}")))?;
            if changed {
                write_keeping_mode(&abs, &data, &meta)?;
                out.relinked.push(rel);
            }
        } else if relocate::is_text(&data) {
            if let Some(t) =
                relocate::to_placeholders(&data, &layout.cellar(), &layout.homebrew_prefix)
            {
                write_keeping_mode(&abs, &t, &meta)?;
                out.changed_files.push(name.into_owned());
            }
        }
    }
    // The LaunchDaemon plist, with placeholders like every text file.
    let plist_name = file_name(Daemon::Slurmd);
    let xml = layout
        .service(Daemon::Slurmd)
        .xml()
        .map_err(|e| Error::parse("the LaunchDaemon plist", e))?;
    // It names the copy's root (`copy-keg`), not the Homebrew prefix: placeholders only
    // where a path of the prefix is left.
    let placeholders = relocate::to_placeholders(&xml, &layout.cellar(), &layout.homebrew_prefix);
    let changed = placeholders.is_some();
    let xml = placeholders.unwrap_or(xml);
    driver_common::util::fs::write_atomic(&keg.join(&plist_name), &xml, 0o644)?;
    if changed {
        out.changed_files.push(plist_name);
    }
    let brew = keg.join(".brew");
    fs::create_dir_all(&brew).map_err(|e| Error::io(&brew, e))?;
    driver_common::util::fs::write_atomic(
        &brew.join(format!("{}.rb", layout.formula)),
        formula_text.as_bytes(),
        0o644,
    )?;
    out.changed_files.sort();
    Ok(out)
}

fn write_keeping_mode(path: &Path, data: &[u8], meta: &fs::Metadata) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    driver_common::util::fs::write_atomic(path, data, meta.permissions().mode() & 0o7777)
}

impl Layout {
    /// The slurmd (or sackd) service of a poured keg: it runs the keg's root-owned copy
    /// (`slurm-mac copy-keg`), never the keg its user can change.
    pub fn service(&self, daemon: Daemon) -> Service {
        Service {
            daemon,
            prefix: PathBuf::from(self.copy_opt()),
            log_dir: PathBuf::from(format!("{}/var/log/slurm", self.copy_root())),
            conf_server: None,
            caffeinate: false,
        }
    }
}
