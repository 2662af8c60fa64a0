//! The sysconfdir's two files: the cluster's `slurm.key` and `slurm.conf`.

use driver_common::error::{Error, Result};
use std::fs;
use std::path::Path;

/// Reads the key given with `--key`: it must exist and not be empty.
pub fn read_key(path: &Path) -> Result<Vec<u8>> {
    // Not following a link: a swap of the file for a link to a root-only file must not make
    // that file the key.
    let bytes = driver_common::gate::file::read_nofollow(path).map_err(|e| {
        let denied = matches!(&e, Error::Io { source, .. }
            if source.kind() == std::io::ErrorKind::PermissionDenied);
        let fix = if denied {
            "--key: you may not read it: run the command with sudo (the key is root's), or fix its owner and mode"
        } else {
            "--key: copy the controller's slurm.key (its SlurmctldParameters/AuthInfo key file) to this machine and pass that file"
        };
        e.context(fix)
    })?;
    if bytes.is_empty() {
        return Err(Error::file(
            path,
            "is empty: --key must be the controller's slurm.key",
        ));
    }
    Ok(bytes)
}

/// The shortest key taken without a warning (install) or a failure (doctor): HS256's minimum
/// key size, 256 bits (RFC 7518, 3.2); Slurm itself sets none for slurm.key.
pub const MIN_KEY_BYTES: usize = 32;

/// A warning for a key too short to be the controller's (Slurm's docs make it with
/// `dd if=/dev/random of=slurm.key bs=1024 count=1`): auth/slurm takes it, but any short key
/// is guessable.
pub fn key_warning(k: &[u8]) -> Option<String> {
    (k.len() < MIN_KEY_BYTES).then(|| {
        format!(
            "the key is {} byte(s): the controller's slurm.key is usually 1024 random bytes; check that --key names it",
            k.len()
        )
    })
}

/// Writes the key (0600, root-owned) and the configuration example of the installed tree
/// `installed` (root's by now: never the staged tree, which its user can still change);
/// returns what it did.
pub fn install_config(
    installed: &Path,
    etc: &Path,
    key: Option<&[u8]>,
    owner: u32,
) -> Result<Vec<String>> {
    let mut said = Vec::new();
    driver_common::gate::dir::make_dirs(etc, 0o755, driver_common::gate::Owners { user: owner })?;
    if let Some(k) = key {
        let path = etc.join("slurm.key");
        let same = fs::read(&path).map(|old| old == k).unwrap_or(false);
        let gid = super::normalise::group_of(owner);
        // Owner and mode are set on the new file before it gets its name (write_atomic_owned).
        driver_common::util::fs::write_atomic_owned(&path, k, 0o600, Some((owner, gid)))?;
        said.push(format!(
            "{} {} (mode 0600, root)",
            path.display(),
            if same { "unchanged" } else { "written" }
        ));
    }
    let example = installed.join("etc").join("slurm.conf.example");
    if let Ok(text) = driver_common::gate::file::read_nofollow(&example) {
        let conf = etc.join("slurm.conf");
        match fs::read(&conf) {
            Err(_) => {
                driver_common::util::fs::write_atomic(&conf, &text, 0o644)?;
                said.push(format!(
                    "{} written from the example: edit it for your cluster",
                    conf.display()
                ));
            }
            Ok(old) if old == text => {}
            Ok(_) => {
                let new = etc.join("slurm.conf.new");
                driver_common::util::fs::write_atomic(&new, &text, 0o644)?;
                said.push(format!(
                    "{} exists and is yours: left as it is; the example went to {}",
                    conf.display(),
                    new.display()
                ));
            }
        }
    }
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_key__attack_short_key_is_named_and_unreadable_key_advises_permissions() {
        let (d, k) = driver_common::testing::scratch("slurm.key");
        std::fs::write(&k, "x").unwrap();
        let w = key_warning(&read_key(&k).unwrap()).expect("a 1-byte key passed silently");
        assert!(w.contains("1 byte"), "{w}");
        assert_eq!(key_warning(&[7; 1024]), None);
        if nix::unistd::geteuid().is_root() {
            eprintln!("skipped the unreadable half: root reads a mode-000 file");
            return;
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o000)).unwrap();
        let e = read_key(&k).unwrap_err().to_string();
        assert!(
            e.contains("sudo") && !e.contains("copy the controller"),
            "{e}"
        );
        drop(d);
    }
}
