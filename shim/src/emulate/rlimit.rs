//! `getrlimit`, `setrlimit` and `prlimit` as XNU answers them.
//!
//! Linux behaviour (glibc, getrlimit(2)): 16 resources; `RLIMIT_RSS` is its own limit, which
//! the kernel ignores; any `RLIMIT_AS`/`RLIMIT_DATA` not below the current usage of what it
//! counts is accepted; the hard `RLIMIT_NOFILE` is finite (at most `fs.nr_open`) and a soft
//! limit above it is `EINVAL`; `RLIM_INFINITY` is `~0`; `prlimit` acts on any process.
//!
//! macOS behaviour modelled (bsd/kern/kern_resource.c `dosetrlimit`/`getrlimit`,
//! osfmk/vm/vm_map.c `vm_map_set_size_limit`/`vm_map_set_data_limit`, xnu-11417.101.15, the
//! same since xnu-8020 (macOS 12.3); constants from bsd/sys/resource.h):
//!
//! * 9 resources; Linux's `RLIMIT_LOCKS` .. `RLIMIT_RTTIME` are `EINVAL` (`which >=
//!   RLIM_NLIMITS`).
//! * `RLIMIT_RSS` *is* `RLIMIT_AS` (`#define RLIMIT_RSS RLIMIT_AS`): reading it reads the
//!   address-space limit, setting it sets that limit.
//! * `RLIMIT_AS` and `RLIMIT_DATA`: a soft limit below the size of the whole VM map is
//!   `EINVAL`. The map's size is [`machine::mac_vsize`] (the Apple Silicon baseline plus the
//!   real mappings), so a `--mem` of a few GiB, or the proof of concept's 131072 MB, fails as
//!   it did on the Mac. Values are exchanged with the real Linux limit shifted by the
//!   baseline, so a limit set here is enforced on the real process at the same distance from
//!   its real usage, and reads back unchanged, also after `exec`.
//! * `RLIMIT_NOFILE`: the hard limit is `RLIM_INFINITY` (`limit0` in bsd/kern/bsd_init.c;
//!   launchd keeps it) and a soft limit of `RLIM_INFINITY` is accepted (the kernel caps the
//!   descriptors at `kern.maxfilesperproc` instead); so `rlimits_use_max_nofile()` leaves
//!   slurmd with an infinite soft limit, and a `closeall()` that loops to it never ends in
//!   reasonable time (the proof of concept's 187 s per step launch, POC-DEFECTS D13). An
//!   infinite soft limit is stored as a real soft limit of [`infinity_mark`] (the real hard
//!   limit minus 7, a value no start state has), which reads back as `RLIM_INFINITY`; it
//!   survives `exec`, as on the Mac, and needs no privilege (raising the real hard limit
//!   needs `CAP_SYS_RESOURCE`, which containers often drop). Any other real soft limit, also
//!   one equal to the hard limit, reads as it is (launchd starts daemons with 256).
//!   (The catalog's D5, "raising to `rlim_max` gives EINVAL", is what XNU did before 8020:
//!   see docs/MACOS-SEMANTICS.md.)
//! * `RLIM_INFINITY` is `(1 << 63) - 1`: in the darwin personality Slurm is compiled with that
//!   value (shim/include/emulate/sys/resource.h), and the shim converts at this boundary;
//!   anything at or above it is infinite.
//! * Raising a hard limit needs root (`suser`), else `EPERM`; soft above hard is `EINVAL`.
//! * `prlimit` does not exist on macOS: `ENOSYS`.
//!
//! Only processes in [`scope`] get the model; the others keep glibc's answers (with the
//! infinity converted).
//!
//! Portability problems not fixed: a hard `RLIMIT_NOFILE` lowered by the process is
//! remembered in memory only, so after `exec` it reads back as infinite again; a finite soft
//! limit above the real hard limit is stored as the real hard limit; a finite soft limit of
//! exactly the mark is stored one below it. `RLIMIT_STACK`'s `maxsmap`
//! cap and `RLIMIT_NPROC`'s clamping to `maxprocperuid` are not modelled. `getrlimit64` and
//! friends are not mapped (Slurm is not built with `_FILE_OFFSET_BITS=64` on LP64).
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, pid_t, rlimit};
use std::sync::atomic::{AtomicU64, Ordering};

use super::machine::{self, MAC_RLIM_INFINITY};
use super::{report, scope};
use crate::errno::{self, Errno};

/// Model names (for [`scope::OFF_ENV`]).
pub const NAME_VM: &str = "rlimit-vm-size";
/// `RLIMIT_RSS` aliased to `RLIMIT_AS`.
pub const NAME_RSS: &str = "rlimit-rss-alias";
/// The infinite `RLIMIT_NOFILE`.
pub const NAME_NOFILE: &str = "nofile-infinity";
/// Linux-only resources refused.
pub const NAME_LINUX_ONLY: &str = "rlimit-linux-only";
/// No `prlimit`.
pub const NAME_PRLIMIT: &str = "prlimit";

const LINUX_INF: u64 = libc::RLIM_INFINITY;

/// What a resource number means on the modelled Mac.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MacResource {
    /// `RLIMIT_AS` (also reached as `RLIMIT_RSS`).
    AddressSpace,
    /// `RLIMIT_DATA`.
    Data,
    /// `RLIMIT_NOFILE`.
    Nofile,
    /// Any other resource both systems have; `real` is its Linux number.
    Plain(c_int),
    /// Not a macOS resource.
    Invalid,
    /// `RLIMIT_AS`/`RLIMIT_DATA` (or `RLIMIT_RSS`) with the VM-size model turned off
    /// ([`NAME_VM`] in [`scope::OFF_ENV`]): reads are the real limits, a new limit is
    /// accepted and not applied (diagnostic only: a run can then get past the `EINVAL` that a
    /// Mac gives, to see the next difference; compiled as on a Mac, Slurm's `RLIMIT_RSS` is
    /// `RLIMIT_AS`, and applying a job's memory size to the real address space would stop the
    /// task's own loader).
    Unenforced(c_int),
}

/// Classifies a glibc resource number (`rss_alias`: whether `RLIMIT_RSS` is `RLIMIT_AS`).
pub fn classify(resource: c_int, rss_alias: bool) -> MacResource {
    match resource as u32 {
        r if r == libc::RLIMIT_AS => MacResource::AddressSpace,
        r if r == libc::RLIMIT_RSS && rss_alias => MacResource::AddressSpace,
        r if r == libc::RLIMIT_DATA => MacResource::Data,
        r if r == libc::RLIMIT_NOFILE => MacResource::Nofile,
        r if [
            libc::RLIMIT_CPU,
            libc::RLIMIT_FSIZE,
            libc::RLIMIT_STACK,
            libc::RLIMIT_CORE,
            libc::RLIMIT_RSS,
            libc::RLIMIT_NPROC,
            libc::RLIMIT_MEMLOCK,
        ]
        .contains(&r) =>
        {
            MacResource::Plain(resource)
        }
        _ => MacResource::Invalid,
    }
}

/// The OS under the model.
pub trait RlimitOs {
    /// The real Linux limit.
    fn get(&self, resource: c_int) -> Result<rlimit, Errno>;
    /// Sets the real Linux limit.
    fn set(&self, resource: c_int, value: &rlimit) -> Result<(), Errno>;
    /// The modelled Mac's virtual size of this process.
    fn vsize(&self) -> u64;
    /// Whether the caller is the super-user.
    fn is_root(&self) -> bool;
}

/// The real OS.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealRlimitOs;

impl RlimitOs for RealRlimitOs {
    fn get(&self, resource: c_int) -> Result<rlimit, Errno> {
        let mut r = rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `r` is a writable struct rlimit.
        Errno::result(unsafe { libc::getrlimit(resource as _, &mut r) })?;
        Ok(r)
    }
    fn set(&self, resource: c_int, value: &rlimit) -> Result<(), Errno> {
        // SAFETY: `value` is a valid struct rlimit.
        Errno::result(unsafe { libc::setrlimit(resource as _, value) }).map(drop)
    }
    fn vsize(&self) -> u64 {
        machine::mac_vsize()
    }
    fn is_root(&self) -> bool {
        // SAFETY: geteuid cannot fail.
        unsafe { libc::geteuid() == 0 }
    }
}

/// A hard `RLIMIT_NOFILE` the process lowered (`None`: infinite).
#[derive(Debug, Default)]
pub struct NofileState(AtomicU64);

impl NofileState {
    fn lowered(&self) -> Option<u64> {
        match self.0.load(Ordering::Acquire) {
            0 => None,
            v => Some(v),
        }
    }
    fn store(&self, v: Option<u64>) {
        self.0.store(v.unwrap_or(0), Ordering::Release);
    }
}

static NOFILE: NofileState = NofileState(AtomicU64::new(0));

/// The real soft `RLIMIT_NOFILE` that stands for macOS's infinite soft limit under a real
/// hard limit of `real_max`.
pub fn infinity_mark(real_max: u64) -> u64 {
    if real_max > 64 {
        real_max - 7
    } else {
        real_max
    }
}

fn mac_value(v: u64) -> u64 {
    v.min(MAC_RLIM_INFINITY)
}

fn shift_up(real: u64) -> u64 {
    if real == LINUX_INF {
        MAC_RLIM_INFINITY
    } else {
        real.saturating_add(machine::BASELINE_VSIZE)
            .min(MAC_RLIM_INFINITY - 1)
    }
}

fn shift_down(mac: u64) -> u64 {
    if mac >= MAC_RLIM_INFINITY {
        LINUX_INF
    } else {
        mac.saturating_sub(machine::BASELINE_VSIZE)
    }
}

fn to_mac_plain(real: u64) -> u64 {
    if real == LINUX_INF {
        MAC_RLIM_INFINITY
    } else {
        mac_value(real)
    }
}

fn to_linux_plain(mac: u64) -> u64 {
    if mac >= MAC_RLIM_INFINITY {
        LINUX_INF
    } else {
        mac
    }
}

/// The limits as the modelled Mac reports them.
pub fn mac_get(
    os: &impl RlimitOs,
    nofile: &NofileState,
    resource: MacResource,
) -> Result<rlimit, Errno> {
    match resource {
        MacResource::Invalid => Err(Errno(libc::EINVAL)),
        MacResource::Unenforced(r) => mac_get(os, nofile, MacResource::Plain(r)),
        MacResource::AddressSpace | MacResource::Data => {
            let real = os.get(real_number(resource))?;
            Ok(rlimit {
                rlim_cur: shift_up(real.rlim_cur),
                rlim_max: shift_up(real.rlim_max),
            })
        }
        MacResource::Nofile => {
            let real = os.get(libc::RLIMIT_NOFILE as c_int)?;
            Ok(match nofile.lowered() {
                Some(max) => rlimit {
                    rlim_cur: mac_value(real.rlim_cur),
                    rlim_max: max,
                },
                None => rlimit {
                    rlim_cur: if real.rlim_cur == infinity_mark(real.rlim_max) {
                        MAC_RLIM_INFINITY
                    } else {
                        real.rlim_cur
                    },
                    rlim_max: MAC_RLIM_INFINITY,
                },
            })
        }
        MacResource::Plain(r) => {
            let real = os.get(r)?;
            Ok(rlimit {
                rlim_cur: to_mac_plain(real.rlim_cur),
                rlim_max: to_mac_plain(real.rlim_max),
            })
        }
    }
}

fn real_number(resource: MacResource) -> c_int {
    match resource {
        MacResource::AddressSpace => libc::RLIMIT_AS as c_int,
        MacResource::Data => libc::RLIMIT_DATA as c_int,
        MacResource::Nofile => libc::RLIMIT_NOFILE as c_int,
        MacResource::Plain(r) | MacResource::Unenforced(r) => r,
        MacResource::Invalid => -1,
    }
}

/// Why a `setrlimit` failed, or that it changed the real limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOutcome {
    /// Accepted.
    Set,
    /// Accepted with an infinite `RLIMIT_NOFILE` soft limit, which Linux would refuse.
    NofileInfinite,
}

/// `setrlimit` on the modelled Mac (values in macOS's representation).
pub fn mac_set(
    os: &impl RlimitOs,
    nofile: &NofileState,
    resource: MacResource,
    new: rlimit,
) -> Result<SetOutcome, Errno> {
    let new = rlimit {
        rlim_cur: mac_value(new.rlim_cur),
        rlim_max: mac_value(new.rlim_max),
    };
    let old = mac_get(os, nofile, resource)?;
    if new.rlim_cur > new.rlim_max {
        return Err(Errno(libc::EINVAL));
    }
    if (new.rlim_cur > old.rlim_max || new.rlim_max > old.rlim_max) && !os.is_root() {
        return Err(Errno(libc::EPERM));
    }
    match resource {
        MacResource::Invalid => Err(Errno(libc::EINVAL)),
        MacResource::Unenforced(_) => Ok(SetOutcome::Set),
        MacResource::AddressSpace | MacResource::Data => {
            if new.rlim_cur < os.vsize() {
                return Err(Errno(libc::EINVAL));
            }
            os.set(
                real_number(resource),
                &rlimit {
                    rlim_cur: shift_down(new.rlim_cur),
                    rlim_max: shift_down(new.rlim_max),
                },
            )?;
            Ok(SetOutcome::Set)
        }
        MacResource::Nofile => {
            let real = os.get(libc::RLIMIT_NOFILE as c_int)?;
            let infinite = new.rlim_cur >= MAC_RLIM_INFINITY;
            let (real_max, lowered) = if new.rlim_max >= MAC_RLIM_INFINITY {
                (real.rlim_max, None)
            } else {
                (new.rlim_max.min(real.rlim_max), Some(new.rlim_max))
            };
            let mark = infinity_mark(real_max);
            let real_cur = if infinite {
                mark
            } else {
                match new.rlim_cur.min(real_max) {
                    c if c == mark && lowered.is_none() => c.saturating_sub(1),
                    c => c,
                }
            };
            os.set(
                libc::RLIMIT_NOFILE as c_int,
                &rlimit {
                    rlim_cur: real_cur,
                    rlim_max: real_max,
                },
            )?;
            nofile.store(lowered);
            Ok(if infinite {
                SetOutcome::NofileInfinite
            } else {
                SetOutcome::Set
            })
        }
        MacResource::Plain(r) => {
            os.set(
                r,
                &rlimit {
                    rlim_cur: to_linux_plain(new.rlim_cur),
                    rlim_max: to_linux_plain(new.rlim_max),
                },
            )?;
            Ok(SetOutcome::Set)
        }
    }
}

fn in_model(resource: c_int) -> MacResource {
    let r = classify(resource, scope::active(NAME_RSS));
    match r {
        MacResource::AddressSpace | MacResource::Data if !scope::active(NAME_VM) => {
            MacResource::Unenforced(resource)
        }
        MacResource::Nofile if !scope::active(NAME_NOFILE) => MacResource::Plain(resource),
        MacResource::Invalid if !scope::active(NAME_LINUX_ONLY) => MacResource::Plain(resource),
        other => other,
    }
}

fn note_resource(resource: c_int, kind: MacResource) {
    if kind == MacResource::AddressSpace && resource as u32 == libc::RLIMIT_RSS {
        report::applied(
            "RLIMIT_RSS is RLIMIT_AS (xnu bsd/sys/resource.h: #define RLIMIT_RSS RLIMIT_AS)",
        );
    }
    if kind == MacResource::Invalid && (0..16).contains(&resource) {
        report::applied(
            "Linux-only rlimit resource -> EINVAL (xnu kern_resource.c: which >= RLIM_NLIMITS)",
        );
    }
}

/// `getrlimit(2)` as macOS answers it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_getrlimit(resource: c_int, rlim: *mut rlimit) -> c_int {
    crate::counted!(slurm_shim_getrlimit);
    if rlim.is_null() {
        return errno::to_c(Err(Errno(libc::EFAULT)));
    }
    let kind = in_model(resource);
    note_resource(resource, kind);
    let r = errno::preserve(|| mac_get(&RealRlimitOs, &NOFILE, kind));
    if let Ok(v) = &r {
        if kind == MacResource::Nofile && v.rlim_max == MAC_RLIM_INFINITY {
            report::applied(
                "getrlimit(RLIMIT_NOFILE): hard limit RLIM_INFINITY (xnu bsd_init.c limit0)",
            );
        }
    }
    errno::to_c(r.map(|v| {
        // SAFETY: `rlim` is non-NULL and points at a writable struct rlimit.
        unsafe { rlim.write(v) };
        0
    }))
}

/// `setrlimit(2)` as macOS answers it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_setrlimit(resource: c_int, rlim: *const rlimit) -> c_int {
    crate::counted!(slurm_shim_setrlimit);
    if rlim.is_null() {
        return errno::to_c(Err(Errno(libc::EFAULT)));
    }
    // SAFETY: `rlim` is non-NULL and points at a readable struct rlimit.
    let new = unsafe { rlim.read() };
    let kind = in_model(resource);
    note_resource(resource, kind);
    let r = errno::preserve(|| mac_set(&RealRlimitOs, &NOFILE, kind, new));
    match r {
        Err(Errno(libc::EINVAL))
            if matches!(kind, MacResource::AddressSpace | MacResource::Data)
                && new.rlim_cur <= new.rlim_max =>
        {
            report::applied(
                "setrlimit(RLIMIT_AS/RSS/DATA) below the VM map size -> EINVAL (xnu vm_map.c vm_map_set_size_limit; Apple Silicon baseline 389 GiB)",
            );
        }
        Ok(SetOutcome::NofileInfinite) => report::applied(
            "setrlimit(RLIMIT_NOFILE, RLIM_INFINITY) accepted (xnu >= 8020 kern_resource.c; capped at kern.maxfilesperproc)",
        ),
        _ => {}
    }
    errno::to_c(r.map(|_| 0))
}

/// `prlimit(2)`: macOS has none.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_prlimit(
    pid: pid_t,
    resource: c_int,
    new: *const rlimit,
    old: *mut rlimit,
) -> c_int {
    crate::counted!(slurm_shim_prlimit);
    if !scope::active(NAME_PRLIMIT) {
        // SAFETY: the caller's pointers go to the real call unchanged.
        return unsafe { libc::prlimit(pid, resource as _, new, old) };
    }
    report::applied("prlimit -> ENOSYS (macOS has no prlimit)");
    errno::to_c(Err(Errno(libc::ENOSYS)))
}
