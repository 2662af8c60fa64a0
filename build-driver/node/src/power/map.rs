//! The node map `power` reads (TOML): each node's MAC address, its suspend command, and where
//! its magic packets go.
//!
//! ```toml
//! broadcast = "192.168.1.255:9"          # default for every node: subnet broadcast, UDP port
//!
//! [node.mac1]
//! mac = "a4:83:e7:00:11:22"
//! suspend = ["ssh", "mac1", "sudo", "pmset", "sleepnow"]
//!
//! [node.mac2]
//! mac = "a4-83-e7-00-11-33"
//! broadcast = "10.0.2.255:9"             # this node's own subnet
//! suspend = ["ssh", "mac2", "sudo", "pmset", "sleepnow"]
//! ```

use super::PowerError;
use super::mac::Mac;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    broadcast: Option<String>,
    #[serde(default)]
    node: BTreeMap<String, Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    mac: String,
    broadcast: Option<String>,
    suspend: Option<Vec<String>>,
}

/// A node as the map describes it, its values checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub mac: Mac,
    pub broadcast: SocketAddr,
    /// The program and its arguments; `None` when the map gives none (resume only).
    pub suspend: Option<Vec<String>>,
}

/// The map as read, with the path it came from (named in every error).
#[derive(Debug)]
pub struct Map {
    path: PathBuf,
    file: File,
}

impl Map {
    pub fn read(path: &Path) -> Result<Map, PowerError> {
        // The map names the programs `suspend` runs: trusted like them (the gate), read
        // without quoting it in an error.
        let text = match driver_common::gate::file::read_trusted_text(path) {
            Ok(t) => t,
            Err(driver_common::error::Error::Io { source, .. }) => {
                return Err(PowerError::MapRead {
                    path: path.to_path_buf(),
                    source,
                });
            }
            Err(e) => return Err(e.into()),
        };
        Map::parse(path, &text)
    }

    /// The map in `text`; `path` is only named in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Map, PowerError> {
        let file = toml::from_str(text).map_err(|source| PowerError::MapParse {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Map {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Node `name`, its MAC address and broadcast address checked.
    pub fn node(&self, name: &str) -> Result<Node, PowerError> {
        let entry = self
            .file
            .node
            .get(name)
            .ok_or_else(|| PowerError::UnknownNode {
                node: name.to_string(),
                path: self.path.clone(),
                known: self.known(),
            })?;
        let mac = Mac::parse(&entry.mac).ok_or_else(|| PowerError::BadMac {
            node: name.to_string(),
            path: self.path.clone(),
            value: entry.mac.clone(),
        })?;
        let (what, value) = match (&entry.broadcast, &self.file.broadcast) {
            (Some(b), _) => (format!("node {name}'s broadcast"), b),
            (None, Some(b)) => ("the default broadcast".to_string(), b),
            (None, None) => {
                return Err(PowerError::NoBroadcast {
                    node: name.to_string(),
                    path: self.path.clone(),
                });
            }
        };
        let broadcast = value.parse().map_err(|_| PowerError::BadBroadcast {
            what,
            path: self.path.clone(),
            value: value.clone(),
        })?;
        Ok(Node {
            name: name.to_string(),
            mac,
            broadcast,
            suspend: entry.suspend.clone().filter(|c| !c.is_empty()),
        })
    }

    fn known(&self) -> String {
        if self.file.node.is_empty() {
            return "no nodes".to_string();
        }
        self.file
            .node
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }
}
