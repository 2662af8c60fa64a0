//! The sysconfdir's two files: the cluster's `slurm.key` and `slurm.conf`.

use driver_common::error::{Error, Result};
use std::fs;
use std::path::Path;

/// Reads the key given with `--key`: it must exist and not be empty.
pub fn read_key(path: &Path) -> Result<Vec<u8>> {
    let bytes = fs::read(path).map_err(|e| {
        Error::io(path, e).context(
            "--key: copy the controller's slurm.key (its SlurmctldParameters/AuthInfo key file) to this machine and pass that file",
        )
    })?;
    if bytes.is_empty() {
        return Err(Error::file(
            path,
            "is empty: --key must be the controller's slurm.key",
        ));
    }
    Ok(bytes)
}

/// Writes the key (0600, root-owned) and the configuration example; returns what it did.
pub fn install_config(
    from: &Path,
    etc: &Path,
    key: Option<&[u8]>,
    owner: u32,
) -> Result<Vec<String>> {
    let mut said = Vec::new();
    fs::create_dir_all(etc).map_err(|e| Error::io(etc, e))?;
    driver_common::util::trust::trusted(etc, owner)?;
    if let Some(k) = key {
        let path = etc.join("slurm.key");
        let same = fs::read(&path).map(|old| old == k).unwrap_or(false);
        let gid = if owner == 0 {
            0
        } else {
            nix::unistd::getegid().as_raw()
        };
        // Owner and mode are set on the new file before it gets its name (write_atomic_owned).
        driver_common::util::fs::write_atomic_owned(&path, k, 0o600, Some((owner, gid)))?;
        said.push(format!(
            "{} {} (mode 0600, root)",
            path.display(),
            if same { "unchanged" } else { "written" }
        ));
    }
    let example = from.join("etc").join("slurm.conf.example");
    if let Ok(text) = fs::read(&example) {
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
