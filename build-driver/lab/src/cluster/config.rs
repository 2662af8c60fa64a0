//! What a cluster's configuration is made of: the directory layout, the nodes' hardware
//! (`slurmd -C`), free ports, the auth/slurm key and the database password. The files'
//! text is render.rs.

use driver_common::error::{Error, Result};

/// How long one client command (`sbatch`, `scontrol`, `sacctmgr`, `mariadb`, ...) may take.
pub const CLIENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// `MinJobAge` of every cluster's slurm.conf (render.rs): seconds a finished job stays in
/// slurmctld's memory (sacct keeps it). The soak's warm-up of slurmctld is derived from it.
pub const MIN_JOB_AGE_S: u64 = 30;

/// Every file and directory of one cluster, all below one directory.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
}

/// The accessors of [`Layout`] that name one fixed path: `name = base / "relative path";`,
/// `base` the layout's `root` or another accessor.
macro_rules! layout_paths {
    (@base $layout:ident root) => {
        $layout.root
    };
    (@base $layout:ident $base:ident) => {
        $layout.$base()
    };
    ($($(#[$doc:meta])* $name:ident = $base:ident / $rel:literal;)*) => {
        impl Layout {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> PathBuf {
                    layout_paths!(@base self $base).join($rel)
                }
            )*
        }
    };
}

layout_paths! {
    conf_dir = root / "etc";
    /// `slurm.conf`; auth/slurm reads `slurm.key`, slurmd `gres.conf` and slurmdbd
    /// `slurmdbd.conf` from the same directory.
    conf = conf_dir / "slurm.conf";
    key = conf_dir / "slurm.key";
    gres_conf = conf_dir / "gres.conf";
    /// The darwin personality's modelled Mac for this cluster (`SLURM_SHIM_MAC_HARDWARE` of
    /// every daemon and client; a scenario rewrites it to change the machine).
    mac_hardware = conf_dir / "mac-hardware.conf";
    dbd_conf = conf_dir / "slurmdbd.conf";
    cgroup_conf = conf_dir / "cgroup.conf";
    prolog = conf_dir / "prolog.sh";
    epilog = conf_dir / "epilog.sh";
    /// The record of what runs (see `state.rs`).
    state_file = root / "cluster.toml";
    state = root / "state";
    /// The head's `/run`: bind-mounted onto `/run` in the namespaces of slurmctld, slurmdbd
    /// and the harness's clients (their SACK sockets land here).
    run = root / "run";
    /// PID files (not under `run/`, which is `/run` inside the namespaces).
    pids = root / "pid";
    logs = root / "log";
    /// Job scripts and outputs; world-writable with the sticky bit (jobs of the test user).
    jobs = root / "jobs";
    /// The private MariaDB: data directory and socket.
    mysql_data = root / "mysql/data";
    mysql_socket = root / "mysql/mysqld.sock";
    /// The darwin personality's emulation log (the shim's `SLURM_SHIM_EMULATION_LOG`: one
    /// line per macOS behaviour applied and call site), given to every daemon and client of
    /// the cluster unless the caller set the variable itself ([`emulation_log`]).
    emulation_log = logs / "shim-emulation.log";
    /// Where the prolog and epilog append `<script> <job id>` lines.
    hook_log = jobs / "hooks.log";
}

impl Layout {
    /// Everything of one node (`node1`, ...; `%n` in slurm.conf).
    pub fn node_dir(&self, node: &str) -> PathBuf {
        self.root.join("nodes").join(node)
    }
    /// The node's `/run` (its slurmd's SACK socket, `slurm/sack.socket`).
    pub fn node_run(&self, node: &str) -> PathBuf {
        self.node_dir(node).join("run")
    }
    /// The node's slurmd's SACK socket (`/run/slurm/sack.socket` inside its namespaces).
    pub fn node_sack_socket(&self, node: &str) -> PathBuf {
        self.node_run(node).join("slurm/sack.socket")
    }
    /// The node's SlurmdSpoolDir.
    pub fn node_spool(&self, node: &str) -> PathBuf {
        self.node_dir(node).join("spool")
    }
    pub fn daemon_log(&self, daemon: &str) -> PathBuf {
        self.logs().join(format!("{daemon}.log"))
    }
    /// The daemon's own stdout and stderr (messages before the log file is open).
    pub fn daemon_output(&self, daemon: &str) -> PathBuf {
        self.logs().join(format!("{daemon}.out"))
    }
    /// A flag file: while it exists, the prolog (or epilog) fails.
    pub fn fail_flag(&self, script: &str) -> PathBuf {
        self.jobs().join(format!("{script}-fail"))
    }
    /// A flag file: while it exists, the prolog (or epilog) hangs (sleeps 5 minutes).
    pub fn sleep_flag(&self, script: &str) -> PathBuf {
        self.jobs().join(format!("{script}-sleep"))
    }

    /// Create the directories, with those of `nodes` nodes.
    pub fn create(&self, nodes: usize) -> Result<()> {
        let node_dirs = (0..nodes).flat_map(|i| {
            let n = node_name(i);
            [self.node_run(&n), self.node_spool(&n)]
        });
        let dirs = [
            self.conf_dir(),
            self.state(),
            self.run(),
            self.pids(),
            self.logs(),
            self.jobs(),
            self.root.join("mysql"),
        ];
        for d in dirs.into_iter().chain(node_dirs) {
            std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
        }
        use std::os::unix::fs::PermissionsExt;
        for (d, mode) in [(self.root.clone(), 0o755), (self.jobs(), 0o1777)] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode))
                .map_err(|e| Error::io(&d, e))?;
        }
        Ok(())
    }
}

/// The shim's variable naming its emulation log (shim/src/emulate/report.rs).
pub const EMULATION_LOG_ENV: &str = "SLURM_SHIM_EMULATION_LOG";

/// Where the cluster's programs write the shim's emulation log: the caller's
/// `SLURM_SHIM_EMULATION_LOG` if set (inherited), else the cluster's [`Layout::emulation_log`].
pub fn emulation_log(layout: &Layout) -> PathBuf {
    std::env::var_os(EMULATION_LOG_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| layout.emulation_log())
}

/// Give `cmd` the cluster's emulation log unless the caller set one (which it inherits) or
/// `cmd` has one already (a daemon environment's, [`super::lifecycle::UpOptions`]; empty
/// means none: the benchmarks measure without the lab's diagnostic). The file is made
/// writable by every user first (clients and steps run as the test user).
pub fn set_emulation_log(cmd: &mut std::process::Command, layout: &Layout) {
    if std::env::var_os(EMULATION_LOG_ENV).is_some()
        || cmd.get_envs().any(|(k, _)| k == EMULATION_LOG_ENV)
    {
        return;
    }
    let log = layout.emulation_log();
    if !log.exists() {
        let made = std::fs::File::create(&log).and_then(|_| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666))
        });
        if made.is_err() {
            // The log is a diagnostic: without it the shim writes nothing, the run goes on.
            return;
        }
    }
    cmd.env(EMULATION_LOG_ENV, log);
}

/// The name of node `i` (0-based): its NodeName, and the name of its run and spool
/// directories ([`Layout::create`]).
pub fn node_name(i: usize) -> String {
    format!("node{}", i + 1)
}

/// The hardware line `slurmd -C` prints: what slurmd will detect, so the node is not drained
/// for a configuration/hardware mismatch.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeHw {
    pub cpus: u32,
    pub boards: u32,
    pub sockets_per_board: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    /// Memory in MB (`RealMemory=`).
    #[serde(default)]
    pub real_memory: u64,
}

/// Parse `slurmd -C` output (`NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2
/// ThreadsPerCore=1 RealMemory=24105` then `UpTime=...`).
pub fn parse_slurmd_c(text: &str) -> Result<NodeHw> {
    let word = |name: &str| -> Result<&str> {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
            .ok_or_else(|| Error::Scenario(format!("`slurmd -C` printed no {name}=: {text:?}")))
    };
    let field = |name: &str| -> Result<u32> {
        word(name)?
            .parse::<u32>()
            .map_err(|e| Error::parse(format!("`slurmd -C`: {name}="), e))
    };
    let hw = NodeHw {
        cpus: field("CPUs")?,
        boards: field("Boards")?,
        sockets_per_board: field("SocketsPerBoard")?,
        cores_per_socket: field("CoresPerSocket")?,
        threads_per_core: field("ThreadsPerCore")?,
        real_memory: word("RealMemory")?
            .parse::<u64>()
            .map_err(|e| Error::parse("`slurmd -C`: RealMemory=", e))?,
    };
    if hw.cpus == 0 {
        return Err(Error::Scenario(format!(
            "`slurmd -C` reports 0 CPUs: {text:?}"
        )));
    }
    Ok(hw)
}

/// The head's TCP ports, all on 127.0.0.1 (each node's slurmd port is in its `Node`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ports {
    pub slurmctld: u16,
    pub slurmdbd: u16,
    pub mariadb: u16,
}

impl Ports {
    /// The head's three ports and `nodes` slurmd ports, all distinct and free now.
    pub fn pick(nodes: usize) -> Result<(Ports, Vec<u16>)> {
        let p = free_ports(3 + nodes)?;
        Ok((
            Ports {
                slurmctld: p[0],
                slurmdbd: p[1],
                mariadb: p[2],
            },
            p[3..].to_vec(),
        ))
    }
}

/// A random password (hex of 16 bytes from /dev/urandom).
pub fn random_password() -> Result<String> {
    let mut b = [0u8; 16];
    let urandom = Path::new("/dev/urandom");
    let mut f = std::fs::File::open(urandom).map_err(|e| Error::io(urandom, e))?;
    std::io::Read::read_exact(&mut f, &mut b).map_err(|e| Error::io(urandom, e))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// `n` distinct free TCP ports on 127.0.0.1: all are bound at once (port 0), read back and
/// released. Another process may take one before the daemons bind it; the daemons then fail
/// to start and the logs say so.
pub fn free_ports(n: usize) -> Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind(("127.0.0.1", 0)))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| Error::io("a port on 127.0.0.1", e))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| Error::io("a bound port on 127.0.0.1", e))
}

/// The auth/slurm key: 1024 random bytes, mode 0600 from creation on (auth/slurm refuses a
/// key readable by others). Refuses to overwrite an existing file.
pub fn write_key(path: &Path) -> Result<()> {
    let mut key = vec![0u8; 1024];
    let urandom = Path::new("/dev/urandom");
    let mut f = std::fs::File::open(urandom).map_err(|e| Error::io(urandom, e))?;
    std::io::Read::read_exact(&mut f, &mut key).map_err(|e| Error::io(urandom, e))?;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut out = opts.open(path).map_err(|e| Error::io(path, e))?;
    out.write_all(&key).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLURMD_C: &str = "NodeName=vm CPUs=8 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=24105\nUpTime=0-00:07:18\n";

    #[test]
    fn set_emulation_log__keeps_a_daemon_environments_value() {
        if std::env::var_os(EMULATION_LOG_ENV).is_some() {
            eprintln!("skipped: the caller's {EMULATION_LOG_ENV} is inherited and wins");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout {
            root: dir.path().to_path_buf(),
        };
        std::fs::create_dir_all(layout.logs()).unwrap();
        let log_of = |cmd: &std::process::Command| {
            cmd.get_envs()
                .find(|(k, _)| *k == EMULATION_LOG_ENV)
                .and_then(|(_, v)| v.map(|v| v.to_os_string()))
        };
        let mut given = std::process::Command::new("true");
        given.env(EMULATION_LOG_ENV, "");
        set_emulation_log(&mut given, &layout);
        assert_eq!(log_of(&given), Some("".into()));
        let mut plain = std::process::Command::new("true");
        set_emulation_log(&mut plain, &layout);
        assert_eq!(
            log_of(&plain),
            Some(layout.emulation_log().into_os_string())
        );
    }

    #[test]
    fn parse_slurmd_c__reads_the_topology() {
        assert_eq!(
            parse_slurmd_c(SLURMD_C).unwrap(),
            NodeHw {
                cpus: 8,
                boards: 1,
                sockets_per_board: 1,
                cores_per_socket: 4,
                threads_per_core: 2,
                real_memory: 24105,
            }
        );
    }

    #[test]
    fn parse_slurmd_c__missing_field_is_an_error() {
        let err = parse_slurmd_c("NodeName=vm CPUs=2 Boards=1\n").unwrap_err();
        assert!(err.to_string().contains("SocketsPerBoard"), "{err}");
    }

    #[test]
    fn parse_slurmd_c__zero_or_garbage_cpus_is_an_error() {
        assert!(parse_slurmd_c(&SLURMD_C.replace("CPUs=8", "CPUs=0")).is_err());
        assert!(parse_slurmd_c(&SLURMD_C.replace("CPUs=8", "CPUs=x")).is_err());
    }

    #[test]
    fn parse_slurmd_c__real_memory_is_required() {
        let err = parse_slurmd_c(&SLURMD_C.replace(" RealMemory=24105", "")).unwrap_err();
        assert!(err.to_string().contains("RealMemory"), "{err}");
    }

    #[test]
    fn free_ports__distinct_nonzero_and_bindable() {
        let ports = free_ports(3).unwrap();
        assert_eq!(ports.len(), 3);
        assert!(ports.iter().all(|&p| p != 0));
        let mut sorted = ports.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 3, "{ports:?}");
        for p in ports {
            TcpListener::bind(("127.0.0.1", p)).unwrap();
        }
    }

    #[test]
    fn write_key__1024_random_bytes_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.key"), dir.path().join("b.key"));
        write_key(&a).unwrap();
        write_key(&b).unwrap();
        let (ka, kb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert_eq!(ka.len(), 1024);
        assert_ne!(ka, kb, "two keys must differ");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&a).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn write_key__refuses_to_overwrite() {
        let (_dir, k) = driver_common::testing::scratch("slurm.key");
        std::fs::write(&k, b"old").unwrap();
        assert!(matches!(write_key(&k), Err(Error::Io { .. })));
        assert_eq!(std::fs::read(&k).unwrap(), b"old");
    }

    #[test]
    fn layout__create_makes_every_directory() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout {
            root: dir.path().join("c"),
        };
        l.create(2).unwrap();
        for d in [
            l.conf_dir(),
            l.state(),
            l.node_spool("node1"),
            l.node_run("node2"),
            l.run(),
            l.pids(),
            l.logs(),
            l.jobs(),
            l.root.join("mysql"),
        ] {
            assert!(d.is_dir(), "{}", d.display());
        }
    }
}
