//! Cross-building Slurm for macOS targets.
//!
//! # Toolchains
//!
//! * **Linux host, macOS target** (the lane this machine can run): zig, from the PyPI
//!   package `ziglang` pinned to [`zig::ZIG_VERSION`] (`ci/setup-debian.sh` installs it;
//!   by hand: `python3 -m pip install ziglang==0.17.0`). [`zig::prepare`] writes wrapper
//!   scripts `cc`, `ar`, `ranlib` into the staging directory; `cc` is
//!   `zig cc -target <arch>-macos.<macos_min>` plus this lane's SDK stand-ins (see
//!   `build-driver/cross-sdk/README.md`), and it rewrites the one argument where zig
//!   differs from Apple's toolchain in a way libtool depends on (`-bundle`, see
//!   [`zig::cc_wrapper`]). This is the default compiler for an Apple target built on Linux;
//!   `CC_<triple>` (and the `cc` crate's other variables) still override it, and then the
//!   user is responsible for `AR`/`RANLIB` too.
//! * **macOS host, macOS target of the same architecture**: Apple's clang and ld64 (`cc`),
//!   no zig, no wrappers, no stand-in headers; the SDK provides libresolv and the headers.
//!   This path is written by reading Apple's documentation and libtool's darwin support:
//!   no Mac is reachable from this project's machines, so it has never run.
//!
//! # What every macOS build gets (both toolchains)
//!
//! * configure: `--host` and the optional features a compute node does not need switched
//!   off ([`APPLE_SWITCHES`]). No cache answers are needed: Slurm's two `AC_RUN_IFELSE`
//!   probes (`printf("%s", NULL)`, 32-bit `uid_t`/`gid_t`; 24.11 and 26.11) carry cross
//!   defaults, "yes", which is macOS's answer, and the s2n probe (25.05 and later) is off,
//!   or, with `--with-s2n`, answered (`crate::s2n::configure_switches`, after this list).
//! * the shim header force-included (its `__APPLE__` branch) through make's `CPPFLAGS`,
//!   not configure's (`build_slurm::configure::apple_make_cppflags` says why).
//! * make: `PLUGIN_FLAGS` with libtool's own single-dash `-export-dynamic` ([`apple_make_vars`],
//!   DARWIN-CATALOG C3): every plugin's Makefile.am spells it `--export-dynamic`, which libtool
//!   does not recognise and passes on to the compiler, and ld64 (like zig) rejects it. The
//!   make variable replaces the 113 identical definitions without editing them.
//! * the shim's static library, cross-built by cargo for the target, linked into libslurm and
//!   libslurmfull (`build_slurm::link`).
//! * after install, [`macho::check_prefix`]: every required program, library and plugin
//!   is a Mach-O file of the target's CPU.
//!
//! # Minimum macOS version
//!
//! The target table's `macos_min` (12.0, Monterey, for both Apple rows; see
//! [`driver_common::targets::Target::macos_min`]) for zig's `-target` and for cargo
//! (`MACOSX_DEPLOYMENT_TARGET`), so the shim and Slurm agree.

pub mod macho;
pub mod rust_linker;
#[cfg(test)]
mod sdk_layout;
pub mod zig;

use driver_common::targets::{Os, Target};
use std::path::Path;

/// Whether a build of `target` on `host` uses the zig toolchain by default (Linux host,
/// macOS target).
pub fn default_is_zig(target: &Target, host: &Target) -> bool {
    target.os == Os::Apple && host.os == Os::Linux
}

/// Optional features switched off for macOS targets: a compute node and the client
/// commands do not need them, and without this configure would probe the *build* machine's
/// `/usr` for them (Slurm's `x_ac_*.m4` default to `/usr /usr/local`), finding Linux
/// libraries. Unknown switches only draw a configure warning, so the list serves 24.11 and
/// 26.11 alike. The dependencies a node does need (json-c, libjwt, hwloc) are given by
/// prefix when the `deps` step provides them, and are otherwise off too ([`dep_switches`]).
///
/// `--disable-pam` (macOS has no `libpam_misc`), `--disable-x11`, `--without-munge` (auth/slurm
/// is the node's authentication), `--without-yaml`, `--without-libcurl`,
/// `--without-http-parser` (slurmrestd), `--without-rdkafka`, `--without-lua`,
/// `--without-pmix`, `--without-ucx`, `--without-nvml`, `--without-rsmi`, `--without-oneapi`
/// (GPU vendors macOS lacks), `--without-freeipmi`, `--without-hdf5`, `--without-readline`
/// (scontrol/sacctmgr interactive mode), `--without-s2n` (TLS, 25.05+; a later `--with-s2n`
/// wins), `--without-bpf`,
/// `--without-dbus`, `--without-selinux`, `--without-numa`. Not `--without-lz4`: it stops the
/// 26.11 snapshot's configure (`conditional "BUILD_LZ4" was never defined`; seen by the deps
/// helper). lz4's probe then looks in the build machine's `/usr`; zig cannot link an ELF
/// liblz4 into Mach-O, so it should answer no (see `HAVE_LZ4` in the build's config.h).
pub const APPLE_SWITCHES: &[&str] = &[
    "--disable-pam",
    "--disable-x11",
    "--without-munge",
    "--without-yaml",
    "--without-libcurl",
    "--without-http-parser",
    "--without-rdkafka",
    "--without-lua",
    "--without-pmix",
    "--without-ucx",
    "--without-nvml",
    "--without-rsmi",
    "--without-oneapi",
    "--without-freeipmi",
    "--without-hdf5",
    "--without-readline",
    "--without-s2n",
    "--without-bpf",
    "--without-dbus",
    "--without-selinux",
    "--without-numa",
];

/// `--with-json/jwt/hwloc=DIR` for a prefix the deps step built, or `--without-*` when
/// there is none (auth/slurm, cred/slurm and serializer/json are then not built).
///
/// With a prefix also `--without-rpath`: Slurm's `auxdir/slurm.m4` (`ac_with_rpath`, default
/// yes) would put `-Wl,-rpath -Wl,<prefix>/lib` into `JWT_LDFLAGS` and `HWLOC_LDFLAGS` (and
/// 26.11's `JSON_LDFLAGS`). The libraries are static archives, so nothing is ever loaded
/// from there: the rpath would only be an `LC_RPATH` naming the build machine's directory in
/// every program and plugin (a bottle must name none).
pub fn dep_switches(deps_prefix: Option<&Path>) -> Vec<String> {
    const DEPS: &[&str] = &["json", "jwt", "hwloc"];
    match deps_prefix {
        Some(p) => DEPS
            .iter()
            .map(|d| format!("--with-{d}={}", p.display()))
            .chain(std::iter::once("--without-rpath".to_string()))
            .collect(),
        None => DEPS.iter().map(|d| format!("--without-{d}")).collect(),
    }
}

/// configure switches for a macOS target built on another OS: `--without-mysql_config`
/// (no MariaDB client library exists for the target here; slurmdbd's storage is not a
/// node's). Built on a Mac, configure finds Homebrew's `mariadb_config`/`mysql_config` when it
/// is on PATH (ci/setup-macos.sh), so that `cargo xtask cluster`, which needs slurmdbd with
/// accounting_storage/mysql, can run there.
pub const CROSS_SWITCHES: &[&str] = &["--without-mysql_config"];

/// The libtool-recognised plugin flags (C3; see the module doc).
pub const PLUGIN_FLAGS: &str = "-module -avoid-version -export-dynamic";

/// make variables every macOS build passes (besides the shim's `LIB_LDFLAGS`).
pub fn apple_make_vars() -> Vec<String> {
    vec![format!("PLUGIN_FLAGS={PLUGIN_FLAGS}")]
}

/// make variables for a macOS target built on another OS. Slurm's lz4 probe
/// (`auxdir/x_ac_lz4.m4`, both lines) sets `LZ4_CPPFLAGS=-I/usr/include` as soon as the build
/// machine has `/usr/include/lz4.h`, and `AC_SUBST` exports it even when the library check
/// then fails (`HAVE_LZ4` stays undefined): the build machine's glibc headers then shadow the
/// SDK's (bcast/file_bcast.c stops on `bits/libc-header-start.h`). The build machine's lz4
/// can never be the target's, so its flags are emptied. (`--without-lz4` would avoid the
/// probe, but stops the 26.11 snapshot's configure: `BUILD_LZ4` is then never defined.)
pub fn cross_make_vars() -> Vec<String> {
    ["LZ4_CPPFLAGS=", "LZ4_LDFLAGS=", "LZ4_LIBS="]
        .map(String::from)
        .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use driver_common::targets::rows;

    #[test]
    fn default_is_zig__only_for_apple_targets_from_linux() {
        let linux = rows::linux_x86();
        let arm_linux = rows::linux_arm();
        let mac = rows::mac_arm();
        let mac_x86 = rows::mac_x86();
        assert!(default_is_zig(mac, linux));
        assert!(default_is_zig(mac_x86, linux));
        assert!(!default_is_zig(mac, mac));
        assert!(!default_is_zig(arm_linux, linux));
        assert!(!default_is_zig(linux, linux));
    }

    #[test]
    fn dep_switches__prefix_or_without() {
        assert_eq!(
            dep_switches(None),
            vec!["--without-json", "--without-jwt", "--without-hwloc"]
        );
        assert_eq!(
            dep_switches(Some(Path::new("/d"))),
            vec![
                "--with-json=/d",
                "--with-jwt=/d",
                "--with-hwloc=/d",
                "--without-rpath"
            ]
        );
    }

    #[test]
    fn cross_make_vars__empty_the_build_machines_lz4_flags() {
        let v = cross_make_vars();
        for var in ["LZ4_CPPFLAGS", "LZ4_LDFLAGS", "LZ4_LIBS"] {
            assert!(v.contains(&format!("{var}=")), "{v:?}");
        }
    }

    #[test]
    fn plugin_flags__single_dash_export_dynamic_only() {
        let v = apple_make_vars();
        assert_eq!(
            v,
            vec!["PLUGIN_FLAGS=-module -avoid-version -export-dynamic"]
        );
        assert!(!v[0].contains("--export-dynamic"));
    }

    #[test]
    fn apple_switches__no_duplicates_and_none_enable_a_dependency() {
        let mut s: Vec<&str> = APPLE_SWITCHES.to_vec();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), APPLE_SWITCHES.len());
        for a in APPLE_SWITCHES {
            assert!(
                a.starts_with("--without-") || a.starts_with("--disable-"),
                "{a}"
            );
        }
    }
}
