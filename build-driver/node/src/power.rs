//! `slurm-mac power resume|suspend HOSTLIST --map FILE`: slurm.conf's `ResumeProgram` and
//! `SuspendProgram` for Macs, run by slurmctld on the controller host (Slurm's power saving:
//! a node idle for `SuspendTime` is suspended, and resumed when a job needs it).
//!
//! * `resume` wakes each Mac with a wake-on-LAN magic packet (6 bytes 0xFF, then the MAC
//!   address 16 times) sent by UDP to the map's broadcast address (the Mac needs "Wake for
//!   network access", `pmset womp 1`). Slurm 24.11's slurmctld then waits for the node to
//!   have *booted* after the resume request, which a woken Mac has not: see docs/JOIN.md
//!   (power saving) and the `smd-409-power-save` scenario's GAP.
//! * `suspend` runs each node's own `suspend` command from the map (e.g. `ssh mac1 sudo
//!   pmset sleepnow`): how a controller may reach a Mac is the site's choice, so the tool
//!   does not guess one.
//!
//! The map is checked whole before anything is sent or run: an unknown node, a bad MAC
//! address or a missing `suspend` command refuses the call, naming the node and the fix.
//! Hostlists with brackets (`mac[1-3]`) are expanded by `scontrol show hostnames`, Slurm's
//! own parser; a plain comma list is split here ([`hosts`]).

pub mod hosts;
pub mod mac;
pub mod map;
pub mod suspend;
pub mod wol;

#[cfg(test)]
mod tests;

use map::{Map, Node};
use std::path::PathBuf;
use std::time::Duration;

// The command's arguments (clap), read by `slurm-mac` and `cargo xtask`.
#[derive(Debug, clap::Args)]
pub struct PowerArgs {
    /// What slurmctld asks: `resume` (as ResumeProgram) or `suspend` (as SuspendProgram).
    #[arg(value_enum)]
    pub action: Action,
    /// The nodes, as slurmctld passes them: a hostlist expression (`mac[1-3],mini`).
    pub hostlist: String,
    /// The map of nodes: each node's MAC address and suspend command, the broadcast address
    /// (TOML; the format is in docs/JOIN.md, power saving).
    #[arg(long, value_name = "FILE")]
    pub map: PathBuf,
    /// The scontrol that expands a hostlist with brackets (`scontrol show hostnames`).
    #[arg(long, value_name = "PATH", default_value = "scontrol")]
    pub scontrol: PathBuf,
    /// Seconds each suspend command (and scontrol) may take before it is killed.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout: u64,
}

/// What slurmctld asks of the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Action {
    /// Wake each node (ResumeProgram).
    Resume,
    /// Put each node to sleep (SuspendProgram).
    Suspend,
}

/// Why a power call was refused or failed; each message names the input and the fix.
#[derive(Debug, thiserror::Error)]
pub enum PowerError {
    #[error("power: cannot read the node map {path}: {source}")]
    MapRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "power: the node map {path} is not valid: {source}\nfix: see docs/JOIN.md (power saving) for its format"
    )]
    MapParse {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
    #[error(
        "power: node {node} in {path}: `{value}` is not a MAC address\nfix: six pairs of hex digits separated by `:` or `-`, e.g. a4:83:e7:00:11:22 (System Settings > Network > Details > Hardware)"
    )]
    BadMac {
        node: String,
        path: PathBuf,
        value: String,
    },
    #[error(
        "power: {what} in {path}: `{value}` is not an IP address and UDP port\nfix: write the subnet's broadcast address and port, e.g. 192.168.1.255:9"
    )]
    BadBroadcast {
        what: String,
        path: PathBuf,
        value: String,
    },
    #[error(
        "power: node {node} is not in {path} (it has: {known})\nfix: add a [node.{node}] table with its mac (and suspend command)"
    )]
    UnknownNode {
        node: String,
        path: PathBuf,
        known: String,
    },
    #[error(
        "power: node {node} in {path} has no broadcast address, and the map has no default one\nfix: add broadcast = \"<subnet broadcast>:9\" at the top of the map or in [node.{node}]"
    )]
    NoBroadcast { node: String, path: PathBuf },
    #[error(
        "power: node {node} in {path} has no suspend command\nfix: add suspend = [\"program\", \"arg\", ...] to [node.{node}], e.g. [\"ssh\", \"{node}\", \"sudo\", \"pmset\", \"sleepnow\"]"
    )]
    NoSuspend { node: String, path: PathBuf },
    #[error(
        "power: no node named in the hostlist `{0}`\nfix: pass the nodes as slurmctld does, e.g. mac[1-3]"
    )]
    NoNodes(String),
    #[error(
        "power: cannot expand the hostlist `{expr}` with `{scontrol} show hostnames`: {detail}\nfix: scontrol must find the cluster's slurm.conf (SLURM_CONF, as slurmctld's programs have it); pass --scontrol with the path of this cluster's scontrol"
    )]
    Hostlist {
        expr: String,
        scontrol: PathBuf,
        detail: String,
    },
    /// The gate refused a program or a file (a map, scontrol, a suspend command, SLURM_CONF)
    /// another user could change: its message names the path, owner, mode and fix.
    #[error("power: {0}")]
    Gate(#[source] Box<driver_common::error::Error>),
    #[error("power: cannot send the magic packet for node {node} to {to}: {source}")]
    Send {
        node: String,
        to: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("power: the suspend command of node {node} ({command}) failed: {detail}")]
    Suspend {
        node: String,
        command: String,
        detail: String,
    },
}

impl From<driver_common::error::Error> for PowerError {
    fn from(e: driver_common::error::Error) -> Self {
        PowerError::Gate(Box::new(e))
    }
}

impl From<PowerError> for driver_common::error::Error {
    fn from(e: PowerError) -> Self {
        driver_common::error::Error::Node(Box::new(e))
    }
}

/// Carries out `args`: every node of the hostlist looked up first, then woken or suspended in
/// order; prints one line per node.
pub fn run(args: &PowerArgs) -> Result<(), PowerError> {
    let timeout = Duration::from_secs(args.timeout);
    let map = Map::read(&args.map)?;
    let names = hosts::expand(&args.hostlist, &args.scontrol, timeout)?;
    let nodes = names
        .iter()
        .map(|n| map.node(n))
        .collect::<Result<Vec<Node>, PowerError>>()?;
    if args.action == Action::Suspend {
        if let Some(n) = nodes.iter().find(|n| n.suspend.is_none()) {
            return Err(PowerError::NoSuspend {
                node: n.name.clone(),
                path: args.map.clone(),
            });
        }
    }
    for node in &nodes {
        match args.action {
            Action::Resume => {
                wol::send(node)?;
                println!(
                    "power: resume {}: magic packet for {} sent to {}",
                    node.name, node.mac, node.broadcast
                );
            }
            Action::Suspend => {
                suspend::run(node, timeout)?;
                println!(
                    "power: suspend {}: its suspend command succeeded",
                    node.name
                );
            }
        }
    }
    Ok(())
}
