//! slurmd's port (`--slurmd-port`, SlurmdPort's default 6818) must be free: slurmd binds it
//! on every address and exits when it cannot ("Unable to bind listen port"). Tried by
//! binding each address given (the command line: 0.0.0.0 and 127.0.0.1, because BSD
//! sockets let a wildcard bind succeed beside a listener on one address) and letting go.

use super::{Check, Finding, Problem};
use std::net::{IpAddr, SocketAddr, TcpListener};

/// slurmd's port when slurm.conf sets no SlurmdPort.
pub const DEFAULT_SLURMD_PORT: u16 = 6818;

pub fn check(addrs: &[IpAddr], port: u16) -> Finding {
    for ip in addrs {
        let addr = SocketAddr::new(*ip, port);
        if let Err(e) = TcpListener::bind(addr) {
            return Finding::fail(
                Check::Port,
                Problem::PortTaken {
                    addr,
                    error: e.to_string(),
                },
            );
        }
    }
    let on: Vec<String> = addrs.iter().map(ToString::to_string).collect();
    Finding::ok(
        Check::Port,
        format!("TCP port {port} is free on {}", on.join(", ")),
    )
}
