//! The Slurm release lines this project builds, and the facts that differ between them.
//!
//! A release line (`24.11`, `25.05`, ...) selects its entries of the patch series `patches/series` and
//! the expectation files `ci/expectations/*-<line>*.toml`; pins (`slurm-src/pins.toml`) say
//! which line each pinned version belongs to. Everything the driver decides by line is read
//! from [`LINES`] here, never by comparing strings elsewhere; a line that is not in the table
//! is an error naming the known ones ([`Error::UnknownLine`]). The audit's loader rows, which
//! also change by line, are in `audit/loaders.rs` as changes keyed by [`Line`].
//!
//! Sources of the facts (each read from the line's pinned source):
//! * `protocol`: `SLURM_PROTOCOL_VERSION` in `src/common/slurm_protocol_common.h`
//!   (`MAKE_SLURM_VER(r)` is `r << 8`); every line accepts the current and the three
//!   previous protocol versions (`SLURM_MIN_PROTOCOL_VERSION` is three back), and
//!   `unpack_header()` (`src/common/slurm_protocol_pack.c`) refuses any other, newer ones
//!   included. docs/RELEASE-LINES.md has the table and the messages.
//! * `topology_default`: the plugin `TopologyPlugin` defaults to (`src/plugins/topology/`:
//!   `default` in 24.11, renamed `flat` in 25.05).
//! * `certgen`: whether `src/plugins/certgen/` exists (since 25.05).

use crate::error::{Error, Result};

/// A release line, in release order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Line {
    L24_11,
    L25_05,
    L25_11,
    L26_05,
    L26_11,
}

/// What the driver needs to know about one line.
#[derive(Debug)]
pub struct Facts {
    pub line: Line,
    /// `MAJOR.MINOR`, as in pins.toml and the patches directory.
    pub name: &'static str,
    pub major: u32,
    pub minor: u32,
    /// `SLURM_PROTOCOL_VERSION`.
    pub protocol: u16,
    /// The default topology plugin's file name (without `.so`).
    pub topology_default: &'static str,
    /// The line has `certgen/script`.
    pub certgen: bool,
}

/// Every known line, in release order.
pub const LINES: &[Facts] = &[
    Facts {
        line: Line::L24_11,
        name: "24.11",
        major: 24,
        minor: 11,
        protocol: 42 << 8,
        topology_default: "topology_default",
        certgen: false,
    },
    Facts {
        line: Line::L25_05,
        name: "25.05",
        major: 25,
        minor: 5,
        protocol: 43 << 8,
        topology_default: "topology_flat",
        certgen: true,
    },
    Facts {
        line: Line::L25_11,
        name: "25.11",
        major: 25,
        minor: 11,
        protocol: 44 << 8,
        topology_default: "topology_flat",
        certgen: true,
    },
    Facts {
        line: Line::L26_05,
        name: "26.05",
        major: 26,
        minor: 5,
        protocol: 45 << 8,
        topology_default: "topology_flat",
        certgen: true,
    },
    Facts {
        line: Line::L26_11,
        name: "26.11",
        major: 26,
        minor: 11,
        protocol: 46 << 8,
        topology_default: "topology_flat",
        certgen: true,
    },
];

/// The Slurm version every user-facing command builds when none is named (`fetch`,
/// `build-slurm`, `bottle`) and the one the docs' user commands name: the newest release
/// with a verified pin in `slurm-src/pins.toml` (a release tarball with its sha256, or a
/// release tag's commit checked against upstream's tag). 26.11.0 takes its place once its
/// source is verified (`pins::tests::default_version__is_the_newest_verified_release`).
pub const DEFAULT_VERSION: &str = "26.05.3";

/// The Slurm version CI builds (`cargo xtask ci`'s default, named in `.ci/run` and
/// `ci/macos-arm64.yml`): the one release whose source a package registry serves to this
/// project's machines (Debian's `slurm-wlm` orig tarball, `fetch --from debian`), so a fresh
/// CI machine without general internet access can fetch it. Not the users' default.
pub const CI_VERSION: &str = "24.11.5";

/// How many protocol versions before its own a Slurm daemon still accepts.
pub const PROTOCOL_VERSIONS_BACK: u16 = 3;

fn known() -> String {
    LINES.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
}

fn unknown(line: String, from: String) -> Error {
    Error::UnknownLine {
        line,
        from,
        known: known(),
    }
}

impl Line {
    pub fn facts(self) -> &'static Facts {
        // LINES holds every variant once, in order (tested).
        &LINES[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.facts().name
    }

    /// The line named `name` (`24.11`); `from` says where the name came from, for the error.
    pub fn from_name(name: &str, from: &str) -> Result<Line> {
        LINES
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.line)
            .ok_or_else(|| unknown(name.to_string(), from.to_string()))
    }

    /// The line of release `major.minor`.
    pub fn from_version(major: u32, minor: u32, from: &str) -> Result<Line> {
        LINES
            .iter()
            .find(|f| f.major == major && f.minor == minor)
            .map(|f| f.line)
            .ok_or_else(|| unknown(format!("{major}.{minor:02}"), from.to_string()))
    }

    /// From `SLURM_VERSION_NUMBER` (`0xMMmmuu`, `slurm/slurm_version.h`).
    pub fn from_version_number(n: u32, from: &str) -> Result<Line> {
        Line::from_version((n >> 16) & 0xff, (n >> 8) & 0xff, from)
    }

    /// Whether a slurmctld of this line accepts a slurmd of line `slurmd` (same or up to
    /// [`PROTOCOL_VERSIONS_BACK`] protocol versions older, never newer).
    pub fn accepts_slurmd(self, slurmd: Line) -> bool {
        let (ctld, d) = (self.facts().protocol >> 8, slurmd.facts().protocol >> 8);
        d <= ctld && ctld - d <= PROTOCOL_VERSIONS_BACK
    }

    /// One line for users choosing a line: the protocol version, the known controller lines
    /// a slurmd of this line joins, and the slurmd lines its controller accepts.
    pub fn skew_summary(self) -> String {
        let names = |f: &dyn Fn(Line) -> bool| {
            LINES
                .iter()
                .filter(|o| f(o.line))
                .map(|o| o.line.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "line {}: protocol version {:#06x}; its slurmd joins a slurmctld of {}; its slurmctld accepts a slurmd of {} (of the known lines)",
            self.name(),
            self.facts().protocol,
            names(&|ctld| ctld.accepts_slurmd(self)),
            names(&|d| self.accepts_slurmd(d)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table__in_release_order_one_row_per_variant() {
        for (i, f) in LINES.iter().enumerate() {
            assert_eq!(f.line as usize, i, "{}", f.name);
            assert_eq!(f.name, format!("{}.{:02}", f.major, f.minor));
            assert_eq!(Line::from_name(f.name, "test").unwrap(), f.line);
        }
        for w in LINES.windows(2) {
            assert!(w[0].line < w[1].line && w[0].protocol < w[1].protocol);
            // one protocol version per release
            assert_eq!(w[1].protocol - w[0].protocol, 1 << 8);
        }
    }

    #[test]
    fn from_version_number__known_lines_and_an_error_naming_them() {
        for (number, line) in [
            (0x180b05, Line::L24_11),
            (0x190b07, Line::L25_11),
            (0x1a0503, Line::L26_05),
            (0x1a0b00, Line::L26_11),
        ] {
            let got = Line::from_version_number(number, "x").unwrap();
            assert_eq!(got, line, "SLURM_VERSION_NUMBER {number:#x}");
        }
        let e = Line::from_version_number(0x170b01, "prefix P").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("23.11") && msg.contains("prefix P") && msg.contains("24.11, 25.05"),
            "{msg}"
        );
        let e = Line::from_name("25.5", "pins.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`25.5`") && e.contains("26.11"), "{e}");
    }

    #[test]
    fn accepts_slurmd__three_back_never_newer() {
        use Line::*;
        assert!(L26_11.accepts_slurmd(L26_11));
        assert!(L26_11.accepts_slurmd(L25_05));
        assert!(!L26_11.accepts_slurmd(L24_11));
        assert!(!L25_11.accepts_slurmd(L26_05));
        assert!(!L26_05.accepts_slurmd(L26_11));
        assert!(L25_05.accepts_slurmd(L24_11));
        let s = L25_11.skew_summary();
        assert!(
            s.contains("0x2c00")
                && s.contains("joins a slurmctld of 25.11, 26.05, 26.11;")
                && s.contains("accepts a slurmd of 24.11, 25.05, 25.11 "),
            "{s}"
        );
    }

    /// The protocol version of each fetched line's source is the table's, and so is
    /// `SLURM_MIN_PROTOCOL_VERSION` (three back) where the tree spells it as an offset.
    #[test]
    fn table__protocol_versions_match_fetched_sources() {
        let root = crate::project_root().join("slurm-src");
        let mut checked = 0;
        for dir in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            let h = dir.path().join("src/common/slurm_protocol_common.h");
            let Ok(text) = std::fs::read_to_string(&h) else {
                continue;
            };
            let meta = std::fs::read_to_string(dir.path().join("META")).unwrap();
            let field = |k: &str| -> u32 {
                meta.lines()
                    .find_map(|l| l.trim().strip_prefix(k))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap()
            };
            let line = Line::from_version(field("Major:"), field("Minor:"), "META").unwrap();
            let f = line.facts();
            let current = format!(
                "#define SLURM_PROTOCOL_VERSION SLURM_{}_{:02}_PROTOCOL_VERSION",
                f.major, f.minor
            );
            assert!(text.contains(&current), "{}: no `{current}`", h.display());
            // `MAKE_SLURM_VER(r)` (25.11 on) or `((r << 8) | 0)`: r << 8
            let own = format!("#define SLURM_{}_{:02}_PROTOCOL_VERSION ", f.major, f.minor);
            let value = text
                .lines()
                .find_map(|l| l.strip_prefix(&own))
                .and_then(|v| {
                    let v = v.trim();
                    let r = v
                        .strip_prefix("MAKE_SLURM_VER(")
                        .and_then(|r| r.strip_suffix(')'))
                        .or_else(|| v.strip_prefix("((")?.strip_suffix(" << 8) | 0)"))?;
                    r.parse::<u16>().ok().map(|r| r << 8)
                });
            assert_eq!(value, Some(f.protocol), "{}: {own}", h.display());
            checked += 1;
        }
        if checked == 0 {
            println!(
                "SKIPPED: no Slurm source under {} (cargo xtask fetch)",
                root.display()
            );
        }
    }
}
