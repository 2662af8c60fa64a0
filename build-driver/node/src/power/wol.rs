//! Wake-on-LAN: the magic packet (6 bytes 0xFF, then the 6-byte MAC address 16 times: 102
//! bytes) sent by UDP. A sleeping Mac with "Wake for network access" (`pmset womp 1`) wakes
//! when its network interface sees it; port 9 (discard) is the usual destination.

use super::PowerError;
use super::map::Node;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// The length of a magic packet.
pub const PACKET_LEN: usize = 6 + 16 * 6;

/// A MAC (Ethernet hardware) address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mac(pub [u8; 6]);

impl Mac {
    /// `a4:83:e7:00:11:22` or `A4-83-E7-00-11-22`: six pairs of hex digits, one separator
    /// kind. Anything else is `None`.
    pub fn parse(text: &str) -> Option<Mac> {
        let sep = if text.contains('-') { '-' } else { ':' };
        let parts: Vec<&str> = text.trim().split(sep).collect();
        if parts.len() != 6 {
            return None;
        }
        let mut bytes = [0u8; 6];
        for (b, p) in bytes.iter_mut().zip(&parts) {
            if p.len() != 2 || !p.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            *b = u8::from_str_radix(p, 16).ok()?;
        }
        Some(Mac(bytes))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

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
