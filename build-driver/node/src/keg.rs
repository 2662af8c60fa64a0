//! `slurm-mac copy-keg --keg DIR [--root DIR] [--key FILE]`: a root-owned copy of a Homebrew
//! keg, for the LaunchDaemon.
//!
//! A keg belongs to the user who poured it (Homebrew's prefix is the admin user's), and so do
//! the Homebrew prefix's `etc/slurm` and `var`, which Slurm compiled into the programs. A
//! LaunchDaemon that runs the keg's slurmd as root at every boot (what `sudo brew services
//! start` sets up) lets any process of that user (a job, a tool it ran) replace slurmd, a
//! plugin in `lib/slurm`, slurmstepd or slurm.conf and be root at the next start. So the
//! daemon runs a copy that only root can change:
//!
//! - The copy's root `R` has as many bytes as the Homebrew prefix `P` (`/opt/homebrew` gives
//!   `/opt/slurmmac`, `/usr/local` gives `/opt/slurm`; `--root` for another): every `P` inside
//!   the keg's files becomes `R` in place ([`relocate`]), and Mach-O files are signed again.
//! - `R/Cellar/<name>/<version>` is the keg, read without following any link ([`read`]),
//!   modes normalised as `install` does (no setuid, setgid or group/world write), owned by
//!   root, with an install manifest (so `slurm-mac uninstall --prefix` removes it), renamed
//!   into place whole; `R/opt/<name>` links to it; `R/etc/slurm` gets the key (`--key`, 0600);
//!   `R/var/spool/slurmd`, `R/var/log/slurm` and `R/var/run` exist.
//! - `R` and everything above it must be root's (docs/PACKAGING.md, "What root trusts"),
//!   checked before anything is written; a run by another user changes nothing.
//!
//! The one `sudo` that runs the keg's own slurm-mac to make the copy is the admin's act, as
//! `sudo brew` is; what launchd runs afterwards, at every boot, is the copy.

pub mod relocate;

use crate::install::{self, Target};
use driver_common::error::{Error, Result};
use driver_common::gate::{self, Owners};
use std::fs;
use std::path::{Path, PathBuf};

// The command's arguments (clap), read by `slurm-mac` and `cargo xtask`.
#[derive(Debug, clap::Args)]
pub struct CopyKegArgs {
    /// The Homebrew keg to copy: the formula's directory, `$(brew --prefix slurm-wlm)`.
    #[arg(long, value_name = "DIR")]
    pub keg: PathBuf,
    /// The copy's root, owned by root, with as many bytes as the Homebrew prefix (default:
    /// /opt/slurmmac for /opt/homebrew, /opt/slurm for /usr/local).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// The cluster's slurm.key (the controller's), copied to <root>/etc/slurm/slurm.key with
    /// mode 0600, owned by root.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Print the copy's root and change nothing (no root needed).
    #[arg(long)]
    pub print_root: bool,
}

/// The copy's root for a Homebrew prefix: `/opt/slurm` and as much of `mac` as gives the same
/// length (`/opt/homebrew`: `/opt/slurmmac`; `/usr/local`: `/opt/slurm`); `None` for a prefix
/// of another length.
pub fn default_root(homebrew_prefix: &str) -> Option<String> {
    let (base, tail) = ("/opt/slurm", "mac");
    let extra = homebrew_prefix.len().checked_sub(base.len())?;
    (extra <= tail.len()).then(|| format!("{base}{}", &tail[..extra]))
}

/// A keg's place: `<prefix>/Cellar/<name>/<version>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keg {
    pub dir: PathBuf,
    pub prefix: String,
    pub name: String,
    pub version: String,
}

impl Keg {
    /// The keg `dir` names (the opt link is followed once, here, by the admin's choice).
    pub fn at(dir: &Path) -> Result<Keg> {
        let real = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
        let not_keg = || {
            Error::file(
                dir,
                "is not a Homebrew keg (<prefix>/Cellar/<name>/<version>): pass the formula's \
                 directory, `--keg \"$(brew --prefix slurm-wlm)\"`",
            )
        };
        let text = |p: Option<&std::ffi::OsStr>| -> Result<String> {
            p.and_then(|s| s.to_str())
                .map(str::to_string)
                .ok_or_else(not_keg)
        };
        let version = text(real.file_name())?;
        let name_dir = real.parent().ok_or_else(not_keg)?;
        let name = text(name_dir.file_name())?;
        let cellar = name_dir.parent().ok_or_else(not_keg)?;
        if cellar.file_name() != Some(std::ffi::OsStr::new("Cellar")) {
            return Err(not_keg());
        }
        let prefix = cellar
            .parent()
            .and_then(|p| p.to_str())
            .filter(|p| *p != "/")
            .ok_or_else(not_keg)?
            .to_string();
        Ok(Keg {
            dir: real,
            prefix,
            name,
            version,
        })
    }
}

/// The sysconfdir a prefix's programs read: `<root>/etc/slurm` for a keg or its copy (a
/// prefix that resolves to `<root>/Cellar/<name>/<version>`: the bottle is configured with
/// `--sysconfdir <Homebrew prefix>/etc/slurm`), else `<prefix>/etc` (`install`'s layout).
pub fn sysconfdir(prefix: &Path) -> PathBuf {
    match Keg::at(prefix) {
        Ok(k) => Path::new(&k.prefix).join("etc/slurm"),
        Err(_) => prefix.join("etc"),
    }
}

/// Slurm's compiled-in `SlurmdSpoolDir` (`/var/spool/slurmd`), used by a prefix that is not
/// a keg or its copy.
pub const DEFAULT_SPOOL: &str = "/var/spool/slurmd";

/// The directories a prefix's daemons write: for a keg or its copy `<root>/var/{spool/slurmd,
/// log/slurm,run}`, else [`DEFAULT_SPOOL`].
pub fn daemon_dirs(prefix: &Path) -> Vec<PathBuf> {
    match Keg::at(prefix) {
        Ok(k) => {
            let r = Path::new(&k.prefix);
            vec![
                r.join("var/spool/slurmd"),
                r.join("var/log/slurm"),
                r.join("var/run"),
            ]
        }
        Err(_) => vec![PathBuf::from(DEFAULT_SPOOL)],
    }
}

/// What a daemon of `prefix` uses, for the gate: `sbin`, `bin`, `libexec`, `lib` (every
/// library and plugin) and the sysconfdir to the last file; the prefix, the daemon
/// directories and `extra` (a log directory) by their chain.
pub fn install_of(prefix: &Path, extra: &[PathBuf]) -> gate::keg::Install {
    let mut trees: Vec<PathBuf> = ["sbin", "bin", "libexec", "lib"]
        .iter()
        .map(|d| prefix.join(d))
        .collect();
    trees.push(sysconfdir(prefix));
    let mut dirs = vec![prefix.to_path_buf()];
    dirs.extend(daemon_dirs(prefix));
    dirs.extend(extra.iter().cloned());
    gate::keg::Install { trees, dirs }
}

/// Errors unless root may run `prefix`'s daemons ([`install_of`]), before any of its programs
/// runs. For a Homebrew keg (its user's) the fix named is its root-owned copy, not a `chown`
/// of the keg (which its user could still rename, and which breaks `brew upgrade`); for
/// another prefix the user owns, `install` into a root-owned prefix.
pub fn trusted_install(prefix: &Path, extra: &[PathBuf]) -> Result<()> {
    if !prefix.join("sbin").is_dir() && !prefix.join("bin").is_dir() {
        return Err(Error::NotASlurmPrefix {
            path: prefix.to_path_buf(),
            detail: "no sbin/ or bin/ (Homebrew: pass the keg's root-owned copy, \
                     /opt/slurmmac/opt/slurm-wlm)"
                .into(),
        });
    }
    let first = gate::keg::examine(&install_of(prefix, extra), Owners::caller())
        .into_iter()
        .next();
    match first {
        None => Ok(()),
        Some(Error::Untrusted { path, why, .. }) => Err(Error::Untrusted {
            path,
            why,
            fix: user_prefix_fix(prefix),
        }),
        Some(other) => Err(other),
    }
}

/// The fix for a prefix another user can change: its root-owned copy (a keg), or an install
/// into a root-owned prefix.
pub fn user_prefix_fix(prefix: &Path) -> String {
    if Keg::at(prefix).is_ok() {
        format!(
            "this is a Homebrew keg: make its root-owned copy and use that prefix: \
             sudo {p}/bin/slurm-mac copy-keg --keg {p} (docs/JOIN.md)",
            p = prefix.display()
        )
    } else {
        format!(
            "root runs only what root alone can change: install the build into a root-owned \
             prefix (`sudo slurm-mac install --from <staged build> --prefix /opt/slurm`) and \
             use that, or make {} and everything in it root's and not group/world-writable \
             (docs/JOIN.md, \"What root trusts\")",
            prefix.display()
        )
    }
}

/// The copy's root: `--root` or [`default_root`], absolute, plain, of the prefix's length and
/// apart from it.
pub fn root_for(keg: &Keg, root: Option<&Path>) -> Result<String> {
    let r = match root {
        Some(r) => r
            .to_str()
            .map(str::to_string)
            .ok_or_else(|| Error::Usage(format!("--root {}: not UTF-8", r.display())))?,
        None => default_root(&keg.prefix).ok_or_else(|| {
            Error::Usage(format!(
                "no default root for the Homebrew prefix {} ({} bytes): pass --root with an \
                 absolute path of exactly {} bytes that only root can change",
                keg.prefix,
                keg.prefix.len(),
                keg.prefix.len()
            ))
        })?,
    };
    let plain = r.starts_with('/')
        && r.len() > 1
        && r[1..].split('/').all(|c| {
            !c.is_empty() && c != "." && c != ".." && c.bytes().all(|b| b.is_ascii_graphic())
        });
    if !plain {
        return Err(Error::Usage(format!(
            "--root {r}: must be an absolute path without `.`, `..`, empty components, spaces \
             or a trailing `/`"
        )));
    }
    if r.len() != keg.prefix.len() {
        return Err(Error::Usage(format!(
            "--root {r} has {} bytes and the Homebrew prefix {} has {}: Slurm's programs keep \
             the prefix inside their strings, which can only be overwritten in place; pass a \
             root of exactly {} bytes",
            r.len(),
            keg.prefix,
            keg.prefix.len(),
            keg.prefix.len()
        )));
    }
    let (rp, pp) = (Path::new(&r), Path::new(&keg.prefix));
    if rp.starts_with(pp) || pp.starts_with(rp) {
        return Err(Error::Usage(format!(
            "--root {r}: must lie outside the Homebrew prefix {} (which its user can change)",
            keg.prefix
        )));
    }
    Ok(r)
}

pub fn run(args: CopyKegArgs) -> Result<()> {
    let keg = Keg::at(&args.keg)?;
    let root = root_for(&keg, args.root.as_deref())?;
    if args.print_root {
        println!("{root}");
        return Ok(());
    }
    if !nix::unistd::geteuid().is_root() {
        return Err(Error::NeedsRoot {
            what: "copy-keg".into(),
            why: "the copy must belong to root; nothing was changed (run it with sudo)".into(),
        });
    }
    copy_as(&keg, &root, args.key.as_deref(), 0)
}

/// [`run`] for the copy's owner `owner` (root, or a test's own uid).
pub(crate) fn copy_as(keg: &Keg, root: &str, key: Option<&Path>, owner: u32) -> Result<()> {
    let key = key.map(install::config::read_key).transpose()?;
    if let Some(w) = key.as_deref().and_then(install::config::key_warning) {
        eprintln!("copy-keg: warning: {w}");
    }
    let r = Path::new(root);
    let keg_dir = r.join("Cellar").join(&keg.name).join(&keg.version);
    // The root and every directory the copy writes into, where they exist already (a root
    // made by hand may hold a `Cellar` or `etc` another user owns).
    for d in dirs(r, &keg_dir) {
        gate::chain::trusted(&d, Owners { user: owner })?;
    }
    let t = Target {
        prefix: keg_dir.clone(),
        dir: keg_dir.clone(),
        etc: r.join("etc/slurm"),
    };
    install::check_prefix(&t.dir, owner)?;
    let opt = r.join("opt").join(&keg.name);
    if let Ok(m) = fs::symlink_metadata(&opt) {
        if !m.file_type().is_symlink() {
            return Err(Error::file(
                &opt,
                "exists and is not a link: remove it (the copy links it to its keg)",
            ));
        }
    }
    // Every check passed: from here on, directories are made and the copy is staged.
    let parent = keg_dir.parent().unwrap_or(r);
    make_dirs(r, parent, owner)?;
    let staging = driver_common::util::fs::Staging::new(parent, "copy-keg")?;
    let tree = staging.dir.join("tree");
    let (rewritten, signed) = stage(keg, root, &tree)?;
    install::normalise::tree(&tree, &t.prefix, owner)?;
    let changed = install::place(&staging, &tree, &t)?;
    drop(staging);
    link_opt(&opt, &keg.version)?;
    println!(
        "copy-keg: {} {} ({rewritten} files named {}, {signed} Mach-O files signed again)",
        keg_dir.display(),
        if changed {
            "copied"
        } else {
            "unchanged (already this keg)"
        },
        keg.prefix
    );
    for line in install::config::install_config(&keg_dir, &t.etc, key.as_deref(), owner)? {
        println!("copy-keg: {line}");
    }
    let conf = Path::new(&keg.prefix).join("etc/slurm");
    if fs::read_dir(&conf).is_ok_and(|mut d| d.next().is_some()) {
        println!(
            "copy-keg: {} holds files the copy does not read: the copy's slurmd reads {} \
             (put slurm.conf or gres.conf there, or run configless)",
            conf.display(),
            t.etc.display()
        );
    }
    println!(
        "copy-keg: next, as root: {}/bin/slurm-mac service install --prefix {} --log-dir {} \
         --conf-server <controller>",
        opt.display(),
        opt.display(),
        r.join("var/log/slurm").display()
    );
    Ok(())
}

/// The keg's files with its Homebrew prefix rewritten to the copy's root, counted.
struct Relocate<'a> {
    keg: &'a Keg,
    root: &'a str,
    rewritten: usize,
    signed: usize,
}

impl install::stage::Rewrite for Relocate<'_> {
    fn file(&mut self, rel: &Path, data: Vec<u8>) -> Result<Vec<u8>> {
        let is_macho = relocate::is_macho(&data);
        let (data, changed) =
            relocate::file(&self.keg.dir.join(rel), data, &self.keg.prefix, self.root)?;
        self.rewritten += usize::from(changed);
        self.signed += usize::from(changed && is_macho);
        Ok(data)
    }

    fn link(&mut self, target: PathBuf) -> PathBuf {
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str());
        match relocate::rewrite(bytes, self.keg.prefix.as_bytes(), self.root.as_bytes()) {
            Some(b) => {
                PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(b))
            }
            None => target,
        }
    }
}

/// Reads the keg into `tree`, its prefix rewritten to `root`; returns how many files changed
/// and how many of them were Mach-O files signed again.
fn stage(keg: &Keg, root: &str, tree: &Path) -> Result<(usize, usize)> {
    let mut rw = Relocate {
        keg,
        root,
        rewritten: 0,
        signed: 0,
    };
    install::stage::copy(&keg.dir, tree, &mut rw)?;
    Ok((rw.rewritten, rw.signed))
}

/// The directories of the copy: the keg's, `root/opt`, `root/etc/slurm` and
/// `root/var/{spool/slurmd,log/slurm,run}`.
fn dirs(root: &Path, keg_dir: &Path) -> [PathBuf; 6] {
    [
        keg_dir.to_path_buf(),
        root.join("opt"),
        root.join("etc/slurm"),
        root.join("var/spool/slurmd"),
        root.join("var/log/slurm"),
        root.join("var/run"),
    ]
}

/// [`dirs`], with the keg's parent in place of the keg's own (the copy is renamed there),
/// made with mode 0755 where missing, each after the directory above it was judged.
fn make_dirs(root: &Path, keg_parent: &Path, owner: u32) -> Result<()> {
    for d in dirs(root, keg_parent) {
        gate::dir::make_dirs(&d, 0o755, Owners { user: owner })?;
    }
    Ok(())
}

/// `root/opt/<name>` → `../Cellar/<name>/<version>`, replaced atomically.
fn link_opt(opt: &Path, version: &str) -> Result<()> {
    let name = opt.file_name().unwrap_or_default().to_string_lossy();
    let target = PathBuf::from("../Cellar").join(&*name).join(version);
    if fs::read_link(opt).is_ok_and(|t| t == target) {
        return Ok(());
    }
    let tmp = opt.with_file_name(format!(".{name}.link"));
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&target, &tmp).map_err(|e| Error::io(&tmp, e))?;
    fs::rename(&tmp, opt).map_err(|e| Error::io(opt, e))
}

#[cfg(test)]
mod attacks;
#[cfg(test)]
mod tests;
