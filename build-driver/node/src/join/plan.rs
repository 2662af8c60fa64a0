//! What slurmd needs, as a plan: the files to put in place and the one command that starts
//! the node. Pure (no I/O): [`Plan::new`] from the choices, [`Plan::render`] for the
//! terminal; write.rs carries it out.
//!
//! The shapes (the facts and their sources: ../shared/docs/PACKAGING.md, "Joining a
//! cluster"; Slurm's doc/html/configless_slurm.shtml and dynamic_nodes.shtml):
//!
//! - **configless** (default): `slurmd --conf-server HOST:PORT`; slurmd fetches slurm.conf
//!   and its companions from slurmctld (which needs `SlurmctldParameters=enable_configless`).
//!   The key is never distributed that way: it must be on the node before slurmd starts.
//! - **local config** (`--conf FILE`): FILE becomes `<etc>/slurm.conf`; plain `slurmd`.
//! - **dynamic node** (`--dynamic FEATURES`): `-Z --conf "Feature=..."`: the node registers
//!   itself, with the hardware `slurmd -C` finds, and needs no line in slurm.conf (the
//!   controller needs a MaxNodeCount that leaves room). For laptops and desktops, whose
//!   address changes.
//! - **fixed node** (`--node-addr ADDR`): the controller's admin adds a `NodeName=` line
//!   with `NodeAddr=ADDR` (printed here from `slurmd -C`); the Mac runs slurmd without -Z.
//!
//! In every shape slurmd runs under the name given by `-N` (default: the short host name),
//! because a Mac's host name changes with the network it is on.

use driver_common::error::Result;
use std::path::{Path, PathBuf};

/// How the node is known to the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// `slurmd -Z --conf "Feature=<features>"`.
    Dynamic { features: String },
    /// A `NodeName=` line in the controller's slurm.conf with this `NodeAddr`.
    Fixed { node_addr: String },
}

/// One file to put in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Install {
    pub from: PathBuf,
    pub to: PathBuf,
    pub mode: u32,
}

/// Everything `join` would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub installs: Vec<Install>,
    /// The slurmd command: program, then arguments.
    pub slurmd: Vec<String>,
    /// For a fixed node: the line the controller's slurm.conf needs.
    pub controller_line: Option<String>,
}

/// The choices the plan is made from.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub slurmd: PathBuf,
    /// The directory holding slurm.conf and slurm.key for this build (`<prefix>/etc`).
    pub etc: PathBuf,
    pub key: PathBuf,
    /// `Some(host:port)`: configless; `None`: a local config.
    pub conf_server: Option<String>,
    pub local_conf: Option<PathBuf>,
    pub shape: Shape,
    pub node_name: String,
    /// `slurmd -C`'s first line (`NodeName=... CPUs=... RealMemory=...`), for a fixed node.
    pub hardware: Option<String>,
}

impl Plan {
    /// [`Plan::new`] after checking every name against Slurm's syntax (names.rs): nothing
    /// given on the command line can add a slurm.conf parameter or line, or a slurmd option.
    pub fn checked(i: &Inputs) -> Result<Plan> {
        crate::names::node_name(&i.node_name)?;
        match &i.shape {
            Shape::Dynamic { features } => {
                crate::names::features(features)?;
            }
            Shape::Fixed { node_addr } => {
                crate::names::address("--node-addr", node_addr)?;
            }
        }
        Ok(Plan::new(i))
    }

    pub fn new(i: &Inputs) -> Plan {
        let mut installs: Vec<Install> = key_install(&i.etc, &i.key).into_iter().collect();
        if let Some(conf) = &i.local_conf {
            installs.push(Install {
                from: conf.clone(),
                to: i.etc.join("slurm.conf"),
                mode: 0o644,
            });
        }
        let mut slurmd = vec![i.slurmd.display().to_string()];
        if let Some(server) = &i.conf_server {
            slurmd.extend(["--conf-server".into(), server.clone()]);
        }
        slurmd.extend(["-N".into(), i.node_name.clone()]);
        let controller_line = match &i.shape {
            Shape::Dynamic { features } => {
                slurmd.extend(["-Z".into(), "--conf".into(), format!("Feature={features}")]);
                None
            }
            Shape::Fixed { node_addr } => Some(node_line(
                &i.node_name,
                node_addr,
                i.hardware.as_deref().unwrap_or(""),
            )),
        };
        Plan {
            installs,
            slurmd,
            controller_line,
        }
    }

    /// The plan as shell commands a person can read and run.
    pub fn render(&self) -> String {
        let mut out = render_installs(&self.installs);
        if let Some(line) = &self.controller_line {
            out.push_str(&format!(
                "# on the controller: add to slurm.conf, then `scontrol reconfigure`:\n#   {line}\n"
            ));
        }
        let argv: Vec<String> = self.slurmd.iter().map(|a| quote(a)).collect();
        out.push_str(&argv.join(" "));
        out.push('\n');
        out
    }
}

/// The installs as `install -m MODE FROM TO` lines.
pub fn render_installs(installs: &[Install]) -> String {
    installs
        .iter()
        .map(|i| {
            format!(
                "install -m {:o} {} {}\n",
                i.mode,
                quote(&i.from.display().to_string()),
                quote(&i.to.display().to_string())
            )
        })
        .collect()
}

/// The key's install into `<etc>/slurm.key` (mode 0600: auth/slurm refuses a key others may
/// read), unless `key` is that file already.
pub fn key_install(etc: &Path, key: &Path) -> Option<Install> {
    let to = etc.join("slurm.key");
    (key != to).then(|| Install {
        from: key.to_path_buf(),
        to,
        mode: 0o600,
    })
}

/// The controller's `NodeName=` line of a fixed node: `slurmd -C`'s hardware with our name
/// and the pinned address (its `UpTime=` line and its own NodeName dropped).
pub fn node_line(name: &str, addr: &str, hardware: &str) -> String {
    let hw: Vec<&str> = hardware
        .split_whitespace()
        .filter(|w| !w.starts_with("NodeName=") && !w.starts_with("UpTime="))
        .collect();
    let mut line = format!("NodeName={name} NodeAddr={addr}");
    for w in hw {
        line.push(' ');
        line.push_str(w);
    }
    line
}

/// `s`, single-quoted for a POSIX shell when it holds anything but safe characters.
pub fn quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(shape: Shape) -> Inputs {
        Inputs {
            slurmd: "/opt/slurm/sbin/slurmd".into(),
            etc: "/opt/slurm/etc".into(),
            key: "/Users/me/slurm.key".into(),
            conf_server: Some("ctl.example.org:6817".into()),
            local_conf: None,
            shape,
            node_name: "mac1".into(),
            hardware: Some("NodeName=mbp CPUs=10 Boards=1 SocketsPerBoard=1 CoresPerSocket=10 ThreadsPerCore=1 RealMemory=32768\nUpTime=0-01:00:00".into()),
        }
    }

    #[test]
    fn plan__dynamic_configless_installs_key_0600_and_starts_slurmd_z() {
        let p = Plan::new(&inputs(Shape::Dynamic {
            features: "macos,arm64".into(),
        }));
        assert_eq!(
            p.installs,
            vec![Install {
                from: "/Users/me/slurm.key".into(),
                to: "/opt/slurm/etc/slurm.key".into(),
                mode: 0o600
            }]
        );
        assert_eq!(
            p.render(),
            "install -m 600 /Users/me/slurm.key /opt/slurm/etc/slurm.key\n\
             /opt/slurm/sbin/slurmd --conf-server ctl.example.org:6817 -N mac1 -Z --conf Feature=macos,arm64\n"
        );
        assert_eq!(p.controller_line, None);
    }

    #[test]
    fn plan__fixed_local_config_prints_the_controllers_node_line() {
        let mut i = inputs(Shape::Fixed {
            node_addr: "192.0.2.7".into(),
        });
        i.conf_server = None;
        i.local_conf = Some("/Users/me/slurm.conf".into());
        i.key = "/opt/slurm/etc/slurm.key".into();
        let p = Plan::new(&i);
        assert_eq!(p.installs.len(), 1, "the key is in place already: {p:?}");
        assert_eq!(p.installs[0].to, PathBuf::from("/opt/slurm/etc/slurm.conf"));
        assert_eq!(
            p.controller_line.as_deref(),
            Some(
                "NodeName=mac1 NodeAddr=192.0.2.7 CPUs=10 Boards=1 SocketsPerBoard=1 CoresPerSocket=10 ThreadsPerCore=1 RealMemory=32768"
            )
        );
        assert_eq!(p.slurmd, ["/opt/slurm/sbin/slurmd", "-N", "mac1"]);
    }

    #[test]
    fn quote__only_when_needed() {
        assert_eq!(quote("Feature=macos,arm64"), "Feature=macos,arm64");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }
}
