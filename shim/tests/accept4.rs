//! `slurm_shim_accept4` against glibc's `accept4` on the same inputs: return value, errno,
//! `F_GETFD`/`F_GETFL` (in particular: no `O_NONBLOCK` inherited from the listener),
//! socket options, the address copy-out, untouched output on failure, no leaked descriptor.
#![allow(non_snake_case)]
// Every unsafe block here is a direct libc call on locals or descriptors made just before;
// a SAFETY line on each would repeat that.
#![allow(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_os = "linux"))]
#[test]
fn accept4__differential_tests_need_glibc() {
    eprintln!("skipped: the accept4 tests compare the shim with glibc and run on Linux only");
}

#[cfg(target_os = "linux")]
mod common;

#[cfg(target_os = "linux")]
mod linux {
    use crate::common::{close, errno, leak_checked, socket_state as state};
    use std::time::{Duration, Instant};

    use libc::{c_int, sockaddr, sockaddr_storage, socklen_t};
    use slurm_shim::accept4::slurm_shim_accept4;

    /// A listening socket and the address clients connect to.
    struct Listener {
        fd: c_int,
        addr: sockaddr_storage,
        len: socklen_t,
        _dir: Option<tempfile::TempDir>,
    }

    impl Drop for Listener {
        fn drop(&mut self) {
            unsafe { libc::close(self.fd) };
        }
    }

    fn listener(unix: bool, nonblocking: bool) -> Listener {
        let mut addr: sockaddr_storage = unsafe { std::mem::zeroed() };
        let (fd, len, dir) = if unix {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("l");
            let sun = (&raw mut addr).cast::<libc::sockaddr_un>();
            let bytes = path.as_os_str().as_encoded_bytes();
            unsafe {
                (*sun).sun_family = libc::AF_UNIX as _;
                for (d, &s) in (*sun).sun_path.iter_mut().zip(bytes) {
                    *d = s as _;
                }
            }
            let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
            (fd, size_of::<libc::sockaddr_un>() as socklen_t, Some(dir))
        } else {
            let sin = (&raw mut addr).cast::<libc::sockaddr_in>();
            unsafe {
                (*sin).sin_family = libc::AF_INET as _;
                (*sin).sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
            }
            let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
            (fd, size_of::<libc::sockaddr_in>() as socklen_t, None)
        };
        assert!(fd >= 0);
        let mut len = len;
        unsafe {
            assert_eq!(
                libc::bind(fd, (&raw const addr).cast(), len),
                0,
                "bind: {}",
                errno()
            );
            assert_eq!(libc::listen(fd, 64), 0);
            assert_eq!(libc::getsockname(fd, (&raw mut addr).cast(), &mut len), 0);
            if nonblocking {
                assert_eq!(libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK), 0);
            }
        }
        Listener {
            fd,
            addr,
            len,
            _dir: dir,
        }
    }

    /// A connected client; its connection is pending on the listener.
    fn client(l: &Listener) -> c_int {
        let family = c_int::from(l.addr.ss_family);
        let fd = unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        assert!(fd >= 0);
        let r = unsafe { libc::connect(fd, (&raw const l.addr).cast(), l.len) };
        assert_eq!(r, 0, "connect: {}", errno());
        fd
    }

    const FLAG_SETS: [c_int; 4] = [
        0,
        libc::SOCK_CLOEXEC,
        libc::SOCK_NONBLOCK,
        libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
    ];

    type Accept = unsafe extern "C" fn(c_int, *mut sockaddr, *mut socklen_t, c_int) -> c_int;

    fn glibc_accept4() -> Accept {
        libc::accept4
    }

    #[test]
    fn accept4__every_flag_combination_matches_glibc_on_blocking_and_nonblocking_listeners() {
        leak_checked(|| {
            for unix in [false, true] {
                for nonblocking in [false, true] {
                    let l = listener(unix, nonblocking);
                    for flags in FLAG_SETS {
                        let mut out = Vec::new();
                        for accept in [glibc_accept4(), slurm_shim_accept4 as Accept] {
                            let c = client(&l);
                            let mut addr: sockaddr_storage = unsafe { std::mem::zeroed() };
                            let mut len = size_of::<sockaddr_storage>() as socklen_t;
                            let fd =
                                unsafe { accept(l.fd, (&raw mut addr).cast(), &mut len, flags) };
                            assert!(fd >= 0, "accept4 failed: {}", errno());
                            out.push((state(fd), len, addr.ss_family));
                            close(fd);
                            close(c);
                        }
                        let what = format!(
                            "unix {unix}, nonblocking listener {nonblocking}, flags {flags:#x}"
                        );
                        assert_eq!(out[1], out[0], "{what}: shim vs glibc");
                        let st = &out[1].0;
                        assert_eq!(
                            st.fd_flags & libc::FD_CLOEXEC != 0,
                            flags & libc::SOCK_CLOEXEC != 0,
                            "{what}"
                        );
                        assert_eq!(
                            st.fl_flags & libc::O_NONBLOCK != 0,
                            flags & libc::SOCK_NONBLOCK != 0,
                            "{what}"
                        );
                    }
                }
            }
        });
    }

    #[test]
    fn accept4__errors_match_glibc_and_leave_the_address_untouched() {
        leak_checked(|| {
            let idle = listener(false, true);
            let mut pipe = [-1; 2];
            assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
            let unlistening = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
            let mut cases = vec![];
            for flags in FLAG_SETS {
                cases.push((-1, flags, libc::EBADF));
                cases.push((999, flags, libc::EBADF));
                cases.push((pipe[0], flags, libc::ENOTSOCK));
                cases.push((unlistening, flags, libc::EINVAL));
                cases.push((idle.fd, flags, libc::EAGAIN));
            }
            for bad in [0x1, libc::O_APPEND, 0x100, -1] {
                cases.push((-1, bad, libc::EBADF)); // the descriptor is looked up first,
                cases.push((pipe[0], bad, libc::EINVAL)); // then the flags,
                cases.push((idle.fd, bad, libc::EINVAL)); // then the socket.
            }
            for (fd, flags, want) in cases {
                let mut results = vec![];
                for accept in [glibc_accept4(), slurm_shim_accept4 as Accept] {
                    let mut addr = [0xa5u8; 128];
                    let mut len: socklen_t = 128;
                    let r = unsafe { accept(fd, addr.as_mut_ptr().cast(), &mut len, flags) };
                    let e = errno();
                    assert_eq!(addr, [0xa5u8; 128], "address touched on failure");
                    assert_eq!(len, 128, "length touched on failure");
                    results.push((r, e));
                }
                assert_eq!(results[1], results[0], "accept4({fd}, .., {flags:#x})");
                assert_eq!(results[1], (-1, want), "accept4({fd}, .., {flags:#x})");
            }
            for fd in [pipe[0], pipe[1], unlistening] {
                close(fd);
            }
        });
    }

    #[test]
    fn accept4__address_copy_out_matches_glibc() {
        leak_checked(|| {
            let l = listener(false, false);
            for accept in [glibc_accept4(), slurm_shim_accept4 as Accept] {
                // A NULL address ignores the length pointer and leaves it alone.
                let c = client(&l);
                let mut len: socklen_t = 3;
                let fd =
                    unsafe { accept(l.fd, std::ptr::null_mut(), &mut len, libc::SOCK_CLOEXEC) };
                assert!(fd >= 0);
                assert_eq!(len, 3);
                close(fd);
                close(c);
                // A short buffer: truncated copy, full length reported.
                let c = client(&l);
                let mut addr = [0xa5u8; 16];
                let mut len: socklen_t = 4;
                let fd =
                    unsafe { accept(l.fd, addr.as_mut_ptr().cast(), &mut len, libc::SOCK_CLOEXEC) };
                assert!(fd >= 0);
                assert_eq!(len as usize, size_of::<libc::sockaddr_in>());
                assert_eq!(&addr[..2], &(libc::AF_INET as u16).to_ne_bytes());
                assert_eq!(&addr[4..], &[0xa5u8; 12], "copied past the given length");
                close(fd);
                close(c);
                // Address without length: EFAULT, the connection is consumed.
                let c = client(&l);
                let mut addr = [0u8; 16];
                let r = unsafe {
                    accept(
                        l.fd,
                        addr.as_mut_ptr().cast(),
                        std::ptr::null_mut(),
                        libc::SOCK_CLOEXEC,
                    )
                };
                assert_eq!((r, errno()), (-1, libc::EFAULT));
                close(c);
                // A negative length: EINVAL.
                let c = client(&l);
                let mut len = (-1i32) as socklen_t;
                let r = unsafe { accept(l.fd, addr.as_mut_ptr().cast(), &mut len, 0) };
                assert_eq!((r, errno()), (-1, libc::EINVAL));
                close(c);
            }
            // Nothing is left pending: both implementations consumed the same connections.
            unsafe { libc::fcntl(l.fd, libc::F_SETFL, libc::O_NONBLOCK) };
            let r = unsafe { libc::accept(l.fd, std::ptr::null_mut(), std::ptr::null_mut()) };
            assert_eq!((r, errno()), (-1, libc::EAGAIN));
        });
    }

    #[test]
    fn accept4__blocking_listener_waits_for_a_client() {
        leak_checked(|| {
            let l = listener(false, false);
            let addr = l.addr;
            let len = l.len;
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(150));
                let fd = unsafe {
                    libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0)
                };
                assert_eq!(
                    unsafe { libc::connect(fd, (&raw const addr).cast(), len) },
                    0
                );
                fd
            });
            let start = Instant::now();
            let fd = unsafe {
                slurm_shim_accept4(
                    l.fd,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_CLOEXEC,
                )
            };
            let waited = start.elapsed();
            let c = t.join().expect("client thread");
            assert!(fd >= 0, "accept4: {}", errno());
            assert!(
                waited >= Duration::from_millis(100),
                "returned after {waited:?}"
            );
            assert_eq!(state(fd).fd_flags, libc::FD_CLOEXEC);
            close(fd);
            close(c);
        });
    }

    #[test]
    fn accept4__blocked_cloexec_accept_does_not_stall_fork() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        leak_checked(|| {
            let l = listener(false, false);
            let (lfd, addr, len) = (l.fd, l.addr, l.len);
            let t = std::thread::spawn(move || unsafe {
                slurm_shim_accept4(
                    lfd,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_CLOEXEC,
                )
            });
            // Connects a client once the fork is done, or after 3 s if fork is stalled
            // (so a regression fails the timing assertion instead of hanging).
            let forked = Arc::new(AtomicBool::new(false));
            let seen = Arc::clone(&forked);
            let releaser = std::thread::spawn(move || {
                let start = Instant::now();
                while !seen.load(Ordering::Acquire) && start.elapsed() < Duration::from_secs(3) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let fd = unsafe {
                    libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0)
                };
                assert_eq!(
                    unsafe { libc::connect(fd, (&raw const addr).cast(), len) },
                    0
                );
                fd
            });
            std::thread::sleep(Duration::from_millis(100));
            let start = Instant::now();
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                unsafe { libc::_exit(0) };
            }
            assert!(pid > 0);
            let forked_in = start.elapsed();
            forked.store(true, Ordering::Release);
            let mut status = 0;
            assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
            let c = releaser.join().expect("releaser thread");
            let fd = t.join().expect("accept thread");
            assert!(fd >= 0);
            close(fd);
            close(c);
            assert!(
                forked_in < Duration::from_secs(2),
                "fork waited {forked_in:?} for a blocked accept4"
            );
        });
    }
}
