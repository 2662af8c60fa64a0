//! `bind`/`connect` of IPv4/IPv6 addresses with XNU's exact lengths
//! (shim/src/emulate/inet_addr_len.rs) against glibc, which takes a whole `sockaddr_storage`.
#![cfg(target_os = "linux")]
#![allow(non_snake_case)]

mod common;

use slurm_shim::emulate::inet_addr_len::mac_refusal;

#[test]
fn mac_refusal__only_the_family_length() {
    let (v4, v6) = (
        libc::AF_INET as libc::sa_family_t,
        libc::AF_INET6 as libc::sa_family_t,
    );
    assert_eq!(mac_refusal(v4, 16), None);
    assert_eq!(mac_refusal(v4, 128), Some(libc::EINVAL));
    assert_eq!(mac_refusal(v4, 28), Some(libc::EINVAL));
    assert_eq!(mac_refusal(v6, 28), None);
    assert_eq!(mac_refusal(v6, 24), Some(libc::EINVAL));
    assert_eq!(mac_refusal(v6, 128), Some(libc::EINVAL));
    // Other families are not this model's (AF_UNIX lengths vary with the path).
    assert_eq!(mac_refusal(libc::AF_UNIX as libc::sa_family_t, 128), None);
}

/// What Slurm before 26.11 does (slurm_open_stream(), net_stream_listen()): an IPv4
/// address in a `sockaddr_storage`, passed with the storage's size; then the same address
/// with its own size.
const STORAGE_LEN: &str = r#"#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int try(const char *what, int do_connect, struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int rc = do_connect ? connect(fd, (struct sockaddr *) ss, len)
			    : bind(fd, (struct sockaddr *) ss, len);
	printf("%s %u: %s\n", what, (unsigned) len, rc ? strerror(errno) : "ok");
	close(fd);
	return rc;
}

int main(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *) &ss;
	socklen_t alen = sizeof(ss);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&ss, 0, sizeof(ss));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	try("bind", 0, &ss, sizeof(ss));
	try("bind", 0, &ss, sizeof(*sin));
	/* a listener to connect to, bound with the right length */
	if (bind(lfd, (struct sockaddr *) sin, sizeof(*sin)) || listen(lfd, 4) ||
	    getsockname(lfd, (struct sockaddr *) &ss, &alen))
		return 2;
	try("connect", 1, &ss, sizeof(ss));
	try("connect", 1, &ss, sizeof(*sin));
	close(lfd);
	return 0;
}
"#;

#[test]
fn bind_connect__darwin_translation_unit_refuses_a_storage_sized_ipv4_address() {
    let mac = common::darwin_c::run("inet-storage-len", STORAGE_LEN, &[], &[]);
    assert_eq!(mac.code, Some(0), "{mac:?}");
    assert_eq!(
        mac.stdout,
        "bind 128: Invalid argument\nbind 16: ok\nconnect 128: Invalid argument\nconnect 16: ok\n"
    );
    assert!(
        mac.log.contains("bind(AF_INET/AF_INET6)") && mac.log.contains("connect(AF_INET/AF_INET6)"),
        "{mac:?}"
    );
    let linux = common::darwin_c::run(
        "inet-storage-len-off",
        STORAGE_LEN,
        &[],
        &[("SLURM_SHIM_EMULATION_OFF", "inet-addr-len")],
    );
    assert_eq!(
        linux.stdout, "bind 128: ok\nbind 16: ok\nconnect 128: ok\nconnect 16: ok\n",
        "{linux:?}"
    );
}
