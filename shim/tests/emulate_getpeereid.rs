//! `getpeereid` (shim/src/emulate/getpeereid.rs): the peer's effective ids of an AF_UNIX
//! socket pair, as glibc's SO_PEERCRED gives them.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use slurm_shim::emulate::getpeereid::peer_ids;
use slurm_shim::errno::Errno;

#[test]
fn getpeereid__socketpair_peer_is_this_process() {
    let mut sv = [0; 2];
    // SAFETY: `sv` has room for two descriptors.
    let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) };
    assert_eq!(rc, 0);
    // SAFETY: geteuid/getegid cannot fail.
    let want = unsafe { (libc::geteuid(), libc::getegid()) };
    assert_eq!(peer_ids(sv[0]), Ok(want));
    common::close(sv[0]);
    common::close(sv[1]);
    assert_eq!(peer_ids(-1), Err(Errno(libc::EBADF)));
}

#[test]
fn getpeereid__unconnected_socket_is_enotconn() {
    // SAFETY: plain socket creation.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
    assert!(fd >= 0);
    assert_eq!(peer_ids(fd), Err(Errno(libc::ENOTCONN)));
    common::close(fd);
}
