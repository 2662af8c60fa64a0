//! The environment of every program the node tool starts: nothing of the caller's. A child
//! gets exactly [`BASE`] plus the variables of [`ALLOWED`] a caller sets on purpose, so no
//! `LD_*`/`DYLD_*` (code loaded into the child), no `SLURM_*` (configuration moved), no
//! `TMPDIR`, `HOME` or locale of the user who ran `sudo`.

use std::process::Command;

/// The trusted system directories, searched for a program named without a path.
pub const SYSTEM_PATH: &str = "/usr/bin:/bin:/usr/sbin:/sbin";

/// What every child gets: `PATH` of system directories only, and the C locale (Slurm's
/// programs parse nothing by locale; the output we read is then stable).
pub const BASE: &[(&str, &str)] = &[("PATH", SYSTEM_PATH), ("LC_ALL", "C")];

/// The variables a caller may set on a child, each for one reason:
/// - `SLURM_CONF`: the `slurm.conf` of the probe's own work directory, or one the gate has
///   trusted (`power`'s `scontrol`), never the caller's;
/// - `SLURM_SACK_KEY`: the key sackd (and the clients beside it) read, copied into the
///   probe's root-owned work directory;
/// - `SLURM_SHIM_MAC_HARDWARE`: `gres-conf --hardware`'s file, after it was read as trusted.
pub const ALLOWED: &[&str] = &["SLURM_CONF", "SLURM_SACK_KEY", "SLURM_SHIM_MAC_HARDWARE"];

/// `c` with the caller's environment cleared and [`BASE`] set.
pub fn clean(c: &mut Command) -> &mut Command {
    c.env_clear();
    for (k, v) in BASE {
        c.env(k, v);
    }
    c
}

/// Sets `key` on `c`; `key` must be one of [`ALLOWED`] (a programming error otherwise).
pub fn allow(c: &mut Command, key: &str, value: impl AsRef<std::ffi::OsStr>) {
    assert!(
        ALLOWED.contains(&key),
        "{key} is not on the gate's allow-list"
    );
    c.env(key, value);
}
