//! This node's name (`--name`, default the short host name, as `join` passes to `slurmd -N`)
//! must resolve, and to `--node-addr` when one is given. When it does not, Slurm logs
//! "can't find address for host NAME, check slurm.conf" (24.11.5 `src/common/forward.c`,
//! `src/slurmctld/agent.c`) and the node's messages go nowhere (seen in the proof of
//! concept). Resolution is the system's (`getaddrinfo`: /etc/hosts, then DNS), bounded by
//! `--timeout` so a dead resolver cannot hang the report.

use super::{Check, Finding, Problem};
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameProblem {
    DoesNotResolve {
        name: String,
        error: String,
    },
    WrongAddress {
        name: String,
        got: Vec<IpAddr>,
        want: String,
        want_ips: Vec<IpAddr>,
    },
}

impl NameProblem {
    pub fn detail(&self) -> String {
        match self {
            NameProblem::DoesNotResolve { name, error } => format!(
                "`{name}` does not resolve ({error}): Slurm logs \"can't find address for host {name}\""
            ),
            NameProblem::WrongAddress {
                name, got, want, ..
            } => format!(
                "`{name}` resolves to {}, not to --node-addr {want}",
                list(got)
            ),
        }
    }

    pub fn fix(&self) -> String {
        match self {
            NameProblem::DoesNotResolve { name, .. } => format!(
                "echo \"ADDR {name}\" | sudo tee -a /etc/hosts (ADDR: this machine's address on the cluster's network), or pass --name with a name this machine resolves"
            ),
            NameProblem::WrongAddress {
                name,
                want,
                want_ips,
                ..
            } => format!(
                "echo \"{} {name}\" | sudo tee -a /etc/hosts (and remove the stale line), or fix the DNS record of {name}",
                want_ips
                    .first()
                    .map(ToString::to_string)
                    .unwrap_or_else(|| want.clone())
            ),
        }
    }
}

fn list(ips: &[IpAddr]) -> String {
    ips.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A name resolver: the addresses of a name, or why there are none.
pub type Resolver = fn(&str, Duration) -> Result<Vec<IpAddr>, String>;

/// The addresses `name` resolves to, asked on a thread bounded by `timeout`.
pub fn resolve(name: &str, timeout: Duration) -> Result<Vec<IpAddr>, String> {
    if let Ok(ip) = name.parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    let (tx, rx) = mpsc::channel();
    let owned = name.to_string();
    std::thread::spawn(move || {
        let got = (owned.as_str(), 0)
            .to_socket_addrs()
            .map(|a| a.map(|s| s.ip()).collect::<Vec<_>>())
            .map_err(|e| e.to_string());
        let _ = tx.send(got);
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(ips)) if ips.is_empty() => Err("no address".into()),
        Ok(r) => r,
        Err(_) => Err(format!("no answer from the resolver within {timeout:?}")),
    }
}

pub fn check(resolve: Resolver, name: &str, node_addr: Option<&str>, timeout: Duration) -> Finding {
    let fail = |p| Finding::fail(Check::Name, Problem::Name(p));
    let got = match resolve(name, timeout) {
        Ok(ips) => ips,
        Err(error) => {
            return fail(NameProblem::DoesNotResolve {
                name: name.into(),
                error,
            });
        }
    };
    let Some(want) = node_addr else {
        return Finding::ok(Check::Name, format!("`{name}` resolves to {}", list(&got)));
    };
    let want_ips = match resolve(want, timeout) {
        Ok(ips) => ips,
        Err(error) => {
            return fail(NameProblem::DoesNotResolve {
                name: want.into(),
                error,
            });
        }
    };
    if got.iter().any(|ip| want_ips.contains(ip)) {
        Finding::ok(
            Check::Name,
            format!(
                "`{name}` resolves to {}, which is --node-addr {want}",
                list(&got)
            ),
        )
    } else {
        fail(NameProblem::WrongAddress {
            name: name.into(),
            got,
            want: want.into(),
            want_ips,
        })
    }
}
