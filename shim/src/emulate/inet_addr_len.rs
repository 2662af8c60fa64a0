//! `bind`/`connect` of `AF_INET`/`AF_INET6` addresses: XNU takes only the family's own length.
//!
//! Linux behaviour: an IPv4 address may come with any `addrlen` of at least
//! `sizeof(struct sockaddr_in)` (16), an IPv6 one with at least 24 (`SIN6_LEN_RFC2133`); a
//! whole `struct sockaddr_storage` (128 bytes) binds and connects.
//!
//! macOS behaviour (xnu-11417.101.15): the kernel copies the address and sets its `sa_len` to
//! the `addrlen` given (bsd/kern/uipc_syscalls.c `getsockaddr_s`), then refuses an IPv4
//! address whose `sa_len` is not exactly 16 with `EINVAL` (bsd/netinet/in_pcb.c
//! `in_pcbbind` for bind, `in_pcbladdr` for connect), and an IPv6 one that is not exactly
//! `sizeof(struct sockaddr_in6)` (28) (bsd/netinet6/in6_pcb.c `in6_pcbbind`,
//! `in6_pcbladdr`); connect(2)'s manual: "`address_len` is not valid for the address
//! family". Slurm before 26.11 passes `sizeof(slurm_addr_t)` (a `sockaddr_storage`) to
//! `connect` in `slurm_open_stream()` (every RPC a client or slurmd sends) and to `bind` in
//! `_sock_bind_wild()`, `net_stream_listen()`, `_is_port_ok()` and, in 24.11 and 25.05,
//! `slurm_init_msg_engine()` (slurmd's port); 26.11 computes the length
//! (`sockaddr_fixlen()`, src/common/net.c).
//!
//! Portability problems not fixed: the model looks at the address's family, not the
//! socket's (XNU also refuses an IPv4 address on an IPv6 socket unless it is mapped); the
//! `sa_len` XNU writes into the kernel's copy is not visible to the caller; `sendto` and
//! `sendmsg` addresses are not modelled.

use libc::{c_int, sa_family_t, sockaddr, sockaddr_in, sockaddr_in6, socklen_t};

use super::report;

/// Model name (for [`super::scope::OFF_ENV`]).
pub const NAME: &str = "inet-addr-len";

/// The macOS answer for an address of family `family` given with length `len`: `Some(errno)`
/// when XNU refuses it.
pub fn mac_refusal(family: sa_family_t, len: socklen_t) -> Option<c_int> {
    let want = match c_int::from(family) {
        libc::AF_INET => std::mem::size_of::<sockaddr_in>(),
        libc::AF_INET6 => std::mem::size_of::<sockaddr_in6>(),
        _ => return None,
    };
    (len as usize != want).then_some(libc::EINVAL)
}

/// `Err(errno)` when macOS refuses `addr` of `len` bytes in `call`.
pub(crate) fn check(
    addr: *const sockaddr,
    len: socklen_t,
    call: &'static str,
) -> Result<(), c_int> {
    let family_end = std::mem::offset_of!(sockaddr, sa_family) + std::mem::size_of::<sa_family_t>();
    if addr.is_null() || (len as usize) < family_end {
        return Ok(());
    }
    // SAFETY: the caller's address is readable for `len` bytes, which cover `sa_family`.
    let family = unsafe { (*addr).sa_family };
    let Some(e) = mac_refusal(family, len) else {
        return Ok(());
    };
    let what = if call == "bind" {
        "bind(AF_INET/AF_INET6) with a length other than the family's (e.g. sizeof(sockaddr_storage)) -> EINVAL (xnu in_pcb.c in_pcbbind, in6_pcb.c in6_pcbbind)"
    } else {
        "connect(AF_INET/AF_INET6) with a length other than the family's (e.g. sizeof(sockaddr_storage)) -> EINVAL (xnu in_pcb.c in_pcbladdr, in6_pcb.c in6_pcbladdr)"
    };
    if report::apply(NAME, what) {
        Err(e)
    } else {
        Ok(())
    }
}
