//! `getsockopt(SO_PEERCRED)` against glibc, the xucred validation through the seam, and
//! the `SO_ACCEPTCONN` decoding.
#![allow(non_snake_case)]

use core::mem::size_of;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};

use libc::{c_int, c_void, socklen_t};
use slurm_shim::errno::{self, Errno};
use slurm_shim::peercred::*;

const SO_PEERCRED: c_int = slurm_shim::consts::flags::SO_PEERCRED;

fn call(
    f: unsafe extern "C" fn(c_int, c_int, c_int, *mut c_void, *mut socklen_t) -> c_int,
    fd: c_int,
    len: socklen_t,
) -> (c_int, c_int, [u8; 16], socklen_t) {
    let mut buf = [0xaau8; 16];
    let mut l = len;
    errno::set(0);
    // SAFETY: `buf` has 16 bytes >= any len used here.
    let rc = unsafe {
        f(
            fd,
            libc::SOL_SOCKET,
            SO_PEERCRED,
            buf.as_mut_ptr().cast(),
            &mut l,
        )
    };
    (rc, if rc == -1 { errno::get() } else { 0 }, buf, l)
}

unsafe extern "C" fn glibc(
    fd: c_int,
    level: c_int,
    name: c_int,
    v: *mut c_void,
    l: *mut socklen_t,
) -> c_int {
    // SAFETY: forwarded as given.
    unsafe { libc::getsockopt(fd, level, name, v, l) }
}

fn socketpair() -> (OwnedFd, OwnedFd) {
    let (a, b) = UnixStream::pair().expect("socketpair");
    (a.into(), b.into())
}

#[test]
fn getsockopt__peercred_same_as_glibc_on_socketpair_and_connected_stream() {
    let (a, _b) = socketpair();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s");
    let listener = UnixListener::bind(&path).expect("bind");
    let client = UnixStream::connect(&path).expect("connect");
    let (server, _) = listener.accept().expect("accept");
    for (what, fd) in [
        ("socketpair", a.as_raw_fd()),
        ("client", client.as_raw_fd()),
        ("server", server.as_raw_fd()),
    ] {
        let g = call(glibc, fd, size_of::<slurm_shim_ucred>() as socklen_t);
        let s = call(
            slurm_shim_getsockopt,
            fd,
            size_of::<slurm_shim_ucred>() as socklen_t,
        );
        assert_eq!(g.0, 0, "{what}");
        assert_eq!(s, g, "{what}");
        // SAFETY: getpid/geteuid/getegid have no preconditions.
        let me = unsafe { (libc::getpid(), libc::geteuid(), libc::getegid()) };
        let u: [u32; 3] = core::array::from_fn(|i| {
            u32::from_ne_bytes(s.2[i * 4..i * 4 + 4].try_into().expect("4"))
        });
        assert_eq!((u[0] as i32, u[1], u[2]), me, "{what}: our own pid/uid/gid");
    }
}

#[test]
fn getsockopt__peercred_short_and_long_len_like_glibc() {
    let (a, _b) = socketpair();
    for len in [0, 1, 4, 8, 11, 12, 13, 16] {
        let g = call(glibc, a.as_raw_fd(), len);
        let s = call(slurm_shim_getsockopt, a.as_raw_fd(), len);
        assert_eq!(s, g, "len {len}");
    }
    // A negative length.
    let g = call(glibc, a.as_raw_fd(), (-1i32) as socklen_t);
    let s = call(slurm_shim_getsockopt, a.as_raw_fd(), (-1i32) as socklen_t);
    assert_eq!((s.0, s.1), (g.0, g.1));
    assert_eq!((g.0, g.1), (-1, libc::EINVAL));
}

#[test]
fn getsockopt__peercred_errors_like_glibc() {
    let file = tempfile::tempfile().expect("tempfile");
    for (what, fd, want) in [
        ("not a socket", file.as_raw_fd(), libc::ENOTSOCK),
        ("bad fd", 100_000, libc::EBADF),
        ("negative fd", -1, libc::EBADF),
    ] {
        let g = call(glibc, fd, 12);
        let s = call(slurm_shim_getsockopt, fd, 12);
        assert_eq!((g.0, g.1), (-1, want), "{what}");
        assert_eq!(s, g, "{what}");
    }
    let (a, _b) = socketpair();
    let mut l: socklen_t = 12;
    errno::set(0);
    // SAFETY: NULL value with a non-zero length is checked.
    let rc = unsafe {
        slurm_shim_getsockopt(
            a.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_PEERCRED,
            core::ptr::null_mut(),
            &mut l,
        )
    };
    assert_eq!((rc, errno::get()), (-1, libc::EFAULT));
    let mut v = [0u8; 12];
    // SAFETY: NULL len is checked.
    let rc = unsafe {
        slurm_shim_getsockopt(
            a.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_PEERCRED,
            v.as_mut_ptr().cast(),
            core::ptr::null_mut(),
        )
    };
    assert_eq!((rc, errno::get()), (-1, libc::EFAULT));
}

#[test]
fn getsockopt__other_options_pass_through() {
    let (a, _b) = socketpair();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    for (fd, name) in [
        (a.as_raw_fd(), libc::SO_TYPE),
        (a.as_raw_fd(), libc::SO_ACCEPTCONN),
        (listener.as_raw_fd(), libc::SO_ACCEPTCONN),
        (a.as_raw_fd(), libc::SO_RCVBUF),
    ] {
        let mut gv: c_int = -7;
        let mut sv: c_int = -7;
        let mut gl = 4 as socklen_t;
        let mut sl = 4 as socklen_t;
        // SAFETY: int-sized buffers.
        let g =
            unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, name, (&raw mut gv).cast(), &mut gl) };
        // SAFETY: as above.
        let s = unsafe {
            slurm_shim_getsockopt(fd, libc::SOL_SOCKET, name, (&raw mut sv).cast(), &mut sl)
        };
        assert_eq!((s, sv, sl), (g, gv, gl), "option {name}");
    }
}

struct Fake {
    x: Result<(RawXucred, socklen_t), Errno>,
    pid: Result<libc::pid_t, Errno>,
}
impl PeerOs for Fake {
    fn peer_xucred(&self, _: c_int) -> Result<(RawXucred, socklen_t), Errno> {
        self.x
    }
    fn peer_pid(&self, _: c_int) -> Result<libc::pid_t, Errno> {
        self.pid
    }
}

fn good() -> RawXucred {
    let mut x = RawXucred {
        cr_version: XUCRED_VERSION,
        cr_uid: 501,
        cr_ngroups: 3,
        ..Default::default()
    };
    x.cr_groups[..3].copy_from_slice(&[20, 12, 61]);
    x
}

const XLEN: socklen_t = size_of::<RawXucred>() as socklen_t;

#[test]
fn getsockopt__seam_combines_xucred_and_peer_pid() {
    assert_eq!(XLEN, 76, "sizeof(struct xucred) on Darwin");
    let f = Fake {
        x: Ok((good(), XLEN)),
        pid: Ok(4242),
    };
    assert_eq!(
        peercred_impl(&f, 3),
        Ok(slurm_shim_ucred {
            pid: 4242,
            uid: 501,
            gid: 20
        })
    );
}

#[test]
fn getsockopt__seam_rejects_bad_xucred_with_einval() {
    let bad_version = RawXucred {
        cr_version: 1,
        ..good()
    };
    let no_groups = RawXucred {
        cr_ngroups: 0,
        ..good()
    };
    let neg_groups = RawXucred {
        cr_ngroups: -1,
        ..good()
    };
    let too_many = RawXucred {
        cr_ngroups: 17,
        ..good()
    };
    for (what, x, len) in [
        ("version", bad_version, XLEN),
        ("0 groups", no_groups, XLEN),
        ("-1 groups", neg_groups, XLEN),
        ("17 groups", too_many, XLEN),
        ("short reply", good(), XLEN - 4),
        ("empty reply", good(), 0),
    ] {
        let f = Fake {
            x: Ok((x, len)),
            pid: Ok(1),
        };
        assert_eq!(peercred_impl(&f, 3), Err(Errno(libc::EINVAL)), "{what}");
    }
}

#[test]
fn getsockopt__seam_passes_os_errors_on() {
    let f = Fake {
        x: Err(Errno(libc::ENOTCONN)),
        pid: Ok(1),
    };
    assert_eq!(peercred_impl(&f, 3), Err(Errno(libc::ENOTCONN)));
    let f = Fake {
        x: Ok((good(), XLEN)),
        pid: Err(Errno(libc::EOPNOTSUPP)),
    };
    assert_eq!(peercred_impl(&f, 3), Err(Errno(libc::EOPNOTSUPP)));
}

#[test]
fn getsockopt__acceptconn_decoded_from_socket_fdinfo() {
    let mut reply = vec![0u8; 792];
    reply[SOI_TYPE_OFFSET..SOI_TYPE_OFFSET + 4].copy_from_slice(&1i32.to_ne_bytes());
    reply[SOI_OPTIONS_OFFSET..SOI_OPTIONS_OFFSET + 2]
        .copy_from_slice(&(0x0002u16 | 0x0004).to_ne_bytes());
    assert_eq!(
        acceptconn_from_fdinfo(&reply, 1),
        Some(1),
        "listening stream"
    );
    reply[SOI_OPTIONS_OFFSET..SOI_OPTIONS_OFFSET + 2].copy_from_slice(&0x0004u16.to_ne_bytes());
    assert_eq!(acceptconn_from_fdinfo(&reply, 1), Some(0), "not listening");
    assert_eq!(
        acceptconn_from_fdinfo(&reply, 2),
        None,
        "soi_type disagrees with SO_TYPE: layout not trusted"
    );
    assert_eq!(
        acceptconn_from_fdinfo(&reply[..SOI_OPTIONS_OFFSET + 1], 1),
        None,
        "short reply"
    );
    assert_eq!(acceptconn_from_fdinfo(&[], 1), None);
}
