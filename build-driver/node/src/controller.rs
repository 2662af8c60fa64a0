//! The controller as the commands take it: `HOST[:PORT]` (`--controller`, `--conf-server`),
//! checked and written back as `--conf-server` takes it. A leaf: join, service and doctor use
//! it.

use driver_common::error::{Error, Result};

/// slurmctld's port when slurm.conf sets none (SlurmctldPort's default).
pub const DEFAULT_PORT: u16 = 6817;

/// `HOST[:PORT]`, as `--controller` takes it (`[v6addr]:PORT` for IPv6 with a port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controller {
    pub host: String,
    pub port: u16,
}

impl Controller {
    pub fn parse(s: &str) -> Result<Controller> {
        let bad = |why: &str| {
            Error::Usage(format!(
                "--controller `{s}`: {why}; give HOST or HOST:PORT (e.g. ctl.example.org:6817, [::1]:6817)"
            ))
        };
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (h, after) = rest.split_once(']').ok_or_else(|| bad("no closing `]`"))?;
            if h.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(bad("brackets hold an IPv6 address"));
            }
            match after {
                "" => (h, None),
                _ => (
                    h,
                    Some(
                        after
                            .strip_prefix(':')
                            .ok_or_else(|| bad("after `]` only :PORT may follow"))?,
                    ),
                ),
            }
        } else if s.matches(':').count() > 1 {
            if s.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(bad(
                    "more than one `:`: an IPv6 address with a port goes in brackets",
                ));
            }
            (s, None)
        } else {
            match s.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (s, None),
            }
        };
        if host.is_empty() || crate::names::address("--controller", host).is_err() {
            return Err(bad("not an IP address or a host name"));
        }
        let port = match port {
            None => DEFAULT_PORT,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?,
        };
        Ok(Controller {
            host: host.to_string(),
            port,
        })
    }

    /// What `--conf-server` takes: `host:port` (`[v6]:port`).
    pub fn conf_server(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller__host_port_forms() {
        let c = |s| Controller::parse(s).unwrap();
        assert_eq!(c("ctl").conf_server(), "ctl:6817");
        assert_eq!(c("ctl:7000").conf_server(), "ctl:7000");
        assert_eq!(c("127.0.0.1:40001").port, 40001);
        assert_eq!(c("[::1]:6818").conf_server(), "[::1]:6818");
        assert_eq!(c("::1").conf_server(), "[::1]:6817");
        for bad in [
            "",
            ":6817",
            "ctl:",
            "ctl:0",
            "ctl:99999",
            "ctl:x",
            "a b",
            "[::1",
        ] {
            let e = Controller::parse(bad).unwrap_err().to_string();
            assert!(e.contains("HOST:PORT"), "{bad}: {e}");
        }
    }
}
