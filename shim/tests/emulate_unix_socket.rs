//! `connect`/`bind` of `AF_UNIX` paths (shim/src/emulate/unix_socket.rs): macOS's 104-byte
//! `sun_path` and no `/run`, against glibc's 108 bytes.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use slurm_shim::emulate::unix_socket::{MAC_SUN_PATH, mac_refusal};

#[test]
fn bind__path_of_104_bytes_is_too_long_on_macos() {
    assert_eq!(mac_refusal(&[b'a'; 103]), None);
    assert_eq!(mac_refusal(&[b'a'; MAC_SUN_PATH]), Some(libc::ENAMETOOLONG));
    assert_eq!(mac_refusal(b"/run/slurm/sack.socket"), Some(libc::ENOENT));
    assert_eq!(mac_refusal(b"/var/run/slurm/sack.socket"), None);
    assert_eq!(mac_refusal(b"\0abstract"), None);
}

const BIND_LONG: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	(void) argc;
	/* argv[1]: a directory; the socket path is padded to 105 bytes (fits glibc's 108). */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/", argv[1]);
	while (strlen(sa.sun_path) < 105)
		strcat(sa.sun_path, "s");
	if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0) {
		unlink(sa.sun_path);
		puts("bound");
		return 0;
	}
	printf("%s\n", strerror(errno));
	return 1;
}
"#;

#[test]
fn bind__darwin_translation_unit_refuses_what_glibc_binds() {
    let dir = tempfile::tempdir_in("/tmp").expect("tempdir");
    let d = dir.path().to_str().expect("utf-8 path");
    assert!(d.len() < 60, "{d}");
    let run = common::darwin_c::run("bind-long", BIND_LONG, &[], &[]);
    // The runner has no arguments hook: run the binary again with one.
    let exe =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("darwin-c/bind-long/bind-long");
    let _ = run;
    let mac = std::process::Command::new(&exe)
        .env_remove("SLURM_SHIM_EMULATION_OFF")
        .arg(d)
        .output()
        .expect("run");
    assert_eq!(String::from_utf8_lossy(&mac.stdout), "File name too long\n");
    let linux = std::process::Command::new(&exe)
        .arg(d)
        .env("SLURM_SHIM_EMULATION_OFF", "sun-path-104")
        .output()
        .expect("run");
    assert_eq!(String::from_utf8_lossy(&linux.stdout), "bound\n");
}
