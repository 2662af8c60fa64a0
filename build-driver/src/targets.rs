//! The exhaustive target table: Rust target triple → autoconf host triple, OS family, default
//! C compilers and Homebrew bottle tag (openssl-src's approach). An unknown triple is an
//! error that lists the known ones; nothing is ever guessed from a substring of the triple.

use crate::error::{Error, Result};

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
    },
    Target {
        rust: "aarch64-unknown-linux-gnu",
        autoconf_host: "aarch64-linux-gnu",
        os: Os::Linux,
        bottle_tag: Some("arm64_linux"),
        native_cc: "gcc",
        cross_cc: Some("aarch64-linux-gnu-gcc"),
    },
    Target {
        rust: "x86_64-apple-darwin",
        autoconf_host: "x86_64-apple-darwin",
        os: Os::Apple,
        bottle_tag: Some("sonoma"),
        native_cc: "cc",
        cross_cc: None,
    },
    Target {
        rust: "x86_64-unknown-linux-gnu",
        autoconf_host: "x86_64-linux-gnu",
        os: Os::Linux,
        bottle_tag: Some("x86_64_linux"),
        native_cc: "gcc",
        cross_cc: Some("x86_64-linux-gnu-gcc"),
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

#[cfg(test)]
mod tests {
    #![allow(non_snake_case)]
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
}
