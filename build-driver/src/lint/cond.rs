//! Preprocessor conditions evaluated for macOS, in three values.
//!
//! The model knows what a macOS build of Slurm defines and what it does not: the compiler's
//! OS macros (`__APPLE__`, `__MACH__` defined; `__linux__`, `__FreeBSD__`, ... not), the
//! SDK macros the scanned guards test (`RLIMIT_*`, `TIOCOUTQ`, `BSD` from `<sys/param.h>`),
//! and configure's answers for macOS that are facts of the OS, not of the optional libraries
//! installed (`HAVE_EPOLL`, `HAVE_SYS_PRCTL_H`, `HAVE_MEMFD_CREATE`, ...: the Linux vs
//! aarch64-apple-darwin `config.h` difference in `../shared/docs/darwin-configure-diff.txt`;
//! `HAVE_PTY_H` is defined because this project's `pty.h` stand-in makes it so, and
//! `HAVE_HWLOC` because a macOS node needs hwloc (catalog B9; `cargo xtask deps` builds it);
//! `WITH_CGROUP` is never defined on darwin, auxdir/x_ac_cgroup.m4; `PR_*` come from
//! `<sys/prctl.h>`, which macOS lacks). Anything
//! else is unknown, and a condition that depends on it is [`Mac::Maybe`].

/// Macros a macOS build of Slurm defines, with their value where a guard compares it.
const DEFINED: &[(&str, i64)] = &[
    ("__APPLE__", 1),
    ("__MACH__", 1),
    ("BSD", 199506),
    ("TIOCOUTQ", 1),
    ("RLIMIT_CPU", 0),
    ("RLIMIT_FSIZE", 1),
    ("RLIMIT_DATA", 2),
    ("RLIMIT_STACK", 3),
    ("RLIMIT_CORE", 4),
    ("RLIMIT_AS", 5),
    ("RLIMIT_RSS", 5),
    ("RLIMIT_MEMLOCK", 6),
    ("RLIMIT_NPROC", 7),
    ("RLIMIT_NOFILE", 8),
    ("HAVE_SYSCTLBYNAME", 1),
    ("HAVE_SYS_SYSCTL_H", 1),
    ("HAVE_PTY_H", 1),
    ("HAVE_HWLOC", 1),
    ("HAVE_STRUCT_SOCKADDR_SA_LEN", 1),
    ("HAVE_STRUCT_SOCKADDR_IN_SIN_LEN", 1),
    ("HAVE_STRUCT_SOCKADDR_IN6_SIN6_LEN", 1),
    ("HAVE_STRUCT_SOCKADDR_UN_SUN_LEN", 1),
];

/// Macros a macOS build does not define (OS macros of other systems; configure's macOS
/// answers; Linux-only kernel interfaces).
const UNDEFINED: &[&str] = &[
    "__linux__",
    "__linux",
    "linux",
    "__gnu_linux__",
    "__GLIBC__",
    "__FreeBSD__",
    "__FreeBSD_version",
    "__NetBSD__",
    "__OpenBSD__",
    "__DragonFly__",
    "__sun",
    "__sun__",
    "__CYGWIN__",
    "_AIX",
    "__ANDROID__",
    "SYS_close_range",
    "HAVE_EPOLL",
    "HAVE_SYS_PRCTL_H",
    "HAVE_MEMFD_CREATE",
    "HAVE_GETRANDOM",
    "HAVE_EACCESS",
    "HAVE_GET_CURRENT_DIR_NAME",
    "HAVE_LINUX_SCHED_H",
    "HAVE_MCHECK_H",
    "HAVE_MTRACE",
    "HAVE_PROGRAM_INVOCATION_NAME",
    "HAVE_SETRESUID",
    "HAVE_SYS_PTRACE_H",
    "HAVE_SYS_STATFS_H",
    "HAVE_SYS_VFS_H",
    "HAVE_VALUES_H",
    "HAVE_BPF",
    "HAVE_PTHREAD_PRIO_INHERIT",
    "HAVE_NUMA",
    "WITH_CGROUP",
    "PR_SET_DUMPABLE",
    "PR_SET_PDEATHSIG",
    "PR_SET_NO_NEW_PRIVS",
    "PR_SET_KEEPCAPS",
    "PR_SET_NAME",
    "PR_GET_NAME",
];

pub use super::token::Mac;
use super::token::{Kind, Token};

/// `defined(NAME)` under the model.
pub fn defined(name: &str) -> Mac {
    if DEFINED.iter().any(|(n, _)| *n == name) {
        Mac::Yes
    } else if UNDEFINED.contains(&name) {
        Mac::No
    } else {
        Mac::Maybe
    }
}

/// The value of an `#if` expression, as a truth value.
pub fn eval(tokens: &[Token]) -> Mac {
    let mut p = Parser { t: tokens, i: 0 };
    let v = p.or();
    if p.i != tokens.len() {
        return Mac::Maybe; // something this evaluator does not read: unknown
    }
    truth(v)
}

/// A value: a known integer, or unknown.
#[derive(Debug, Clone, Copy)]
enum Val {
    Num(i64),
    Unknown,
}

fn truth(v: Val) -> Mac {
    match v {
        Val::Num(n) => Mac::from_bool(n != 0),
        Val::Unknown => Mac::Maybe,
    }
}

fn from_mac(m: Mac) -> Val {
    match m {
        Mac::Yes => Val::Num(1),
        Mac::No => Val::Num(0),
        Mac::Maybe => Val::Unknown,
    }
}

struct Parser<'a> {
    t: &'a [Token],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self, s: &str) -> bool {
        self.t.get(self.i).is_some_and(|t| t.is(s))
    }

    fn eat(&mut self, s: &str) -> bool {
        let ok = self.peek(s);
        if ok {
            self.i += 1;
        }
        ok
    }

    fn or(&mut self) -> Val {
        let mut v = self.and();
        while self.eat("||") {
            let r = self.and();
            v = from_mac(truth(v).or(truth(r)));
        }
        v
    }

    fn and(&mut self) -> Val {
        let mut v = self.cmp();
        while self.eat("&&") {
            let r = self.cmp();
            v = from_mac(truth(v).and(truth(r)));
        }
        v
    }

    fn cmp(&mut self) -> Val {
        let mut v = self.unary();
        loop {
            let op = [
                "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "&", "|",
            ]
            .into_iter()
            .find(|op| self.peek(op));
            let Some(op) = op else { return v };
            self.i += 1;
            let r = self.unary();
            v = match (v, r) {
                (Val::Num(a), Val::Num(b)) => Val::Num(match op {
                    "==" => (a == b) as i64,
                    "!=" => (a != b) as i64,
                    "<=" => (a <= b) as i64,
                    ">=" => (a >= b) as i64,
                    "<" => (a < b) as i64,
                    ">" => (a > b) as i64,
                    "+" => a.wrapping_add(b),
                    "-" => a.wrapping_sub(b),
                    "*" => a.wrapping_mul(b),
                    "&" => a & b,
                    "|" => a | b,
                    _ => {
                        if b == 0 {
                            return Val::Unknown;
                        }
                        a / b
                    }
                }),
                _ => Val::Unknown,
            };
        }
    }

    fn unary(&mut self) -> Val {
        if self.eat("!") {
            return from_mac(truth(self.unary()).not());
        }
        if self.eat("(") {
            let v = self.or();
            if !self.eat(")") {
                self.i = self.t.len() + 1; // malformed: make eval() answer unknown
            }
            return v;
        }
        let Some(t) = self.t.get(self.i) else {
            return Val::Unknown;
        };
        self.i += 1;
        match t.kind {
            Kind::Ident if t.text == "defined" => {
                let paren = self.eat("(");
                let name = self
                    .t
                    .get(self.i)
                    .map(|t| t.text.clone())
                    .unwrap_or_default();
                self.i += 1;
                if paren && !self.eat(")") {
                    return Val::Unknown;
                }
                from_mac(defined(&name))
            }
            Kind::Ident => {
                if let Some((_, v)) = DEFINED.iter().find(|(n, _)| *n == t.text) {
                    Val::Num(*v)
                } else if UNDEFINED.contains(&t.text.as_str()) {
                    Val::Num(0) // an undefined macro is 0 in #if
                } else if self.peek("(") {
                    // a function-like macro (e.g. SLURM_VERSION_NUM(...)): unknown
                    let close = super::token::matching(self.t, self.i);
                    self.i = close + 1;
                    Val::Unknown
                } else {
                    Val::Unknown
                }
            }
            Kind::Number => {
                let s = t.text.trim_end_matches(['u', 'U', 'l', 'L']);
                let n = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                    i64::from_str_radix(h, 16).ok()
                } else {
                    s.parse().ok()
                };
                n.map_or(Val::Unknown, Val::Num)
            }
            _ => Val::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::source::parse;

    fn e(expr: &str) -> Mac {
        let s = parse(expr).unwrap_or_default();
        eval(&s.tokens)
    }

    #[test]
    fn cond__os_macros() {
        assert_eq!(e("defined(__linux__)"), Mac::No);
        assert_eq!(e("!defined(__APPLE__)"), Mac::No);
        assert_eq!(e("defined __APPLE__ && defined(__MACH__)"), Mac::Yes);
        assert_eq!(e("defined(__linux__) || defined(__APPLE__)"), Mac::Yes);
    }

    #[test]
    fn cond__unknown_stays_unknown_unless_decided() {
        assert_eq!(e("HAVE_FOO"), Mac::Maybe);
        assert_eq!(e("HAVE_FOO && defined(__linux__)"), Mac::No);
        assert_eq!(e("HAVE_FOO || defined(__APPLE__)"), Mac::Yes);
        assert_eq!(
            e("SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24,11,0)"),
            Mac::Maybe
        );
    }

    #[test]
    fn cond__numbers_and_comparisons() {
        assert_eq!(e("0"), Mac::No);
        assert_eq!(e("1"), Mac::Yes);
        assert_eq!(
            e("!defined (__APPLE__) && (! defined(__FreeBSD__) || (__FreeBSD_version > 900000))"),
            Mac::No
        );
        assert_eq!(e("RLIMIT_RSS == RLIMIT_AS"), Mac::Yes);
        assert_eq!(e("HAVE_EPOLL"), Mac::No);
    }
}
