//! The README as a front door: short, and every link it gives leads somewhere. A link is
//! markdown's `[text](target)`; a relative target must be a file of the checkout, and a
//! `#anchor` (alone, or after a target that is a markdown file) one of that page's headings
//! as GitHub names them.

use std::collections::BTreeSet;
use std::path::Path;

/// The README's length at most, in lines.
pub const MAX_LINES: usize = 150;

/// The `(target, anchor)` of every link of a markdown text, in order, fenced code left out.
pub fn links(text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let raw = &after[..end];
            let (target, anchor) = match raw.split_once('#') {
                Some((t, a)) => (t.to_string(), Some(a.to_string())),
                None => (raw.to_string(), None),
            };
            out.push((target, anchor));
            rest = &after[end..];
        }
    }
    out
}

/// The anchors of a markdown page's headings, as GitHub makes them: lower case, every
/// character but letters, digits, spaces, `-` and `_` dropped, spaces as `-`; a repeated
/// heading gets `-1`, `-2`, ...
pub fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let Some(title) = line.strip_prefix('#').filter(|_| !fenced) else {
            continue;
        };
        let title = title.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut name = slug.clone();
        let mut n = 0;
        while !out.insert(name.clone()) {
            n += 1;
            name = format!("{slug}-{n}");
        }
    }
    out
}

/// What is wrong with the links of `text`, a page at `page` (relative to `root`).
pub fn broken_links(root: &Path, page: &Path, text: &str) -> Vec<String> {
    let dir = page.parent().unwrap_or(Path::new(""));
    let mut out = Vec::new();
    for (target, anchor) in links(text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let file = if target.is_empty() {
            root.join(page)
        } else {
            root.join(dir).join(&target)
        };
        if !file.exists() {
            out.push(format!("{target}: no such file"));
            continue;
        }
        if let Some(a) = anchor
            && file.extension().is_some_and(|e| e == "md")
        {
            let heads = anchors(&std::fs::read_to_string(&file).unwrap());
            if !heads.contains(&a) {
                out.push(format!("{target}#{a}: no such heading"));
            }
        }
    }
    out
}
