//! `rlimit-fatal`: a refused memory limit that kills the step.
//!
//! Catalog D6, POC D8: on macOS `RLIMIT_RSS` is `RLIMIT_AS` (`<sys/resource.h>`:
//! `#define RLIMIT_RSS RLIMIT_AS`), and a finite address-space limit below what the process
//! has mapped is refused (EINVAL from `vm_map_set_size_limit()`, xnu
//! `bsd/kern/kern_resource.c`), so slurmstepd's "set the task's memory limit, `fatal()` if
//! that fails" kills every job with a memory allocation. Reported: an `if` whose condition
//! sets `RLIMIT_RSS` or `RLIMIT_AS` (directly or through a `#define` of the file) with
//! `setrlimit`, `prlimit` or a wrapper whose name contains `rlimit`, and whose then-branch
//! calls `fatal`.

use super::source::Define;
use super::token::{Token, arguments, matching};
use super::{Class, Finding, Scanned};

const MEMORY: &[&str] = &["RLIMIT_RSS", "RLIMIT_AS"];

/// The memory resource an argument names, directly or through the file's `#define`s.
fn memory_resource(arg: &[Token], defines: &[Define], depth: usize) -> Option<String> {
    for t in arg {
        let Some(id) = t.ident() else { continue };
        if MEMORY.contains(&id) {
            return Some(id.to_string());
        }
        if depth < 3 {
            for d in defines
                .iter()
                .filter(|d| d.name == id && d.mac != super::cond::Mac::No)
            {
                if let Some(r) = memory_resource(&d.body, defines, depth + 1) {
                    return Some(if depth == 0 { format!("{id} ({r})") } else { r });
                }
            }
        }
    }
    None
}

/// Whether the call at `k` (`name (`) sets a limit, and which memory resource.
fn sets_memory_limit(t: &[Token], k: usize, defines: &[Define]) -> Option<String> {
    let name = t[k].ident()?.to_ascii_lowercase();
    if !name.contains("rlimit") || name.contains("getrlimit") || !t.get(k + 1)?.is("(") {
        return None;
    }
    let args = arguments(t, k + 1);
    // setrlimit(res, new); prlimit(pid, res, new, old): a NULL `new` only reads
    let (res, new) = if name.contains("prlimit") {
        (args.get(1)?, args.get(2)?)
    } else {
        (args.first()?, args.get(1)?)
    };
    let new = &t[new.clone()];
    if new.len() == 1 && (new[0].is("NULL") || new[0].is("0")) {
        return None;
    }
    memory_resource(&t[res.clone()], defines, 0)
}

pub fn scan(f: &Scanned, out: &mut Vec<Finding>) {
    let t = &f.mac;
    for k in 0..t.len() {
        if !(t[k].is("if") && t.get(k + 1).is_some_and(|x| x.is("("))) {
            continue;
        }
        let close = matching(t, k + 1);
        let Some(res) = (k + 2..close).find_map(|c| sets_memory_limit(t, c, &f.src.defines)) else {
            continue;
        };
        let (from, to) = if t.get(close + 1).is_some_and(|x| x.is("{")) {
            (close + 1, matching(t, close + 1))
        } else {
            let end = (close + 1..t.len())
                .find(|&j| t[j].is(";"))
                .unwrap_or(t.len());
            (close + 1, end)
        };
        if let Some(fatal) = (from..to.min(t.len())).find(|&j| t[j].is("fatal")) {
            out.push(Finding {
                file: f.rel.clone(),
                line: t[fatal].line,
                class: Class::RlimitFatal,
                subject: res.clone(),
                message: format!(
                    "a failed set of {res} is fatal(): on macOS RLIMIT_RSS is RLIMIT_AS and a limit below the mapped size is refused, so the step dies"
                ),
            });
        }
    }
}
