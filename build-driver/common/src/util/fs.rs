//! File-system helpers every subcommand shares: tree copies, file hashes, atomic writes and
//! optional reads. Each exists once here; nothing half-written survives a failure.

use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Lower-case hex of bytes (digests).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lower-case hex sha256 of bytes.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// Lower-case hex sha256 of a file's contents (streamed, so large tarballs are fine).
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(|e| Error::io(path, e))?;
    Ok(hex(&h.finalize()))
}

/// The text of `path`, or `None` when there is no such file (other I/O errors are errors).
pub fn read_optional(path: &Path) -> Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Removes a file; a missing one is fine.
pub fn remove_optional(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// A new, empty directory `<parent>/<stem>-<pid>-<nanos>-<n>` (parent created if missing).
fn unique_dir(parent: &Path, stem: &str) -> Result<PathBuf> {
    fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for n in 0..100u32 {
        let dir = parent.join(format!("{stem}-{}-{nanos:x}-{n}", std::process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(&dir, e)),
        }
    }
    Err(Error::file(parent, "cannot create a temporary directory"))
}

/// A new, empty directory below the system's temporary directory with permission bits
/// `mode` (one scratch directory per run of a harness; kept).
pub fn new_work_dir(stem: &str, mode: u32) -> Result<PathBuf> {
    let dir = unique_dir(&std::env::temp_dir(), stem)?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(mode)).map_err(|e| Error::io(&dir, e))?;
    Ok(dir)
}

/// A temporary directory beside the destination (`<parent>/.tmp-<tag>-...`), removed on
/// drop: nothing half-made survives a failure.
#[derive(Debug)]
pub struct Staging {
    pub dir: PathBuf,
}

impl Staging {
    pub fn new(parent: &Path, tag: &str) -> Result<Staging> {
        Ok(Staging {
            dir: unique_dir(parent, &format!(".tmp-{tag}"))?,
        })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// `path` with `.part` appended to its file name: where an atomic write stages its bytes.
pub fn part_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    path.with_file_name(name)
}

/// Writes `bytes` to `path` with permission bits `mode`, atomically: a new temporary file
/// beside it is written, synced and renamed over `path`, so a reader sees the old or the new
/// file. See [`write_atomic_owned`].
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    write_atomic_owned(path, bytes, mode, None)
}

/// [`write_atomic`], the file given to `owner` (uid, gid) before it gets its name. Safe in a
/// directory another user could plant names in: the temporary file is a fresh name created
/// with `O_EXCL|O_NOFOLLOW` (a planted link or file is never opened), mode 0600 until its
/// owner and mode are set on the descriptor (`fchown`, `fchmod`), then `renameat` in the
/// directory opened once. With an `owner` (a file root hands out: a key), the directory must
/// belong to us or root and, when root writes, not be writable by others unless sticky;
/// callers that write where root acts check the whole path with [`super::trust::trusted`].
pub fn write_atomic_owned(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
) -> Result<()> {
    use nix::fcntl::{OFlag, openat, renameat};
    let (dir_path, name) = match (path.parent(), path.file_name()) {
        (Some(p), Some(n)) => (
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            },
            n,
        ),
        _ => return Err(Error::file(path, "not a file name")),
    };
    let dir = fs::File::open(dir_path).map_err(|e| Error::io(dir_path, e))?;
    if owner.is_some() {
        check_write_dir(dir_path, &dir)?;
    }
    let flags =
        OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
    let mut last = nix::errno::Errno::EEXIST;
    let (tmp, fd) = (0..100)
        .find_map(|n| {
            let mut t = name.to_os_string();
            t.push(format!(".{}-{n}-{:x}.part", std::process::id(), nanos()));
            let t = PathBuf::from(t);
            match openat(
                &dir,
                &t,
                flags,
                nix::sys::stat::Mode::from_bits_truncate(0o600),
            ) {
                Ok(fd) => Some((t, fd)),
                Err(e) => {
                    last = e;
                    None
                }
            }
        })
        .ok_or_else(|| Error::io(dir_path, std::io::Error::from(last)))?;
    let mut f = fs::File::from(fd);
    let written = (|| {
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::fchown(&f, Some(uid), Some(gid))?;
        }
        f.write_all(bytes)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.sync_all()
    })();
    let renamed = written.and_then(|()| renameat(&dir, &tmp, &dir, name).map_err(Into::into));
    if let Err(e) = renamed {
        let _ = nix::unistd::unlinkat(&dir, &tmp, nix::unistd::UnlinkatFlags::NoRemoveDir);
        return Err(Error::io(path, e));
    }
    Ok(())
}

fn nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
}

/// The directory an atomic write renames in: ours or root's; for root, not open to others.
fn check_write_dir(path: &Path, dir: &fs::File) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let m = dir.metadata().map_err(|e| Error::io(path, e))?;
    let me = nix::unistd::geteuid().as_raw();
    if !m.is_dir() {
        return Err(Error::file(path, "is not a directory"));
    }
    if m.uid() != me && m.uid() != 0 {
        return Err(Error::Untrusted {
            path: path.to_path_buf(),
            why: format!("belongs to uid {}, not to you (uid {me}) or root", m.uid()),
            fix: format!("chown {me} {}, or write elsewhere", path.display()),
        });
    }
    if me == 0 && m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0 {
        return Err(Error::Untrusted {
            path: path.to_path_buf(),
            why: format!("is writable by others (mode {:o})", m.mode() & 0o7777),
            fix: format!("sudo chmod go-w {}", path.display()),
        });
    }
    Ok(())
}

/// [`write_atomic`] of an executable script (mode 0755), unless `path` already holds exactly
/// `text` (so its modification time, which builds may depend on, stays).
pub fn write_script(path: &Path, text: &str) -> Result<()> {
    if fs::read_to_string(path).is_ok_and(|t| t == text) {
        return Ok(());
    }
    write_atomic(path, text.as_bytes(), 0o755)
}

/// The files directly in `dir` whose name ends in `.ext`, sorted.
pub fn files_with_extension(dir: &Path, ext: &str) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    Ok(v)
}

/// Every path below `dir`, sorted, relative to it (directories before their contents);
/// links are listed, not followed.
pub fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    walk_keeping(dir, true)
}

/// [`walk`] without the directories: files, links and other entries.
pub fn walk_files(dir: &Path) -> Result<Vec<PathBuf>> {
    walk_keeping(dir, false)
}

fn walk_keeping(dir: &Path, dirs: bool) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let abs = dir.join(&rel);
        for e in fs::read_dir(&abs).map_err(|e| Error::io(&abs, e))? {
            let e = e.map_err(|e| Error::io(&abs, e))?;
            let r = rel.join(e.file_name());
            let is_dir = e
                .file_type()
                .map_err(|err| Error::io(e.path(), err))?
                .is_dir();
            if is_dir {
                stack.push(r.clone());
            }
            if dirs || !is_dir {
                out.push(r);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A fresh copy of `src` at `dst` (`dst` is removed first). Keeps modes, modification times
/// and symlinks.
pub fn copy_tree(src: &Path, dst: &Path) -> Result<()> {
    copy_tree_excluding(src, dst, &[])
}

/// [`copy_tree`], skipping the top-level entries named in `exclude` (e.g. `.git`).
pub fn copy_tree_excluding(src: &Path, dst: &Path, exclude: &[&str]) -> Result<()> {
    let src_c = src.canonicalize().map_err(|e| Error::io(src, e))?;
    if !src_c.is_dir() {
        return Err(Error::file(src, "not a directory"));
    }
    let dst_parent = dst
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dst_parent_c = dst_parent
        .canonicalize()
        .map_err(|e| Error::io(dst_parent, e))?;
    let Some(name) = dst.file_name() else {
        return Err(Error::file(dst, "not a directory name"));
    };
    let dst_c = dst_parent_c.join(name);
    if dst_c.starts_with(&src_c) || src_c.starts_with(&dst_c) {
        return Err(Error::file(
            dst,
            format!("cannot copy {} into itself", src.display()),
        ));
    }
    match fs::symlink_metadata(dst) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(dst).map_err(|e| Error::io(dst, e))?,
        Ok(_) => fs::remove_file(dst).map_err(|e| Error::io(dst, e))?,
        Err(_) => {}
    }
    copy_into(&src_c, dst, exclude)
}

/// Copies the contents of directory `src` into `dst` (created with its parents if missing; what `dst` already
/// holds stays unless a copied entry replaces it). Keeps modes, modification times and
/// symlinks; skips the top-level entries named in `exclude`.
pub fn copy_into(src: &Path, dst: &Path, exclude: &[&str]) -> Result<()> {
    let set_mtime = |path: &Path, meta: &fs::Metadata| -> Result<()> {
        let t = meta.modified().map_err(|e| Error::io(path, e))?;
        fs::File::open(path)
            .and_then(|f| f.set_modified(t))
            .map_err(|e| Error::io(path, e))
    };
    let make_dir = |d: &Path| -> Result<()> {
        match fs::create_dir(d) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(Error::io(d, e)),
            _ => Ok(()),
        }
    };
    fs::create_dir_all(dst).map_err(|e| Error::io(dst, e))?;
    let mut dirs = vec![(
        dst.to_path_buf(),
        fs::metadata(src).map_err(|e| Error::io(src, e))?,
    )];
    let mut stack = vec![(src.to_path_buf(), dst.to_path_buf(), true)];
    while let Some((s, d, top)) = stack.pop() {
        for entry in fs::read_dir(&s).map_err(|e| Error::io(&s, e))? {
            let entry = entry.map_err(|e| Error::io(&s, e))?;
            let name = entry.file_name();
            if top && exclude.iter().any(|x| name == *x) {
                continue;
            }
            let (sp, dp) = (entry.path(), d.join(&name));
            let meta = fs::symlink_metadata(&sp).map_err(|e| Error::io(&sp, e))?;
            let ft = meta.file_type();
            if ft.is_dir() {
                make_dir(&dp)?;
                dirs.push((dp.clone(), meta));
                stack.push((sp, dp, false));
            } else if ft.is_symlink() {
                let target = fs::read_link(&sp).map_err(|e| Error::io(&sp, e))?;
                if fs::symlink_metadata(&dp).is_ok() {
                    fs::remove_file(&dp).map_err(|e| Error::io(&dp, e))?;
                }
                std::os::unix::fs::symlink(&target, &dp).map_err(|e| Error::io(&dp, e))?;
            } else if ft.is_file() {
                fs::copy(&sp, &dp).map_err(|e| Error::io(&dp, e))?;
                set_mtime(&dp, &meta)?;
            } else {
                return Err(Error::file(sp, "not a regular file, directory or symlink"));
            }
        }
    }
    // Directory times and modes last: filling a directory changes its mtime.
    for (d, meta) in dirs.iter().rev() {
        set_mtime(d, meta)?;
        fs::set_permissions(d, meta.permissions()).map_err(|e| Error::io(d, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::write;

    #[test]
    fn walk__sorted_relative_dirs_before_contents_links_not_followed() {
        let (_d, top) = crate::testing::scratch("top");
        write(&top.join("b/c.txt"), "c");
        write(&top.join("a.txt"), "a");
        std::os::unix::fs::symlink(top.join("b"), top.join("l")).unwrap();
        let p = |v: &[&str]| v.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(walk(&top).unwrap(), p(&["a.txt", "b", "b/c.txt", "l"]));
        assert_eq!(walk_files(&top).unwrap(), p(&["a.txt", "b/c.txt", "l"]));
        assert!(walk(&top.join("absent")).is_err());
    }

    #[test]
    fn copy_tree__copies_files_links_modes_and_times_and_replaces_dst() {
        let (d, src) = crate::testing::scratch("src");
        write(&src.join("a/b/file.txt"), "hello");
        write(&src.join("script"), "#!/bin/sh\n");
        fs::set_permissions(src.join("script"), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("a/b/file.txt", src.join("link")).unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        fs::File::open(src.join("a/b/file.txt"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let dst = d.path().join("dst");
        write(&dst.join("stale"), "x");
        copy_tree(&src, &dst).unwrap();
        assert!(!dst.join("stale").exists());
        crate::testing::assert_file(&dst.join("a/b/file.txt"), "hello");
        let mtime = fs::metadata(dst.join("a/b/file.txt")).unwrap().modified();
        assert_eq!(mtime.unwrap(), old);
        let mode = fs::metadata(dst.join("script"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        assert_eq!(
            fs::read_link(dst.join("link")).unwrap(),
            Path::new("a/b/file.txt")
        );
        let e = copy_tree(&src, &src.join("a/inner"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("into itself"), "{e}");
    }

    #[test]
    fn copy_into__merges_into_an_existing_directory_and_excludes_top_entries() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("src"), d.path().join("dst"));
        write(&src.join("lib/a.a"), "a");
        write(&src.join(".git/HEAD"), "ref");
        std::os::unix::fs::symlink("a.a", src.join("lib/liba.a")).unwrap();
        write(&dst.join("lib/b.a"), "b");
        std::os::unix::fs::symlink("old", dst.join("lib/liba.a")).unwrap();
        copy_into(&src, &dst, &[".git"]).unwrap();
        crate::testing::assert_file(&dst.join("lib/a.a"), "a");
        crate::testing::assert_file(&dst.join("lib/b.a"), "b");
        assert_eq!(
            fs::read_link(dst.join("lib/liba.a")).unwrap(),
            Path::new("a.a")
        );
        assert!(!dst.join(".git").exists());
    }

    #[test]
    fn write_atomic__exact_mode_no_part_left_and_script_unchanged_keeps_mtime() {
        let (d, f) = crate::testing::scratch("x.conf");
        write_atomic(&f, b"one", 0o600).unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"one");
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert!(!part_path(&f).exists());
        let s = d.path().join("tool");
        write_script(&s, "#!/bin/sh\n").unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        fs::File::open(&s).unwrap().set_modified(old).unwrap();
        write_script(&s, "#!/bin/sh\n").unwrap();
        assert_eq!(fs::metadata(&s).unwrap().modified().unwrap(), old);
        assert_eq!(
            fs::metadata(&s).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert!(write_atomic(&d.path().join("no/dir/f"), b"", 0o644).is_err());
    }

    #[test]
    fn write_atomic__planted_part_symlink_is_not_followed() {
        let (d, victim) = crate::testing::scratch("root-file");
        fs::write(&victim, "root's file").unwrap();
        let key = d.path().join("slurm.key");
        std::os::unix::fs::symlink(&victim, part_path(&key)).unwrap();
        write_atomic(&key, b"secret", 0o600).unwrap();
        assert_eq!(
            fs::read(&victim).unwrap(),
            b"root's file",
            "followed the planted link"
        );
        assert_eq!(fs::read(&key).unwrap(), b"secret");
    }

    #[test]
    fn write_atomic__planted_part_held_open_never_sees_the_bytes() {
        use std::io::Read;
        let (d, key) = crate::testing::scratch("slurm.key");
        let part = part_path(&key);
        fs::write(&part, "").unwrap();
        fs::set_permissions(&part, fs::Permissions::from_mode(0o666)).unwrap();
        let mut held = fs::File::open(&part).unwrap();
        write_atomic(&key, b"secret", 0o600).unwrap();
        let mut seen = Vec::new();
        held.read_to_end(&mut seen).unwrap();
        assert!(seen.is_empty(), "the planted file got the key: {seen:?}");
        assert_eq!(fs::read(&key).unwrap(), b"secret");
        drop(d);
    }

    #[test]
    fn write_atomic_owned__refuses_a_directory_others_can_write() {
        let (d, key) = crate::testing::scratch("slurm.key");
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o777)).unwrap();
        let me = nix::unistd::geteuid().as_raw();
        let r = write_atomic_owned(
            &key,
            b"k",
            0o600,
            Some((me, nix::unistd::getegid().as_raw())),
        );
        if me == 0 {
            assert!(r.unwrap_err().to_string().contains("chmod go-w"));
            assert!(!key.exists());
        } else {
            eprintln!("skipped: the writable-directory rule is root's");
        }
    }

    #[test]
    fn sha256_file__known_digest_and_read_optional_missing_is_none() {
        let (d, f) = crate::testing::scratch("abc");
        fs::write(&f, "abc").unwrap();
        assert_eq!(
            sha256_file(&f).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(read_optional(&d.path().join("none")).unwrap(), None);
        assert_eq!(read_optional(&f).unwrap().as_deref(), Some("abc"));
    }
}
