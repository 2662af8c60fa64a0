//! Every name that reaches slurm.conf, slurmd's command line or a plist, checked against
//! Slurm's syntax before it is used: a node name (letters, digits, `-`, `_`, `.`; not
//! starting with `-`), features (such names, comma-separated), an address (an IP address or
//! a host name), and `HOST[:PORT]` (IPv6 in brackets when a port follows). A name holding
//! whitespace, a newline or `=` would add a parameter or a line to slurm.conf; one starting
//! with `-` would be read as an option.

use driver_common::error::{Error, Result};

fn word_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

fn refuse(what: &str, s: &str, rule: &str) -> Error {
    Error::Usage(format!("{what} `{}`: {rule}", s.escape_debug()))
}

/// A node name (`-N`, `NodeName=`).
pub fn node_name(s: &str) -> Result<&str> {
    if word_ok(s) {
        Ok(s)
    } else {
        Err(refuse(
            "--name",
            s,
            "a node name is 1-64 letters, digits, `-`, `_` or `.`, not starting with `-` (e.g. mac-01)",
        ))
    }
}

/// Features of a dynamic node (`Feature=a,b`).
pub fn features(s: &str) -> Result<&str> {
    if s.split(',').all(word_ok) {
        Ok(s)
    } else {
        Err(refuse(
            "--dynamic",
            s,
            "features are names of letters, digits, `-`, `_` or `.`, separated by commas (e.g. macos,arm64)",
        ))
    }
}

/// An IP address or a host name (`NodeAddr=`, the host of `--controller`).
pub fn address<'a>(what: &str, s: &'a str) -> Result<&'a str> {
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    let host = s.len() <= 253 && s.trim_end_matches('.').split('.').all(label);
    if s.parse::<std::net::IpAddr>().is_ok() || host {
        Ok(s)
    } else {
        Err(refuse(
            what,
            s,
            "not an IP address or a host name (e.g. 192.0.2.7, mac1.example.org)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names__good_ones_pass_and_injections_are_refused() {
        assert!(node_name("mac-01.lab_2").is_ok());
        for bad in ["", "-Z", "a b", "a\nPartitionName=x", "a=b", "a,b"] {
            assert!(node_name(bad).is_err(), "{bad:?}");
        }
        assert!(features("macos,arm64").is_ok());
        assert!(features("a RealMemory=9").is_err() && features("a,,b").is_err());
        assert!(address("--node-addr", "192.0.2.7").is_ok());
        assert!(address("--node-addr", "fe80::1").is_ok());
        assert!(address("--node-addr", "mac1.example.org").is_ok());
        assert!(address("--node-addr", "1.2.3.4 Weight=1").is_err());
        assert!(address("--node-addr", "-x").is_err());
    }
}
