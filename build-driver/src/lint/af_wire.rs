//! `af-wire`: a native address family on the wire.
//!
//! `AF_INET6` is 10 on Linux and 30 on macOS (`AF_INET` is 2 on both), so a message that
//! carries `ss_family` as the sending host has it is misread by a node of the other OS: the
//! receiver does not know the family, skips the address, and every later field of the
//! message is read at the wrong offset (POC D21: `Header lengths are longer than data
//! received`). Reported, in code macOS compiles:
//! * a `pack*()` call whose argument is directly a family field (`ss_family`, `sa_family`,
//!   `sin_family`, `sin6_family`; passed through a function, it is taken as mapped);
//! * a family field assigned a variable that an `unpack*()` call filled (`&tmp` as its first
//!   argument) earlier in the same function.

use super::source::function_bodies;
use super::token::arguments;
use super::{Class, Finding, Scanned};

const FAMILY: &[&str] = &["ss_family", "sa_family", "sin_family", "sin6_family"];

pub fn scan(f: &Scanned, out: &mut Vec<Finding>) {
    let t = &f.mac;
    for (open, close) in function_bodies(t) {
        let body = &t[open..close.min(t.len())];
        let mut unpacked: Vec<String> = Vec::new();
        let mut found = |line, subject: String, message: String| {
            out.push(Finding {
                file: f.rel.clone(),
                line,
                class: Class::AfWire,
                subject,
                message,
            })
        };
        for k in 0..body.len() {
            let Some(id) = body[k].ident() else { continue };
            let call = body.get(k + 1).is_some_and(|x| x.is("("));
            if call && id.contains("unpack") {
                let args = arguments(body, k + 1);
                if let Some(first) = args.first() {
                    let a = &body[first.clone()];
                    if a.len() == 2 && a[0].is("&") {
                        unpacked.push(a[1].text.clone());
                    }
                }
            } else if call && id.starts_with("pack") {
                let args = arguments(body, k + 1);
                let Some(first) = args.first() else { continue };
                let a = &body[first.clone()];
                let nested = a.windows(2).any(|w| w[0].ident().is_some() && w[1].is("("));
                if let Some(fam) = a
                    .last()
                    .and_then(|x| x.ident())
                    .filter(|x| FAMILY.contains(x))
                {
                    if !nested {
                        found(
                            body[k].line,
                            format!("{id}({fam})"),
                            format!(
                                "{id}() packs the native {fam}: AF_INET6 is 10 on Linux, 30 on macOS"
                            ),
                        );
                    }
                }
            } else if FAMILY.contains(&id)
                && body.get(k + 1).is_some_and(|x| x.is("="))
                && body
                    .get(k + 2)
                    .and_then(|x| x.ident())
                    .is_some_and(|v| unpacked.iter().any(|u| u == v))
                && body.get(k + 3).is_some_and(|x| x.is(";"))
            {
                found(
                    body[k].line,
                    format!("{id} = unpacked"),
                    format!(
                        "{id} is set to the family value read from the message as it is: a Linux peer's AF_INET6 (10) is not macOS's (30)"
                    ),
                );
            }
        }
    }
}
