//! Wake-on-LAN: the magic packet (6 bytes 0xFF, then the 6-byte MAC address 16 times: 102
//! bytes) sent by UDP. A sleeping Mac with "Wake for network access" (`pmset womp 1`) wakes
//! when its network interface sees it; port 9 (discard) is the usual destination.

use super::PowerError;
use super::mac::Mac;
use super::map::Node;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// The length of a magic packet.
pub const PACKET_LEN: usize = 6 + 16 * 6;

/// The magic packet that wakes `mac`.
pub fn packet(mac: Mac) -> [u8; PACKET_LEN] {
    let mut p = [0xFF; PACKET_LEN];
    for chunk in p[6..].chunks_exact_mut(6) {
        chunk.copy_from_slice(&mac.0);
    }
    p
}

/// Sends `node`'s magic packet to its broadcast address (broadcast allowed on the socket).
pub fn send(node: &Node) -> Result<(), PowerError> {
    let to = node.broadcast;
    let err = |source| PowerError::Send {
        node: node.name.clone(),
        to,
        source,
    };
    let any: SocketAddr = match to {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(any).map_err(err)?;
    socket.set_broadcast(true).map_err(err)?;
    let sent = socket.send_to(&packet(node.mac), to).map_err(err)?;
    if sent != PACKET_LEN {
        return Err(err(std::io::Error::other(format!(
            "sent {sent} of {PACKET_LEN} bytes"
        ))));
    }
    Ok(())
}
