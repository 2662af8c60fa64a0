//! The export's texts: a commit message in SchedMD's style, and `SERIES.md`.

use crate::patches::doc::{Header, first_sentence};

/// Wraps `text` at 72 columns.
fn wrap(text: &str) -> String {
    let mut out = String::new();
    let mut col = 0;
    for w in text.split_whitespace() {
        if col > 0 && col + 1 + w.len() > 72 {
            out.push('\n');
            col = 0;
        } else if col > 0 {
            out.push(' ');
            col += 1;
        }
        out.push_str(w);
        col += w.len();
    }
    out
}

/// `component - Sentence` from our `component: sentence` subject (SchedMD's form, e.g.
/// "slurmstepd - Call pipe2() with O_CLOEXEC").
pub fn subject(ours: &str) -> String {
    match ours.split_once(": ") {
        Some((comp, rest)) if !comp.contains(' ') || comp.contains(',') => {
            let mut c = rest.chars();
            let first = c
                .next()
                .map(|f| f.to_uppercase().collect::<String>())
                .unwrap_or_default();
            format!("{comp} - {first}{}", c.as_str())
        }
        _ => ours.to_string(),
    }
}

/// The commit message: the subject, the header's Why and OS affected paragraphs, a
/// `Changelog:` trailer (the subject's sentence) and the sign-off.
pub fn commit_message(h: &Header) -> String {
    let subj = subject(&h.subject);
    let change = subj.split_once(" - ").map_or(subj.as_str(), |(_, s)| s);
    let mut m = format!("{subj}\n\n{}\n", wrap(&h.why));
    if !h.os.is_empty() {
        m.push_str(&format!("\n{}\n", wrap(&format!("OS affected: {}", h.os))));
    }
    m.push_str(&format!(
        "\nChangelog: {}.\nSigned-off-by: slurm-on-mac developers <dev@slurm-on-mac.invalid>\n",
        change.trim_end_matches('.')
    ));
    m
}

/// `SERIES.md`: what was exported and what was not, and why.
pub fn series_md(
    version: &str,
    line: &str,
    rows: &[(String, &'static str, String)],
    unplaced: &[(String, String)],
    exported: usize,
    tree: &str,
) -> String {
    let mut s = format!(
        "# Upstream export for Slurm {version} (line {line})\n\n\
Made by `cargo xtask upstream --version {version} --out DIR`: {exported} `git format-patch` \
files against the pristine {version} tree, the series' changes whose header says \
`Upstreamable: yes`. `git am` of them on a fresh repository of the pristine tree gave the \
export's own tree ({tree}).\n\n| patch | export | files of ours in its commit, or why not |\n|---|---|---|\n"
    );
    for (n, fate, detail) in rows {
        let d = if *fate == "left out" {
            first_sentence(detail)
        } else {
            detail.as_str()
        };
        s.push_str(&format!(
            "| `{n}` | {fate} | {} |\n",
            d.replace('|', "\\|").replace('\n', " ")
        ));
    }
    if !unplaced.is_empty() {
        s.push_str("\nOur files no exported patch registers (not exported):\n\n");
        for (rel, _) in unplaced {
            s.push_str(&format!("- `{rel}`\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject__schedmd_form() {
        assert_eq!(
            subject("scancel: initialise max_delay_lock"),
            "scancel - Initialise max_delay_lock"
        );
        assert_eq!(
            subject("conmgr, fd: macOS names"),
            "conmgr, fd - MacOS names"
        );
        assert_eq!(subject("no component here"), "no component here");
        let h = Header {
            subject: "scancel: initialise max_delay_lock".into(),
            why: "the lock was never initialised.".into(),
            os: "every OS.".into(),
            upstreamable: "yes.".into(),
        };
        let m = commit_message(&h);
        assert!(
            m.starts_with("scancel - Initialise max_delay_lock\n\nthe lock"),
            "{m}"
        );
        assert!(
            m.contains("\nChangelog: Initialise max_delay_lock.\nSigned-off-by: "),
            "{m}"
        );
    }
}
