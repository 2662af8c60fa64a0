//! The node tool, `slurm-mac` (`build-driver/node`: join, service, install, gres-conf,
//! doctor), cross-built for the bottle's target and put in the keg's `bin/` ([`KEG_PATH`]), so
//! a poured bottle carries the same code the Linux tests and the loopback clusters run.
//!
//! `cargo rustc -p slurm-mac --bin slurm-mac --release --target <triple>` with:
//!
//! * `MACOSX_DEPLOYMENT_TARGET` = the target's minimum macOS and `RUSTFLAGS` =
//!   [`shipped_rustflags`] (this machine's directories remapped): the values the shim's build
//!   uses, so the crates both depend on are compiled once for the target.
//! * on a Linux host, `-C linker=<zig-cc>` ([`crate::cross::rust_linker`]) after `--`, which
//!   cargo gives the final binary only: the libraries' fingerprints stay the shim's. A linker
//!   the user names with `CARGO_TARGET_<TRIPLE>_LINKER` is used instead; on a Mac rustc's
//!   default (`cc`) links.
//!
//! The keg step ([`super::keg::assemble`]) copies the binary in before it walks the keg, so
//! the node tool goes through the same install-name fix, signature and checks as Slurm's own
//! programs ([`super::check`] also wants it to be an executable of the bottle's CPU).

use crate::build_slurm::link::shipped_rustflags;
use crate::cross::{self, rust_linker, zig};
use driver_common::error::{Error, Result};
use driver_common::staging::cargo_target_dir;
use driver_common::targets::{self, Target};
use driver_common::util::process::run_checked;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// Where the node tool lives in the keg.
pub const KEG_PATH: &str = "bin/slurm-mac";
/// Its cargo package and binary.
const PACKAGE: &str = "slurm-mac";

/// `CARGO_TARGET_<TRIPLE>_LINKER`: how the user names a linker for `target` (cargo's
/// spelling: upper case, `-` as `_`).
pub fn linker_var(target: &Target) -> String {
    format!(
        "CARGO_TARGET_{}_LINKER",
        target.rust.to_uppercase().replace(['-', '.'], "_")
    )
}

/// Builds the node tool for `target` in this run's cargo target directory and returns the
/// binary (`<cargo target dir>/<triple>/release/slurm-mac`).
pub fn build(sh: &Shell, root: &Path, target: &Target) -> Result<PathBuf> {
    let target_dir = cargo_target_dir(root, std::env::var("CARGO_TARGET_DIR").ok());
    build_in(sh, root, target, &target_dir)
}

/// [`build`] in the cargo target directory `target_dir`.
pub fn build_in(sh: &Shell, root: &Path, target: &Target, target_dir: &Path) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let triple = target.rust;
    let user_linker = std::env::var_os(linker_var(target)).is_some();
    let linker = if cross::default_is_zig(target, targets::host()) && !user_linker {
        let z = zig::find(sh)?;
        let dir = target_dir.join("bottle").join("toolchain").join(triple);
        Some(rust_linker::write(&dir, &z, target, root)?)
    } else {
        None
    };
    let _dir = sh.push_dir(root);
    let mut c = cmd!(
        sh,
        "{cargo} rustc -p {PACKAGE} --bin {PACKAGE} --release --target {triple}"
    )
    .env("MACOSX_DEPLOYMENT_TARGET", target.macos_min()?)
    .env("RUSTFLAGS", shipped_rustflags(root))
    .env("CARGO_TARGET_DIR", target_dir);
    if let Some(l) = &linker {
        c = c.arg("--").arg("-C").arg(format!("linker={}", l.display()));
    }
    run_checked(
        c,
        &format!("building the node tool for {triple}"),
        "cargo rustc -p slurm-mac",
    )
    .map_err(|e| {
        e.context(format!(
            "the bottle's {KEG_PATH} (is the target installed? `rustup target add {triple}`)"
        ))
    })?;
    let bin = target_dir.join(triple).join("release").join(PACKAGE);
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(Error::File {
            path: bin,
            problem: "cargo succeeded but the node tool is not there".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use driver_common::targets::rows;

    #[test]
    fn linker_var__cargos_spelling() {
        assert_eq!(
            linker_var(rows::mac_arm()),
            "CARGO_TARGET_AARCH64_APPLE_DARWIN_LINKER"
        );
        assert_eq!(
            linker_var(rows::mac_x86()),
            "CARGO_TARGET_X86_64_APPLE_DARWIN_LINKER"
        );
    }

    /// The real cross build (minutes from cold) in its own target directory,
    /// `<target>/tmp/node-tool` (cargo's lock on the outer one is held while tests run; kept,
    /// so a second run measures a warm build): a thin executable of the target's CPU that links
    /// only the system's libraries, that the bottle's signer signs and verifies, and that names
    /// no directory of this machine. Prints time and size (`--nocapture`).
    fn cross_build_ok(target: &Target) {
        use super::super::{codesign, linkage, scan};
        if crate::testing::zig_or_skip().is_none() {
            return;
        }
        let sh = Shell::new().unwrap();
        let root = crate::project_root();
        let t = std::time::Instant::now();
        let dir = cargo_target_dir(&root, std::env::var("CARGO_TARGET_DIR").ok())
            .join("tmp")
            .join("node-tool");
        let bin = build_in(&sh, &root, target, &dir).unwrap();
        let size = std::fs::metadata(&bin).unwrap().len();
        eprintln!(
            "slurm-mac for {}: {size} bytes in {:.1}s",
            target.rust,
            t.elapsed().as_secs_f64()
        );
        let cpu = crate::macho::cpu_type(target).unwrap();
        assert_eq!(
            cross::macho::check_file(&bin, cross::macho::Expect::Program, cpu),
            None
        );
        let mut data = std::fs::read(&bin).unwrap();
        // The system's C library and libiconv (std links `-liconv`), nothing else.
        let mut dylibs = linkage::names(&data).unwrap().dylibs;
        dylibs.sort();
        assert_eq!(
            dylibs,
            ["/usr/lib/libSystem.B.dylib", "/usr/lib/libiconv.2.dylib"]
        );
        let needles = scan::needles(&driver_common::staging::host_dirs(&root));
        assert_eq!(scan::hits(&data, &needles), Vec::<String>::new());
        codesign::sign(&mut data, "slurm-mac").unwrap();
        codesign::verify(&data).unwrap();
    }

    /// `cargo test -p build-driver node_tool -- --ignored --nocapture`.
    #[test]
    #[ignore = "cross-builds slurm-mac in release mode (about a minute of CPU from cold)"]
    fn build__arm64_executable_linking_only_the_system() {
        cross_build_ok(rows::mac_arm());
    }

    #[test]
    #[ignore = "cross-builds slurm-mac in release mode (about a minute of CPU from cold)"]
    fn build__x86_64_executable_linking_only_the_system() {
        cross_build_ok(rows::mac_x86());
    }
}
