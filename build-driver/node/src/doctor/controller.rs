//! The controller (`--controller HOST[:PORT]`, parsed by join's own `Controller::parse`):
//! a TCP connection to slurmctld's port within `--timeout`, then the version rule asked
//! exactly as `join` asks it (`join::check`: this prefix's sackd and scontrol fetch the
//! controller's release through the key, and `join/lines.rs` decides). That probe starts a
//! sackd for one question, so `--no-ask` leaves it out; it is skipped, saying why, when the
//! controller is unreachable or the key failed above.

use super::{Check, Finding, Params, Problem};
use crate::controller::{Controller, DEFAULT_PORT};
use crate::join::ask::Source;
use driver_common::error::Error;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControllerProblem {
    BadSpec {
        error: String,
    },
    DoesNotResolve {
        host: String,
        error: String,
    },
    Unreachable {
        host: String,
        port: u16,
        error: String,
    },
    /// join's probe or rule said no: what it saw and its fix.
    Version {
        what: String,
        fix: String,
    },
}

impl ControllerProblem {
    pub fn detail(&self) -> String {
        match self {
            ControllerProblem::BadSpec { error } => error.clone(),
            ControllerProblem::DoesNotResolve { host, error } => {
                format!("the controller's name `{host}` does not resolve ({error})")
            }
            ControllerProblem::Unreachable { host, port, error } => {
                format!("no TCP connection to slurmctld at {host} port {port} ({error})")
            }
            ControllerProblem::Version { what, .. } => what.clone(),
        }
    }

    pub fn fix(&self) -> String {
        match self {
            ControllerProblem::BadSpec { .. } => {
                "give --controller HOST or HOST:PORT (e.g. ctl.example.org:6817, [::1]:6817)".into()
            }
            ControllerProblem::DoesNotResolve { host, .. } => format!(
                "give the controller as this machine resolves it, or its address (--controller 192.0.2.1:{DEFAULT_PORT}); `dscacheutil -q host -a name {host}` shows what macOS resolves"
            ),
            ControllerProblem::Unreachable { host, port, .. } => format!(
                "`nc -vz {host} {port}` from here; on the controller: `systemctl status slurmctld` and `scontrol show config | grep SlurmctldPort`; then the firewall between"
            ),
            ControllerProblem::Version { fix, .. } => fix.clone(),
        }
    }
}

fn fail(check: Check, p: ControllerProblem) -> Finding {
    Finding::fail(check, Problem::Controller(p))
}

pub fn check(p: &Params, key_ok: bool, files_ok: bool) -> Vec<Finding> {
    let Some(spec) = &p.controller else {
        return vec![
            Finding::skip(Check::Controller, "no --controller given: not checked"),
            Finding::skip(Check::Version, "no --controller given: not asked"),
        ];
    };
    let c = match Controller::parse(spec) {
        Ok(c) => c,
        Err(e) => {
            return vec![fail(
                Check::Controller,
                ControllerProblem::BadSpec {
                    error: e.to_string(),
                },
            )];
        }
    };
    let reach = reach(&c, p.timeout);
    let reached = !reach.failed();
    let version = if !reached {
        Finding::skip(Check::Version, "not asked: the controller is unreachable")
    } else if !p.ask_version {
        Finding::skip(
            Check::Version,
            "not asked (--no-ask): the probe starts this prefix's sackd for one question",
        )
    } else if !files_ok {
        Finding::skip(
            Check::Version,
            "not asked: the files root runs failed above, and the probe would run this prefix's sackd and scontrol",
        )
    } else if !key_ok {
        Finding::skip(
            Check::Version,
            "not asked: the key failed above, and the probe signs with it",
        )
    } else {
        version(p, c)
    };
    vec![reach, version]
}

/// A TCP connection to any address of the controller within `timeout`.
fn reach(c: &Controller, timeout: Duration) -> Finding {
    let ips = match super::name::resolve(&c.host, timeout) {
        Ok(ips) => ips,
        Err(error) => {
            return fail(
                Check::Controller,
                ControllerProblem::DoesNotResolve {
                    host: c.host.clone(),
                    error,
                },
            );
        }
    };
    let mut last = String::new();
    for ip in ips {
        let at = SocketAddr::new(ip, c.port);
        let t = Instant::now();
        match TcpStream::connect_timeout(&at, timeout) {
            Ok(_) => {
                return Finding::ok(
                    Check::Controller,
                    format!(
                        "slurmctld's port answers at {at} ({} ms)",
                        t.elapsed().as_millis()
                    ),
                );
            }
            Err(e) => last = e.to_string(),
        }
    }
    fail(
        Check::Controller,
        ControllerProblem::Unreachable {
            host: c.host.clone(),
            port: c.port,
            error: last,
        },
    )
}

/// join's own probe and rule.
fn version(p: &Params, c: Controller) -> Finding {
    match crate::join::check(&p.prefix, &Source::Configless(c), &p.key, p.timeout) {
        Ok(ok) => Finding::ok(
            Check::Version,
            format!(
                "this build is Slurm {}, the controller runs {}: accepted ({} release(s) behind; the rule allows {})",
                ok.node.text,
                ok.controller.text,
                ok.behind,
                ok.controller.line.window()
            ),
        ),
        Err(e) => fail(Check::Version, from_join(e)),
    }
}

/// join's errors, already split into what and fix, kept apart.
pub(super) fn from_join(e: Error) -> ControllerProblem {
    match e {
        Error::JoinController {
            controller,
            what,
            fix,
            detail,
        } => ControllerProblem::Version {
            what: match detail.lines().rev().find(|l| !l.trim().is_empty()) {
                Some(last) => format!(
                    "asking {controller} with this prefix's sackd and scontrol, as join does: {what} (the probe saw: {})",
                    last.trim()
                ),
                None => format!(
                    "asking {controller} with this prefix's sackd and scontrol, as join does: {what}"
                ),
            },
            fix,
        },
        Error::JoinRefused {
            node,
            controller,
            why,
            install,
        } => ControllerProblem::Version {
            what: format!("this build is Slurm {node}, the controller runs {controller}: {why}"),
            fix: format!("install Slurm {install} on this node, or change the controller"),
        },
        Error::JoinKey { path, problem, fix } => ControllerProblem::Version {
            what: format!("the key {} {problem}", path.display()),
            fix,
        },
        other => ControllerProblem::Version {
            what: other.to_string(),
            fix: "read the message above; docs/JOIN.md (\"Errors and their fixes\") lists the usual causes".into(),
        },
    }
}
