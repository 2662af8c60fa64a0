//! A cluster with Slurm's TLS (`cluster up|test --tls`; 25.05 and later, a build made with
//! `build-slurm --with-s2n`): `TLSType=tls/s2n` in `slurm.conf` and `slurmdbd.conf`, and the
//! certificates tls.shtml asks for, made here with `openssl` as its example does. A private
//! CA signs one certificate each for slurmctld, slurmdbd and the slurmds (the plugin does
//! not check host names); they lie beside `slurm.conf` under the names the plugin looks for
//! there (`ca_cert.pem`, `ctld_cert.pem`, `ctld_cert_key.pem`, ...), so no `TLSParameters`
//! line is needed. Keys are 0600 and every file belongs to the cluster's SlurmUser, which the
//! plugin checks. Clients make their own self-signed certificates through certgen/script
//! (srun's I/O listener), which is what the proof of concept's D22 and D23 were about.

use super::config::Layout;
use driver_common::error::{Error, Result};
use driver_common::util::fs::write_script;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// The line both `slurm.conf` and `slurmdbd.conf` get.
pub const TLS_TYPE: &str = "TLSType=tls/s2n";

/// The plugin every program of a TLS cluster loads.
pub const PLUGIN: &str = "lib/slurm/tls_s2n.so";

/// The daemons with a certificate of their own, by the file-name stem the plugin uses.
pub const DAEMONS: &[&str] = &["ctld", "dbd", "slurmd"];

/// The CA certificate every program trusts.
pub fn ca_cert(l: &Layout) -> PathBuf {
    l.conf_dir().join("ca_cert.pem")
}

/// The certificate and key of `who` (one of [`DAEMONS`]).
pub fn cert_and_key(l: &Layout, who: &str) -> (PathBuf, PathBuf) {
    (
        l.conf_dir().join(format!("{who}_cert.pem")),
        l.conf_dir().join(format!("{who}_cert_key.pem")),
    )
}

/// Every build of a TLS cluster (and the one it upgrades to) must have the plugin.
pub fn check_builds(builds: &[super::nodes::Build], upgrade_to: Option<&Path>) -> Result<()> {
    let all: Vec<&Path> = builds
        .iter()
        .map(|b| b.prefix.as_path())
        .chain(upgrade_to)
        .collect();
    check_prefixes(&all)
}

/// Which prefixes lack the plugin, and how to fix it.
pub fn check_prefixes(prefixes: &[&Path]) -> Result<()> {
    let missing: Vec<String> = prefixes
        .iter()
        .filter(|p| !p.join(PLUGIN).is_file())
        .map(|p| p.display().to_string())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "--tls needs tls/s2n ({PLUGIN}) in every build, missing in: {}; build them with \
         `cargo xtask s2n` and `cargo xtask build-slurm --version V --with-s2n` (Slurm 25.05 or later)",
        missing.join(", ")
    )))
}

/// Makes the CA and the daemons' certificates in the cluster's configuration directory.
pub fn make_certs(sh: &Shell, l: &Layout) -> Result<()> {
    driver_common::util::process::require_tool(
        sh,
        "openssl",
        "making the TLS cluster's certificates",
        "install openssl",
    )?;
    let dir = l.conf_dir();
    let (ca, ca_key) = (ca_cert(l), dir.join("ca_key.pem"));
    key(sh, &ca_key)?;
    let subj = "/O=slurm-on-mac cluster/CN=test CA";
    run(
        cmd!(
            sh,
            "openssl req -new -x509 -days 30 -key {ca_key} -out {ca} -subj {subj}"
        ),
        "the CA certificate",
    )?;
    set_mode(&ca, 0o644)?;
    for who in DAEMONS {
        let (cert, key_file) = cert_and_key(l, who);
        key(sh, &key_file)?;
        let csr = dir.join(format!("{who}.csr"));
        let subj = format!("/O=slurm-on-mac cluster/CN={who}");
        run(
            cmd!(
                sh,
                "openssl req -new -key {key_file} -out {csr} -subj {subj}"
            ),
            &format!("{who}'s request"),
        )?;
        run(
            cmd!(
                sh,
                "openssl x509 -req -days 30 -in {csr} -CA {ca} -CAkey {ca_key} -CAcreateserial -out {cert} -sha256"
            ),
            &format!("{who}'s certificate"),
        )?;
        let _ = std::fs::remove_file(&csr);
        set_mode(&cert, 0o644)?;
    }
    let _ = std::fs::remove_file(dir.join("ca_cert.srl"));
    Ok(())
}

/// A new P-256 private key in `path`, mode 0600 (tls/s2n refuses a key others can read).
fn key(sh: &Shell, path: &Path) -> Result<()> {
    run(
        cmd!(
            sh,
            "openssl ecparam -name prime256v1 -genkey -noout -out {path}"
        ),
        &path.display().to_string(),
    )?;
    set_mode(path, 0o600)
}

fn run(c: xshell::Cmd<'_>, what: &str) -> Result<()> {
    driver_common::util::process::run_checked(c, &format!("TLS cluster: {what}"), "openssl")
}

fn set_mode(p: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).map_err(|e| Error::io(p, e))
}

/// The LibreSSL-like `openssl` (driver_common::libressl) in `dir`, wrapping this machine's:
/// `dir` goes first on a client's PATH so that certgen/script meets macOS's `req`.
pub fn libressl_like(sh: &Shell, dir: &Path) -> Result<()> {
    let real = driver_common::util::process::find_program(sh, "openssl")
        .ok_or_else(|| Error::Usage("openssl is not on PATH (install openssl)".into()))?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    write_script(
        &dir.join("openssl"),
        &driver_common::libressl::script(&real),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_builds__names_the_build_without_the_plugin_and_the_fix() {
        let with = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(with.path().join("lib/slurm")).unwrap();
        std::fs::write(with.path().join(PLUGIN), "").unwrap();
        let without = tempfile::tempdir().unwrap();
        check_prefixes(&[with.path()]).unwrap();
        let e = check_prefixes(&[with.path(), without.path()])
            .unwrap_err()
            .to_string();
        assert!(e.contains(&without.path().display().to_string()), "{e}");
        assert!(!e.contains(&format!("{},", with.path().display())), "{e}");
        assert!(e.contains("--with-s2n"), "{e}");
    }

    #[test]
    fn make_certs__each_daemon_certificate_chains_to_the_ca_and_keys_are_private() {
        let sh = Shell::new().unwrap();
        if driver_common::util::process::find_program(&sh, "openssl").is_none() {
            eprintln!("skipped: no openssl on PATH");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let l = Layout {
            root: d.path().to_path_buf(),
        };
        std::fs::create_dir_all(l.conf_dir()).unwrap();
        make_certs(&sh, &l).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let ca = ca_cert(&l);
        for who in DAEMONS {
            let (cert, key) = cert_and_key(&l, who);
            let out = cmd!(sh, "openssl verify -CAfile {ca} {cert}")
                .quiet()
                .read()
                .unwrap();
            assert!(out.ends_with("OK"), "{who}: {out}");
            let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{who}'s key");
        }
        // A certificate of another CA is refused by the same check.
        let other = tempfile::tempdir().unwrap();
        let l2 = Layout {
            root: other.path().to_path_buf(),
        };
        std::fs::create_dir_all(l2.conf_dir()).unwrap();
        make_certs(&sh, &l2).unwrap();
        let (cert2, _) = cert_and_key(&l2, "ctld");
        let bad = cmd!(sh, "openssl verify -CAfile {ca} {cert2}")
            .quiet()
            .ignore_status()
            .output()
            .unwrap();
        assert!(!bad.status.success());
    }
}
