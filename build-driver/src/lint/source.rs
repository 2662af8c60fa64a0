//! One C file as the lint sees it: tokens, each with its line and whether macOS compiles it.
//!
//! A careful tokenizer, not a C parser: it splices backslash-newlines, drops comments, keeps
//! string and character literals whole (escapes included), and reads preprocessor directives
//! as their own lines. `#if`/`#ifdef`/`#ifndef`/`#elif`/`#else`/`#endif` are tracked on a
//! stack and each condition is evaluated under the macOS model of [`super::cond`], so every
//! token carries [`Mac`]: `No` where no macOS build compiles it (the guard excludes macOS),
//! `Yes` where every one does, `Maybe` where the condition depends on something the model
//! does not know (such code counts as compiled: a lint must not hide it). `#define` bodies
//! are kept beside the token stream (they are not part of it: a macro body would upset the
//! brace structure the classes read), with the same flag.
//!
//! Why not tree-sitter: a C grammar parses one configuration of the preprocessor and gives
//! `#if` branches as error-tolerant fragments, while every hazard here is a question about
//! the conditionals themselves (which branch macOS compiles) plus short token patterns
//! (`pthread_mutex_t NAME ;`, `pack16 ( addr -> ss_family`). A tokenizer with a conditional
//! stack answers that exactly and needs no new dependency.

use super::cond;
use super::token::{Kind, Mac, Token, matching};

/// `#define NAME body` (object-like or function-like; the parameters are not kept).
#[derive(Debug, Clone)]
pub struct Define {
    pub name: String,
    pub body: Vec<Token>,
    pub mac: Mac,
}

/// One tokenized file.
#[derive(Debug, Default)]
pub struct Source {
    /// Every token outside directives, in order, whatever its [`Mac`].
    pub tokens: Vec<Token>,
    pub defines: Vec<Define>,
}

impl Source {
    /// The tokens macOS compiles (`Yes` or `Maybe`), in order.
    pub fn mac_tokens(&self) -> Vec<Token> {
        self.tokens
            .iter()
            .filter(|t| t.mac != Mac::No)
            .cloned()
            .collect()
    }
}

/// A conditional group on the stack.
struct Group {
    /// Whether the enclosing region is compiled.
    outer: Mac,
    /// Whether some earlier branch of this group is taken.
    taken: Mac,
    /// Whether the current branch is compiled (already combined with `outer`).
    current: Mac,
}

/// Tokenize `text`. An unbalanced `#endif`/`#else` or an unterminated group is an error
/// naming the line (the file is then not valid C for any configuration).
pub fn parse(text: &str) -> Result<Source, String> {
    let lines = logical_lines(text);
    let mut src = Source::default();
    let mut stack: Vec<Group> = Vec::new();
    let mut in_comment = false;
    for (line_no, line) in lines {
        let region = stack.last().map_or(Mac::Yes, |g| g.current);
        // A directive: `#` first on the line (outside a comment continued from above).
        let trimmed = line.trim_start();
        if !in_comment && trimmed.starts_with('#') {
            let mut toks = Vec::new();
            lex(&trimmed[1..], line_no, region, &mut toks, &mut in_comment);
            // a comment opened on a directive line and continued is dropped with it
            directive(&toks, line_no, region, &mut stack, &mut src)?;
            continue;
        }
        lex(&line, line_no, region, &mut src.tokens, &mut in_comment);
    }
    if !stack.is_empty() {
        return Err(format!(
            "{} #if group(s) not closed by #endif at the end of the file",
            stack.len()
        ));
    }
    Ok(src)
}

fn directive(
    toks: &[Token],
    line: u32,
    region: Mac,
    stack: &mut Vec<Group>,
    src: &mut Source,
) -> Result<(), String> {
    let Some(first) = toks.first() else {
        return Ok(()); // the null directive
    };
    let rest = &toks[1..];
    match first.text.as_str() {
        "if" | "ifdef" | "ifndef" => {
            let v = match first.text.as_str() {
                "if" => cond::eval(rest),
                "ifdef" => cond::defined(rest.first().map_or("", |t| t.text.as_str())),
                _ => cond::defined(rest.first().map_or("", |t| t.text.as_str())).not(),
            };
            stack.push(Group {
                outer: region,
                taken: v,
                current: region.and(v),
            });
        }
        "elif" | "elifdef" | "elifndef" | "else" => {
            let Some(g) = stack.last_mut() else {
                return Err(format!("line {line}: #{} without #if", first.text));
            };
            let v = match first.text.as_str() {
                "elif" => cond::eval(rest),
                "elifdef" => cond::defined(rest.first().map_or("", |t| t.text.as_str())),
                "elifndef" => cond::defined(rest.first().map_or("", |t| t.text.as_str())).not(),
                _ => Mac::Yes,
            };
            g.current = g.outer.and(g.taken.not()).and(v);
            g.taken = g.taken.or(v);
        }
        // the guard pops the group; a match falls through to `_` (nothing else to do)
        "endif" if stack.pop().is_none() => {
            return Err(format!("line {line}: #endif without #if"));
        }
        "define" => {
            if let Some(name) = rest.first().and_then(|t| t.ident()) {
                let mut body = &rest[1..];
                // function-like: skip the parameter list (no space before `(` is not
                // visible here; a `(` right after the name is taken as parameters)
                if body.first().is_some_and(|t| t.is("(")) {
                    if let Some(close) = body.iter().position(|t| t.is(")")) {
                        body = &body[close + 1..];
                    }
                }
                src.defines.push(Define {
                    name: name.to_string(),
                    body: body.to_vec(),
                    mac: region,
                });
            }
        }
        _ => {} // include, undef, error, pragma, line: nothing the classes read
    }
    Ok(())
}

/// Logical lines: backslash-newline spliced, numbered by the physical line they start on.
fn logical_lines(text: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 1u32;
    let mut n = 0u32;
    for raw in text.split('\n') {
        n += 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if cur.is_empty() {
            start = n;
        }
        if let Some(body) = raw.strip_suffix('\\') {
            cur.push_str(body);
            continue;
        }
        cur.push_str(raw);
        out.push((start, std::mem::take(&mut cur)));
    }
    if !cur.is_empty() {
        out.push((start, cur));
    }
    out
}

/// Append the tokens of one logical line. `in_comment` carries a `/* ... */` across lines.
fn lex(line: &str, line_no: u32, mac: Mac, out: &mut Vec<Token>, in_comment: &mut bool) {
    let b: Vec<char> = line.chars().collect();
    let mut i = 0;
    let push = |out: &mut Vec<Token>, kind, text: String| {
        out.push(Token {
            kind,
            text,
            line: line_no,
            mac,
        })
    };
    while i < b.len() {
        if *in_comment {
            if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                *in_comment = false;
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && b.get(i + 1) == Some(&'*') {
            *in_comment = true;
            i += 2;
        } else if c == '/' && b.get(i + 1) == Some(&'/') {
            break;
        } else if c == '"' || c == '\'' {
            let mut j = i + 1;
            let mut s = String::new();
            while j < b.len() && b[j] != c {
                if b[j] == '\\' && j + 1 < b.len() {
                    s.push(b[j]);
                    j += 1;
                }
                s.push(b[j]);
                j += 1;
            }
            push(out, if c == '"' { Kind::Str } else { Kind::Char }, s);
            i = j + 1;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let j = scan(&b, i, |ch| ch.is_ascii_alphanumeric() || ch == '_');
            // string prefixes (L"", u8"") stay part of the literal that follows
            push(out, Kind::Ident, b[i..j].iter().collect());
            i = j;
        } else if c.is_ascii_digit()
            || (c == '.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let j = scan(&b, i, |ch| {
                ch.is_ascii_alphanumeric() || ch == '.' || ch == '_'
            });
            push(out, Kind::Number, b[i..j].iter().collect());
            i = j;
        } else {
            const THREE: [&str; 2] = ["...", "<<="];
            const TWO: [&str; 19] = [
                "->", "++", "--", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "+=", "-=", "*=",
                "/=", "|=", "&=", "^=", "##",
            ];
            let rest: String = b[i..(i + 3).min(b.len())].iter().collect();
            let len = if THREE.iter().any(|p| rest.starts_with(p)) {
                3
            } else if TWO.iter().any(|p| rest.starts_with(p)) {
                2
            } else {
                1
            };
            push(out, Kind::Punct, b[i..i + len].iter().collect());
            i += len;
        }
    }
}

fn scan(b: &[char], from: usize, ok: impl Fn(char) -> bool) -> usize {
    let mut j = from;
    while j < b.len() && ok(b[j]) {
        j += 1;
    }
    j
}

/// Function bodies at file scope: the token range inside each top-level `{ ... }` that
/// follows a `)` (a function definition), as (open brace index, close brace index).
pub fn function_bodies(tokens: &[Token]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < tokens.len() {
        if tokens[k].is("{") {
            let close = matching(tokens, k);
            if k > 0 && tokens[k - 1].is(")") {
                out.push((k, close));
            }
            k = close + 1;
        } else {
            k += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac_text(src: &str) -> Vec<String> {
        parse(src)
            .map(|s| s.mac_tokens().into_iter().map(|t| t.text).collect())
            .unwrap_or_default()
    }

    #[test]
    fn source__linux_branch_is_not_compiled_on_macos() {
        let t = mac_text("#if defined(__linux__)\nlinux_only();\n#else\nother();\n#endif\n");
        assert_eq!(t, ["other", "(", ")", ";"]);
    }

    #[test]
    fn source__apple_elif_and_negations() {
        let t = mac_text(
            "#ifdef __FreeBSD__\na\n#elif !defined(__APPLE__)\nb\n#elif defined(__APPLE__)\nc\n#else\nd\n#endif\n",
        );
        assert_eq!(t, ["c"]);
    }

    #[test]
    fn source__unknown_condition_counts_as_compiled() {
        let t = mac_text("#if SOME_FEATURE\nx\n#else\ny\n#endif\n");
        assert_eq!(t, ["x", "y"]);
    }

    #[test]
    fn source__comments_strings_and_splices() {
        let s = parse(
            "a /* \"/proc\" */ \"/run/x\\\"y\" 'c' \\\n b // \"/sys\"\n/* multi\n line */ z\n",
        )
        .unwrap_or_default();
        let t: Vec<(Kind, String, u32)> = s
            .tokens
            .into_iter()
            .map(|t| (t.kind, t.text, t.line))
            .collect();
        assert_eq!(
            t,
            [
                (Kind::Ident, "a".into(), 1),
                (Kind::Str, "/run/x\\\"y".into(), 1),
                (Kind::Char, "c".into(), 1),
                (Kind::Ident, "b".into(), 1),
                (Kind::Ident, "z".into(), 4),
            ]
        );
    }

    #[test]
    fn source__unbalanced_groups_are_errors() {
        assert!(parse("#endif\n").is_err());
        assert!(parse("#if 1\n").is_err());
        assert!(parse("#else\n").is_err());
    }

    #[test]
    fn source__define_bodies_keep_their_region() {
        let s = parse("#ifdef __linux__\n#define P \"/proc\"\n#else\n#define P \"/var\"\n#endif\n")
            .unwrap_or_default();
        let d: Vec<(String, String, Mac)> = s
            .defines
            .iter()
            .map(|d| (d.name.clone(), d.body[0].text.clone(), d.mac))
            .collect();
        assert_eq!(
            d,
            [
                ("P".into(), "/proc".into(), Mac::No),
                ("P".into(), "/var".into(), Mac::Yes)
            ]
        );
    }
}
