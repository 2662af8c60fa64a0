//! The daemons of a cluster, by kind: the private MariaDB, slurmdbd, slurmctld and one slurmd
//! per node. A daemon's name is its record's name in `cluster.toml` and the stem of its log
//! (`log/<name>.log`) and output (`log/<name>.out`) files: `mariadb`, `slurmdbd`, `slurmctld`,
//! `slurmd-node1`, `slurmd-node2`, ...

use super::nodes::node_name;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Daemon {
    MariaDb,
    Slurmdbd,
    Slurmctld,
    /// The slurmd of node `i` (0-based: node1 is `Slurmd(0)`).
    Slurmd(usize),
}

impl Daemon {
    /// The head's daemons in start order (the nodes' slurmd come after them).
    pub const HEAD: [Daemon; 3] = [Daemon::MariaDb, Daemon::Slurmdbd, Daemon::Slurmctld];

    /// Every daemon of a cluster of `nodes` nodes, in start order.
    pub fn all(nodes: usize) -> Vec<Daemon> {
        Daemon::HEAD
            .into_iter()
            .chain((0..nodes).map(Daemon::Slurmd))
            .collect()
    }

    pub fn name(self) -> String {
        match self {
            Daemon::MariaDb => "mariadb".into(),
            Daemon::Slurmdbd => "slurmdbd".into(),
            Daemon::Slurmctld => "slurmctld".into(),
            Daemon::Slurmd(i) => format!("slurmd-{}", node_name(i)),
        }
    }

    /// The node index of a slurmd.
    pub fn node(self) -> Option<usize> {
        match self {
            Daemon::Slurmd(i) => Some(i),
            _ => None,
        }
    }
}

impl fmt::Display for Daemon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name__distinct_and_node_named() {
        let names: std::collections::BTreeSet<String> =
            Daemon::all(4).into_iter().map(Daemon::name).collect();
        assert_eq!(names.len(), 7);
        assert_eq!(Daemon::Slurmd(1).name(), "slurmd-node2");
        assert_eq!(Daemon::Slurmd(1).node(), Some(1));
        assert_eq!(Daemon::Slurmctld.node(), None);
    }

    #[test]
    fn all__head_first_then_the_nodes() {
        assert_eq!(
            Daemon::all(2),
            [
                Daemon::MariaDb,
                Daemon::Slurmdbd,
                Daemon::Slurmctld,
                Daemon::Slurmd(0),
                Daemon::Slurmd(1)
            ]
        );
    }
}
