//! Long-running build steps (configure, make, install, third-party builds) with their whole
//! output in a log file and progress on the terminal, and [`step`]: a spinner with start
//! and end lines for shorter steps. Make runs with silent rules (`V=0`), so each compiled or
//! linked file is one `  CC foo.lo` / `  CCLD foo.la` line; a [`Progress::Steps`] bar counts
//! those lines against an estimate.

use crate::error::{Error, Result};
use crate::util::process::file_tail;
use indicatif::{ProgressBar, ProgressStyle};
use std::fs::File;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether a line of silent-rules make output is one compile or link step.
pub fn is_step_line(line: &str) -> bool {
    let mut it = line.split_whitespace();
    matches!(it.next(), Some("CC" | "CCLD" | "CXX" | "CXXLD")) && it.next().is_some()
}

/// Number of step lines in a text.
pub fn count_steps(text: &str) -> u64 {
    text.lines().filter(|l| is_step_line(l)).count() as u64
}

/// How progress is shown.
#[derive(Clone, Copy, Debug)]
pub enum Progress {
    /// A spinner with elapsed time (configure, install).
    Spinner,
    /// A bar of step lines against this estimate (make).
    Steps(u64),
}

/// The spinner or step bar of a logged run.
fn progress_bar(progress: Progress, step: &str) -> ProgressBar {
    let bar = match progress {
        Progress::Spinner => {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} {prefix} [{elapsed}] {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            b
        }
        Progress::Steps(n) => {
            let b = ProgressBar::new(n.max(1));
            b.set_style(
                ProgressStyle::with_template("{prefix} [{elapsed}] {wide_bar} {pos}/~{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b
        }
    };
    bar.set_prefix(step.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Runs `command` (already set up with its directory and environment) with stdout and
/// stderr appended to `log`, showing progress; on failure, [`Error::Build`] with the log's
/// tail. Returns the number of step lines seen.
pub fn run_logged(
    command: impl Into<Command>,
    step: &str,
    log: &Path,
    progress: Progress,
) -> Result<u64> {
    let mut command: Command = command.into();
    let file = File::create(log).map_err(|e| Error::io(log, e))?;
    let file2 = file.try_clone().map_err(|e| Error::io(log, e))?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(file2));
    let bar = progress_bar(progress, step);
    let mut child = command.spawn().map_err(|source| Error::Spawn {
        program: crate::util::process::bounded::show(&command),
        source,
    })?;
    let mut reader = File::open(log).map_err(|e| Error::io(log, e))?;
    let mut pending = String::new();
    let mut steps = 0u64;
    let pump = |reader: &mut File, pending: &mut String, steps: &mut u64| {
        let mut buf = Vec::new();
        if reader.read_to_end(&mut buf).is_ok() && !buf.is_empty() {
            pending.push_str(&String::from_utf8_lossy(&buf));
            while let Some(i) = pending.find('\n') {
                let line: String = pending.drain(..=i).collect();
                if is_step_line(&line) {
                    *steps += 1;
                    let name = line.split_whitespace().nth(1).unwrap_or("").to_string();
                    if let Progress::Steps(n) = progress {
                        // Keep the bar short of full until make is really done.
                        bar.set_position((*steps).min(n.saturating_sub(1)));
                    }
                    bar.set_message(name);
                }
            }
        }
    };
    let status = loop {
        pump(&mut reader, &mut pending, &mut steps);
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => std::thread::sleep(Duration::from_millis(150)),
            Err(source) => {
                bar.abandon();
                return Err(Error::Wait {
                    program: step.into(),
                    source,
                });
            }
        }
    };
    let _ = reader.stream_position();
    pump(&mut reader, &mut pending, &mut steps);
    if status.success() {
        if let Progress::Steps(_) = progress {
            bar.set_length(steps.max(1));
            bar.set_position(steps);
        }
        bar.finish_with_message(format!("done ({steps} steps)"));
        Ok(steps)
    } else {
        bar.abandon_with_message("FAILED".to_string());
        Err(Error::Build {
            step: step.into(),
            log: PathBuf::from(log),
            tail: file_tail(log, 40),
        })
    }
}

/// Runs a step with a spinner (on a terminal) and start/end lines on stderr, each beginning
/// with `who` (the subcommand: `fetch`, `deps`).
pub fn step<T>(who: &str, what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    eprintln!("{who}: {what} ...");
    let start = Instant::now();
    let bar = ProgressBar::new_spinner();
    bar.set_message(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    let r = f();
    bar.finish_and_clear();
    let secs = start.elapsed().as_secs_f64();
    match &r {
        Ok(_) => eprintln!("{who}: {what}: done in {secs:.1}s"),
        Err(_) => eprintln!("{who}: {what}: failed after {secs:.1}s"),
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `make`: an executable script in `dir` (no `sh -c` strings).
    fn script(dir: &Path, body: &str) -> Command {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("fake-make");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        Command::new(p)
    }

    #[test]
    fn is_step_line__counts_cc_and_ccld_only() {
        assert!(is_step_line("  CC       log.lo"));
        assert!(is_step_line("  CCLD     libslurmfull.la"));
        assert!(is_step_line("  CXXLD    foo"));
        assert!(!is_step_line("  GEN      foo"));
        assert!(!is_step_line("Making all in src"));
        assert!(!is_step_line("CC"));
        assert!(!is_step_line("gcc -DHAVE_CONFIG_H -c log.c"));
    }

    #[test]
    fn run_logged__success_counts_steps_and_logs_everything() {
        let (d, log) = crate::testing::scratch("out.log");
        let c = script(
            d.path(),
            "echo '  CC a.lo'; echo '  CCLD b.la'; echo warn >&2",
        );
        assert_eq!(run_logged(c, "test", &log, Progress::Steps(5)).unwrap(), 2);
        let text = std::fs::read_to_string(&log).unwrap();
        crate::testing::assert_mentions(&text, &["warn", "CCLD b.la"]);
    }

    #[test]
    fn run_logged__failure_is_a_build_error_with_the_tail() {
        let (d, log) = crate::testing::scratch("out.log");
        let c = script(d.path(), "echo first; echo 'the error' >&2; exit 2");
        match run_logged(c, "make", &log, Progress::Spinner) {
            Err(Error::Build { step, log: l, tail }) => {
                assert_eq!(step, "make");
                assert_eq!(l, log);
                assert!(tail.contains("the error"), "{tail}");
            }
            other => panic!("expected Error::Build, got {other:?}"),
        }
    }
}
