//! The bottle's tar.gz, reproducible (what `brew bottle` gets from GNU tar's `--mtime
//! --sort=name --owner=0 --group=0 --numeric-owner` and gzip without a name or time;
//! Homebrew/brew `dev-cmd/bottle.rb` at aad366f): entries sorted by name, every mtime the
//! same, owner and group 0 without names, the gzip header's time 0 and no file name.
//! Directories, regular files (mode kept) and symlinks; nothing else.

use driver_common::error::{Error, Result};
use flate2::{Compression, GzBuilder};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Packs `base/<top>` as `<top>/...` into `out` (gzip), every entry with `mtime`.
pub fn write(base: &Path, top: &Path, out: &Path, mtime: u64) -> Result<()> {
    let mut entries = vec![top.to_path_buf()];
    entries.extend(
        driver_common::util::fs::walk(&base.join(top))?
            .into_iter()
            .map(|r| top.join(r)),
    );
    let file =
        fs::File::create(driver_common::util::fs::part_path(out)).map_err(|e| Error::io(out, e))?;
    let gz = GzBuilder::new().mtime(0).write(file, Compression::new(6));
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    for rel in &entries {
        let abs = base.join(rel);
        let meta = fs::symlink_metadata(&abs).map_err(|e| Error::io(&abs, e))?;
        let mut h = tar::Header::new_gnu();
        h.set_mtime(mtime);
        h.set_uid(0);
        h.set_gid(0);
        h.set_mode(meta.permissions().mode() & 0o7777);
        let io = |e| Error::io(out, e);
        if meta.is_dir() {
            h.set_entry_type(tar::EntryType::Directory);
            h.set_size(0);
            tar.append_data(&mut h, rel, std::io::empty()).map_err(io)?;
        } else if meta.file_type().is_symlink() {
            let target = fs::read_link(&abs).map_err(|e| Error::io(&abs, e))?;
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_size(0);
            tar.append_link(&mut h, rel, &target).map_err(io)?;
        } else if meta.is_file() {
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(meta.len());
            let f = fs::File::open(&abs).map_err(|e| Error::io(&abs, e))?;
            tar.append_data(&mut h, rel, f).map_err(io)?;
        } else {
            return Err(Error::file(
                abs,
                "not a file, directory or symlink: cannot bottle it",
            ));
        }
    }
    let gz = tar.into_inner().map_err(|e| Error::io(out, e))?;
    let file = gz.finish().map_err(|e| Error::io(out, e))?;
    file.sync_all().map_err(|e| Error::io(out, e))?;
    fs::rename(driver_common::util::fs::part_path(out), out).map_err(|e| Error::io(out, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::write as put;

    #[test]
    fn write__same_tree_different_mtimes_gives_identical_bytes_and_the_layout() {
        let d = tempfile::tempdir().unwrap();
        let top = Path::new("slurm-wlm/24.11.5");
        for base in ["a", "b"] {
            let k = d.path().join(base).join(top);
            put(&k.join("INSTALL_RECEIPT.json"), "{}");
            put(
                &k.join(".brew/slurm-wlm.rb"),
                "class SlurmWlm < Formula\nend\n",
            );
            put(&k.join("sbin/slurmd"), "x");
            fs::set_permissions(k.join("sbin/slurmd"), fs::Permissions::from_mode(0o555)).unwrap();
            std::os::unix::fs::symlink("slurmd", k.join("sbin/link")).unwrap();
        }
        let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(12345);
        fs::File::open(d.path().join("b").join(top).join("sbin/slurmd"))
            .unwrap()
            .set_modified(t)
            .unwrap();
        let (x, y) = (d.path().join("x.tar.gz"), d.path().join("y.tar.gz"));
        write(&d.path().join("a"), top, &x, 1_700_000_000).unwrap();
        write(&d.path().join("b"), top, &y, 1_700_000_000).unwrap();
        assert_eq!(fs::read(&x).unwrap(), fs::read(&y).unwrap());
        let mut names = Vec::new();
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(fs::File::open(&x).unwrap()));
        for e in ar.entries().unwrap() {
            let e = e.unwrap();
            let h = e.header();
            assert_eq!(
                (h.uid().unwrap(), h.gid().unwrap(), h.mtime().unwrap()),
                (0, 0, 1_700_000_000)
            );
            if e.path().unwrap().ends_with("sbin/slurmd") {
                assert_eq!(h.mode().unwrap() & 0o777, 0o555);
            }
            names.push(e.path().unwrap().display().to_string());
        }
        assert_eq!(
            names,
            [
                "slurm-wlm/24.11.5",
                "slurm-wlm/24.11.5/.brew",
                "slurm-wlm/24.11.5/.brew/slurm-wlm.rb",
                "slurm-wlm/24.11.5/INSTALL_RECEIPT.json",
                "slurm-wlm/24.11.5/sbin",
                "slurm-wlm/24.11.5/sbin/link",
                "slurm-wlm/24.11.5/sbin/slurmd",
            ]
        );
        // gzip header: no time, no name.
        let bytes = fs::read(&x).unwrap();
        assert_eq!(&bytes[4..8], &[0, 0, 0, 0]);
        assert_eq!(bytes[3] & 0x08, 0, "FNAME flag set");
    }
}
