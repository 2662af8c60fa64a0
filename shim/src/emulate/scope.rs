//! Which processes the macOS models apply to, and the one switch that turns a model off.
//!
//! The project's deployment is a Mac *compute node* joined to a Linux cluster: slurmd,
//! slurmstepd, sackd, the client commands and the plugins they load run on the Mac, while
//! slurmctld and slurmdbd stay on Linux. A darwin-personality cluster runs every daemon from
//! the same build, so the models apply in every process except `slurmctld` (and its
//! `slurmscriptd`, a re-executed slurmctld) and `slurmdbd`: those keep glibc's behaviour, as
//! they would on the Linux controller. The process is recognised by glibc's
//! `program_invocation_short_name` (the base name of `argv[0]` at start).
//!
//! `SLURM_SHIM_EMULATION_OFF=<name>[,<name>...]` turns individual models off (each model's
//! `NAME`, e.g. `nofile-infinity`); `all` turns every model off. It is a diagnostic switch,
//! read once per process, so a run can get past one known macOS failure to see the next;
//! nothing sets it by default.
//!
//! Portability problems not fixed: a renamed program (a copy of slurmctld under another
//! name) is treated as a compute-node process.

use libc::c_char;
use std::ffi::CStr;
use std::sync::OnceLock;

/// Environment variable listing the models turned off.
pub const OFF_ENV: &str = "SLURM_SHIM_EMULATION_OFF";

/// Programs that run on the Linux controller in the project's deployment.
pub const CONTROLLER_PROGRAMS: &[&str] = &["slurmctld", "slurmscriptd", "slurmdbd"];

unsafe extern "C" {
    // glibc <errno.h> with _GNU_SOURCE; set before main.
    static program_invocation_short_name: *const c_char;
}

struct Scope {
    in_scope: bool,
    off: Vec<String>,
}

fn scope() -> &'static Scope {
    static SCOPE: OnceLock<Scope> = OnceLock::new();
    SCOPE.get_or_init(|| {
        // SAFETY: glibc sets the pointer before main to a NUL-terminated string that lives
        // for the whole process; it is only read.
        let name = unsafe {
            let p = program_invocation_short_name;
            (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
        };
        let off = std::env::var(OFF_ENV).unwrap_or_default();
        Scope {
            in_scope: program_in_scope(name.as_deref().unwrap_or("")),
            off: parse_off(&off),
        }
    })
}

/// Whether a program of this name gets the macOS models.
pub fn program_in_scope(name: &str) -> bool {
    !CONTROLLER_PROGRAMS.contains(&name)
}

/// The model names a `SLURM_SHIM_EMULATION_OFF` value lists.
pub fn parse_off(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether the model `name` applies in this process.
pub fn active(name: &str) -> bool {
    let s = scope();
    s.in_scope && !s.off.iter().any(|o| o == name || o == "all")
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn scope__controller_daemons_keep_glibc_behaviour() {
        assert!(!program_in_scope("slurmctld"));
        assert!(!program_in_scope("slurmdbd"));
        assert!(program_in_scope("slurmd"));
        assert!(program_in_scope("slurmstepd"));
        assert!(program_in_scope("srun"));
    }

    #[test]
    fn scope__off_list_is_comma_separated() {
        assert_eq!(parse_off(" a, b ,,c"), ["a", "b", "c"]);
        assert!(parse_off("").is_empty());
    }
}
