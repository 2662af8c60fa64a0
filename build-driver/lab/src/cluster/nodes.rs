//! The compute nodes of a cluster: how many (`--nodes N`, 1 to [`MAX_NODES`]), which build
//! each runs (`--prefix P`, or `--mix LABEL=PREFIX,...` for nodes of several builds in one
//! cluster), and each node's name, host name, address and port.
//!
//! Slurm 24.11 built without `--enable-multiple-slurmd` (the harness builds are built as a
//! site builds them) refuses two nodes with the same `NodeHostname` (src/common/read_config.c
//! `_push_to_hashtbls`: "Duplicated NodeHostName") and binds slurmd's port on every address
//! (`slurm_init_msg_engine_port`). So each node gets:
//!
//! - its own name `node<i>` and host name: as root on Linux each slurmd runs in a private UTS
//!   namespace whose host name is the node's name (its jobs see it too: `hostname` in a job
//!   prints the node it runs on), and a private mount namespace whose `/run` is the node's
//!   own directory (its SACK socket, `/run/slurm/sack.socket`, is the node's, as on a real
//!   host);
//! - its own address `127.0.0.<10+i>` (`NodeAddr`; Linux answers on all of 127.0.0.0/8) and
//!   its own port (`Port=` on its `NodeName` line), its own spool directory, log and PID file.
//!
//! Building with `--enable-multiple-slurmd` instead would change the build under test (other
//! code paths: `MULTIPLE_SLURMD` appears in slurmd, slurmstepd, read_config.c and several
//! plugins), which is what the harness must not do. Without namespaces (not root, macOS:
//! only 127.0.0.1 exists there) a cluster has one node, on 127.0.0.1, named after this host.
//!
//! With `--mix`, the nodes are split among the builds in the order given (the first builds
//! get one more when N does not divide evenly); slurmctld, slurmdbd and the harness's clients
//! run the first build, as the PoC's Linux head node did. Each node carries its build's label
//! as a node feature (`--constraint=darwin`).

use super::config::NodeHw;
pub use super::config::node_name;
use driver_common::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// The most nodes a cluster gets (two cores here; each slurmd is a full daemon).
pub const MAX_NODES: usize = 4;

/// One build of a cluster: a label (a node feature, so lowercase letters, digits, `_`) and
/// an installed prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Build {
    pub label: String,
    pub prefix: PathBuf,
}

/// One compute node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// `node1`, `node2`, ...: Slurm's NodeName.
    pub name: String,
    /// Its build's label (empty for a cluster of one build).
    pub build: String,
    /// The prefix its slurmd and slurmstepd come from.
    pub prefix: PathBuf,
    /// NodeHostname: the node's name in its UTS namespace, or this machine's without one.
    pub hostname: String,
    /// NodeAddr.
    pub addr: Ipv4Addr,
    /// slurmd's port.
    pub port: u16,
    /// What its slurmd detects (`slurmd -C` of its build).
    pub hw: NodeHw,
}

/// The address of node `i`: `127.0.0.<11+i>` with namespaces, else 127.0.0.1.
pub fn node_addr(i: usize, isolated: bool) -> Ipv4Addr {
    match (isolated, u8::try_from(11 + i)) {
        (true, Ok(last)) => Ipv4Addr::new(127, 0, 0, last),
        _ => Ipv4Addr::LOCALHOST,
    }
}

/// `--mix native=P1,darwin=P2`: the builds, each label a valid node feature, no label twice.
pub fn parse_mix(text: &str) -> Result<Vec<Build>> {
    let bad = |why: String| {
        Error::Usage(format!(
            "--mix {text:?}: {why}; write LABEL=PREFIX,LABEL=PREFIX (e.g. native=target/slurm/24.11.5-native/prefix,darwin=target/slurm/24.11.5-darwin/prefix)"
        ))
    };
    let mut builds: Vec<Build> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (label, prefix) = part
            .split_once('=')
            .ok_or_else(|| bad(format!("`{part}` has no `=`")))?;
        let ok = label.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !ok {
            return Err(bad(format!(
                "label `{label}`: use lowercase letters, digits and `_`, starting with a letter (it becomes a node feature)"
            )));
        }
        if prefix.is_empty() {
            return Err(bad(format!("label `{label}` has no prefix")));
        }
        if builds.iter().any(|b| b.label == label) {
            return Err(bad(format!("label `{label}` is given twice")));
        }
        builds.push(Build {
            label: label.to_string(),
            prefix: PathBuf::from(prefix),
        });
    }
    if builds.len() < 2 {
        return Err(bad(
            "a mix needs at least two builds (for one build, use --prefix)".into(),
        ));
    }
    Ok(builds)
}

/// The node count: `asked` (default: one per build) between the number of builds and
/// [`MAX_NODES`], and 1 without namespaces.
pub fn node_count(asked: Option<usize>, builds: usize, isolated: bool) -> Result<usize> {
    let n = asked.unwrap_or(builds.max(1));
    if n == 0 || n > MAX_NODES {
        return Err(Error::Usage(format!(
            "--nodes {n}: a cluster has 1 to {MAX_NODES} nodes"
        )));
    }
    if n < builds {
        return Err(Error::Usage(format!(
            "--nodes {n} is fewer than the {builds} builds of --mix: each build needs a node"
        )));
    }
    if n > 1 && !isolated {
        return Err(Error::Usage(format!(
            "--nodes {n} needs root on Linux: each slurmd needs its own host name and /run (private UTS and mount namespaces); without them a cluster has one node"
        )));
    }
    Ok(n)
}

/// Which build each of `n` nodes runs: contiguous runs in the order of `builds`, the first
/// builds getting one more when `n` does not divide evenly.
pub fn assign(builds: &[Build], n: usize) -> Vec<&Build> {
    let k = builds.len().max(1);
    (0..k)
        .flat_map(|b| {
            let count = n / k + usize::from(b < n % k);
            std::iter::repeat_n(&builds[b], count)
        })
        .collect()
}

/// A mixed cluster's `slurm.conf` names no `PluginDir` (each program loads its own build's
/// plugins from the directory compiled into it), so each prefix must be where its build was
/// configured to live: its staging manifest (`<prefix>.staging.toml`) says so. A label that
/// is a personality name (`native`, `darwin`) must match the build's personality.
pub fn check_mixed_build(build: &Build) -> Result<()> {
    let m = driver_common::staging::Manifest::read(&build.prefix)?;
    let given = std::path::absolute(&build.prefix).map_err(|e| Error::io(&build.prefix, e))?;
    if canonical(&m.prefix) != canonical(&given) {
        return Err(Error::Usage(format!(
            "--mix {}={}: the build was configured for {} (its staging manifest); a mixed cluster loads each build's plugins from where it was configured, so pass that prefix",
            build.label,
            build.prefix.display(),
            m.prefix.display()
        )));
    }
    for p in [
        driver_common::personality::Personality::Native,
        driver_common::personality::Personality::Darwin,
    ] {
        if build.label == p.name() && m.personality != p {
            return Err(Error::Usage(format!(
                "--mix {}={}: that prefix is a {} build",
                build.label,
                build.prefix.display(),
                m.personality.name()
            )));
        }
    }
    Ok(())
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(label: &str) -> Build {
        Build {
            label: label.into(),
            prefix: PathBuf::from(format!("/{label}")),
        }
    }

    #[test]
    fn parse_mix__two_builds_in_order() {
        let m = parse_mix("native=/a/prefix, darwin=/b/prefix").unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].label.as_str(), m[1].prefix.as_path()),
            ("native", Path::new("/b/prefix"))
        );
    }

    #[test]
    fn parse_mix__bad_input_says_what_and_how() {
        for (text, why) in [
            ("native=/a", "at least two builds"),
            ("native/a,darwin=/b", "has no `=`"),
            ("Native=/a,darwin=/b", "lowercase"),
            ("native=/a,native=/b", "given twice"),
            ("native=,darwin=/b", "has no prefix"),
        ] {
            let e = parse_mix(text).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("LABEL=PREFIX"), "{text}: {e}");
        }
    }

    #[test]
    fn node_count__bounds_builds_and_isolation() {
        assert_eq!(node_count(None, 0, false).unwrap(), 1);
        assert_eq!(node_count(None, 2, true).unwrap(), 2);
        assert_eq!(node_count(Some(4), 2, true).unwrap(), 4);
        assert!(
            node_count(Some(5), 1, true)
                .unwrap_err()
                .to_string()
                .contains("1 to 4")
        );
        assert!(node_count(Some(0), 1, true).is_err());
        assert!(
            node_count(Some(1), 2, true)
                .unwrap_err()
                .to_string()
                .contains("fewer than the 2 builds")
        );
        assert!(
            node_count(Some(2), 1, false)
                .unwrap_err()
                .to_string()
                .contains("needs root")
        );
    }

    #[test]
    fn assign__contiguous_first_builds_get_the_rest() {
        let builds = [b("native"), b("darwin")];
        let labels = |n| {
            assign(&builds, n)
                .iter()
                .map(|b| b.label.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(labels(2), ["native", "darwin"]);
        assert_eq!(labels(3), ["native", "native", "darwin"]);
        assert_eq!(labels(4), ["native", "native", "darwin", "darwin"]);
        assert_eq!(assign(&[b("x")], 3).len(), 3);
    }

    #[test]
    fn node_addr__distinct_loopback_addresses_with_namespaces() {
        assert_eq!(node_addr(0, true), Ipv4Addr::new(127, 0, 0, 11));
        assert_eq!(node_addr(3, true), Ipv4Addr::new(127, 0, 0, 14));
        assert_eq!(node_addr(0, false), Ipv4Addr::LOCALHOST);
        assert_eq!(node_name(1), "node2");
    }

    #[test]
    fn check_mixed_build__relocated_or_mislabelled_prefix_is_refused() {
        let (d, prefix) = driver_common::testing::scratch("prefix");
        std::fs::create_dir_all(&prefix).unwrap();
        let build = Build {
            label: "darwin".into(),
            prefix: prefix.clone(),
        };
        assert!(matches!(
            check_mixed_build(&build),
            Err(Error::NotStaged { .. })
        ));
        let mut m = driver_common::staging::Manifest {
            version: "24.11.5".into(),
            line: "24.11".into(),
            personality: driver_common::personality::Personality::Native,
            target: "x86_64-unknown-linux-gnu".into(),
            patched: true,
            prefix: d.path().join("elsewhere"),
            configured_prefix: None,
            sysconfdir: None,
            localstatedir: None,
            source: d.path().join("src"),
            build_dir: d.path().join("build"),
            make_vars: vec![],
        };
        // The manifest beside `prefix` names another prefix: relocated.
        std::fs::write(
            driver_common::staging::Manifest::path_for(&prefix),
            toml::to_string(&m).unwrap(),
        )
        .unwrap();
        let e = check_mixed_build(&build).unwrap_err().to_string();
        assert!(e.contains("was configured for"), "{e}");
        m.prefix = prefix.clone();
        m.write().unwrap();
        let e = check_mixed_build(&build).unwrap_err().to_string();
        assert!(e.contains("is a native build"), "{e}");
        m.personality = driver_common::personality::Personality::Darwin;
        m.write().unwrap();
        check_mixed_build(&build).unwrap();
    }
}
