//! Helpers shared by the descriptor tests (each test file is its own binary and includes
//! this module with `mod common;`).
#![allow(dead_code)]

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
