//! What a cluster needs of this machine and of the Slurm prefix it runs: the programs and
//! plugins in the prefix, the user it runs as, and (without a private `/run`) the SACK socket
//! directories of auth/slurm.

use driver_common::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The programs and plugins the cluster needs.
pub fn check_prefix(prefix: &Path) -> Result<()> {
    let programs = driver_common::staging::KEY_BINARIES
        .iter()
        .map(|(dir, name)| (format!("{dir}/{name}"), ""));
    let plugins = [
        (
            "lib/slurm/auth_slurm.so".to_string(),
            ": this Slurm was configured without auth/slurm (it needs libjwt and json-c at configure time)",
        ),
        (
            "lib/slurm/accounting_storage_mysql.so".to_string(),
            ": this Slurm was configured without MariaDB, so slurmdbd cannot store accounting; install libmariadb-dev and libmariadb-dev-compat (ci/setup-debian.sh does) and rebuild with `cargo xtask build-slurm`",
        ),
    ];
    match programs
        .chain(plugins)
        .map(|(rel, why)| (prefix.join(rel), why))
        .find(|(p, _)| !p.is_file())
    {
        Some((missing, why)) => Err(Error::NotASlurmPrefix {
            path: prefix.to_path_buf(),
            detail: format!("{} is missing{why}", missing.display()),
        }),
        None => Ok(()),
    }
}

/// The user this process runs as (its effective uid, as `id -un`/`id -u` give): name and uid.
pub fn current_user() -> Result<(String, u32)> {
    let uid = nix::unistd::geteuid();
    match nix::unistd::User::from_uid(uid) {
        Ok(Some(user)) => Ok((user.name, uid.as_raw())),
        Ok(None) => Err(Error::UnknownUid(uid.as_raw())),
        Err(source) => Err(Error::Os {
            call: format!("getpwuid({uid})"),
            source,
        }),
    }
}

/// The SACK socket directories of auth/slurm: fixed under `/run` in Slurm 24.11, under
/// `/var/run` on macOS (patches/24.11/0011; macOS's `/` is read-only).
fn sack_dirs() -> [PathBuf; 3] {
    let run = Path::new(if cfg!(target_os = "macos") {
        "/var/run"
    } else {
        "/run"
    });
    ["slurmctld", "slurm", "slurmdbd"].map(|d| run.join(d))
}

/// Without a private `/run` (not root, or no mount namespaces: macOS): the SACK directories
/// must not be served by another daemon, and must exist (root creates them; anyone else
/// needs them to exist and belong to them).
pub fn require_sack_dirs(uid: u32) -> Result<()> {
    for dir in sack_dirs() {
        let socket = dir.join("sack.socket");
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            return Err(Error::SackInUse { socket });
        }
        if !dir.is_dir() {
            if uid == 0 {
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            } else {
                return Err(Error::SackDirMissing { dir, uid });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use xshell::cmd;

    #[test]
    fn sack_dirs__run_on_linux_var_run_on_macos() {
        let base = if cfg!(target_os = "macos") {
            "/var/run"
        } else {
            "/run"
        };
        let dirs = sack_dirs();
        assert!(
            dirs.iter().all(|d| d.parent() == Some(Path::new(base))),
            "{dirs:?}"
        );
        assert!(dirs.iter().any(|d| d.ends_with("slurmctld")));
    }

    #[test]
    fn check_prefix__names_the_missing_program() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sbin")).unwrap();
        std::fs::write(dir.path().join("sbin/slurmctld"), "").unwrap();
        let err = check_prefix(dir.path()).unwrap_err().to_string();
        assert!(err.contains("sbin/slurmd is missing"), "{err}");
    }

    #[test]
    fn check_prefix__requires_auth_slurm() {
        let dir = tempfile::tempdir().unwrap();
        for (d, n) in driver_common::staging::KEY_BINARIES {
            let p = format!("{d}/{n}");
            let f = dir.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, "").unwrap();
        }
        let err = check_prefix(dir.path()).unwrap_err().to_string();
        assert!(err.contains("auth_slurm.so is missing"), "{err}");
        std::fs::create_dir_all(dir.path().join("lib/slurm")).unwrap();
        std::fs::write(dir.path().join("lib/slurm/auth_slurm.so"), "").unwrap();
        let err = check_prefix(dir.path()).unwrap_err().to_string();
        assert!(err.contains("configured without MariaDB"), "{err}");
        std::fs::write(dir.path().join("lib/slurm/accounting_storage_mysql.so"), "").unwrap();
        check_prefix(dir.path()).unwrap();
    }

    #[test]
    fn current_user__matches_id() {
        let sh = xshell::Shell::new().unwrap();
        let (name, uid) = current_user().unwrap();
        assert_eq!(name, cmd!(sh, "id -un").read().unwrap());
        assert_eq!(uid.to_string(), cmd!(sh, "id -u").read().unwrap());
    }
}
