//! `setgroups-16`: `setgroups()` without the macOS bound of 16 groups.
//!
//! XNU's `setgroups()` refuses more than `NGROUPS` (16) groups with EINVAL
//! (apple-oss-distributions/xnu, `bsd/kern/kern_prot.c` `setgroups1()`; `NGROUPS_MAX` 16 in
//! `<sys/syslimits.h>`), so a job of a user in more than 16 groups fails to launch (catalog
//! D7). Reported: a `setgroups(n, list)` call whose `n` is not a literal of at most 16, in a
//! function that does not mention `NGROUPS_MAX` (or `_SC_NGROUPS_MAX`).

use super::source::function_bodies;
use super::token::arguments;
use super::{Class, Finding, Scanned};

pub fn scan(f: &Scanned, out: &mut Vec<Finding>) {
    let t = &f.mac;
    for (open, close) in function_bodies(t) {
        let body = &t[open..close.min(t.len())];
        let bounded = body
            .iter()
            .any(|x| x.is("NGROUPS_MAX") || x.is("_SC_NGROUPS_MAX"));
        if bounded {
            continue;
        }
        for k in 0..body.len() {
            if !(body[k].is("setgroups") && body.get(k + 1).is_some_and(|x| x.is("("))) {
                continue;
            }
            let args = arguments(body, k + 1);
            let Some(n) = args.first() else { continue };
            let n = &body[n.clone()];
            let literal = n.len() == 1 && n[0].text.parse::<u32>().is_ok_and(|v| v <= 16);
            if !literal {
                out.push(Finding {
                    file: f.rel.clone(),
                    line: body[k].line,
                    class: Class::Setgroups16,
                    subject: super::text(n),
                    message: format!(
                        "setgroups({}, ...) with no NGROUPS_MAX bound: macOS takes at most 16 groups (EINVAL above)",
                        super::text(n)
                    ),
                });
            }
        }
    }
}
