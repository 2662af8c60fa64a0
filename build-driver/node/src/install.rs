//! `cargo xtask install --prefix DIR [--destdir DIR] [--from STAGED] [--key FILE]` and
//! `cargo xtask uninstall --prefix DIR [--destdir DIR]`: a staged build (`build-slurm
//! --prefix DIR --destdir D` leaves it in `D/DIR`, with its staging manifest) into its prefix,
//! for a Mac that does not use Homebrew.
//!
//! - The staged build must have been configured for `--prefix` (its staging manifest says
//!   so): Slurm compiles its prefix, sysconfdir and plugin directory into the programs.
//! - The new tree is built in a staging directory beside the prefix (same file system), with
//!   its manifest ([`manifest`]: every file's sha256 and mode), then renamed into place: a
//!   reader sees the old tree or the new one, never half of each. An earlier install of ours
//!   is renamed aside first and removed after.
//! - A second run with the same inputs changes nothing (the manifests are equal).
//! - A prefix that exists, is not empty and holds no manifest of ours is refused, as is one
//!   owned by another user.
//! - `<sysconfdir>/slurm.key`: copied from `--key` (it must be the controller's key), mode
//!   0600, owned by root (uid 0, gid 0).
//! - `<sysconfdir>/slurm.conf`: the build's `etc/slurm.conf.example` when there is none; an
//!   admin's file is never overwritten (a differing example goes to `slurm.conf.new`, and the
//!   command says so).
//! - `uninstall` removes the files of the manifest and the directories it leaves empty;
//!   `slurm.conf` and `slurm.key` stay.

pub(crate) mod config;
pub mod manifest;
pub(crate) mod normalise;
pub(crate) mod stage;

use driver_common::error::{Error, Result};
use driver_common::staging::Manifest as Staged;
use manifest::Manifest;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use xshell::Shell;

/// Where the install manifest lives inside the prefix.
pub const MANIFEST: &str = "share/slurm-on-mac/install-manifest.toml";

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::io(p, e))
}

/// `<destdir>/<path>` or `path`.
fn rooted(destdir: Option<&Path>, path: &Path) -> PathBuf {
    driver_common::staging::staged_path(destdir, path)
}

/// The install's target directories.
#[derive(Debug)]
pub(crate) struct Target {
    /// The prefix the programs are configured for.
    pub prefix: PathBuf,
    /// Where it is written (`<destdir>/<prefix>`).
    pub dir: PathBuf,
    /// Where slurm.conf and slurm.key go (written below the destdir).
    pub etc: PathBuf,
}

fn target(prefix: &Path, destdir: Option<&Path>, sysconfdir: Option<&Path>) -> Result<Target> {
    let prefix = absolute(prefix)?;
    let destdir = destdir.map(absolute).transpose()?;
    let sysconf = sysconfdir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| prefix.join("etc"));
    Ok(Target {
        dir: rooted(destdir.as_deref(), &prefix),
        etc: rooted(destdir.as_deref(), &sysconf),
        prefix,
    })
}

/// Refuses a prefix we did not install or another user owns.
pub(crate) fn check_prefix(dir: &Path, owner: u32) -> Result<()> {
    let meta = match fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    if !meta.is_dir() {
        return Err(Error::file(
            dir,
            "exists and is not a directory: choose another --prefix",
        ));
    }
    let me = owner;
    if meta.uid() != me {
        return Err(Error::file(
            dir,
            format!(
                "is owned by uid {}, not by you (uid {me}): install as its owner, or choose another --prefix",
                meta.uid()
            ),
        ));
    }
    let empty = fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .next()
        .is_none();
    if !empty && !dir.join(MANIFEST).is_file() {
        return Err(Error::file(
            dir,
            format!(
                "is not empty and was not installed by `cargo xtask install` (no {MANIFEST}); \
                 choose an empty or new --prefix, or remove what is there first"
            ),
        ));
    }
    Ok(())
}

/// Where `install` looks for the build of `prefix` without `--from`: `target/stage/<prefix>`.
pub fn default_from(root: &Path, prefix: &Path) -> PathBuf {
    let target =
        driver_common::staging::cargo_target_dir(root, std::env::var("CARGO_TARGET_DIR").ok());
    rooted(Some(&target.join("stage")), prefix)
}

/// Installs as root: checked first, so a run by another user changes nothing.
pub fn run(sh: &Shell, root: &Path, args: InstallArgs) -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        return Err(Error::NeedsRoot {
            what: "install".into(),
            why:
                "the tree and slurm.key must belong to root; nothing was changed (run it with sudo)"
                    .into(),
        });
    }
    install_as(sh, root, args, 0)
}

/// [`run`] for the files' owner `owner` (root, or a test's own uid): every directory the
/// install writes must be trusted for that owner before anything is written.
pub(crate) fn install_as(_sh: &Shell, root: &Path, args: InstallArgs, owner: u32) -> Result<()> {
    let from = match &args.from {
        Some(f) => absolute(f)?,
        None => default_from(root, &absolute(&args.prefix)?),
    };
    let staged = Staged::read(&from).map_err(|e| {
        e.context(format!(
            "install: no staged build at {}: build it with `cargo xtask build-slurm --version V \
             --prefix {} --destdir target/stage`, or pass --from",
            from.display(),
            args.prefix.display()
        ))
    })?;
    let configured = staged
        .configured_prefix
        .clone()
        .unwrap_or_else(|| staged.prefix.clone());
    let want = absolute(&args.prefix)?;
    if configured != want {
        return Err(Error::Usage(format!(
            "{} was built for --prefix {}, not {}: Slurm compiles its prefix into the programs; \
             build again with `cargo xtask build-slurm --prefix {} --destdir <dir>`",
            from.display(),
            configured.display(),
            want.display(),
            want.display()
        )));
    }
    let key = args.key.as_deref().map(config::read_key).transpose()?;
    if let Some(w) = key.as_deref().and_then(config::key_warning) {
        eprintln!("install: warning: {w}");
    }
    let t = target(&want, args.destdir.as_deref(), staged.sysconfdir.as_deref())?;
    let owners = driver_common::gate::Owners { user: owner };
    driver_common::gate::chain::trusted(&t.dir, owners)?;
    driver_common::gate::chain::trusted(&t.etc, owners)?;
    check_prefix(&t.dir, owner)?;
    let changed = install_tree(&from, &t, owner)?;
    println!(
        "install: {} {}",
        t.dir.display(),
        if changed {
            "installed"
        } else {
            "unchanged (already this build)"
        }
    );
    for line in config::install_config(&t.dir, &t.etc, key.as_deref(), owner)? {
        println!("install: {line}");
    }
    Ok(())
}

/// Stages `from` beside `t.dir`, writes the manifest and renames it into place; false when
/// the installed tree already is exactly this one.
fn install_tree(from: &Path, t: &Target, owner: u32) -> Result<bool> {
    let parent = t
        .dir
        .parent()
        .ok_or_else(|| Error::file(&t.dir, "has no parent directory"))?;
    driver_common::gate::dir::make_dirs(
        parent,
        0o755,
        driver_common::gate::Owners { user: owner },
    )?;
    let staging = driver_common::util::fs::Staging::new(parent, "install")?;
    let tree = staging.dir.join("tree");
    stage::copy(from, &tree, &mut stage::Same)?;
    normalise::tree(&tree, &t.prefix, owner)?;
    place(&staging, &tree, t)
}

/// Puts the normalised `tree` (inside `staging`, beside `t.dir`) into place with its
/// manifest: the old tree of ours is renamed aside and the admin's files in it carried over;
/// false when the installed tree already is exactly this one.
pub(crate) fn place(
    staging: &driver_common::util::fs::Staging,
    tree: &Path,
    t: &Target,
) -> Result<bool> {
    let new = Manifest::of_tree(tree, &t.prefix)?;
    if let Ok(old) = Manifest::read(&t.dir.join(MANIFEST)) {
        if old.files == new.files && old.verify(&t.dir).is_ok() {
            return Ok(false);
        }
    }
    new.write(&tree.join(MANIFEST))?;
    let aside = staging.dir.join("old");
    let had_old = t.dir.exists();
    if let (true, Ok(old)) = (had_old, Manifest::read(&t.dir.join(MANIFEST))) {
        // An admin's files in the prefix (slurm.conf in <prefix>/etc) move to the new tree.
        for rel in old.foreign_files(&t.dir)? {
            let (src, dst) = (t.dir.join(&rel), tree.join(&rel));
            if let Some(p) = dst.parent() {
                fs::create_dir_all(p).map_err(|e| Error::io(p, e))?;
            }
            // Copied, not moved: until the rename below the old tree stays whole.
            fs::copy(&src, &dst).map_err(|e| Error::io(&dst, e))?;
            let m = fs::metadata(&src).map_err(|e| Error::io(&src, e))?;
            std::os::unix::fs::chown(&dst, Some(m.uid()), Some(m.gid()))
                .map_err(|e| Error::io(&dst, e))?;
        }
    }
    if had_old {
        fs::rename(&t.dir, &aside).map_err(|e| Error::io(&t.dir, e))?;
    }
    if let Err(e) = fs::rename(tree, &t.dir) {
        if had_old {
            // Put the old tree back: nothing half-installed.
            let _ = fs::rename(&aside, &t.dir);
        }
        return Err(Error::io(&t.dir, e));
    }
    Ok(true)
}

pub fn uninstall(args: &UninstallArgs) -> Result<()> {
    let t = target(&args.prefix, args.destdir.as_deref(), None)?;
    let path = t.dir.join(MANIFEST);
    let m = Manifest::read(&path).map_err(|e| {
        e.context(format!(
            "{} was not installed by `cargo xtask install` (nothing removed)",
            t.dir.display()
        ))
    })?;
    let kept = m.remove(&t.dir)?;
    println!("uninstall: {} removed", t.dir.display());
    for k in kept {
        println!("uninstall: kept {} (changed since install)", k.display());
    }
    println!("uninstall: slurm.conf and slurm.key in the sysconfdir are kept");
    Ok(())
}

#[cfg(test)]
mod attacks;
#[cfg(test)]
mod tests;
#[cfg(test)]
use tests::me;

// The command's arguments (clap), read by `slurm-mac` and `cargo xtask`.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The prefix the build was configured for (build-slurm --prefix).
    #[arg(long)]
    pub prefix: PathBuf,
    /// Install below this root instead of / (a package root, a test).
    #[arg(long, value_name = "DIR")]
    pub destdir: Option<PathBuf>,
    /// The staged build to install: `build-slurm --prefix P --destdir D` stages it in D/P
    /// (its staging manifest must say it was configured for --prefix). Default:
    /// target/stage/P, where `build-slurm --prefix P --destdir target/stage` puts it.
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// The cluster's slurm.key (it must be the controller's), copied to <sysconfdir>/slurm.key
    /// with mode 0600, owned by root.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct UninstallArgs {
    /// The prefix `install` installed into.
    #[arg(long)]
    pub prefix: PathBuf,
    /// The root `install` was given.
    #[arg(long, value_name = "DIR")]
    pub destdir: Option<PathBuf>,
}
