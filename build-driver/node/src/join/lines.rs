//! Slurm release lines and the version rule between a slurmd and its slurmctld, as pure
//! functions (no I/O): what `join` decides from two version strings.
//!
//! The rule (Slurm's doc/html/upgrades.shtml, 24.11 and later; the facts with their sources
//! are in docs/RELEASE-LINES.md): a slurmd may run a release up to three major releases older
//! than slurmctld, never a newer one. Before 24.11 the window was two releases. Major
//! releases come twice a year, in May (`YY.05`) and November (`YY.11`), so the lines are
//! numbered by half-years and "three releases back" is an index difference of three: a
//! 26.05 controller takes 24.11, 25.05, 25.11 and 26.05 nodes.
//!
//! A version is `MAJOR.MINOR[.MICRO][-SUFFIX]` (`24.11.5`, `26.11.0-0rc1`, `26.11-snapshot`),
//! optionally after a program name (`slurm 24.11.5`, what `slurmd -V` prints). Only the
//! line (`MAJOR.MINOR`) matters to the rule: micro releases of a line speak one protocol.

use std::fmt;

/// One major release: `YY.05` or `YY.11`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Line {
    /// Half-years since year 0: `year * 2`, plus one for the November release.
    index: u32,
}

/// The release lines this project knows of (docs/RELEASE-LINES.md), oldest first.
#[cfg(test)]
pub const KNOWN: [&str; 6] = ["24.05", "24.11", "25.05", "25.11", "26.05", "26.11"];

/// The first line whose controllers accept slurmd three releases back (two before it).
const THREE_BACK_SINCE: Line = Line { index: 24 * 2 + 1 };

impl Line {
    /// `YY.MM` with MM 05 or 11; anything else is no Slurm release line.
    pub fn new(year: u32, month: u32) -> Option<Line> {
        let half = match month {
            5 => 0,
            11 => 1,
            _ => return None,
        };
        Some(Line {
            index: year * 2 + half,
        })
    }

    pub fn year(self) -> u32 {
        self.index / 2
    }

    pub fn month(self) -> u32 {
        if self.index % 2 == 0 { 5 } else { 11 }
    }

    /// The line `n` releases before this one.
    pub fn back(self, n: u32) -> Option<Line> {
        self.index.checked_sub(n).map(|index| Line { index })
    }

    /// How many releases older a slurmd of this line may be than a controller of it.
    pub fn window(self) -> u32 {
        if self >= THREE_BACK_SINCE { 3 } else { 2 }
    }

    /// The node lines a controller of this line accepts, oldest first.
    pub fn accepted_nodes(self) -> Vec<Line> {
        (0..=self.window())
            .rev()
            .filter_map(|n| self.back(n))
            .collect()
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}.{:02}", self.year(), self.month())
    }
}

/// A version string that is not a Slurm release.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a Slurm version (expected MAJOR.MINOR[.MICRO], MINOR 05 or 11, e.g. 24.11.5)"
)]
pub struct BadVersion(pub String);

/// A parsed Slurm version: its line and the rest as written (`24.11.5` -> 24.11, `5`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub line: Line,
    /// The whole version as written, without a program name (`24.11.5`, `26.11.0-0rc1`).
    pub text: String,
}

impl Version {
    /// Parses `24.11.5`, `slurm 24.11.5`, `slurm-wlm 24.11.5`, `26.11-snapshot`, `26.11.0-0rc1`.
    pub fn parse(s: &str) -> Result<Version, BadVersion> {
        let bad = || BadVersion(s.trim().to_string());
        let text = s.split_whitespace().last().ok_or_else(bad)?;
        let mut parts = text.splitn(3, ['.', '-']);
        let number = |p: Option<&str>| -> Result<u32, BadVersion> {
            let p = p.ok_or_else(bad)?;
            if p.is_empty() || p.len() > 2 || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            p.parse().map_err(|_| bad())
        };
        let year = number(parts.next())?;
        let month = number(parts.next())?;
        let line = Line::new(year, month).ok_or_else(bad)?;
        Ok(Version {
            line,
            text: text.to_string(),
        })
    }
}

/// What the rule says of one slurmd line against one controller line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The node may join; `behind` releases older than the controller (0: the same line).
    Accepted { behind: u32 },
    /// The node is newer than the controller: never allowed.
    NodeNewer { ahead: u32, install: Vec<Line> },
    /// The node is more releases older than the controller's window.
    NodeTooOld {
        behind: u32,
        window: u32,
        install: Vec<Line>,
    },
}

/// The rule: may a slurmd of line `node` register with a slurmctld of line `controller`?
/// When not, `install` names the lines that would (the controller's own first).
pub fn check(node: Line, controller: Line) -> Verdict {
    let mut install = controller.accepted_nodes();
    install.reverse();
    if node > controller {
        return Verdict::NodeNewer {
            ahead: node.index - controller.index,
            install,
        };
    }
    let behind = controller.index - node.index;
    let window = controller.window();
    if behind > window {
        return Verdict::NodeTooOld {
            behind,
            window,
            install,
        };
    }
    Verdict::Accepted { behind }
}

/// `a, b or c`.
pub fn list(lines: &[Line]) -> String {
    let names: Vec<String> = lines.iter().map(Line::to_string).collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> Line {
        Version::parse(s).unwrap().line
    }

    #[test]
    fn parse__versions_with_and_without_program_names_and_suffixes() {
        for (s, l, text) in [
            ("24.11.5", "24.11", "24.11.5"),
            ("slurm 24.11.5", "24.11", "24.11.5"),
            ("slurm 26.05.3\n", "26.05", "26.05.3"),
            ("slurm-wlm 24.11.5", "24.11", "24.11.5"),
            ("26.11.0-0rc1", "26.11", "26.11.0-0rc1"),
            ("26.11-snapshot", "26.11", "26.11-snapshot"),
            ("25.05", "25.05", "25.05"),
        ] {
            let v = Version::parse(s).unwrap();
            assert_eq!(
                (v.line.to_string().as_str(), v.text.as_str()),
                (l, text),
                "{s}"
            );
        }
    }

    #[test]
    fn parse__rejects_what_is_no_release() {
        for s in [
            "",
            "slurm",
            "24",
            "24.12.1",
            "24.1.1",
            "2024.11.1",
            "x.11",
            "24.xx",
            "-24.11",
        ] {
            assert_eq!(Version::parse(s), Err(BadVersion(s.trim().into())), "{s:?}");
        }
        assert!(
            BadVersion("24.12".into())
                .to_string()
                .contains("e.g. 24.11.5")
        );
    }

    #[test]
    fn line__order_back_and_display() {
        assert!(line("24.11") < line("25.05") && line("25.05") < line("25.11"));
        assert_eq!(line("26.05").back(3), Some(line("24.11")));
        assert_eq!(line("24.11").back(1), Some(line("24.05")));
        assert_eq!(line("25.05").to_string(), "25.05");
        assert_eq!(Line::new(26, 6), None);
    }

    #[test]
    fn check__every_pair_of_known_lines() {
        let known: Vec<Line> = KNOWN.iter().map(|s| line(s)).collect();
        for (ci, &c) in known.iter().enumerate() {
            for (ni, &n) in known.iter().enumerate() {
                let v = check(n, c);
                let window = if c >= line("24.11") { 3 } else { 2 };
                let want = if ni > ci {
                    "newer"
                } else if ci - ni > window {
                    "old"
                } else {
                    "ok"
                };
                let got = match &v {
                    Verdict::Accepted { behind } => {
                        assert_eq!(*behind as usize, ci - ni);
                        "ok"
                    }
                    Verdict::NodeNewer { install, .. } | Verdict::NodeTooOld { install, .. } => {
                        assert_eq!(install[0], c, "the controller's own line comes first");
                        assert!(install.iter().all(|&l| check(l, c)
                            == Verdict::Accepted {
                                behind: c.index - l.index
                            }));
                        if matches!(v, Verdict::NodeNewer { .. }) {
                            "newer"
                        } else {
                            "old"
                        }
                    }
                };
                assert_eq!(got, want, "node {n} against controller {c}: {v:?}");
            }
        }
    }

    #[test]
    fn check__the_documented_cases() {
        // 24.11 joins 24.11 to 26.05 controllers, not 26.11 (docs/RELEASE-LINES.md).
        assert_eq!(
            check(line("24.11"), line("26.05")),
            Verdict::Accepted { behind: 3 }
        );
        assert_eq!(
            check(line("24.11"), line("26.11")),
            Verdict::NodeTooOld {
                behind: 4,
                window: 3,
                install: ["26.11", "26.05", "25.11", "25.05"].map(line).to_vec()
            }
        );
        assert_eq!(
            check(line("26.05"), line("24.11")),
            Verdict::NodeNewer {
                ahead: 3,
                install: vec![line("24.11"), line("24.05"), line("23.11"), line("23.05")]
            }
        );
        assert_eq!(
            list(&["24.11", "25.05", "25.11"].map(line)),
            "24.11, 25.05 or 25.11"
        );
        assert_eq!(list(&[line("24.11")]), "24.11");
    }
}
