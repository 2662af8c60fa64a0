//! docs/DRIVER.md's "Module layers": each crate's top-level modules in layers, top first; a
//! module may use only modules of the layers below its own. Modules that use each other
//! (no circle between two files, but one between two folders) are written tied, `a` + `b`,
//! and stay one group until untied. Held against the code: the map names every top-level
//! module of the crate and nothing else, no arrow of the crate ([`super::circles`]: any file
//! of one module using any file of another) runs sideways or up, and every tie is one (a tie
//! that no longer holds fails too, so the map cannot keep a stale one). A failure prints the
//! layering the code has today, to copy into the map.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::circles::{arrows, modules};

/// The heading the map stands under in docs/DRIVER.md.
pub const SECTION: &str = "## Module layers";

/// One crate's map: the layers, top first; a layer's groups (one module, or modules tied).
pub type Layers = Vec<Vec<BTreeSet<String>>>;

/// The maps of the section: crate source folder (as written, `build-driver/src/`) -> layers.
/// A crate starts at a `### ` line whose first `code span` is its folder; a layer is a
/// numbered line (`1. `) whose code spans are its modules.
pub fn parse(doc: &str) -> BTreeMap<String, Layers> {
    let mut out: BTreeMap<String, Layers> = BTreeMap::new();
    let Some(start) = doc.find(SECTION) else {
        return out;
    };
    let body = &doc[start + SECTION.len()..];
    let body = body.find("\n## ").map_or(body, |end| &body[..end]);
    let mut current = None;
    for line in body.lines() {
        if let Some(head) = line.strip_prefix("### ") {
            current = spans(head).into_iter().next();
            if let Some(c) = &current {
                out.entry(c.clone()).or_default();
            }
        } else if let Some(c) = &current
            && let Some((n, rest)) = line.split_once(". ")
            && !n.is_empty()
            && n.chars().all(|ch| ch.is_ascii_digit())
        {
            let groups = rest
                .split(", ")
                .map(|g| spans(g).into_iter().collect::<BTreeSet<_>>())
                .filter(|g| !g.is_empty())
                .collect();
            out.get_mut(c).unwrap().push(groups);
        }
    }
    out
}

/// The `code spans` of a line.
fn spans(line: &str) -> Vec<String> {
    line.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The crate's top-level modules, and which uses which (with the names taken).
pub fn top_level(src: &Path) -> (BTreeSet<String>, Uses) {
    let mods = modules(src);
    let top_of: BTreeMap<_, _> = mods
        .iter()
        .filter_map(|m| Some((m.file.clone(), m.path.first()?.clone())))
        .collect();
    let names = top_of.values().cloned().collect();
    let mut uses = Uses::new();
    for ((from, to), what) in arrows(src) {
        if let (Some(a), Some(b)) = (top_of.get(&from), top_of.get(&to))
            && a != b
        {
            uses.entry((a.clone(), b.clone())).or_default().extend(what);
        }
    }
    (names, uses)
}

/// What is wrong with `layers` as the map of a crate with these modules and uses.
pub fn problems(layers: &Layers, modules: &BTreeSet<String>, uses: &Uses) -> Vec<String> {
    let mut out = Vec::new();
    let mut place: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (i, layer) in layers.iter().enumerate() {
        for (g, group) in layer.iter().enumerate() {
            for m in group {
                place.insert(m.as_str(), (i + 1, g));
            }
        }
    }
    for m in modules {
        if !place.contains_key(m.as_str()) {
            out.push(format!("module `{m}` is in no layer"));
        }
    }
    for m in place.keys() {
        if !modules.contains(*m) {
            out.push(format!("`{m}` is no module of the crate"));
        }
    }
    for ((a, b), what) in uses {
        let (Some(pa), Some(pb)) = (place.get(a.as_str()), place.get(b.as_str())) else {
            continue;
        };
        if pa.0 > pb.0 || (pa.0 == pb.0 && pa.1 != pb.1) {
            let what: Vec<_> = what.iter().map(String::as_str).collect();
            out.push(format!(
                "`{a}` (layer {}) uses `{b}` (layer {}): {}",
                pa.0,
                pb.0,
                what.join(", ")
            ));
        }
    }
    for group in layers.iter().flatten().filter(|g| g.len() > 1) {
        if !tied(group, uses) {
            let names: Vec<_> = group.iter().map(|m| format!("`{m}`")).collect();
            out.push(format!(
                "{} are written tied, but do not all use each other: give each its layer",
                names.join(" + ")
            ));
        }
    }
    out
}

/// Who uses whom, with the names taken.
pub type Uses = BTreeMap<(String, String), BTreeSet<String>>;

/// Every module of `group` reaches every other (a module outside the group on the way is
/// then tied with them too, and its uses of them are named as sideways or up).
fn tied(group: &BTreeSet<String>, uses: &Uses) -> bool {
    group
        .iter()
        .all(|a| group.iter().all(|b| a == b || reaches(a, b, uses)))
}

/// The layering the uses give, top first: modules that use each other tied in one group,
/// each group one layer above the highest it uses, a leaf at the bottom.
pub fn today(modules: &BTreeSet<String>, uses: &Uses) -> Layers {
    // the groups: each module with every module it reaches and that reaches it back
    let mut groups: Vec<BTreeSet<String>> = Vec::new();
    for m in modules {
        if groups.iter().any(|g| g.contains(m)) {
            continue;
        }
        let group: BTreeSet<String> = modules
            .iter()
            .filter(|n| *n == m || (reaches(m, n, uses) && reaches(n, m, uses)))
            .cloned()
            .collect();
        groups.push(group);
    }
    let group_of = |m: &str| groups.iter().position(|g| g.contains(m));
    let mut height = vec![None::<usize>; groups.len()];
    fn measure(
        g: usize,
        groups: &[BTreeSet<String>],
        uses: &Uses,
        group_of: &dyn Fn(&str) -> Option<usize>,
        height: &mut Vec<Option<usize>>,
    ) -> usize {
        if let Some(h) = height[g] {
            return h;
        }
        let mut h = 0;
        for (a, b) in uses.keys() {
            if let (true, Some(gb)) = (groups[g].contains(a), group_of(b))
                && gb != g
            {
                h = h.max(measure(gb, groups, uses, group_of, height) + 1);
            }
        }
        height[g] = Some(h);
        h
    }
    let mut by_height: BTreeMap<usize, Vec<BTreeSet<String>>> = BTreeMap::new();
    for g in 0..groups.len() {
        let h = measure(g, &groups, uses, &group_of, &mut height);
        by_height.entry(h).or_default().push(groups[g].clone());
    }
    by_height.into_values().rev().collect()
}

fn reaches(from: &str, to: &str, uses: &Uses) -> bool {
    let mut seen = BTreeSet::from([from.to_string()]);
    let mut todo = vec![from.to_string()];
    while let Some(m) = todo.pop() {
        for (a, b) in uses.keys() {
            if *a == m {
                if b == to {
                    return true;
                }
                if seen.insert(b.clone()) {
                    todo.push(b.clone());
                }
            }
        }
    }
    false
}

/// `layers` as the map's numbered lines.
pub fn render(layers: &Layers) -> String {
    layers
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let groups: Vec<_> = l
                .iter()
                .map(|g| {
                    let names: Vec<_> = g.iter().map(|m| format!("`{m}`")).collect();
                    names.join(" + ")
                })
                .collect();
            format!("{}. {}\n", i + 1, groups.join(", "))
        })
        .collect()
}
