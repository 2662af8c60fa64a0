//! Helpers shared by the descriptor tests (each test file is its own binary and includes
//! this module with `mod common;`).
#![allow(dead_code)]

pub mod darwin_c;

use std::collections::BTreeSet;
use std::sync::Mutex;

/// Serialises the tests of one binary, so the descriptor-leak check sees only its own test.
static SERIAL: Mutex<()> = Mutex::new(());

/// The descriptors open in this process.
pub fn open_fds() -> BTreeSet<String> {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

/// Runs `body` serially (see SERIAL) and asserts it left no descriptor open.
pub fn leak_checked(body: impl FnOnce()) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = open_fds();
    body();
    let leaked: Vec<_> = open_fds().difference(&before).cloned().collect();
    assert!(leaked.is_empty(), "descriptors leaked: {leaked:?}");
}

/// The calling thread's errno.
pub fn errno() -> libc::c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Closes `fd`, asserting success.
pub fn close(fd: libc::c_int) {
    // SAFETY: closing a descriptor the test owns.
    assert_eq!(unsafe { libc::close(fd) }, 0, "close({fd})");
}

/// An integer `SOL_SOCKET` option of `fd`.
pub fn sockopt(fd: libc::c_int, opt: libc::c_int) -> libc::c_int {
    let mut v: libc::c_int = -1;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for the call.
    let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, opt, (&raw mut v).cast(), &mut len) };
    assert_eq!(r, 0, "getsockopt({fd}, {opt})");
    v
}

/// Everything a differential test compares about a socket descriptor.
#[derive(Debug, PartialEq, Eq)]
pub struct SocketState {
    pub fd_flags: libc::c_int,
    pub fl_flags: libc::c_int,
    pub so_type: libc::c_int,
    pub so_domain: libc::c_int,
    pub so_protocol: libc::c_int,
    pub so_acceptconn: libc::c_int,
}

/// The [`SocketState`] of `fd`.
pub fn socket_state(fd: libc::c_int) -> SocketState {
    // SAFETY: fcntl queries on a descriptor the test owns.
    let (fd_flags, fl_flags) = unsafe {
        (
            libc::fcntl(fd, libc::F_GETFD),
            libc::fcntl(fd, libc::F_GETFL),
        )
    };
    SocketState {
        fd_flags,
        fl_flags,
        so_type: sockopt(fd, libc::SO_TYPE),
        so_domain: sockopt(fd, libc::SO_DOMAIN),
        so_protocol: sockopt(fd, libc::SO_PROTOCOL),
        so_acceptconn: sockopt(fd, libc::SO_ACCEPTCONN),
    }
}

/// The release staticlib (`panic = "abort"`, as Slurm links it), built into a target dir of
/// its own under the test target dir (the outer cargo holds its own; tests that ask at the
/// same time wait on cargo's lock and then find it built).
pub fn release_staticlib() -> std::path::PathBuf {
    let target_dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("exports-target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "-p", "slurm-shim", "--release", "--target-dir"])
        .arg(&target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run cargo build");
    assert!(status.success(), "cargo build of the staticlib failed");
    target_dir.join("release/libslurm_shim.a")
}
