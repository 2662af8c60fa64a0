//! `pthread-uninit`: pthread objects nothing initialises.
//!
//! glibc's `PTHREAD_MUTEX_INITIALIZER`, `PTHREAD_COND_INITIALIZER` and
//! `PTHREAD_RWLOCK_INITIALIZER` are all-zero, so a zeroed (static, `xmalloc`ed, `memset`)
//! object works on Linux without an initialiser. macOS's are not: libpthread checks a
//! signature word (`_PTHREAD_MUTEX_SIG_init` = 0x32AAABA7, `_PTHREAD_COND_SIG_init`,
//! `_PTHREAD_RWLOCK_SIG_init`; apple-oss-distributions/libpthread, `src/types_internal.h`)
//! and `pthread_mutex_lock()` on zero bytes returns EINVAL, which Slurm's `slurm_mutex_lock`
//! turns into `fatal()` (POC-DEFECTS D4: every scancel; D5: every step). The same holds for
//! `pthread_once_t` (`_PTHREAD_ONCE_SIG_init`).
//!
//! A declaration of `pthread_mutex_t`, `pthread_cond_t`, `pthread_rwlock_t` or
//! `pthread_once_t` (not a pointer, not `extern`, not a parameter or cast) counts as
//! initialised when
//! * its own initialiser names an initialiser macro (`PTHREAD_*_INITIALIZER`,
//!   `PTHREAD_ONCE_INIT`, or a `#define` whose body does), or
//! * some code calls `pthread_*_init`/`slurm_*_init` (mutex, cond, rwlock) with it as the
//!   first argument (`&name`, `&x->name`, `&x.name[i]`: the last name counts), or assigns it
//!   an initialiser macro (`.name = PTHREAD_MUTEX_INITIALIZER`, also inside a `#define`).
//!
//! Where that code may be: for a struct member or a non-static object, any scanned file
//! (members are matched by name: a member counts as initialised if any code in scope
//! initialises a member of that name); for a `static` or local object, its own file.

use super::token::{Kind, Token, arguments, matching};
use super::{Class, Finding, Scanned};
use std::collections::BTreeSet;

const TYPES: &[&str] = &[
    "pthread_mutex_t",
    "pthread_cond_t",
    "pthread_rwlock_t",
    "pthread_once_t",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Where {
    FileScope { is_static: bool },
    Local,
    Member,
}

struct Decl {
    file: usize,
    line: u32,
    ty: String,
    name: String,
    place: Where,
    initialised_here: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Brace {
    Aggregate,
    Code,
    Init,
    Other,
}

pub fn scan(files: &[Scanned], out: &mut Vec<Finding>) {
    let init_macros = initialiser_macros(files);
    let mut decls = Vec::new();
    let mut global: BTreeSet<String> = BTreeSet::new();
    let mut per_file: Vec<BTreeSet<String>> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let mut local = BTreeSet::new();
        declarations(i, &f.mac, &init_macros, &mut decls);
        initialisations(&f.mac, &init_macros, &mut local);
        for d in &f.src.defines {
            if d.mac != super::cond::Mac::No {
                initialisations(&d.body, &init_macros, &mut local);
            }
        }
        global.extend(local.iter().cloned());
        per_file.push(local);
    }
    for d in decls {
        if d.initialised_here {
            continue;
        }
        let known = match d.place {
            Where::Member | Where::FileScope { is_static: false } => global.contains(&d.name),
            Where::FileScope { is_static: true } | Where::Local => {
                per_file[d.file].contains(&d.name)
            }
        };
        if known {
            continue;
        }
        let what = match d.place {
            Where::Member => "struct member",
            Where::FileScope { .. } => "file-scope",
            Where::Local => "local",
        };
        out.push(Finding {
            file: files[d.file].rel.clone(),
            line: d.line,
            class: Class::PthreadUninit,
            subject: d.name.clone(),
            message: format!(
                "{what} {} `{}` is never initialised (no initialiser macro, no *_init call in scope): zero bytes are not a valid {} on macOS (EINVAL)",
                d.ty, d.name, d.ty
            ),
        });
    }
}

/// Macros whose expansion names an initialiser (one level of `#define`s, any file).
fn initialiser_macros(files: &[Scanned]) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for f in files {
        for d in &f.src.defines {
            if d.body
                .iter()
                .any(|t| t.ident().is_some_and(is_pthread_initialiser))
            {
                set.insert(d.name.clone());
            }
        }
    }
    set
}

fn is_pthread_initialiser(s: &str) -> bool {
    s.starts_with("PTHREAD_") && (s.ends_with("_INITIALIZER") || s.ends_with("_INIT"))
}

fn names_initialiser(tokens: &[Token], macros: &BTreeSet<String>) -> bool {
    tokens.iter().any(|t| {
        t.ident()
            .is_some_and(|s| is_pthread_initialiser(s) || macros.contains(s))
    })
}

fn is_init_function(s: &str) -> bool {
    (s.starts_with("pthread_") || s.starts_with("slurm_"))
        && s.ends_with("_init")
        && (s.contains("mutex") || s.contains("cond") || s.contains("rwlock"))
        && !s.contains("attr")
}

/// Names given to an init function as first argument, or assigned an initialiser.
fn initialisations(t: &[Token], macros: &BTreeSet<String>, out: &mut BTreeSet<String>) {
    for k in 0..t.len() {
        if t[k].ident().is_some_and(is_init_function) && t.get(k + 1).is_some_and(|n| n.is("(")) {
            if let Some(first) = arguments(t, k + 1).into_iter().next() {
                if let Some(name) = last_name(&t[first]) {
                    out.insert(name);
                }
            }
        }
        if t[k].is("=") && k > 0 {
            if let Some(name) = t[k - 1].ident() {
                let end = statement_end(t, k + 1);
                if names_initialiser(&t[k + 1..end], macros) {
                    out.insert(name.to_string());
                }
            }
        }
    }
}

/// The index of the `,` `;` or closing bracket that ends the expression starting at `from`.
fn statement_end(t: &[Token], from: usize) -> usize {
    let mut depth = 0usize;
    for (k, tok) in t.iter().enumerate().skip(from) {
        if tok.is("(") || tok.is("[") || tok.is("{") {
            depth += 1;
        } else if tok.is(")") || tok.is("]") || tok.is("}") {
            if depth == 0 {
                return k;
            }
            depth -= 1;
        } else if depth == 0 && (tok.is(",") || tok.is(";")) {
            return k;
        }
    }
    t.len()
}

/// The last identifier outside `[...]` in an argument (`&x->locks[i]` is `locks`).
fn last_name(arg: &[Token]) -> Option<String> {
    let mut depth = 0usize;
    let mut last = None;
    for tok in arg {
        if tok.is("[") {
            depth += 1;
        } else if tok.is("]") {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && tok.kind == Kind::Ident && tok.text != "NULL" {
            last = Some(tok.text.clone());
        }
    }
    last
}

fn declarations(file: usize, t: &[Token], macros: &BTreeSet<String>, out: &mut Vec<Decl>) {
    let mut braces: Vec<Brace> = Vec::new();
    let mut parens = 0usize;
    let mut k = 0;
    while k < t.len() {
        let tok = &t[k];
        if tok.is("(") {
            parens += 1;
        } else if tok.is(")") {
            parens = parens.saturating_sub(1);
        } else if tok.is("{") {
            braces.push(brace_kind(t, k, braces.last().copied()));
        } else if tok.is("}") {
            braces.pop();
        } else if tok.ident().is_some_and(|s| TYPES.contains(&s))
            && parens == 0
            && braces.last() != Some(&Brace::Init)
        {
            let start = declaration_start(t, k);
            let head = &t[start..k];
            if !head.iter().any(|h| h.is("extern") || h.is("typedef")) {
                let place = match braces.last() {
                    None | Some(Brace::Other) => Where::FileScope {
                        is_static: head.iter().any(|h| h.is("static")),
                    },
                    Some(Brace::Aggregate) => Where::Member,
                    Some(_) => Where::Local,
                };
                k = declarators(file, t, k, place, macros, out);
                continue;
            }
        }
        k += 1;
    }
}

/// What the `{` at `k` opens.
fn brace_kind(t: &[Token], k: usize, parent: Option<Brace>) -> Brace {
    let prev = |n: usize| k.checked_sub(n).and_then(|i| t.get(i));
    if prev(1).is_some_and(|p| p.is("struct") || p.is("union"))
        || (prev(1).is_some_and(|p| p.kind == Kind::Ident)
            && prev(2).is_some_and(|p| p.is("struct") || p.is("union")))
    {
        return Brace::Aggregate;
    }
    if prev(1).is_some_and(|p| p.is("=")) || parent == Some(Brace::Init) {
        return Brace::Init;
    }
    if prev(1).is_some_and(|p| p.is("enum"))
        || (prev(1).is_some_and(|p| p.kind == Kind::Ident) && prev(2).is_some_and(|p| p.is("enum")))
    {
        return Brace::Other;
    }
    if prev(1).is_some_and(|p| p.is(")")) || matches!(parent, Some(Brace::Code)) {
        return Brace::Code;
    }
    // `(type){ ... }` compound literals and `, {` inside initialisers
    if prev(1).is_some_and(|p| p.is(",") || p.is("(")) {
        return Brace::Init;
    }
    Brace::Other
}

/// The first token of the declaration whose type is at `k` (after the previous `;`, `{`, `}`).
fn declaration_start(t: &[Token], k: usize) -> usize {
    let mut s = k;
    while s > 0 && !(t[s - 1].is(";") || t[s - 1].is("{") || t[s - 1].is("}")) {
        s -= 1;
    }
    s
}

/// Read `NAME [dims] [= init] {, ...} ;` after the type at `k`; returns where to go on.
fn declarators(
    file: usize,
    t: &[Token],
    k: usize,
    place: Where,
    macros: &BTreeSet<String>,
    out: &mut Vec<Decl>,
) -> usize {
    let ty = t[k].text.clone();
    let mut j = k + 1;
    loop {
        while t.get(j).is_some_and(|x| x.is("const") || x.is("volatile")) {
            j += 1;
        }
        let pointer = t.get(j).is_some_and(|x| x.is("*") || x.is("("));
        let Some(name_tok) = t.get(j).filter(|x| x.kind == Kind::Ident) else {
            if !pointer {
                return j.max(k + 1);
            }
            // a pointer or function-pointer declarator: skip to its end
            let end = statement_end(t, j);
            if t.get(end).is_some_and(|x| x.is(",")) {
                j = end + 1;
                continue;
            }
            return end;
        };
        let name = name_tok.text.clone();
        let line = name_tok.line;
        j += 1;
        while t.get(j).is_some_and(|x| x.is("[")) {
            j = matching(t, j) + 1;
        }
        if t.get(j).is_some_and(|x| x.is("(")) {
            return j; // a function declaration returning the type by value: not an object
        }
        let mut initialised_here = false;
        if t.get(j).is_some_and(|x| x.is("=")) {
            let end = statement_end(t, j + 1);
            initialised_here = names_initialiser(&t[j + 1..end], macros);
            j = end;
        }
        out.push(Decl {
            file,
            line,
            ty: ty.clone(),
            name,
            place,
            initialised_here,
        });
        match t.get(j) {
            Some(x) if x.is(",") => j += 1,
            _ => return j,
        }
    }
}
