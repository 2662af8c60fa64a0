//! A MAC (Ethernet hardware) address, as the node map writes it and the magic packet
//! carries it.

use std::fmt;

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
