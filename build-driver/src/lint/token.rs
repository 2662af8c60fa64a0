//! The lint's tokens: a C token with its line and whether macOS compiles it ([`Mac`], which
//! `cond` evaluates and `source` assigns), and the bracket helpers the hazard classes use.
//! A leaf of the lint: `cond` and `source` both build on it.

/// Whether macOS compiles a region: `No` only when the guard provably excludes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mac {
    Yes,
    No,
    Maybe,
}

impl Mac {
    pub fn and(self, o: Mac) -> Mac {
        match (self, o) {
            (Mac::No, _) | (_, Mac::No) => Mac::No,
            (Mac::Yes, Mac::Yes) => Mac::Yes,
            _ => Mac::Maybe,
        }
    }

    pub fn or(self, o: Mac) -> Mac {
        match (self, o) {
            (Mac::Yes, _) | (_, Mac::Yes) => Mac::Yes,
            (Mac::No, Mac::No) => Mac::No,
            _ => Mac::Maybe,
        }
    }

    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Mac {
        match self {
            Mac::Yes => Mac::No,
            Mac::No => Mac::Yes,
            Mac::Maybe => Mac::Maybe,
        }
    }

    pub fn from_bool(b: bool) -> Mac {
        if b { Mac::Yes } else { Mac::No }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Ident,
    Number,
    /// A string literal; `text` is its content without the quotes (escapes kept as written).
    Str,
    Char,
    Punct,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    pub text: String,
    pub line: u32,
    pub mac: Mac,
}

impl Token {
    pub fn is(&self, text: &str) -> bool {
        self.kind != Kind::Str && self.kind != Kind::Char && self.text == text
    }

    pub fn ident(&self) -> Option<&str> {
        (self.kind == Kind::Ident).then_some(self.text.as_str())
    }
}

/// The index of the token that closes the bracket opened at `open` (`(`, `[`, `{`), or
/// `tokens.len()` when it is never closed.
pub fn matching(tokens: &[Token], open: usize) -> usize {
    let (o, c) = match tokens[open].text.as_str() {
        "(" => ("(", ")"),
        "[" => ("[", "]"),
        _ => ("{", "}"),
    };
    let mut depth = 0usize;
    for (k, t) in tokens.iter().enumerate().skip(open) {
        if t.is(o) {
            depth += 1;
        } else if t.is(c) {
            depth -= 1;
            if depth == 0 {
                return k;
            }
        }
    }
    tokens.len()
}

/// The top-level arguments of the call whose `(` is at `open`: token ranges between commas.
pub fn arguments(tokens: &[Token], open: usize) -> Vec<std::ops::Range<usize>> {
    let close = matching(tokens, open);
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = open + 1;
    for (k, t) in tokens.iter().enumerate().take(close).skip(open + 1) {
        if t.is("(") || t.is("[") || t.is("{") {
            depth += 1;
        } else if t.is(")") || t.is("]") || t.is("}") {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && t.is(",") {
            out.push(start..k);
            start = k + 1;
        }
    }
    if close > start {
        out.push(start..close.min(tokens.len()));
    }
    out
}
