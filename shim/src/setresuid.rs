//! `setresuid`, `setresgid`, `getresuid`, `getresgid`.
//!
//! Linux behaviour emulated (setresuid(2), getresuid(2)): set the real, effective and saved
//! ids at once (-1 leaves one unchanged); an unprivileged process may only use its current
//! real, effective or saved ids; the change is all-or-nothing. `getres*` report the three.
//!
//! macOS mechanism: Darwin has no `setresuid` and no call that reads the saved id. The shim
//! reads the current ids (`getuid`/`geteuid` and the saved id from
//! `proc_pidinfo(getpid(), PROC_PIDTBSDINFO)` → `pbi_svuid`/`pbi_svgid`), then plans a
//! sequence of at most three `setreuid`/`seteuid` (`setregid`/`setegid`) calls that reaches
//! exactly the requested triple under XNU's rules (xnu `bsd/kern/kern_prot.c`):
//! * `setreuid(a, b)`: allowed when each of `a`, `b` is -1 or one of the current real,
//!   effective or saved ids, or when the effective uid is 0. The saved id becomes the new
//!   effective id unless the old saved id equals `a` or `b` (the raw arguments).
//! * `seteuid(b)`: allowed when `b` is the real or saved id, or the effective uid is 0;
//!   changes only the effective id.
//! * The gid calls follow the same rules; their privilege is an effective uid of 0.
//!
//! The plan is found by a bounded search over [`Op`]s ([`plan`]) on the model [`apply`].
//! A request for which no plan exists is **not expressible** on Darwin: it fails with
//! `EPERM` and nothing changes. If a step fails or the ids read back differ from the
//! request, the shim restores the original ids (by a plan back) and fails: no partial
//! identity change is reported as success. Before planning, Linux's permission rule is
//! applied (`EPERM` unless privileged or every requested id is a current one), so the shim
//! never grants what Linux would refuse. Expressible are every request that changes
//! nothing and, as measured by the differential test over 5 values per id, most others
//! (the test prints the counts); the typical inexpressible one is unprivileged and moves a
//! real or saved id to a value that only the other one holds. Slurm's three
//! unguarded call sites (`setresgid(getegid(), getegid(), -1)`,
//! `setresuid(geteuid(), geteuid(), -1)`, `setresuid(uid, uid, -1)` as root) are
//! expressible and give the same ids as on Linux (for the last: `setreuid(uid, 0)` then
//! `seteuid(uid)`, which keeps the saved uid 0, exactly as Linux does).
//!
//! On Linux the same planner and executor run through the [`IdOs`] seam; the seam's
//! `setreuid`/`seteuid` apply XNU's rule (via [`apply`]) and commit the result with the
//! raw `setresuid` system call (Linux has no other call that sets the saved id exactly),
//! and the ids are read back with the real `getresuid`, so tests compare the emulation
//! with glibc's `setresuid` on the same inputs. The raw call changes the calling thread's
//! credentials only (glibc's wrapper signals every thread); that is exact for Slurm, which
//! calls these functions only in single-threaded forked children (run_command.c, slurmd's
//! file-transfer child; slurmstepd's pty path is compiled out without `HAVE_SETRESUID`),
//! and irrelevant on macOS, whose credentials are per process.
//!
//! Portability problems not fixed:
//! * Inexpressible requests (e.g. unprivileged `setresuid(-1, -1, r)` with `r` the real uid
//!   when that differs from both effective and saved) fail with `EPERM` where Linux succeeds.
//! * The change is a sequence of system calls; another thread may observe the intermediate
//!   ids (macOS credentials are per process).
//! * Darwin per-thread credentials (`pthread_setugid_np`) are not considered.
//! * Linux test lane only: in a multi-threaded process the emulation changes the calling
//!   thread's ids, not every thread's.
#![allow(clippy::missing_safety_doc)]

use libc::{c_int, gid_t, uid_t};

use crate::errno::{self, Errno};

/// `(uid_t)-1` / `(gid_t)-1`: "leave unchanged".
pub const NONE: u32 = u32::MAX;

/// Real, effective and saved ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ids {
    /// Real id.
    pub r: u32,
    /// Effective id.
    pub e: u32,
    /// Saved id.
    pub s: u32,
}

/// One Darwin call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `setreuid(a, b)` / `setregid(a, b)`.
    SetRe(u32, u32),
    /// `seteuid(b)` / `setegid(b)`.
    SetE(u32),
}

/// Which family, and how privilege is decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// uids: privileged while the effective uid is 0.
    Uid,
    /// gids: privileged when the process's effective uid is 0 (the flag).
    Gid(bool),
}

impl Kind {
    /// Whether a process with `cur` ids of this family may set arbitrary ids.
    pub fn privileged(self, cur: Ids) -> bool {
        match self {
            Kind::Uid => cur.e == 0,
            Kind::Gid(root) => root,
        }
    }
}

/// XNU's result of `op` on `cur`, or `None` when XNU refuses it (`EPERM`).
pub fn apply(cur: Ids, op: Op, kind: Kind) -> Option<Ids> {
    let known = |v: u32| v == cur.r || v == cur.e || v == cur.s;
    let privileged = kind.privileged(cur);
    match op {
        Op::SetRe(a, b) => {
            let denied = (a != NONE && !known(a)) || (b != NONE && !known(b));
            if denied && !privileged {
                return None;
            }
            let e = if b != NONE { b } else { cur.e };
            let r = if a != NONE { a } else { cur.r };
            let s = if cur.s != a && cur.s != b { e } else { cur.s };
            Some(Ids { r, e, s })
        }
        Op::SetE(b) => {
            if b == NONE || (b != cur.r && b != cur.s && !privileged) {
                return None;
            }
            Some(Ids { e: b, ..cur })
        }
    }
}

/// Longest plan the search tries.
pub const MAX_STEPS: usize = 3;

/// A sequence of calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The calls; only the first `len` are used.
    pub ops: [Op; MAX_STEPS],
    /// Number of calls.
    pub len: usize,
}

impl Plan {
    /// The calls in order.
    pub fn steps(&self) -> &[Op] {
        &self.ops[..self.len]
    }
}

fn dfs(
    cur: Ids,
    target: Ids,
    kind: Kind,
    cands: &[u32; 7],
    path: &mut Plan,
    depth: usize,
    left: usize,
) -> bool {
    if cur == target {
        path.len = depth;
        return true;
    }
    if left == 0 {
        return false;
    }
    let try_op = |op: Op, path: &mut Plan| -> bool {
        match apply(cur, op, kind) {
            Some(next) if next != cur => {
                path.ops[depth] = op;
                dfs(next, target, kind, cands, path, depth + 1, left - 1)
            }
            _ => false,
        }
    };
    for &b in cands.iter() {
        if b != NONE && try_op(Op::SetE(b), path) {
            return true;
        }
    }
    for &a in cands.iter() {
        for &b in cands.iter() {
            if (a != NONE || b != NONE) && try_op(Op::SetRe(a, b), path) {
                return true;
            }
        }
    }
    false
}

/// The shortest sequence (at most [`MAX_STEPS`]) of Darwin calls that takes `cur` to
/// `target`, or `None` when the request is not expressible. No allocation (it runs in
/// children of `fork`).
pub fn plan(cur: Ids, target: Ids, kind: Kind) -> Option<Plan> {
    let cands = [NONE, target.r, target.e, target.s, cur.r, cur.e, cur.s];
    let mut path = Plan {
        ops: [Op::SetE(NONE); MAX_STEPS],
        len: 0,
    };
    (0..=MAX_STEPS)
        .find(|&max| dfs(cur, target, kind, &cands, &mut path, 0, max))
        .map(|_| path)
}

/// The requested triple: `NONE` entries keep the current value.
pub fn resolve(cur: Ids, r: u32, e: u32, s: u32) -> Ids {
    let pick = |want: u32, have: u32| if want == NONE { have } else { want };
    Ids {
        r: pick(r, cur.r),
        e: pick(e, cur.e),
        s: pick(s, cur.s),
    }
}

/// The OS mechanism under the emulation.
pub trait IdOs {
    /// Current real/effective/saved uids.
    fn uids(&self) -> Result<Ids, Errno>;
    /// Current real/effective/saved gids.
    fn gids(&self) -> Result<Ids, Errno>;
    /// Darwin `setreuid` / `setregid` (per `kind`).
    fn setre(&self, kind: Kind, a: u32, b: u32) -> Result<(), Errno>;
    /// Darwin `seteuid` / `setegid` (per `kind`).
    fn sete(&self, kind: Kind, b: u32) -> Result<(), Errno>;
}

/// The real OS.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealIdOs;

#[cfg(target_vendor = "apple")]
fn bsdinfo() -> Result<libc::proc_bsdinfo, Errno> {
    let mut info = core::mem::MaybeUninit::<libc::proc_bsdinfo>::zeroed();
    let size = core::mem::size_of::<libc::proc_bsdinfo>() as c_int;
    // SAFETY: `info` is writable for `size` bytes; getpid has no preconditions.
    let n = unsafe {
        libc::proc_pidinfo(
            libc::getpid(),
            libc::PROC_PIDTBSDINFO,
            0,
            info.as_mut_ptr().cast::<libc::c_void>(),
            size,
        )
    };
    if n != size {
        return Err(if n < 0 {
            Errno::last()
        } else {
            Errno(libc::EINVAL)
        });
    }
    // SAFETY: the kernel filled all `size` bytes (and the buffer was zeroed before).
    Ok(unsafe { info.assume_init() })
}

#[cfg(target_vendor = "apple")]
impl IdOs for RealIdOs {
    fn uids(&self) -> Result<Ids, Errno> {
        let info = bsdinfo()?;
        // SAFETY: getuid/geteuid have no preconditions.
        Ok(Ids {
            r: unsafe { libc::getuid() },
            e: unsafe { libc::geteuid() },
            s: info.pbi_svuid,
        })
    }

    fn gids(&self) -> Result<Ids, Errno> {
        let info = bsdinfo()?;
        // SAFETY: getgid/getegid have no preconditions.
        Ok(Ids {
            r: unsafe { libc::getgid() },
            e: unsafe { libc::getegid() },
            s: info.pbi_svgid,
        })
    }

    fn setre(&self, kind: Kind, a: u32, b: u32) -> Result<(), Errno> {
        // SAFETY: plain system calls on integers.
        Errno::result(unsafe {
            match kind {
                Kind::Uid => libc::setreuid(a, b),
                Kind::Gid(_) => libc::setregid(a, b),
            }
        })
        .map(drop)
    }

    fn sete(&self, kind: Kind, b: u32) -> Result<(), Errno> {
        // SAFETY: plain system calls on integers.
        Errno::result(unsafe {
            match kind {
                Kind::Uid => libc::seteuid(b),
                Kind::Gid(_) => libc::setegid(b),
            }
        })
        .map(drop)
    }
}

#[cfg(target_os = "linux")]
impl RealIdOs {
    fn commit(&self, kind: Kind, op: Op) -> Result<(), Errno> {
        let cur = match kind {
            Kind::Uid => self.uids()?,
            Kind::Gid(_) => self.gids()?,
        };
        // Apply XNU's rule, with this process's real privilege for the gid family.
        let kind = match kind {
            // SAFETY: geteuid has no preconditions.
            Kind::Gid(_) => Kind::Gid(unsafe { libc::geteuid() } == 0),
            k => k,
        };
        let next = apply(cur, op, kind).ok_or(Errno(libc::EPERM))?;
        // The raw system call, not glibc's `setresuid`: a darwin-personality Slurm must
        // import no glibc `setresuid`/`setresgid` (the build's nm check). Unlike glibc's
        // wrapper it changes the calling thread only; see the module doc.
        // SAFETY: plain system calls on integers.
        let rc = unsafe {
            match kind {
                Kind::Uid => libc::syscall(libc::SYS_setresuid, next.r, next.e, next.s),
                Kind::Gid(_) => libc::syscall(libc::SYS_setresgid, next.r, next.e, next.s),
            }
        };
        if rc == -1 { Err(Errno::last()) } else { Ok(()) }
    }
}

#[cfg(target_os = "linux")]
impl IdOs for RealIdOs {
    fn uids(&self) -> Result<Ids, Errno> {
        let (mut r, mut e, mut s) = (0, 0, 0);
        // SAFETY: the three out-pointers are valid.
        Errno::result(unsafe { libc::getresuid(&mut r, &mut e, &mut s) })?;
        Ok(Ids { r, e, s })
    }

    fn gids(&self) -> Result<Ids, Errno> {
        let (mut r, mut e, mut s) = (0, 0, 0);
        // SAFETY: the three out-pointers are valid.
        Errno::result(unsafe { libc::getresgid(&mut r, &mut e, &mut s) })?;
        Ok(Ids { r, e, s })
    }

    fn setre(&self, kind: Kind, a: u32, b: u32) -> Result<(), Errno> {
        self.commit(kind, Op::SetRe(a, b))
    }

    fn sete(&self, kind: Kind, b: u32) -> Result<(), Errno> {
        self.commit(kind, Op::SetE(b))
    }
}

fn read(os: &impl IdOs, kind: Kind) -> Result<Ids, Errno> {
    match kind {
        Kind::Uid => os.uids(),
        Kind::Gid(_) => os.gids(),
    }
}

fn run(os: &impl IdOs, kind: Kind, p: &Plan) -> Result<(), Errno> {
    for op in p.steps() {
        match *op {
            Op::SetRe(a, b) => os.setre(kind, a, b)?,
            Op::SetE(b) => os.sete(kind, b)?,
        }
    }
    Ok(())
}

/// Best-effort return to `orig` after a failed change.
fn restore(os: &impl IdOs, kind: Kind, orig: Ids) {
    if let Ok(now) = read(os, kind) {
        if let Some(back) = plan(now, orig, kind) {
            let _ = run(os, kind, &back);
        }
    }
}

/// The safe core of `setresuid`/`setresgid`.
pub fn setres_impl(os: &impl IdOs, kind: Kind, r: u32, e: u32, s: u32) -> Result<(), Errno> {
    let orig = read(os, kind)?;
    let target = resolve(orig, r, e, s);
    if target == orig {
        return Ok(());
    }
    // Linux's permission rule first: without privilege, every requested id must be one
    // the process holds now (the plan may pass through states XNU allows and Linux would
    // not accept as a request, e.g. seteuid back to a real uid of 0).
    let held = |v: u32| v == NONE || v == orig.r || v == orig.e || v == orig.s;
    if !kind.privileged(orig) && (!held(r) || !held(e) || !held(s)) {
        return Err(Errno(libc::EPERM));
    }
    let p = plan(orig, target, kind).ok_or(Errno(libc::EPERM))?;
    let outcome = run(os, kind, &p).and_then(|()| {
        if read(os, kind)? == target {
            Ok(())
        } else {
            Err(Errno(libc::EPERM))
        }
    });
    if outcome.is_err() {
        restore(os, kind, orig);
    }
    outcome
}

fn euid_is_root(os: &impl IdOs) -> Result<bool, Errno> {
    Ok(os.uids()?.e == 0)
}

/// `setresuid(2)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_setresuid(ruid: uid_t, euid: uid_t, suid: uid_t) -> c_int {
    crate::counted!(slurm_shim_setresuid);
    errno::to_c(errno::preserve(|| setres_impl(&RealIdOs, Kind::Uid, ruid, euid, suid)).map(|()| 0))
}

/// `setresgid(2)`.
#[unsafe(no_mangle)]
pub extern "C" fn slurm_shim_setresgid(rgid: gid_t, egid: gid_t, sgid: gid_t) -> c_int {
    crate::counted!(slurm_shim_setresgid);
    let os = RealIdOs;
    errno::to_c(
        errno::preserve(|| {
            let root = euid_is_root(&os)?;
            setres_impl(&os, Kind::Gid(root), rgid, egid, sgid)
        })
        .map(|()| 0),
    )
}

/// Writes `ids` to three out-parameters after checking them.
///
/// # Safety
/// Each pointer is NULL or valid for a write.
unsafe fn write3(ids: Result<Ids, Errno>, r: *mut u32, e: *mut u32, s: *mut u32) -> c_int {
    if r.is_null() || e.is_null() || s.is_null() {
        return errno::to_c(Err(Errno(libc::EFAULT)));
    }
    errno::to_c(ids.map(|v| {
        // SAFETY: all three are non-NULL and valid for writes per the contract.
        unsafe {
            *r = v.r;
            *e = v.e;
            *s = v.s;
        }
        0
    }))
}

/// `getresuid(2)`: the saved uid is the kernel's (`pbi_svuid` on macOS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_getresuid(
    ruid: *mut uid_t,
    euid: *mut uid_t,
    suid: *mut uid_t,
) -> c_int {
    crate::counted!(slurm_shim_getresuid);
    // SAFETY: the caller's pointers are forwarded under the same contract.
    unsafe { write3(errno::preserve(|| RealIdOs.uids()), ruid, euid, suid) }
}

/// `getresgid(2)`: the saved gid is the kernel's (`pbi_svgid` on macOS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_shim_getresgid(
    rgid: *mut gid_t,
    egid: *mut gid_t,
    sgid: *mut gid_t,
) -> c_int {
    crate::counted!(slurm_shim_getresgid);
    // SAFETY: the caller's pointers are forwarded under the same contract.
    unsafe { write3(errno::preserve(|| RealIdOs.gids()), rgid, egid, sgid) }
}
