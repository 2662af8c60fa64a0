//! Accepted `/proc`, `/sys`, `/run` and `/dev/shm` accesses of Slurm's code on a darwin node
//! (`ci/expectations/proc-access-<line>.toml`), for the cluster scenario smd-306: the shim's
//! emulation log (`SLURM_SHIM_EMULATION_LOG`) names every path a Mac does not have that
//! Slurm tried, with the Slurm function that tried it; each one must be listed here, with
//! why it is harmless on a Mac, or the scenario fails. Which sites run depends on which
//! scenarios ran, so an entry that was not seen is not an error.
//!
//! ```toml
//! [[accepted]]
//! site = "cpu_freq_init"            # the function in the log line's call site
//! path = "/sys/devices/system/cpu"  # the refused path starts with this
//! reason = "..."
//! ```

use super::Entry;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Where the accepted accesses of a release line live.
pub fn path(root: &Path, line: &str) -> PathBuf {
    super::file(root, &format!("proc-access-{line}.toml"))
}

/// The accepted accesses of one line.
pub type Accepted = super::AcceptedList<Access>;

/// One accepted access: a call site and a path prefix, with its reason.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Access {
    pub site: String,
    pub path: String,
    pub reason: String,
}

/// The entry of `accepted` that accepts `seen`, if any.
pub fn find<'a>(accepted: &'a Accepted, seen: &Seen) -> Option<&'a Access> {
    accepted
        .accepted
        .iter()
        .find(|a| a.site == seen.function && seen.path.starts_with(&a.path))
}

impl Entry for Access {
    const UNLISTED: &'static str = "access to a path macOS does not have";
    type Key = ();

    fn check(&self, _seen: &mut std::collections::BTreeSet<()>) -> std::result::Result<(), String> {
        if self.reason.trim().is_empty()
            || self.site.trim().is_empty()
            || self.path.trim().is_empty()
        {
            return Err(format!(
                "entry for site `{}` path `{}`: site, path and reason must not be empty",
                self.site, self.path
            ));
        }
        Ok(())
    }
}

/// One refused access, from a line of the shim's emulation log.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seen {
    /// The Slurm function at the call site (`closeall_except`), or `?` without a symbol.
    pub function: String,
    /// The object it is in (`libslurmfull.so`, `slurmd`, `proctrack_pgid.so`).
    pub object: String,
    /// The refused path.
    pub path: String,
    /// The call (`opendir`, `stat`, `bind(AF_UNIX)`, ...).
    pub call: String,
    /// The call site's offset in `object` when the log names no symbol (`slurmstepd:
    /// [82.5](+0x4acf3)`: a static function), for [`name_static_sites`].
    pub offset: Option<u64>,
}

/// The hidden-path refusals among the log's lines (other behaviours are not accesses).
/// The lines are the shim's (emulate/report.rs): `slurm-shim[PID]: macOS behaviour applied:
/// <call> of a path macOS does not have -> ENOENT (...) [<path>] at <object>(<fn>+0x..) [+0x..]`
/// and `... bind(AF_UNIX) under /run, /proc, /sys -> ENOENT (not on macOS) [<path>] at ...`.
pub fn parse_log(text: &str) -> Vec<Seen> {
    let mut out: Vec<Seen> = text.lines().filter_map(parse_line).collect();
    out.sort();
    out.dedup();
    out
}

fn parse_line(line: &str) -> Option<Seen> {
    let (_, rest) = line.split_once("macOS behaviour applied: ")?;
    let hidden = rest.contains(" of a path macOS does not have -> ENOENT")
        || rest.contains("(AF_UNIX) under /run, /proc, /sys -> ENOENT");
    if !hidden {
        return None;
    }
    let call = rest
        .split(" of a path")
        .next()?
        .split(" under ")
        .next()?
        .to_string();
    let (head, site) = rest.rsplit_once(" at ")?;
    let path = head.rsplit_once(" [")?.1.strip_suffix(']')?.to_string();
    let (object, function, offset) = match site.split_once('(') {
        Some((obj, f)) => {
            let offset = f
                .strip_prefix("+0x")
                .and_then(|o| o.split(')').next())
                .and_then(|o| u64::from_str_radix(o, 16).ok());
            (
                obj.to_string(),
                f.split(['+', ')']).next().unwrap_or("").to_string(),
                offset,
            )
        }
        None => (site.to_string(), String::new(), None),
    };
    Some(Seen {
        function: if function.is_empty() {
            "?".into()
        } else {
            function
        },
        object,
        path,
        call,
        offset,
    })
}

/// Names the sites the log could not: a static function has no dynamic symbol, so the shim's
/// backtrace gives only `<object>(+0xOFF)`. The object is one of `prefix`'s programs (a
/// renamed process such as `slurmstepd: [82.5]` is its program, `slurmstepd`), a library of
/// `lib/` or a plugin of `lib/slurm/`; its symbol table (an install is not stripped) names the
/// function whose range holds the offset. A site that cannot be named stays `?`.
pub fn name_static_sites(seen: Vec<Seen>, prefix: &Path) -> Vec<Seen> {
    let mut out: Vec<Seen> = seen
        .into_iter()
        .map(|mut s| {
            if s.function == "?" {
                if let Some(f) = s
                    .offset
                    .and_then(|o| symbol_at(&object_file(prefix, &s.object)?, o))
                {
                    s.function = f;
                }
            }
            s
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The installed file of a log line's object name.
fn object_file(prefix: &Path, object: &str) -> Option<PathBuf> {
    let name = object.split(':').next()?.trim();
    ["sbin", "bin", "lib", "lib/slurm"]
        .iter()
        .map(|d| prefix.join(d).join(name))
        .find(|p| p.is_file())
}

/// The function of `file`'s symbol table whose range holds `offset`.
fn symbol_at(file: &Path, offset: u64) -> Option<String> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let data = std::fs::read(file).ok()?;
    let obj = object::File::parse(&*data).ok()?;
    obj.symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
        .find(|s| s.address() <= offset && offset < s.address() + s.size())
        .and_then(|s| s.name().ok().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;
    use driver_common::expectations::Recorded as _;

    const LOG: &str = "slurm-shim[10]: macOS behaviour applied: opendir of a path macOS does not have -> ENOENT (no /proc, /run, /sys, /dev/shm on macOS) [/proc/self/fd] at libslurmfull.so(closeall_except+0x1f) [+0x8a1c2]\n\
slurm-shim[11]: macOS behaviour applied: opendir of a path macOS does not have -> ENOENT (no /proc, /run, /sys, /dev/shm on macOS) [/proc/self/fd] at libslurmfull.so(closeall_except+0x1f) [+0x8a1c2]\n\
slurm-shim[12]: macOS behaviour applied: setrlimit(RLIMIT_NOFILE, RLIM_INFINITY) accepted at libslurmfull.so(rlimits_use_max_nofile+0x30) [+0x1]\n\
slurm-shim[13]: macOS behaviour applied: bind(AF_UNIX) under /run, /proc, /sys -> ENOENT (not on macOS) [/run/slurm/sack.socket] at auth_slurm.so(+0x4411)\n\
slurm-shim[14]: macOS behaviour applied: stat of a path macOS does not have -> ENOENT (no /proc, /run, /sys, /dev/shm on macOS) at slurmd(cpu_freq_init+0x61) [+0x2]\n";

    #[test]
    fn parse_log__hidden_paths_only_deduplicated_with_site_and_path() {
        let seen = parse_log(LOG);
        assert_eq!(seen.len(), 2, "{seen:#?}");
        assert_eq!(
            seen[1],
            Seen {
                function: "closeall_except".into(),
                object: "libslurmfull.so".into(),
                path: "/proc/self/fd".into(),
                call: "opendir".into(),
                offset: None,
            }
        );
        assert_eq!(
            (
                seen[0].function.as_str(),
                seen[0].path.as_str(),
                seen[0].call.as_str()
            ),
            ("?", "/run/slurm/sack.socket", "bind(AF_UNIX)")
        );
        // A line without the path (a shim older than the path report) names no access.
    }

    #[test]
    fn name_static_sites__a_static_function_of_a_renamed_program() {
        let Some(sh) = driver_common::testing::shell_with(&["cc"]) else {
            return;
        };
        let (dir, sbin) = driver_common::testing::scratch("sbin");
        std::fs::create_dir(&sbin).unwrap();
        let c = dir.path().join("p.c");
        std::fs::write(
            &c,
            "static int __attribute__((noinline)) probe_core(int x) { return x * 3 + 1; }\n\
             int main(int argc, char **argv) { (void) argv; return probe_core(argc); }\n",
        )
        .unwrap();
        let prog = sbin.join("slurmstepd");
        driver_common::testing::cc(
            &sh,
            &[
                "-O1".as_ref(),
                c.as_os_str(),
                "-o".as_ref(),
                prog.as_os_str(),
            ],
        );
        let data = std::fs::read(&prog).unwrap();
        let file = object::File::parse(&*data).unwrap();
        use object::{Object, ObjectSymbol};
        let addr = file
            .symbols()
            .find(|s| s.name() == Ok("probe_core"))
            .expect("the static function is in the symbol table")
            .address();
        let line = format!(
            "slurm-shim[1]: macOS behaviour applied: open of a path macOS does not have -> ENOENT (no /proc, /run, /sys, /dev/shm on macOS) [/proc/7/stat] at slurmstepd: [82.5](+{:#x})\n",
            addr + 1
        );
        let seen = parse_log(&line);
        assert_eq!(seen[0].function, "?", "{seen:?}");
        let named = name_static_sites(seen, dir.path());
        assert_eq!(named[0].function, "probe_core", "{named:?}");
        assert_eq!(named[0].object, "slurmstepd: [82.5]");
        // An offset outside every function, or an object not in the prefix, stays unnamed.
        let other = parse_log(&line.replace("slurmstepd: [82.5]", "sackd"));
        assert_eq!(name_static_sites(other, dir.path())[0].function, "?");
    }

    #[test]
    fn accepted__matches_site_and_path_prefix_and_needs_reasons() {
        let a = Accepted::parse(
            "[[accepted]]\nsite = \"closeall_except\"\npath = \"/proc/self/fd\"\nreason = \"r\"\n",
        )
        .unwrap();
        let seen = parse_log(LOG);
        assert!(find(&a, &seen[1]).is_some());
        assert!(find(&a, &seen[0]).is_none());
        assert!(
            Accepted::parse("[[accepted]]\nsite = \"x\"\npath = \"/p\"\nreason = \" \"\n").is_err()
        );
        assert!(Accepted::parse("[[accepted]]\nsite = \"x\"\n").is_err());
    }
}
