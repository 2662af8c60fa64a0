//! Import circles between the modules of one crate. Each crate's module tree is read from its
//! root (main.rs, lib.rs) by following `mod name;`; a module's file refers to another module's
//! file through `use crate::...`, `use super::...`, `use self::child::...`, a path in code, a
//! type, an attribute or a macro (`crate::a::B`, `super::sibling::C`, `child::f(...)`). Every
//! such reference is an arrow, except a module's use of itself or of one of its ancestors (a
//! child's `super::Item`, the crate root's re-exports): a folder module's files are its parts
//! and its own file their front, so a parent that uses its children while they use its types
//! is no circle (counting those arrows too finds 10 circles instead of 2 at the time of issue
//! 35: lint, bottle, fetch, ci, build_slurm and others with their children). A parent's bare
//! `mod child;` is no arrow either (it declares, it does not use). A circle is a strongly
//! connected component of two files or more; it is reported as its files and, for each arrow
//! inside it, the names the first file takes from the second. Test code (`#[cfg(test)]`
//! items, the files only tests compile) is left out: a test may use what it tests.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;

use super::{child_paths, is_cfg_test};

/// One module: its path in the crate (`["ci", "report"]`) and the file that holds it.
#[derive(Debug, Clone)]
pub(super) struct Module {
    pub(super) path: Vec<String>,
    pub(super) file: PathBuf,
}

/// A circle: its files, and for each arrow between two of them the names that tie them.
#[derive(Debug, PartialEq, Eq)]
pub struct Circle {
    pub files: Vec<PathBuf>,
    pub ties: BTreeMap<(PathBuf, PathBuf), BTreeSet<String>>,
}

impl fmt::Display for Circle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.files.iter().map(|p| p.display().to_string()).collect();
        write!(f, "{} files: {}", names.len(), names.join(", "))?;
        for ((from, to), what) in &self.ties {
            let what: Vec<_> = what.iter().map(String::as_str).collect();
            write!(
                f,
                "\n  {} -> {}: {}",
                from.display(),
                to.display(),
                what.join(", ")
            )?;
        }
        Ok(())
    }
}

/// The module tree of the crate whose source folder is `src`, from each root file there.
pub(super) fn modules(src: &Path) -> Vec<Module> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for root in ["lib.rs", "main.rs"] {
        let file = src.join(root);
        if file.is_file() {
            walk(&file, Vec::new(), &mut out, &mut seen);
        }
    }
    out
}

fn walk(file: &Path, path: Vec<String>, out: &mut Vec<Module>, seen: &mut BTreeSet<PathBuf>) {
    if !seen.insert(file.to_path_buf()) {
        return;
    }
    let text = std::fs::read_to_string(file).unwrap();
    let parsed = syn::parse_file(&text)
        .unwrap_or_else(|e| panic!("{}: not Rust syn can parse: {e}", file.display()));
    out.push(Module {
        path: path.clone(),
        file: file.to_path_buf(),
    });
    for item in &parsed.items {
        if let syn::Item::Mod(m) = item
            && m.content.is_none()
            && !is_cfg_test(&m.attrs)
        {
            let name = m.ident.to_string();
            let Some(child) = child_paths(file, &name).into_iter().find(|p| p.is_file()) else {
                panic!("{}: `mod {name};` has no file", file.display());
            };
            let mut p = path.clone();
            p.push(name);
            walk(&child, p, out, seen);
        }
    }
}

/// A path as written (`crate`, `a`, `B`) and the module it is written in.
type Written = Vec<String>;

/// Every path of a file that may name a module: use trees flattened, and runs of
/// `ident :: ident ...` in every other token of the file (code, types, attributes, macros).
/// Items under `#[cfg(test)]` are skipped. Each path comes with the module path it is written
/// in (inline modules extend the file's).
fn paths_of(file: &syn::File, base: &[String]) -> Vec<(Vec<String>, Written)> {
    let mut out = Vec::new();
    items(&file.items, base, &mut out);
    out
}

fn items(list: &[syn::Item], base: &[String], out: &mut Vec<(Vec<String>, Written)>) {
    for item in list {
        match item {
            syn::Item::Mod(m) if is_cfg_test(&m.attrs) => {}
            syn::Item::Mod(m) => {
                for a in &m.attrs {
                    tokens(a.to_token_stream(), base, out);
                }
                if let Some((_, inner)) = &m.content {
                    let mut p = base.to_vec();
                    p.push(m.ident.to_string());
                    items(inner, &p, out);
                }
            }
            syn::Item::Use(u) if is_cfg_test(&u.attrs) => {}
            syn::Item::Use(u) => use_tree(&u.tree, Vec::new(), base, out),
            other => {
                if !item_is_test(other) {
                    tokens(other.to_token_stream(), base, out);
                }
            }
        }
    }
}

fn item_is_test(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Fn(f) => &f.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Const(c) => &c.attrs,
        syn::Item::Static(s) => &s.attrs,
        syn::Item::Struct(s) => &s.attrs,
        syn::Item::Enum(e) => &e.attrs,
        syn::Item::Trait(t) => &t.attrs,
        syn::Item::Macro(m) => &m.attrs,
        _ => return false,
    };
    is_cfg_test(attrs) || attrs.iter().any(|a| a.path().is_ident("test"))
}

fn use_tree(
    tree: &syn::UseTree,
    mut prefix: Vec<String>,
    base: &[String],
    out: &mut Vec<(Vec<String>, Written)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_tree(&p.tree, prefix, base, out);
        }
        syn::UseTree::Name(n) => {
            prefix.push(n.ident.to_string());
            out.push((base.to_vec(), prefix));
        }
        syn::UseTree::Rename(r) => {
            prefix.push(r.ident.to_string());
            out.push((base.to_vec(), prefix));
        }
        syn::UseTree::Glob(_) => {
            prefix.push("*".into());
            out.push((base.to_vec(), prefix));
        }
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_tree(t, prefix.clone(), base, out);
            }
        }
    }
}

/// Runs of `ident (:: ident)+` in a token stream, into groups and attributes.
fn tokens(stream: TokenStream, base: &[String], out: &mut Vec<(Vec<String>, Written)>) {
    let list: Vec<TokenTree> = stream.into_iter().collect();
    let mut i = 0;
    while i < list.len() {
        if let TokenTree::Group(g) = &list[i] {
            tokens(g.stream(), base, out);
            i += 1;
            continue;
        }
        let after_colons = i >= 2 && is_colons(&list, i - 2);
        if let TokenTree::Ident(first) = &list[i]
            && !after_colons
        {
            let mut run = vec![first.to_string()];
            let mut j = i + 1;
            while is_colons(&list, j)
                && let Some(TokenTree::Ident(next)) = list.get(j + 2)
            {
                run.push(next.to_string());
                j += 3;
            }
            if run.len() > 1 {
                out.push((base.to_vec(), run));
            }
            i = j;
            continue;
        }
        i += 1;
    }
}

fn is_colons(list: &[TokenTree], at: usize) -> bool {
    matches!(
        (list.get(at), list.get(at + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && b.as_char() == ':' && a.spacing() == proc_macro2::Spacing::Joint
    )
}

/// The module a written path starts from, as an absolute module path, or `None` for a path
/// that leaves the crate (`std::...`, another crate, a local type's `Self::` or `T::`).
fn absolute(
    written: &[String],
    here: &[String],
    known: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut at = here.to_vec();
    let mut rest = written;
    match rest.first().map(String::as_str)? {
        "crate" => {
            at.clear();
            rest = &rest[1..];
        }
        "self" => rest = &rest[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        first => {
            let mut child = here.to_vec();
            child.push(first.to_string());
            if !known.contains(&child) {
                return None;
            }
        }
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

/// The arrows of one crate: (from file, to file) -> the names taken.
pub(super) fn arrows(src: &Path) -> BTreeMap<(PathBuf, PathBuf), BTreeSet<String>> {
    let mods = modules(src);
    let known: BTreeSet<Vec<String>> = mods.iter().map(|m| m.path.clone()).collect();
    let file_of: BTreeMap<&[String], &Path> = mods
        .iter()
        .map(|m| (m.path.as_slice(), m.file.as_path()))
        .collect();
    let mut out: BTreeMap<(PathBuf, PathBuf), BTreeSet<String>> = BTreeMap::new();
    for m in &mods {
        let text = std::fs::read_to_string(&m.file).unwrap();
        let parsed = syn::parse_file(&text).unwrap();
        for (here, written) in paths_of(&parsed, &m.path) {
            let Some(abs) = absolute(&written, &here, &known) else {
                continue;
            };
            // the longest prefix that is a module; the next segment is the name taken
            let Some(n) = (0..=abs.len()).rev().find(|n| known.contains(&abs[..*n])) else {
                continue;
            };
            // a module's use of itself or of an ancestor (`super::`, the crate root) is no
            // arrow: a folder module's files are its parts, and the parent is their front
            if m.path.starts_with(&abs[..n]) {
                continue;
            }
            let target = file_of[&abs[..n]];
            let name = abs
                .get(n)
                .filter(|s| *s != "self")
                .cloned()
                .unwrap_or_else(|| abs[n - 1].clone());
            out.entry((m.file.clone(), target.to_path_buf()))
                .or_default()
                .insert(name);
        }
    }
    out
}

/// The circles of the crate whose source folder is `src`, files named from `root`.
pub fn circles(src: &Path, root: &Path) -> Vec<Circle> {
    let arrows = arrows(src);
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).to_path_buf();
    let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (from, to) in arrows.keys() {
        graph.entry(from.clone()).or_default().insert(to.clone());
        graph.entry(to.clone()).or_default();
    }
    strongly_connected(&graph)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|files| {
            let ties = arrows
                .iter()
                .filter(|((f, t), _)| files.contains(f) && files.contains(t))
                .map(|((f, t), names)| ((rel(f), rel(t)), names.clone()))
                .collect();
            Circle {
                files: files.iter().map(|p| rel(p)).collect(),
                ties,
            }
        })
        .collect()
}

/// Tarjan's strongly connected components, each sorted.
fn strongly_connected(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<BTreeSet<PathBuf>> {
    struct State<'g> {
        graph: &'g BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'g Path, usize>,
        low: BTreeMap<&'g Path, usize>,
        stack: Vec<&'g Path>,
        on_stack: BTreeSet<&'g Path>,
        out: Vec<BTreeSet<PathBuf>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g Path) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.graph[v] {
            let w = w.as_path();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.insert(w.to_path_buf());
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_path()) {
            visit(&mut s, v);
        }
    }
    s.out
}
