//! The exhaustive target table: Rust target triple → autoconf host triple, OS family, default
//! C compilers, Homebrew bottle tag, zig target, minimum macOS and Apple `-arch` name
//! (openssl-src's approach). An unknown triple is an
//! error that lists the known ones; nothing is ever guessed from a substring of the triple.

use crate::error::{Error, Result};

mod deployment;
pub use deployment::parse as parse_macos_min;

/// The operating-system family of a target: it decides how the shim is linked and which
/// personalities make sense.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Os {
    /// GNU/Linux (glibc).
    Linux,
    /// macOS (Darwin, Mach-O, ld64).
    Apple,
}

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// The Rust target triple (`rustup target list`).
    pub rust: &'static str,
    /// The `--host` triple given to Slurm's `configure` when cross-compiling to this target
    /// (accepted by Slurm's bundled `auxdir/config.sub`; Debian's multiarch spelling for
    /// Linux, so the cross tools `<host>-gcc`, `<host>-pkg-config` are found).
    pub autoconf_host: &'static str,
    /// OS family.
    pub os: Os,
    /// Homebrew bottle tag for this target (`None`: no bottles are made for it).
    pub bottle_tag: Option<&'static str>,
    /// The C compiler used when building on a machine of this very triple and the user set
    /// none (`cc`'s rules otherwise; see `build_slurm::compiler`).
    pub native_cc: &'static str,
    /// The C compiler used when cross-compiling to this target from another host and the
    /// user set none. `None`: there is no conventional one (macOS targets from Linux need an
    /// explicit `CC_<triple>`, e.g. `zig cc -target aarch64-macos`).
    pub cross_cc: Option<&'static str>,
    /// zig's name of the target (`zig cc -target <zig>.<macos_min>`); `None`: zig does not
    /// build for it here.
    pub zig: Option<&'static str>,
    /// Apple targets: the oldest macOS built for (zig's `-target`, `MACOSX_DEPLOYMENT_TARGET`,
    /// `-mmacosx-version-min`). 12.0 (Monterey) for both: Apple Silicon needs 11.0 at least;
    /// 12.0 is the first release whose ld64 defaults to chained fixups, the load behaviour
    /// DESIGN.md's zig pitfall warns about.
    pub macos_min: Option<&'static str>,
    /// Apple targets: the `-arch` name (Apple's clang, CMake's `CMAKE_SYSTEM_PROCESSOR`).
    pub apple_arch: Option<&'static str>,
}

impl Target {
    /// zig's `-target` for this target: `<arch>-macos.<macos_min>`.
    pub fn zig_target(&self) -> Result<String> {
        match (self.zig, self.macos_min) {
            (Some(zig), Some(min)) => Ok(format!("{zig}.{min}")),
            _ => Err(self.not_apple("the zig toolchain builds for macOS targets only")),
        }
    }

    /// The oldest macOS this (Apple) target is built for.
    pub fn macos_min(&self) -> Result<&'static str> {
        self.macos_min
            .ok_or_else(|| self.not_apple("a minimum macOS version exists only for Apple targets"))
    }

    /// Apple's `-arch` name of this (Apple) target.
    pub fn apple_arch(&self) -> Result<&'static str> {
        self.apple_arch
            .ok_or_else(|| self.not_apple("`-arch` names exist only for Apple targets"))
    }

    fn not_apple(&self, what: &str) -> Error {
        Error::Unsupported(format!("{what}, not {}", self.rust))
    }
}

/// Every supported target. Keep it sorted by triple.
pub const TARGETS: &[Target] = &[
    Target {
        rust: "aarch64-apple-darwin",
        autoconf_host: "aarch64-apple-darwin",
        os: Os::Apple,
        bottle_tag: Some("arm64_sonoma"),
        native_cc: "cc",
        cross_cc: None,
        zig: Some("aarch64-macos"),
        macos_min: Some("12.0"),
        apple_arch: Some("arm64"),
    },
    Target {
        rust: "aarch64-unknown-linux-gnu",
        autoconf_host: "aarch64-linux-gnu",
        os: Os::Linux,
        bottle_tag: Some("arm64_linux"),
        native_cc: "gcc",
        cross_cc: Some("aarch64-linux-gnu-gcc"),
        zig: None,
        macos_min: None,
        apple_arch: None,
    },
    Target {
        rust: "x86_64-apple-darwin",
        autoconf_host: "x86_64-apple-darwin",
        os: Os::Apple,
        bottle_tag: Some("sonoma"),
        native_cc: "cc",
        cross_cc: None,
        zig: Some("x86_64-macos"),
        macos_min: Some("12.0"),
        apple_arch: Some("x86_64"),
    },
    Target {
        rust: "x86_64-unknown-linux-gnu",
        autoconf_host: "x86_64-linux-gnu",
        os: Os::Linux,
        bottle_tag: Some("x86_64_linux"),
        native_cc: "gcc",
        cross_cc: Some("x86_64-linux-gnu-gcc"),
        zig: None,
        macos_min: None,
        apple_arch: None,
    },
];

/// The known triples, comma-separated (for error messages).
pub fn known() -> String {
    TARGETS
        .iter()
        .map(|t| t.rust)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The row for `triple`, exactly as written; anything else is [`Error::UnknownTarget`].
pub fn lookup(triple: &str) -> Result<&'static Target> {
    TARGETS
        .iter()
        .find(|t| t.rust == triple)
        .ok_or_else(|| Error::UnknownTarget {
            triple: triple.to_string(),
            known: known(),
        })
}

/// The triple this driver was compiled for, which is the machine it runs on.
#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
const HOST: &str = "x86_64-unknown-linux-gnu";
#[cfg(all(target_arch = "aarch64", target_os = "linux", target_env = "gnu"))]
const HOST: &str = "aarch64-unknown-linux-gnu";
#[cfg(all(target_arch = "aarch64", target_os = "macos"))]
const HOST: &str = "aarch64-apple-darwin";
#[cfg(all(target_arch = "x86_64", target_os = "macos"))]
const HOST: &str = "x86_64-apple-darwin";
#[cfg(not(any(
    all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"),
    all(target_arch = "aarch64", target_os = "linux", target_env = "gnu"),
    all(target_arch = "aarch64", target_os = "macos"),
    all(target_arch = "x86_64", target_os = "macos"),
)))]
compile_error!("build-driver: this host is not in targets::TARGETS; add a row for it");

/// The row of the machine the driver runs on.
pub fn host() -> &'static Target {
    // HOST is one of the table's rows by construction (see the cfg chain above and the
    // `host__is_a_row_of_the_table` test), so the fallback is never taken.
    lookup(HOST).unwrap_or(&TARGETS[0])
}

/// The table's rows by name, for the other modules' tests: each triple is spelt here once.
#[cfg(any(test, feature = "testing"))]
pub mod rows {
    use super::{Target, lookup};

    fn row(triple: &str) -> &'static Target {
        lookup(triple).unwrap_or_else(|e| panic!("{triple}: {e}"))
    }

    pub fn mac_arm() -> &'static Target {
        row("aarch64-apple-darwin")
    }

    pub fn mac_x86() -> &'static Target {
        row("x86_64-apple-darwin")
    }

    pub fn linux_x86() -> &'static Target {
        row("x86_64-unknown-linux-gnu")
    }

    pub fn linux_arm() -> &'static Target {
        row("aarch64-unknown-linux-gnu")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup__known_triples_map_to_their_autoconf_host() {
        let cases = [
            ("x86_64-unknown-linux-gnu", "x86_64-linux-gnu", Os::Linux),
            ("aarch64-unknown-linux-gnu", "aarch64-linux-gnu", Os::Linux),
            ("aarch64-apple-darwin", "aarch64-apple-darwin", Os::Apple),
            ("x86_64-apple-darwin", "x86_64-apple-darwin", Os::Apple),
        ];
        for (rust, host, os) in cases {
            let t = lookup(rust).unwrap_or_else(|e| panic!("{rust}: {e}"));
            assert_eq!(t.rust, rust);
            assert_eq!(t.autoconf_host, host);
            assert_eq!(t.os, os);
        }
    }

    #[test]
    fn lookup__unknown_triple_is_an_error_listing_the_known_ones() {
        for bad in [
            "x86_64-unknown-linux-musl",
            "aarch64-apple-ios",
            "x86_64",
            "linux",
            "",
            "X86_64-unknown-linux-gnu",
        ] {
            match lookup(bad) {
                Err(Error::UnknownTarget { triple, known }) => {
                    assert_eq!(triple, bad);
                    for t in TARGETS {
                        assert!(known.contains(t.rust), "{known} lacks {}", t.rust);
                    }
                }
                other => panic!("{bad:?}: expected UnknownTarget, got {other:?}"),
            }
        }
    }

    #[test]
    fn lookup__no_substring_guess() {
        // A triple that merely contains a known one is not that target.
        assert!(lookup("x86_64-unknown-linux-gnux32").is_err());
        assert!(lookup(" x86_64-unknown-linux-gnu").is_err());
    }

    #[test]
    fn host__is_a_row_of_the_table() {
        assert_eq!(lookup(HOST).map(|t| t.rust).ok(), Some(HOST));
        assert_eq!(host().rust, HOST);
    }

    #[test]
    fn table__sorted_unique_and_apple_rows_have_no_default_cross_compiler() {
        for w in TARGETS.windows(2) {
            assert!(w[0].rust < w[1].rust, "{} !< {}", w[0].rust, w[1].rust);
        }
        for t in TARGETS {
            if t.os == Os::Apple {
                assert_eq!(t.cross_cc, None, "{}", t.rust);
            }
        }
    }

    #[test]
    fn zig_target__arch_and_minimum_macos_only_for_apple_rows() {
        let a = lookup("aarch64-apple-darwin").unwrap();
        let x = lookup("x86_64-apple-darwin").unwrap();
        assert_eq!(a.zig_target().unwrap(), "aarch64-macos.12.0");
        assert_eq!(x.zig_target().unwrap(), "x86_64-macos.12.0");
        assert_eq!(
            (a.apple_arch().unwrap(), x.apple_arch().unwrap()),
            ("arm64", "x86_64")
        );
        for t in TARGETS {
            let apple = t.os == Os::Apple;
            assert_eq!(t.zig_target().is_ok(), apple, "{}", t.rust);
            assert_eq!(t.macos_min().is_ok(), apple, "{}", t.rust);
            assert_eq!(t.apple_arch().is_ok(), apple, "{}", t.rust);
        }
        let l = lookup("x86_64-unknown-linux-gnu").unwrap();
        assert!(matches!(l.zig_target(), Err(Error::Unsupported(_))));
    }
}
