//! `slurm_shim_pipe2` against glibc's `pipe2` on the same inputs: return value, errno,
//! `F_GETFD`/`F_GETFL` of both ends, untouched output on failure, no leaked descriptor.
#![allow(non_snake_case)]
// Every unsafe block here is a direct libc call on locals or descriptors made just before;
// a SAFETY line on each would repeat that.
#![allow(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_os = "linux"))]
#[test]
fn pipe2__differential_tests_need_glibc() {
    eprintln!("skipped: the pipe2 tests compare the shim with glibc and run on Linux only");
}

#[cfg(target_os = "linux")]
mod common;

#[cfg(target_os = "linux")]
mod linux {
    use crate::common::{errno, leak_checked, open_fds};

    use libc::c_int;
    use slurm_shim::pipe2::slurm_shim_pipe2;

    /// (return value, errno if it failed, the two slots).
    type Outcome = (c_int, c_int, [c_int; 2]);

    fn glibc(flags: c_int) -> Outcome {
        let mut fds = [-7, -7];
        let r = unsafe { libc::pipe2(fds.as_mut_ptr(), flags) };
        (r, if r == -1 { errno() } else { 0 }, fds)
    }

    fn shim(flags: c_int) -> Outcome {
        let mut fds = [-7, -7];
        let r = unsafe { slurm_shim_pipe2(fds.as_mut_ptr(), flags) };
        (r, if r == -1 { errno() } else { 0 }, fds)
    }

    /// (F_GETFD, F_GETFL) of a descriptor.
    fn flags_of(fd: c_int) -> (c_int, c_int) {
        unsafe {
            (
                libc::fcntl(fd, libc::F_GETFD),
                libc::fcntl(fd, libc::F_GETFL),
            )
        }
    }

    fn close_all(fds: [c_int; 2]) {
        for fd in fds {
            assert_eq!(unsafe { libc::close(fd) }, 0, "close({fd})");
        }
    }

    fn assert_pipe_works(fds: [c_int; 2]) {
        let msg = *b"ping";
        assert_eq!(unsafe { libc::write(fds[1], msg.as_ptr().cast(), 4) }, 4);
        let mut got = [0u8; 4];
        assert_eq!(unsafe { libc::read(fds[0], got.as_mut_ptr().cast(), 4) }, 4);
        assert_eq!(got, msg);
    }

    #[test]
    fn pipe2__every_flag_combination_matches_glibc() {
        leak_checked(|| {
            for flags in [
                0,
                libc::O_CLOEXEC,
                libc::O_NONBLOCK,
                libc::O_CLOEXEC | libc::O_NONBLOCK,
            ] {
                let (gr, ge, gfds) = glibc(flags);
                let (sr, se, sfds) = shim(flags);
                assert_eq!((sr, se), (gr, ge), "flags {flags:#x}");
                assert_eq!(sr, 0);
                for end in 0..2 {
                    assert_eq!(
                        flags_of(sfds[end]),
                        flags_of(gfds[end]),
                        "flags {flags:#x}, end {end}: (F_GETFD, F_GETFL) differ"
                    );
                }
                assert_eq!(
                    flags_of(sfds[0]).0 & libc::FD_CLOEXEC != 0,
                    flags & libc::O_CLOEXEC != 0
                );
                assert_eq!(
                    flags_of(sfds[1]).1 & libc::O_NONBLOCK != 0,
                    flags & libc::O_NONBLOCK != 0
                );
                assert_pipe_works(sfds);
                close_all(gfds);
                close_all(sfds);
            }
        });
    }

    #[test]
    fn pipe2__unknown_flags_give_einval_and_leave_the_array_untouched() {
        leak_checked(|| {
            for flags in [
                libc::O_APPEND,
                libc::O_RDWR,
                libc::O_NOCTTY,
                libc::O_CLOEXEC | libc::O_APPEND,
                libc::O_NONBLOCK | libc::O_TRUNC,
                i32::MIN,
                -1,
            ] {
                let g = glibc(flags);
                let s = shim(flags);
                assert_eq!(s, g, "flags {flags:#x}");
                assert_eq!(s, (-1, libc::EINVAL, [-7, -7]), "flags {flags:#x}");
            }
        });
    }

    #[test]
    fn pipe2__null_array_gives_efault_and_bad_flags_win_like_glibc() {
        leak_checked(|| {
            for flags in [0, libc::O_CLOEXEC, libc::O_NONBLOCK, libc::O_APPEND] {
                let g = unsafe { libc::pipe2(std::ptr::null_mut(), flags) };
                let ge = errno();
                let s = unsafe { slurm_shim_pipe2(std::ptr::null_mut(), flags) };
                let se = errno();
                assert_eq!((s, se), (g, ge), "flags {flags:#x}");
                let want = if flags == libc::O_APPEND {
                    libc::EINVAL
                } else {
                    libc::EFAULT
                };
                assert_eq!((s, se), (-1, want), "flags {flags:#x}");
            }
        });
    }

    #[test]
    fn pipe2__descriptor_limit_gives_emfile_like_glibc_without_half_a_pipe() {
        leak_checked(|| {
            let mut old = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) }, 0);
            // A low limit keeps the filling loop short.
            let highest = open_fds()
                .iter()
                .filter_map(|s| s.parse::<u64>().ok())
                .max()
                .unwrap_or(2);
            let lim = libc::rlimit {
                rlim_cur: highest + 16,
                rlim_max: old.rlim_max,
            };
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
            // Occupy every free slot, then free exactly one: a pipe needs two.
            let mut held = Vec::new();
            loop {
                let fd = unsafe { libc::dup(0) };
                if fd < 0 {
                    break;
                }
                held.push(fd);
            }
            let last = held.pop();
            if let Some(fd) = last {
                unsafe { libc::close(fd) };
            }
            let g = glibc(libc::O_CLOEXEC);
            let s = shim(libc::O_CLOEXEC);
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) }, 0);
            let probe = unsafe { libc::dup(0) };
            // The one free slot is still free: the shim did not keep half a pipe.
            assert!(probe >= 0);
            held.push(probe);
            for fd in held {
                unsafe { libc::close(fd) };
            }
            assert_eq!(s, g);
            assert_eq!(s, (-1, libc::EMFILE, [-7, -7]));
        });
    }

    #[test]
    fn pipe2__o_direct_is_not_emulated_and_gives_einval() {
        leak_checked(|| {
            let (gr, _, gfds) = glibc(libc::O_DIRECT);
            eprintln!(
                "documented divergence: glibc pipe2(O_DIRECT) returns {gr} (packet mode), the shim EINVAL"
            );
            if gr == 0 {
                close_all(gfds);
            }
            assert_eq!(shim(libc::O_DIRECT), (-1, libc::EINVAL, [-7, -7]));
        });
    }

    #[test]
    fn pipe2__success_preserves_errno() {
        leak_checked(|| {
            for flags in [0, libc::O_CLOEXEC | libc::O_NONBLOCK] {
                unsafe { *libc::__errno_location() = 4242 };
                let (r, _, fds) = shim(flags);
                assert_eq!(r, 0);
                assert_eq!(errno(), 4242);
                close_all(fds);
            }
        });
    }
}
