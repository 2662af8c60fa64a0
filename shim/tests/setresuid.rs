//! `setresuid`/`setresgid`/`getres*`: the XNU model and planner, and (as root) the
//! emulation against glibc's `setresuid` in forked children on the same inputs.
//!
//! glibc is the oracle, so this file runs on Linux only (for macOS targets the shim is
//! compiled, and linked into a Mach-O program by tests/header.rs).
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

use libc::c_int;
use slurm_shim::errno::{self, Errno};
use slurm_shim::setresuid::*;

const N: u32 = NONE;

fn ids(r: u32, e: u32, s: u32) -> Ids {
    Ids { r, e, s }
}

#[test]
fn setresuid__xnu_model_follows_kern_prot() {
    // Saved follows the new effective unless the old saved equals a raw argument.
    assert_eq!(
        apply(ids(0, 0, 0), Op::SetRe(1000, 1000), Kind::Uid),
        Some(ids(1000, 1000, 1000))
    );
    assert_eq!(
        apply(ids(0, 0, 0), Op::SetRe(1000, 0), Kind::Uid),
        Some(ids(1000, 0, 0))
    );
    assert_eq!(
        apply(ids(0, 0, 0), Op::SetRe(N, 5), Kind::Uid),
        Some(ids(0, 5, 5))
    );
    assert_eq!(
        apply(ids(7, 5, 9), Op::SetRe(9, N), Kind::Uid),
        Some(ids(9, 5, 9))
    );
    // Unprivileged: only current ids.
    assert_eq!(apply(ids(7, 5, 9), Op::SetRe(8, N), Kind::Uid), None);
    assert_eq!(
        apply(ids(7, 5, 9), Op::SetRe(N, 9), Kind::Uid),
        Some(ids(7, 9, 9))
    );
    assert_eq!(
        apply(ids(7, 5, 9), Op::SetE(7), Kind::Uid),
        Some(ids(7, 7, 9))
    );
    assert_eq!(
        apply(ids(7, 5, 9), Op::SetE(5), Kind::Uid),
        None,
        "seteuid needs real or saved"
    );
    assert_eq!(
        apply(ids(0, 0, 0), Op::SetE(5), Kind::Uid),
        Some(ids(0, 5, 0))
    );
    // gid privilege comes from the euid flag.
    assert_eq!(
        apply(ids(7, 5, 9), Op::SetE(100), Kind::Gid(true)),
        Some(ids(7, 100, 9))
    );
    assert_eq!(apply(ids(7, 5, 9), Op::SetE(100), Kind::Gid(false)), None);
}

fn check_plan(cur: Ids, target: Ids, kind: Kind) {
    let p = plan(cur, target, kind).expect("expressible");
    let mut s = cur;
    for op in p.steps() {
        s = apply(s, *op, kind).expect("each step permitted");
    }
    assert_eq!(s, target, "{cur:?} -> {target:?} via {:?}", p.steps());
}

#[test]
fn setresuid__slurm_call_sites_are_expressible() {
    // setresuid(uid, uid, -1) as root: Linux keeps saved 0.
    check_plan(ids(0, 0, 0), ids(1000, 1000, 0), Kind::Uid);
    // setresuid(geteuid(), geteuid(), -1) after seteuid(uid) (run_command child).
    check_plan(ids(0, 1000, 0), ids(1000, 1000, 0), Kind::Uid);
    // setresgid(getegid(), getegid(), -1) as root with a different egid.
    check_plan(ids(0, 100, 0), ids(100, 100, 0), Kind::Gid(true));
    // Unprivileged setresuid(geteuid(), geteuid(), -1) with euid == saved.
    check_plan(ids(1000, 2000, 2000), ids(2000, 2000, 2000), Kind::Uid);
    // No change is always fine.
    assert_eq!(
        plan(ids(5, 6, 7), ids(5, 6, 7), Kind::Uid).map(|p| p.len),
        Some(0)
    );
}

#[test]
fn setresuid__inexpressible_requests_have_no_plan() {
    // Root with real uid 0 can always come back (seteuid(0)), so this one is expressible.
    check_plan(ids(0, 0, 0), ids(0, 1000, 2000), Kind::Uid);
    // Unprivileged: a value the process does not hold.
    assert_eq!(
        plan(ids(1000, 1000, 1000), ids(1000, 1000, 0), Kind::Uid),
        None
    );
    assert_eq!(plan(ids(1, 2, 3), ids(1, 2, 4), Kind::Gid(false)), None);
}

/// A fake OS that follows the XNU model and can fail the n-th call.
struct Fake {
    u: std::cell::Cell<Ids>,
    fail_call: usize,
    calls: std::cell::Cell<usize>,
    /// Report wrong ids on the second read (the verification after the change).
    lie: bool,
    reads: std::cell::Cell<usize>,
}
impl IdOs for Fake {
    fn uids(&self) -> Result<Ids, Errno> {
        let v = self.u.get();
        self.reads.set(self.reads.get() + 1);
        Ok(if self.lie && self.reads.get() == 2 {
            Ids { s: v.s ^ 1, ..v }
        } else {
            v
        })
    }
    fn gids(&self) -> Result<Ids, Errno> {
        Err(Errno(libc::ENOSYS))
    }
    fn setre(&self, kind: Kind, a: u32, b: u32) -> Result<(), Errno> {
        self.step(kind, Op::SetRe(a, b))
    }
    fn sete(&self, kind: Kind, b: u32) -> Result<(), Errno> {
        self.step(kind, Op::SetE(b))
    }
}
impl Fake {
    fn step(&self, kind: Kind, op: Op) -> Result<(), Errno> {
        let n = self.calls.get() + 1;
        self.calls.set(n);
        if n == self.fail_call {
            return Err(Errno(libc::EAGAIN));
        }
        self.u
            .set(apply(self.u.get(), op, kind).ok_or(Errno(libc::EPERM))?);
        Ok(())
    }
}

#[test]
fn setresuid__failed_second_step_rolls_back() {
    let f = Fake {
        u: ids(0, 0, 0).into(),
        fail_call: 2,
        calls: 0.into(),
        lie: false,
        reads: 0.into(),
    };
    assert_eq!(
        setres_impl(&f, Kind::Uid, 1000, 1000, N),
        Err(Errno(libc::EAGAIN))
    );
    assert_eq!(f.u.get(), ids(0, 0, 0), "restored");
    let ok = Fake {
        u: ids(0, 0, 0).into(),
        fail_call: 0,
        calls: 0.into(),
        lie: false,
        reads: 0.into(),
    };
    assert_eq!(setres_impl(&ok, Kind::Uid, 1000, 1000, N), Ok(()));
    assert_eq!(ok.u.get(), ids(1000, 1000, 0));
    assert_eq!(ok.calls.get(), 2);
}

#[test]
fn setresuid__readback_mismatch_fails_with_eperm_and_restores() {
    let f = Fake {
        u: ids(0, 0, 0).into(),
        fail_call: 0,
        calls: 0.into(),
        lie: true,
        reads: 0.into(),
    };
    assert_eq!(
        setres_impl(&f, Kind::Uid, 1000, 1000, N),
        Err(Errno(libc::EPERM))
    );
    assert_eq!(f.u.get(), ids(0, 0, 0), "restored");
}

#[test]
fn setresuid__inexpressible_changes_nothing() {
    // Unprivileged, values held but the combination is unreachable on XNU.
    let start = ids(1000, 2000, 3000);
    let f = Fake {
        u: start.into(),
        fail_call: 0,
        calls: 0.into(),
        lie: false,
        reads: 0.into(),
    };
    let target = (0..3u32.pow(3) as usize)
        .map(|i| [1000u32, 2000, 3000].map(|_| 0).map(|_| i))
        .map(|i| {
            ids(
                [1000, 2000, 3000][i[0] % 3],
                [1000, 2000, 3000][i[0] / 3 % 3],
                [1000, 2000, 3000][i[0] / 9],
            )
        })
        .find(|t| plan(start, *t, Kind::Uid).is_none())
        .expect("some inexpressible triple");
    assert_eq!(
        setres_impl(&f, Kind::Uid, target.r, target.e, target.s),
        Err(Errno(libc::EPERM))
    );
    assert_eq!((f.u.get(), f.calls.get()), (start, 0));
    // Not held and unprivileged: Linux's EPERM, before any planning.
    assert_eq!(
        setres_impl(&f, Kind::Uid, 1000, 1000, 0),
        Err(Errno(libc::EPERM))
    );
    assert_eq!((f.u.get(), f.calls.get()), (start, 0));
}

// ---- Differential against glibc, as root, in forked children. ----

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `f` in a forked child and returns the 7 ints it produced.
fn in_child(f: impl FnOnce() -> [i32; 7]) -> [i32; 7] {
    let mut p = [0 as c_int; 2];
    // SAFETY: valid array for the two descriptors.
    assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
    // SAFETY: the child only makes system calls, writes to the pipe and _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let out = f();
        // SAFETY: writing our array to the pipe, then leaving without destructors.
        unsafe {
            libc::write(p[1], out.as_ptr().cast(), core::mem::size_of_val(&out));
            libc::_exit(0);
        }
    }
    // SAFETY: closing our copy of the write end.
    unsafe { libc::close(p[1]) };
    let mut out = [0i32; 7];
    // SAFETY: reading into our array.
    let n = unsafe { libc::read(p[0], out.as_mut_ptr().cast(), core::mem::size_of_val(&out)) };
    let mut st = 0;
    // SAFETY: our own child; closing our read end.
    unsafe {
        libc::waitpid(pid, &mut st, 0);
        libc::close(p[0]);
    }
    assert_eq!(n as usize, core::mem::size_of_val(&out), "child reported");
    out
}

fn now_uids() -> [u32; 3] {
    let (mut r, mut e, mut s) = (0, 0, 0);
    // SAFETY: valid out-pointers.
    unsafe { libc::getresuid(&mut r, &mut e, &mut s) };
    [r, e, s]
}

fn now_gids() -> [u32; 3] {
    let (mut r, mut e, mut s) = (0, 0, 0);
    // SAFETY: valid out-pointers.
    unsafe { libc::getresgid(&mut r, &mut e, &mut s) };
    [r, e, s]
}

fn pack(ok: i32, rc: i32, err: i32, v: [u32; 3]) -> [i32; 7] {
    [ok, rc, err, v[0] as i32, v[1] as i32, v[2] as i32, 0]
}

/// `start` set with glibc, then `req` through `which` (glibc or shim); reports
/// (start ok, rc, errno, r, e, s).
fn run_uid(start: [u32; 3], req: [u32; 3], shim: bool) -> [i32; 7] {
    in_child(|| {
        // SAFETY: plain system calls in the child.
        if unsafe { libc::setresuid(start[0], start[1], start[2]) } != 0 {
            return pack(0, 0, 0, now_uids());
        }
        errno::set(0);
        let rc = if shim {
            slurm_shim_setresuid(req[0], req[1], req[2])
        } else {
            // SAFETY: plain system call.
            unsafe { libc::setresuid(req[0], req[1], req[2]) }
        };
        pack(1, rc, if rc == -1 { errno::get() } else { 0 }, now_uids())
    })
}

fn run_gid(start: [u32; 3], euid: u32, req: [u32; 3], shim: bool) -> [i32; 7] {
    in_child(|| {
        // SAFETY: plain system calls in the child (gids first, then drop the euid).
        let gids = unsafe { libc::setresgid(start[0], start[1], start[2]) };
        // SAFETY: as above.
        if gids != 0 || unsafe { libc::setresuid(0, euid, 0) } != 0 {
            return pack(0, 0, 0, now_gids());
        }
        errno::set(0);
        let rc = if shim {
            slurm_shim_setresgid(req[0], req[1], req[2])
        } else {
            // SAFETY: plain system call.
            unsafe { libc::setresgid(req[0], req[1], req[2]) }
        };
        pack(1, rc, if rc == -1 { errno::get() } else { 0 }, now_gids())
    })
}

const VALUES: [u32; 5] = [N, 0, 1000, 2000, 3000];

fn requests() -> Vec<[u32; 3]> {
    let mut v = Vec::new();
    for r in VALUES {
        for e in VALUES {
            for s in VALUES {
                v.push([r, e, s]);
            }
        }
    }
    v
}

/// Compares; counts (same success, both EPERM, glibc succeeds but shim EPERM).
fn compare(
    what: &str,
    start: [u32; 3],
    req: [u32; 3],
    g: [i32; 7],
    s: [i32; 7],
    counts: &mut (usize, usize, usize),
) {
    assert_eq!(
        (g[0], s[0]),
        (1, 1),
        "{what}: start state {start:?} not reached"
    );
    let start_i = [start[0] as i32, start[1] as i32, start[2] as i32];
    if s[1] == 0 {
        counts.0 += 1;
        assert_eq!(
            g[1], 0,
            "{what}: shim succeeded where glibc failed: start {start:?} req {req:?}"
        );
        assert_eq!(&s[3..6], &g[3..6], "{what}: start {start:?} req {req:?}");
    } else {
        if g[1] == 0 {
            counts.2 += 1;
        } else {
            counts.1 += 1;
        }
        assert_eq!(s[2], libc::EPERM, "{what}: start {start:?} req {req:?}");
        assert_eq!(
            &s[3..6],
            &start_i[..],
            "{what}: ids changed on failure: start {start:?} req {req:?}"
        );
        if g[1] == -1 {
            assert_eq!(g[2], libc::EPERM);
        }
    }
}

#[test]
fn setresuid__same_ids_as_glibc_for_every_expressible_request() {
    if !is_root() {
        eprintln!("skipped: needs root to set arbitrary starting uids");
        return;
    }
    let starts = [
        [0, 0, 0],
        [1000, 0, 0],
        [0, 1000, 0],
        [0, 0, 1000],
        [1000, 1000, 0],
        [1000, 2000, 0],
        [1000, 2000, 3000],
        [2000, 2000, 1000],
    ];
    let mut all = (0, 0, 0);
    for start in starts {
        let mut counts = (0, 0, 0);
        for req in requests() {
            let g = run_uid(start, req, false);
            let s = run_uid(start, req, true);
            compare("setresuid", start, req, g, s, &mut counts);
            if start == [0, 0, 0] {
                // XNU's only gap for root: real and saved set to different non-zero ids
                // and the effective to a third value (the saved id can only become the
                // new effective one, and the last step then lacks privilege).
                let t = resolve(ids(0, 0, 0), req[0], req[1], req[2]);
                let gap = t.r != 0 && t.s != 0 && t.r != t.s && t.e != t.r && t.e != t.s;
                assert_eq!(s[1] == -1, gap, "root request {req:?}");
            }
        }
        eprintln!(
            "setresuid from {start:?}: {} same as glibc, {} EPERM in both, {} inexpressible (glibc ok, shim EPERM)",
            counts.0, counts.1, counts.2
        );
        all = (all.0 + counts.0, all.1 + counts.1, all.2 + counts.2);
    }
    eprintln!("setresuid total: {all:?}");
}

#[test]
fn setresgid__same_ids_as_glibc_for_every_expressible_request() {
    if !is_root() {
        eprintln!("skipped: needs root to set arbitrary starting gids");
        return;
    }
    let starts = [
        [0, 0, 0],
        [1000, 0, 0],
        [0, 1000, 0],
        [1000, 2000, 3000],
        [2000, 2000, 1000],
    ];
    let mut counts = (0, 0, 0);
    for euid in [0, 4000] {
        for start in starts {
            for req in requests() {
                let g = run_gid(start, euid, req, false);
                let s = run_gid(start, euid, req, true);
                compare(
                    &format!("setresgid euid {euid}"),
                    start,
                    req,
                    g,
                    s,
                    &mut counts,
                );
            }
        }
    }
    eprintln!(
        "setresgid: {} same as glibc, {} EPERM in both, {} inexpressible",
        counts.0, counts.1, counts.2
    );
}

#[test]
fn setresuid__slurm_call_sites_work_like_glibc() {
    if !is_root() {
        eprintln!("skipped: needs root to drop privileges");
        return;
    }
    // run_command.c: setresgid(getegid(), getegid(), -1); setresuid(geteuid(), geteuid(), -1)
    // after the parent switched its effective ids.
    for shim in [false, true] {
        let out = in_child(|| {
            // SAFETY: plain system calls in the child.
            unsafe {
                libc::setresgid(0, 100, 0);
                libc::setresuid(0, 1000, 0);
            }
            // Effective uid is 1000 now: the gid call is unprivileged but only uses held ids.
            // SAFETY: plain system calls.
            let (eg, eu) = unsafe { (libc::getegid(), libc::geteuid()) };
            let (a, b) = if shim {
                (
                    slurm_shim_setresgid(eg, eg, N),
                    slurm_shim_setresuid(eu, eu, N),
                )
            } else {
                // SAFETY: plain system calls.
                unsafe { (libc::setresgid(eg, eg, N), libc::setresuid(eu, eu, N)) }
            };
            let u = now_uids();
            let g = now_gids();
            [
                a,
                b,
                u[0] as i32,
                u[1] as i32,
                u[2] as i32,
                g[0] as i32,
                g[2] as i32,
            ]
        });
        assert_eq!(
            out,
            [0, 0, 1000, 1000, 0, 100, 0],
            "run_command sites, shim={shim}"
        );
    }
    // req.c: setresuid(uid, uid, -1) as root.
    let g = run_uid([0, 0, 0], [1000, 1000, N], false);
    let s = run_uid([0, 0, 0], [1000, 1000, N], true);
    assert_eq!(s, g);
    assert_eq!(&s[1..6], &[0, 0, 1000, 1000, 0]);
}

#[test]
fn getresuid__matches_glibc_and_checks_pointers() {
    let (mut r, mut e, mut s) = (9, 9, 9);
    // SAFETY: valid out-pointers.
    assert_eq!(unsafe { slurm_shim_getresuid(&mut r, &mut e, &mut s) }, 0);
    assert_eq!([r, e, s], now_uids());
    // SAFETY: valid out-pointers.
    assert_eq!(unsafe { slurm_shim_getresgid(&mut r, &mut e, &mut s) }, 0);
    assert_eq!([r, e, s], now_gids());
    errno::set(0);
    // SAFETY: NULL is checked.
    let rc = unsafe { slurm_shim_getresuid(&mut r, core::ptr::null_mut(), &mut s) };
    assert_eq!(rc, -1);
    assert_eq!(errno::get(), libc::EFAULT);
    if is_root() {
        let out = in_child(|| {
            // SAFETY: plain system calls in the child.
            unsafe { libc::setresuid(1000, 2000, 3000) };
            let (mut r, mut e, mut s) = (0, 0, 0);
            // SAFETY: valid out-pointers.
            let rc = unsafe { slurm_shim_getresuid(&mut r, &mut e, &mut s) };
            [rc, r as i32, e as i32, s as i32, 0, 0, 0]
        });
        assert_eq!(&out[..4], &[0, 1000, 2000, 3000]);
    } else {
        eprintln!("skipped the distinct-ids half: needs root");
    }
}
