//! s2n-tls for a macOS target (`cargo xtask s2n --target aarch64-apple-darwin`), for the
//! Mach-O lane's tls/s2n plugin.
//!
//! The same pinned sources as the host build, cross-compiled with the target's tools (zig on
//! Linux: [`crate::deps::CrossTools`]) and a CMake toolchain file ([`cmake_toolchain`]) into a
//! static `libs2n.a`, against the static `libcrypto.a` of the target's third-party prefix
//! (`cargo xtask deps --target T`, whose OpenSSL keeps DES, DH and OCSP for it: s2n-tls
//! calls `EVP_des_ede3_cbc`, the `DH_*` and the `OCSP_*` functions without a feature test).
//! Static, so that the bottle carries no extra library: `tls_s2n.so` takes both archives in
//! at link time.
//!
//! Slurm's `X_AC_S2N` accepts an s2n installation only by running a test program
//! (`AC_RUN_IFELSE`) linked with `-ls2n` alone: a cross build cannot run it, and on a Mac the
//! static library would not link alone (it needs libcrypto after it). So a build for macOS
//! gives configure the answers the test would have produced ([`configure_answers`]): the
//! check's cache variable (so the test is not run at all), `s2n_run_ok=yes` (the variable
//! the macro decides with after the check) and the `S2N_*` variables it would have set. The
//! build then proves what the test would have: `tls_s2n.so` must be built
//! ([`super::check_plugin`]), and the Mach-O audit resolves its symbols.

use crate::deps::CrossTools;
use crate::deps::tools::cmake_toolchain;
use driver_common::error::{Error, Result};
use driver_common::targets::Target;
use std::path::{Path, PathBuf};

/// cmake's options for a macOS target (part of the stamp).
pub const RECIPE: &[&str] = &[
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DBUILD_TESTING=OFF",
    "-DUNSAFE_TREAT_WARNINGS_AS_ERRORS=OFF",
    "-DS2N_USE_CRYPTO_SHARED_LIBS=OFF",
    "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
    "-DCMAKE_INSTALL_LIBDIR=lib",
];

/// What the target's deps prefix must have for s2n-tls, and the OpenSSL features whose
/// absence (`OPENSSL_NO_*` in its configuration header) would break the build.
const CRYPTO_ARCHIVE: &str = "lib/libcrypto.a";
const CRYPTO_CONFIG: &str = "include/openssl/configuration.h";
const NEEDED_FEATURES: &[&str] = &["DES", "DH", "OCSP"];

/// The target's third-party prefix, checked to carry a libcrypto s2n-tls can use: the
/// archive, and none of [`NEEDED_FEATURES`] configured out.
pub fn crypto_prefix(deps_prefix: &Path, target: &Target) -> Result<PathBuf> {
    let fix = format!("run `cargo xtask deps --target {}`", target.rust);
    let archive = deps_prefix.join(CRYPTO_ARCHIVE);
    if !archive.is_file() {
        return Err(Error::Usage(format!(
            "s2n --target {}: no {} (the target's libcrypto): {fix}",
            target.rust,
            archive.display()
        )));
    }
    let config = deps_prefix.join(CRYPTO_CONFIG);
    let text = std::fs::read_to_string(&config).map_err(|e| Error::io(&config, e))?;
    let missing = missing_features(&text);
    if !missing.is_empty() {
        return Err(Error::Usage(format!(
            "s2n --target {}: the target's libcrypto was configured without {} ({}), which \
             s2n-tls calls: {fix} again (slurm-src/deps.toml keeps them)",
            target.rust,
            missing.join(", "),
            config.display()
        )));
    }
    Ok(deps_prefix.to_path_buf())
}

/// Which of [`NEEDED_FEATURES`] an OpenSSL `configuration.h` turns off (`#  define
/// OPENSSL_NO_DH`, any spacing after the `#`).
pub fn missing_features(config_h: &str) -> Vec<&'static str> {
    let defined: Vec<&str> = config_h
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix('#'))
        .filter_map(|l| l.trim_start().strip_prefix("define"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    NEEDED_FEATURES
        .iter()
        .copied()
        .filter(|f| defined.contains(&format!("OPENSSL_NO_{f}").as_str()))
        .collect()
}

/// cmake's configure arguments beyond the source, build and install directories: the recipe
/// and a toolchain file for the target that finds packages only in the deps prefix.
pub fn cmake_args(
    target: &Target,
    tools: &CrossTools,
    crypto: &Path,
    toolchain_file: &Path,
) -> Result<(Vec<String>, String)> {
    let text = cmake_toolchain(target, tools, &[crypto.to_path_buf()])?;
    let mut args: Vec<String> = RECIPE.iter().map(|s| s.to_string()).collect();
    args.push(format!(
        "-DCMAKE_TOOLCHAIN_FILE={}",
        toolchain_file.display()
    ));
    args.push(format!("-DCMAKE_PREFIX_PATH={}", crypto.display()));
    Ok((args, text))
}

/// The configure arguments that stand for `X_AC_S2N`'s test program in a cross build (see
/// the module documentation): s2n in `s2n`, libcrypto in `crypto`.
pub fn configure_answers(s2n: &Path, crypto: &Path) -> Vec<String> {
    let (s2n, crypto) = (s2n.display(), crypto.display());
    vec![
        format!("x_ac_cv_s2n_dir={s2n}"),
        "s2n_run_ok=yes".to_string(),
        format!("S2N_DIR={s2n}"),
        format!("S2N_CPPFLAGS=-I{s2n}/include"),
        format!("S2N_LDFLAGS=-L{s2n}/lib -L{crypto}/lib"),
        "S2N_LIBS=-ls2n -lcrypto".to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_features__reads_openssl_no_lines_in_both_spellings() {
        let h = "#  define OPENSSL_NO_ARIA\n# define OPENSSL_NO_DES\n#define OPENSSL_NO_DH\n# define OPENSSL_NO_DHX\n# ifndef OPENSSL_NO_OCSP\n#  define OPENSSL_NO_OCSP\n# endif\n";
        assert_eq!(missing_features(h), vec!["DES", "DH", "OCSP"]);
        assert!(missing_features("# define OPENSSL_NO_DHX\n# define OPENSSL_NO_DSA\n").is_empty());
    }

    #[test]
    fn crypto_prefix__names_a_missing_archive_and_a_configured_out_feature() {
        let mac = driver_common::targets::lookup("aarch64-apple-darwin").unwrap();
        let d = tempfile::tempdir().unwrap();
        let e = crypto_prefix(d.path(), mac).unwrap_err().to_string();
        assert!(
            e.contains("libcrypto.a")
                && e.contains("cargo xtask deps --target aarch64-apple-darwin"),
            "{e}"
        );
        crate::testing::write(&d.path().join(CRYPTO_ARCHIVE), "!<arch>\n");
        crate::testing::write(&d.path().join(CRYPTO_CONFIG), "# define OPENSSL_NO_DH\n");
        let e = crypto_prefix(d.path(), mac).unwrap_err().to_string();
        assert!(e.contains("without DH"), "{e}");
        crate::testing::write(&d.path().join(CRYPTO_CONFIG), "# define OPENSSL_NO_ARIA\n");
        assert_eq!(crypto_prefix(d.path(), mac).unwrap(), d.path());
    }

    #[test]
    fn configure_answers__skip_the_run_test_and_link_libcrypto_after_s2n() {
        let a = configure_answers(Path::new("/s"), Path::new("/d"));
        assert!(a.contains(&"x_ac_cv_s2n_dir=/s".to_string()));
        assert!(a.contains(&"s2n_run_ok=yes".to_string()));
        assert!(a.contains(&"S2N_LDFLAGS=-L/s/lib -L/d/lib".to_string()));
        assert!(a.contains(&"S2N_LIBS=-ls2n -lcrypto".to_string()));
    }
}
