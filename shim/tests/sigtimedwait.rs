//! `slurm_shim_sigtimedwait` against glibc's `sigtimedwait` on the same situations: a
//! pending signal taken (and no longer pending), none pending with a zero timeout (`EAGAIN`
//! at once), none with a short timeout (`EAGAIN` after it), one sent by another thread while
//! waiting, a bad timeout (`EINVAL`), and tls/s2n's use (drain a SIGPIPE raised by a write
//! to a closed socket while SIGPIPE is blocked).
#![allow(non_snake_case)]
// Every unsafe block here is a direct libc call on locals made just before; a SAFETY line on
// each would repeat that.
#![allow(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_os = "linux"))]
#[test]
fn sigtimedwait__differential_tests_need_glibc() {
    eprintln!("skipped: the sigtimedwait tests compare the shim with glibc and run on Linux only");
}

#[cfg(target_os = "linux")]
mod linux {
    use libc::{c_int, sigset_t, timespec};
    use slurm_shim::sigtimedwait::slurm_shim_sigtimedwait;
    use std::time::{Duration, Instant};

    type Wait =
        unsafe extern "C" fn(*const sigset_t, *mut libc::siginfo_t, *const timespec) -> c_int;

    /// glibc's, with the shim's signature.
    unsafe extern "C" fn glibc(
        set: *const sigset_t,
        info: *mut libc::siginfo_t,
        timeout: *const timespec,
    ) -> c_int {
        unsafe { libc::sigtimedwait(set, info, timeout) }
    }

    const BOTH: [(&str, Wait); 2] = [("glibc", glibc), ("shim", slurm_shim_sigtimedwait)];

    fn set_of(sigs: &[c_int]) -> sigset_t {
        let mut set: sigset_t = unsafe { std::mem::zeroed() };
        unsafe { libc::sigemptyset(&mut set) };
        for s in sigs {
            unsafe { libc::sigaddset(&mut set, *s) };
        }
        set
    }

    /// Runs `f` in a new thread with `sigs` blocked there (each test's signals are its own:
    /// tests run in parallel threads of one process).
    fn blocked<T: Send + 'static>(
        sigs: &'static [c_int],
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        std::thread::spawn(move || {
            let set = set_of(sigs);
            assert_eq!(
                unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) },
                0
            );
            f()
        })
        .join()
        .unwrap()
    }

    fn is_pending(sig: c_int) -> bool {
        let mut p: sigset_t = unsafe { std::mem::zeroed() };
        unsafe { libc::sigpending(&mut p) };
        unsafe { libc::sigismember(&p, sig) == 1 }
    }

    fn errno() -> c_int {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }

    /// (return value, errno when -1, info.si_signo, still pending afterwards, seconds taken).
    fn call(
        wait: Wait,
        set: &sigset_t,
        timeout: Option<timespec>,
        sig: c_int,
    ) -> (c_int, c_int, c_int, bool, f64) {
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let t = Instant::now();
        let tp = timeout
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const timespec);
        let r = unsafe { wait(set, &mut info, tp) };
        let e = if r == -1 { errno() } else { 0 };
        (
            r,
            e,
            info.si_signo,
            is_pending(sig),
            t.elapsed().as_secs_f64(),
        )
    }

    const ZERO: timespec = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };

    #[test]
    fn sigtimedwait__pending_signal_is_taken_once_then_eagain() {
        for (name, wait) in BOTH {
            let got = blocked(&[libc::SIGUSR1], move || {
                let set = set_of(&[libc::SIGUSR1]);
                unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGUSR1) };
                assert!(is_pending(libc::SIGUSR1));
                let first = call(wait, &set, Some(ZERO), libc::SIGUSR1);
                let second = call(wait, &set, Some(ZERO), libc::SIGUSR1);
                (first, second)
            });
            let ((r, e, signo, pending, _), (r2, e2, _, _, t2)) = got;
            assert_eq!(
                (r, e, signo, pending),
                (libc::SIGUSR1, 0, libc::SIGUSR1, false),
                "{name}"
            );
            assert_eq!((r2, e2), (-1, libc::EAGAIN), "{name}");
            assert!(t2 < 0.05, "{name}: a zero timeout polls ({t2} s)");
        }
    }

    #[test]
    fn sigtimedwait__a_pending_signal_outside_the_set_is_left_alone() {
        for (name, wait) in BOTH {
            let (r, e, _, pending, _) = blocked(&[libc::SIGUSR2, libc::SIGWINCH], move || {
                unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGWINCH) };
                let out = call(wait, &set_of(&[libc::SIGUSR2]), Some(ZERO), libc::SIGWINCH);
                // Take it so the thread ends clean.
                let _ = call(wait, &set_of(&[libc::SIGWINCH]), Some(ZERO), libc::SIGWINCH);
                out
            });
            assert_eq!((r, e, pending), (-1, libc::EAGAIN, true), "{name}");
        }
    }

    #[test]
    fn sigtimedwait__short_timeout_expires_with_eagain() {
        for (name, wait) in BOTH {
            let (r, e, _, _, t) = blocked(&[libc::SIGURG], move || {
                let ms50 = timespec {
                    tv_sec: 0,
                    tv_nsec: 50_000_000,
                };
                call(wait, &set_of(&[libc::SIGURG]), Some(ms50), libc::SIGURG)
            });
            assert_eq!((r, e), (-1, libc::EAGAIN), "{name}");
            assert!(
                (0.045..1.0).contains(&t),
                "{name}: waited {t} s for a 50 ms timeout"
            );
        }
    }

    #[test]
    fn sigtimedwait__signal_sent_while_waiting_ends_the_wait() {
        for (name, wait) in BOTH {
            let (r, e, signo, _, t) = blocked(&[libc::SIGPROF], move || {
                let me = unsafe { libc::pthread_self() } as usize;
                let sender = std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(30));
                    unsafe { libc::pthread_kill(me as libc::pthread_t, libc::SIGPROF) };
                });
                let two_s = timespec {
                    tv_sec: 2,
                    tv_nsec: 0,
                };
                let out = call(wait, &set_of(&[libc::SIGPROF]), Some(two_s), libc::SIGPROF);
                sender.join().unwrap();
                out
            });
            assert_eq!((r, e, signo), (libc::SIGPROF, 0, libc::SIGPROF), "{name}");
            assert!(t < 1.0, "{name}: took {t} s");
        }
    }

    #[test]
    fn sigtimedwait__bad_timeout_is_einval() {
        for (name, wait) in BOTH {
            let bad = timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000_000,
            };
            let (r, e, _, _, _) = blocked(&[libc::SIGTTIN], move || {
                call(wait, &set_of(&[libc::SIGTTIN]), Some(bad), libc::SIGTTIN)
            });
            assert_eq!((r, e), (-1, libc::EINVAL), "{name}");
        }
    }

    /// tls/s2n's use (tls_s2n.c, 26.05): SIGPIPE blocked around a write to a socket whose
    /// peer is gone, then the SIGPIPE that write raised drained with a zero timeout.
    #[test]
    fn sigtimedwait__drains_the_sigpipe_of_a_write_to_a_closed_peer() {
        for (name, wait) in BOTH {
            let (raised, (r, e, _, pending, _), again) = blocked(&[libc::SIGPIPE], move || {
                let mut sv = [-1; 2];
                unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) };
                unsafe { libc::close(sv[1]) };
                let w = unsafe { libc::write(sv[0], b"x".as_ptr().cast(), 1) };
                assert_eq!((w, errno()), (-1, libc::EPIPE));
                let raised = is_pending(libc::SIGPIPE);
                let set = set_of(&[libc::SIGPIPE]);
                let out = call(wait, &set, Some(ZERO), libc::SIGPIPE);
                let again = call(wait, &set, Some(ZERO), libc::SIGPIPE).0;
                unsafe { libc::close(sv[0]) };
                (raised, out, again)
            });
            assert!(raised, "{name}: the write raised SIGPIPE");
            assert_eq!(
                (r, e, pending, again),
                (libc::SIGPIPE, 0, false, -1),
                "{name}"
            );
        }
    }
}
