//! `slurm_shim_eventfd`, `slurm_shim_eventfd_read`, `slurm_shim_eventfd_write` against
//! glibc's eventfd on the same scripts: counter semantics, semaphore mode, overflow,
//! `EAGAIN`, blocking, `poll()` readiness, plain 8-byte `write()`s (what Slurm does),
//! descriptor flags, errors; and no leaked descriptor.
#![allow(non_snake_case)]
// Every unsafe block here is a direct libc call on locals or descriptors made just before;
// a SAFETY line on each would repeat that.
#![allow(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_os = "linux"))]
#[test]
fn eventfd__differential_tests_need_glibc() {
    eprintln!("skipped: the eventfd tests compare the shim with glibc and run on Linux only");
}

#[cfg(target_os = "linux")]
mod common;

#[cfg(target_os = "linux")]
mod linux {
    use crate::common::{close, errno, leak_checked};
    use std::time::{Duration, Instant};

    use libc::{c_int, c_uint};
    use slurm_shim::eventfd::{
        slurm_shim_eventfd, slurm_shim_eventfd_read, slurm_shim_eventfd_write,
    };

    fn set_errno(v: c_int) {
        unsafe { *libc::__errno_location() = v };
    }

    /// One implementation: glibc's or the shim's.
    #[derive(Clone, Copy, Debug)]
    struct Impl {
        name: &'static str,
        create: extern "C" fn(c_uint, c_int) -> c_int,
        read: unsafe extern "C" fn(c_int, *mut u64) -> c_int,
        write: extern "C" fn(c_int, u64) -> c_int,
    }

    extern "C" fn glibc_create(init: c_uint, flags: c_int) -> c_int {
        unsafe { libc::eventfd(init, flags) }
    }
    extern "C" fn glibc_write(fd: c_int, v: u64) -> c_int {
        unsafe { libc::eventfd_write(fd, v) }
    }

    const GLIBC: Impl = Impl {
        name: "glibc",
        create: glibc_create,
        read: libc::eventfd_read,
        write: glibc_write,
    };
    const SHIM: Impl = Impl {
        name: "shim",
        create: slurm_shim_eventfd,
        read: slurm_shim_eventfd_read,
        write: slurm_shim_eventfd_write,
    };

    const MAX: u64 = u64::MAX - 1;
    const NB: c_int = libc::EFD_NONBLOCK;
    const SEM: c_int = libc::EFD_SEMAPHORE;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Op {
        /// eventfd_read
        Read,
        /// eventfd_write
        Write(u64),
        /// A plain 8-byte write(), as Slurm's signal handlers do.
        Raw(u64),
        /// poll() with no timeout: is POLLIN reported?
        Readable,
    }

    /// What an op gave: (return value, errno if it failed, value read / readiness).
    type Seen = (i64, c_int, u64);

    fn run(imp: Impl, fd: c_int, op: Op) -> Seen {
        set_errno(0);
        match op {
            Op::Read => {
                let mut v = 0xdead_beef;
                let r = unsafe { (imp.read)(fd, &mut v) };
                (r.into(), if r < 0 { errno() } else { 0 }, v)
            }
            Op::Write(v) => {
                let r = (imp.write)(fd, v);
                (r.into(), if r < 0 { errno() } else { 0 }, 0)
            }
            Op::Raw(v) => {
                let b = v.to_ne_bytes();
                let r = unsafe { libc::write(fd, b.as_ptr().cast(), 8) };
                (r as i64, if r < 0 { errno() } else { 0 }, 0)
            }
            Op::Readable => {
                let mut p = libc::pollfd {
                    fd,
                    events: libc::POLLIN | libc::POLLOUT,
                    revents: 0,
                };
                let r = unsafe { libc::poll(&mut p, 1, 0) };
                assert!(
                    p.revents & libc::POLLOUT != 0 || imp.name == "glibc",
                    "shim eventfd not writable"
                );
                (r.into(), 0, u64::from(p.revents & libc::POLLIN != 0))
            }
        }
    }

    fn scripts() -> Vec<(c_uint, c_int, Vec<Op>)> {
        use Op::*;
        vec![
            (
                0,
                NB,
                vec![
                    Readable,
                    Read,
                    Write(1),
                    Readable,
                    Write(2),
                    Read,
                    Readable,
                    Read,
                ],
            ),
            (5, NB, vec![Readable, Read, Read, Readable]),
            (u32::MAX, NB, vec![Read, Read]),
            (
                3,
                SEM | NB,
                vec![
                    Read,
                    Readable,
                    Read,
                    Read,
                    Readable,
                    Read,
                    Write(2),
                    Read,
                    Read,
                    Read,
                ],
            ),
            (
                0,
                NB,
                vec![Write(0), Readable, Read, Write(0), Write(7), Write(0), Read],
            ),
            (
                0,
                NB,
                vec![
                    Write(u64::MAX),
                    Readable,
                    Write(MAX),
                    Write(1),
                    Readable,
                    Read,
                    Write(1),
                    Read,
                ],
            ),
            (1, NB, vec![Write(MAX - 2), Write(0), Write(1), Read, Read]),
            (
                0,
                NB | libc::EFD_CLOEXEC,
                vec![Raw(1), Readable, Raw(1), Read, Readable, Read],
            ),
            (
                0,
                SEM | NB,
                vec![
                    Raw(2),
                    Read,
                    Read,
                    Read,
                    Write(3),
                    Raw(1),
                    Read,
                    Read,
                    Read,
                    Read,
                    Read,
                ],
            ),
            (4, NB, vec![Raw(6), Write(5), Raw(0), Read, Read]),
            (
                7,
                SEM | NB,
                vec![Write(MAX - 7), Write(1), Read, Write(1), Write(1), Read],
            ),
        ]
    }

    #[test]
    fn eventfd__counter_scripts_match_glibc() {
        leak_checked(|| {
            for (init, flags, ops) in scripts() {
                let mut seen = vec![];
                for imp in [GLIBC, SHIM] {
                    let fd = (imp.create)(init, flags);
                    assert!(
                        fd >= 0,
                        "{}: eventfd({init}, {flags:#x}): {}",
                        imp.name,
                        errno()
                    );
                    seen.push(
                        ops.iter()
                            .map(|&op| (op, run(imp, fd, op)))
                            .collect::<Vec<_>>(),
                    );
                    close(fd);
                }
                assert_eq!(
                    seen[1], seen[0],
                    "eventfd({init}, {flags:#x}): shim vs glibc"
                );
            }
        });
    }

    #[test]
    fn eventfd__every_flag_combination_gives_the_same_descriptor_flags_as_glibc() {
        leak_checked(|| {
            for flags in 0..8 {
                let flags = (if flags & 1 != 0 { SEM } else { 0 })
                    | (if flags & 2 != 0 { NB } else { 0 })
                    | (if flags & 4 != 0 { libc::EFD_CLOEXEC } else { 0 });
                let g = (GLIBC.create)(0, flags);
                let s = (SHIM.create)(0, flags);
                assert!(g >= 0 && s >= 0, "eventfd(0, {flags:#x})");
                for cmd in [libc::F_GETFD, libc::F_GETFL] {
                    let (gv, sv) = unsafe { (libc::fcntl(g, cmd), libc::fcntl(s, cmd)) };
                    assert_eq!(sv, gv, "eventfd(0, {flags:#x}) fcntl({cmd})");
                }
                close(g);
                close(s);
            }
        });
    }

    #[test]
    fn eventfd__unknown_flags_give_einval_like_glibc() {
        leak_checked(|| {
            for flags in [
                2,
                4,
                libc::O_APPEND,
                libc::O_RDWR,
                0x100,
                libc::EFD_CLOEXEC | 8,
                i32::MIN,
                -1,
            ] {
                let g = (GLIBC.create)(1, flags);
                let ge = errno();
                let s = (SHIM.create)(1, flags);
                let se = errno();
                assert_eq!((s, se), (g, ge), "eventfd(1, {flags:#x})");
                assert_eq!((s, se), (-1, libc::EINVAL), "eventfd(1, {flags:#x})");
            }
        });
    }

    #[test]
    fn eventfd__bad_descriptors_and_null_match_glibc() {
        leak_checked(|| {
            let mut results = vec![];
            for imp in [GLIBC, SHIM] {
                let mut v = 0u64;
                let mut r = vec![];
                for fd in [-1, 999] {
                    r.push((unsafe { (imp.read)(fd, &mut v) }, errno()));
                    r.push(((imp.write)(fd, 1), errno()));
                }
                // NULL value pointer on a readable eventfd: EFAULT.
                let fd = (imp.create)(1, NB);
                r.push((unsafe { (imp.read)(fd, std::ptr::null_mut()) }, errno()));
                close(fd);
                results.push(r);
            }
            assert_eq!(results[1], results[0]);
            assert_eq!(
                results[1],
                vec![
                    (-1, libc::EBADF),
                    (-1, libc::EBADF),
                    (-1, libc::EBADF),
                    (-1, libc::EBADF),
                    (-1, libc::EFAULT)
                ]
            );
        });
    }

    #[test]
    fn eventfd_read__on_a_pipe_reads_8_bytes_like_glibc() {
        leak_checked(|| {
            for imp in [GLIBC, SHIM] {
                let mut p = [-1; 2];
                assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
                assert_eq!((imp.write)(p[1], 0x0102_0304_0506_0708), 0, "{}", imp.name);
                let mut v = 0;
                assert_eq!(unsafe { (imp.read)(p[0], &mut v) }, 0, "{}", imp.name);
                assert_eq!(v, 0x0102_0304_0506_0708, "{}", imp.name);
                // A short read fails with errno unchanged.
                assert_eq!(unsafe { libc::write(p[1], b"abc".as_ptr().cast(), 3) }, 3);
                set_errno(4242);
                assert_eq!(unsafe { (imp.read)(p[0], &mut v) }, -1, "{}", imp.name);
                assert_eq!(errno(), 4242, "{}", imp.name);
                close(p[0]);
                close(p[1]);
            }
        });
    }

    #[test]
    fn eventfd_read__blocks_until_a_write_like_glibc() {
        leak_checked(|| {
            for imp in [GLIBC, SHIM] {
                let fd = (imp.create)(0, 0);
                let t = std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(120));
                    assert_eq!((imp.write)(fd, 5), 0);
                });
                let start = Instant::now();
                let mut v = 0;
                assert_eq!(unsafe { (imp.read)(fd, &mut v) }, 0, "{}", imp.name);
                let waited = start.elapsed();
                t.join().expect("writer");
                assert_eq!(v, 5, "{}", imp.name);
                assert!(
                    waited >= Duration::from_millis(80),
                    "{}: returned after {waited:?}",
                    imp.name
                );
                close(fd);
            }
        });
    }

    #[test]
    fn eventfd_write__blocks_on_overflow_until_a_read_like_glibc() {
        leak_checked(|| {
            for imp in [GLIBC, SHIM] {
                let fd = (imp.create)(0, 0);
                assert_eq!((imp.write)(fd, MAX), 0);
                let t = std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(120));
                    let mut v = 0;
                    assert_eq!(unsafe { (imp.read)(fd, &mut v) }, 0);
                    v
                });
                let start = Instant::now();
                assert_eq!((imp.write)(fd, 3), 0, "{}", imp.name);
                let waited = start.elapsed();
                assert_eq!(t.join().expect("reader"), MAX, "{}", imp.name);
                assert!(
                    waited >= Duration::from_millis(80),
                    "{}: returned after {waited:?}",
                    imp.name
                );
                let mut v = 0;
                assert_eq!(unsafe { (imp.read)(fd, &mut v) }, 0);
                assert_eq!(v, 3, "{}", imp.name);
                close(fd);
            }
        });
    }

    #[test]
    fn eventfd__poll_wakes_a_waiting_thread_on_a_plain_write() {
        leak_checked(|| {
            let fd = slurm_shim_eventfd(0, libc::EFD_CLOEXEC | NB);
            let t = std::thread::spawn(move || {
                let mut p = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                let r = unsafe { libc::poll(&mut p, 1, 5000) };
                (r, p.revents)
            });
            std::thread::sleep(Duration::from_millis(50));
            let one = 1u64.to_ne_bytes();
            assert_eq!(unsafe { libc::write(fd, one.as_ptr().cast(), 8) }, 8);
            let (r, revents) = t.join().expect("poller");
            assert_eq!(r, 1);
            assert_ne!(revents & libc::POLLIN, 0);
            close(fd);
        });
    }

    #[test]
    fn eventfd__concurrent_writers_lose_no_addition() {
        leak_checked(|| {
            for (imp, flags) in [(GLIBC, 0), (SHIM, 0), (SHIM, SEM)] {
                let fd = (imp.create)(0, flags);
                let writers: Vec<_> = (0..4)
                    .map(|_| {
                        std::thread::spawn(move || {
                            for _ in 0..500 {
                                assert_eq!((imp.write)(fd, 1), 0);
                            }
                        })
                    })
                    .collect();
                let mut total = 0;
                while total < 2000 {
                    let mut v = 0;
                    assert_eq!(unsafe { (imp.read)(fd, &mut v) }, 0);
                    total += v;
                }
                for w in writers {
                    w.join().expect("writer");
                }
                assert_eq!(total, 2000, "{} flags {flags:#x}", imp.name);
                set_errno(0);
                let mut v = 0;
                let _ = unsafe { libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK) };
                assert_eq!(unsafe { (imp.read)(fd, &mut v) }, -1);
                assert_eq!(
                    errno(),
                    libc::EAGAIN,
                    "{}: counter not empty at the end",
                    imp.name
                );
                close(fd);
            }
        });
    }

    #[test]
    fn eventfd__dup_and_fork_share_the_counter_and_the_mode() {
        leak_checked(|| {
            let fd = slurm_shim_eventfd(0, SEM | NB);
            let other = unsafe { libc::dup(fd) };
            assert_eq!(slurm_shim_eventfd_write(other, 2), 0);
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                let ok = slurm_shim_eventfd_write(fd, 3) == 0;
                unsafe { libc::_exit(if ok { 0 } else { 1 }) };
            }
            let mut status = -1;
            assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "child status {status}"
            );
            let mut got = vec![];
            loop {
                let mut v = 0;
                if unsafe { slurm_shim_eventfd_read(other, &mut v) } != 0 {
                    assert_eq!(errno(), libc::EAGAIN);
                    break;
                }
                got.push(v);
            }
            assert_eq!(got, vec![1; 5], "semaphore reads through the dup");
            close(other);
            close(fd);
        });
    }

    #[test]
    fn eventfd__success_preserves_errno() {
        leak_checked(|| {
            set_errno(4242);
            let fd = slurm_shim_eventfd(2, NB);
            assert!(fd >= 0);
            assert_eq!(errno(), 4242, "eventfd");
            assert_eq!(slurm_shim_eventfd_write(fd, 1), 0);
            assert_eq!(errno(), 4242, "eventfd_write");
            let mut v = 0;
            assert_eq!(unsafe { slurm_shim_eventfd_read(fd, &mut v) }, 0);
            assert_eq!((v, errno()), (3, 4242), "eventfd_read");
            close(fd);
        });
    }
}
