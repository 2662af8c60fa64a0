//! `slurm_shim_socket` / `slurm_shim_socketpair` against glibc on the same inputs: return
//! value, errno, `F_GETFD`/`F_GETFL`, `SO_TYPE`/`SO_DOMAIN`/`SO_PROTOCOL`, untouched output
//! on failure, no leaked descriptor.
#![allow(non_snake_case)]
// Every unsafe block here is a direct libc call on locals or descriptors made just before;
// a SAFETY line on each would repeat that.
#![allow(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_os = "linux"))]
#[test]
fn socket__differential_tests_need_glibc() {
    eprintln!("skipped: the socket tests compare the shim with glibc and run on Linux only");
}

#[cfg(target_os = "linux")]
mod common;

#[cfg(target_os = "linux")]
mod linux {
    use crate::common::{close, errno, leak_checked, socket_state as state};

    use libc::c_int;
    use slurm_shim::socket::{slurm_shim_socket, slurm_shim_socketpair};

    const FLAG_SETS: [c_int; 4] = [
        0,
        libc::SOCK_CLOEXEC,
        libc::SOCK_NONBLOCK,
        libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
    ];

    /// (domain, type, protocol) triples: valid ones and ones the kernel rejects.
    const TRIPLES: [(c_int, c_int, c_int); 12] = [
        (libc::AF_INET, libc::SOCK_STREAM, 0),
        (libc::AF_INET, libc::SOCK_DGRAM, 0),
        (libc::AF_INET, libc::SOCK_STREAM, libc::IPPROTO_TCP),
        (libc::AF_INET6, libc::SOCK_STREAM, 0),
        (libc::AF_INET6, libc::SOCK_DGRAM, 0),
        (libc::AF_UNIX, libc::SOCK_STREAM, 0),
        (libc::AF_UNIX, libc::SOCK_DGRAM, 0),
        (libc::AF_UNIX, libc::SOCK_SEQPACKET, 0),
        (9999, libc::SOCK_STREAM, 0),
        (libc::AF_INET, libc::SOCK_STREAM, libc::IPPROTO_UDP),
        (libc::AF_INET, 0xe, 0),
        (libc::AF_UNIX, libc::SOCK_STREAM, 77),
    ];

    #[test]
    fn socket__every_flag_combination_and_triple_matches_glibc() {
        leak_checked(|| {
            let mut compared = 0;
            for (domain, ty, proto) in TRIPLES {
                for flags in FLAG_SETS {
                    let g = unsafe { libc::socket(domain, ty | flags, proto) };
                    let ge = if g < 0 { errno() } else { 0 };
                    let s = slurm_shim_socket(domain, ty | flags, proto);
                    let se = if s < 0 { errno() } else { 0 };
                    let what = format!("socket({domain}, {ty}|{flags:#x}, {proto})");
                    assert_eq!((s < 0, se), (g < 0, ge), "{what}: (failed, errno) differ");
                    if s >= 0 {
                        assert_eq!(state(s), state(g), "{what}");
                        let st = state(s);
                        assert_eq!(
                            st.fd_flags & libc::FD_CLOEXEC != 0,
                            flags & libc::SOCK_CLOEXEC != 0
                        );
                        assert_eq!(
                            st.fl_flags & libc::O_NONBLOCK != 0,
                            flags & libc::SOCK_NONBLOCK != 0
                        );
                        close(s);
                        close(g);
                        compared += 1;
                    }
                }
            }
            eprintln!("socket: {compared} successful creations compared with glibc");
            assert!(
                compared >= 24,
                "too few sockets could be created: {compared}"
            );
        });
    }

    #[test]
    fn socket__unknown_type_bits_give_einval_before_domain_checks_like_glibc() {
        leak_checked(|| {
            for extra in [
                0x10,
                0x100,
                libc::O_APPEND,
                0x4000_0000,
                i32::MIN,
                libc::SOCK_CLOEXEC | 0x20,
            ] {
                for domain in [libc::AF_INET, libc::AF_UNIX, 9999] {
                    let ty = libc::SOCK_STREAM | extra;
                    let g = unsafe { libc::socket(domain, ty, 0) };
                    let ge = errno();
                    let s = slurm_shim_socket(domain, ty, 0);
                    let se = errno();
                    assert_eq!((s, se), (g, ge), "socket({domain}, {ty:#x}, 0)");
                    assert_eq!((s, se), (-1, libc::EINVAL), "socket({domain}, {ty:#x}, 0)");
                }
            }
        });
    }

    #[test]
    fn socketpair__every_flag_combination_matches_glibc_and_carries_data() {
        leak_checked(|| {
            for ty in [libc::SOCK_STREAM, libc::SOCK_DGRAM, libc::SOCK_SEQPACKET] {
                for flags in FLAG_SETS {
                    let mut g = [-7; 2];
                    let mut s = [-7; 2];
                    assert_eq!(
                        unsafe { libc::socketpair(libc::AF_UNIX, ty | flags, 0, g.as_mut_ptr()) },
                        0
                    );
                    assert_eq!(
                        unsafe {
                            slurm_shim_socketpair(libc::AF_UNIX, ty | flags, 0, s.as_mut_ptr())
                        },
                        0
                    );
                    for end in 0..2 {
                        assert_eq!(
                            state(s[end]),
                            state(g[end]),
                            "type {ty}|{flags:#x} end {end}"
                        );
                    }
                    let msg = *b"pair";
                    assert_eq!(unsafe { libc::write(s[0], msg.as_ptr().cast(), 4) }, 4);
                    let mut got = [0u8; 4];
                    assert_eq!(unsafe { libc::read(s[1], got.as_mut_ptr().cast(), 4) }, 4);
                    assert_eq!(got, msg);
                    for fd in g.into_iter().chain(s) {
                        close(fd);
                    }
                }
            }
        });
    }

    #[test]
    fn socketpair__errors_match_glibc_and_leave_sv_untouched() {
        leak_checked(|| {
            let cases = [
                (libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0),
                (libc::AF_INET, libc::SOCK_DGRAM, 0),
                (9999, libc::SOCK_STREAM, 0),
                (libc::AF_UNIX, libc::SOCK_STREAM | 0x100, 0),
                (libc::AF_UNIX, libc::SOCK_STREAM | libc::O_APPEND, 0),
                (libc::AF_UNIX, libc::SOCK_STREAM, 77),
            ];
            for (domain, ty, proto) in cases {
                let mut g = [-7; 2];
                let mut s = [-7; 2];
                let gr = unsafe { libc::socketpair(domain, ty, proto, g.as_mut_ptr()) };
                let ge = errno();
                let sr = unsafe { slurm_shim_socketpair(domain, ty, proto, s.as_mut_ptr()) };
                let se = errno();
                assert_eq!((sr, se), (gr, ge), "socketpair({domain}, {ty:#x}, {proto})");
                assert_eq!(sr, -1);
                assert_eq!(s, [-7, -7], "sv touched on failure");
            }
            assert_eq!(
                unsafe {
                    slurm_shim_socketpair(
                        libc::AF_UNIX,
                        libc::SOCK_STREAM | 0x100,
                        0,
                        std::ptr::null_mut(),
                    )
                },
                -1
            );
            assert_eq!(
                errno(),
                libc::EINVAL,
                "bad type flags win over a NULL sv, as on Linux"
            );
        });
    }

    #[test]
    fn socketpair__null_sv_gives_efault_like_glibc() {
        leak_checked(|| {
            for flags in FLAG_SETS {
                let ty = libc::SOCK_STREAM | flags;
                let g = unsafe { libc::socketpair(libc::AF_UNIX, ty, 0, std::ptr::null_mut()) };
                let ge = errno();
                let s =
                    unsafe { slurm_shim_socketpair(libc::AF_UNIX, ty, 0, std::ptr::null_mut()) };
                let se = errno();
                assert_eq!((s, se), (g, ge));
                assert_eq!((s, se), (-1, libc::EFAULT));
            }
        });
    }

    #[test]
    fn socket__success_preserves_errno() {
        leak_checked(|| {
            unsafe { *libc::__errno_location() = 4242 };
            let s = slurm_shim_socket(
                libc::AF_INET,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                0,
            );
            assert!(s >= 0);
            assert_eq!(errno(), 4242);
            close(s);
        });
    }
}
