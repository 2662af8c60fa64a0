//! The generated configuration of the one-node loopback cluster: directory layout,
//! `slurm.conf`, `gres.conf`, `slurmdbd.conf`, prolog/epilog, the auth/slurm key, free
//! ports and the node's hardware.

use super::profile::Profile;
use crate::error::{Error, Result};
use crate::util::fs::write_atomic;

/// How long one client command (`sbatch`, `scontrol`, `sacctmgr`, `mariadb`, ...) may take.
pub const CLIENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// Every file and directory of one cluster, all below one directory.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    pub fn conf_dir(&self) -> PathBuf {
        self.root.join("etc")
    }
    /// `slurm.conf`; auth/slurm reads `slurm.key`, slurmd `gres.conf` and slurmdbd
    /// `slurmdbd.conf` from the same directory.
    pub fn conf(&self) -> PathBuf {
        self.conf_dir().join("slurm.conf")
    }
    pub fn key(&self) -> PathBuf {
        self.conf_dir().join("slurm.key")
    }
    pub fn gres_conf(&self) -> PathBuf {
        self.conf_dir().join("gres.conf")
    }
    /// The darwin personality's modelled Mac for this cluster (`SLURM_SHIM_MAC_HARDWARE` of
    /// every daemon and client; a scenario rewrites it to change the machine).
    pub fn mac_hardware(&self) -> PathBuf {
        self.conf_dir().join("mac-hardware.conf")
    }
    pub fn dbd_conf(&self) -> PathBuf {
        self.conf_dir().join("slurmdbd.conf")
    }
    pub fn cgroup_conf(&self) -> PathBuf {
        self.conf_dir().join("cgroup.conf")
    }
    pub fn prolog(&self) -> PathBuf {
        self.conf_dir().join("prolog.sh")
    }
    pub fn epilog(&self) -> PathBuf {
        self.conf_dir().join("epilog.sh")
    }
    /// The record of what runs (see `state.rs`).
    pub fn state_file(&self) -> PathBuf {
        self.root.join("cluster.toml")
    }
    pub fn state(&self) -> PathBuf {
        self.root.join("state")
    }
    pub fn spool(&self) -> PathBuf {
        self.root.join("spool")
    }
    /// Bind-mounted onto `/run` in the cluster's mount namespaces (SACK sockets land here).
    pub fn run(&self) -> PathBuf {
        self.root.join("run")
    }
    /// PID files (not under `run/`, which is `/run` inside the namespaces).
    pub fn pids(&self) -> PathBuf {
        self.root.join("pid")
    }
    pub fn logs(&self) -> PathBuf {
        self.root.join("log")
    }
    /// Job scripts and outputs; world-writable with the sticky bit (jobs of the test user).
    pub fn jobs(&self) -> PathBuf {
        self.root.join("jobs")
    }
    /// The private MariaDB: data directory and socket.
    pub fn mysql_data(&self) -> PathBuf {
        self.root.join("mysql/data")
    }
    pub fn mysql_socket(&self) -> PathBuf {
        self.root.join("mysql/mysqld.sock")
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
    /// Where the prolog and epilog append `<script> <job id>` lines.
    pub fn hook_log(&self) -> PathBuf {
        self.jobs().join("hooks.log")
    }

    /// Create the directories.
    pub fn create(&self) -> Result<()> {
        for d in [
            self.conf_dir(),
            self.state(),
            self.spool(),
            self.run(),
            self.pids(),
            self.logs(),
            self.jobs(),
            self.root.join("mysql"),
        ] {
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

/// The four TCP ports of a cluster, all on 127.0.0.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ports {
    pub slurmctld: u16,
    pub slurmd: u16,
    pub slurmdbd: u16,
    pub mariadb: u16,
}

impl Ports {
    pub fn pick() -> Result<Ports> {
        let p = free_ports(4)?;
        Ok(Ports {
            slurmctld: p[0],
            slurmd: p[1],
            slurmdbd: p[2],
            mariadb: p[3],
        })
    }
}

/// Everything the configuration files depend on.
#[derive(Debug, Clone)]
pub struct Settings {
    pub layout: Layout,
    pub cluster: String,
    pub node: String,
    /// The short host name (`hostname -s`): slurmctld must find itself in SlurmctldHost,
    /// slurmd in NodeHostname and slurmdbd in DbdHost.
    pub hostname: String,
    pub ports: Ports,
    /// SlurmUser and SlurmdUser (root, or the current user when not root).
    pub user: String,
    pub plugin_dir: PathBuf,
    pub hw: NodeHw,
    /// The scheduling and tracking lines (profile.rs).
    pub profile: Profile,
    /// The MariaDB password of the `slurm` account (only in slurmdbd.conf, mode 0600).
    pub db_password: String,
}

/// The partition every job goes to.
pub const PARTITION: &str = "main";
/// The MariaDB account and database slurmdbd uses.
pub const DB_USER: &str = "slurm";
pub const DB_NAME: &str = "slurm_acct_db";

/// `slurm.conf`: one controller and one node on 127.0.0.1, auth/slurm, accounting through
/// slurmdbd (gres/gpu tracked), one `gpu:apple:1`, prolog and epilog, no cgroups.
pub fn render(s: &Settings) -> String {
    let l = &s.layout;
    let hw = &s.hw;
    let mut lines = vec![
        "# Generated by `cargo xtask cluster`: one controller and one node on loopback."
            .to_string(),
        format!("ClusterName={}", s.cluster),
        format!("SlurmctldHost={}(127.0.0.1)", s.hostname),
        format!("SlurmctldPort={}", s.ports.slurmctld),
        format!("SlurmdPort={}", s.ports.slurmd),
        "AuthType=auth/slurm".into(),
        "CredType=cred/slurm".into(),
        format!("SlurmUser={}", s.user),
        format!("SlurmdUser={}", s.user),
        format!("PluginDir={}", s.plugin_dir.display()),
        format!("StateSaveLocation={}", l.state().display()),
        format!("SlurmdSpoolDir={}", l.spool().display()),
        format!(
            "SlurmctldPidFile={}",
            l.pids().join("slurmctld.pid").display()
        ),
        format!("SlurmdPidFile={}", l.pids().join("slurmd.pid").display()),
        format!("SlurmctldLogFile={}", l.daemon_log("slurmctld").display()),
        format!("SlurmdLogFile={}", l.daemon_log("slurmd").display()),
        "SlurmctldDebug=debug".into(),
        "SlurmdDebug=debug".into(),
        "AccountingStorageType=accounting_storage/slurmdbd".into(),
        "AccountingStorageHost=127.0.0.1".into(),
        format!("AccountingStoragePort={}", s.ports.slurmdbd),
        "GresTypes=gpu".into(),
        "MpiDefault=none".into(),
        "SchedulerType=sched/backfill".into(),
        "ReturnToService=2".into(),
        format!("Prolog={}", l.prolog().display()),
        format!("Epilog={}", l.epilog().display()),
        // Quick cancels and time limits; finished jobs leave slurmctld's memory after 30 s
        // (sacct keeps them).
        "KillWait=2".into(),
        "OverTimeLimit=0".into(),
        "MinJobAge=30".into(),
        format!(
            "NodeName={} NodeAddr=127.0.0.1 NodeHostname={} CPUs={} Boards={} SocketsPerBoard={} CoresPerSocket={} ThreadsPerCore={}{} Gres=gpu:apple:1 State=UNKNOWN",
            s.node,
            s.hostname,
            hw.cpus,
            hw.boards,
            hw.sockets_per_board,
            hw.cores_per_socket,
            hw.threads_per_core,
            s.profile
                .node_params(hw)
                .iter()
                .map(|p| format!(" {p}"))
                .collect::<String>()
        ),
        format!(
            "PartitionName={PARTITION} Nodes={} Default=YES MaxTime=INFINITE State=UP",
            s.node
        ),
    ];
    lines.push(format!(
        "# Profile `{}` (cargo xtask cluster profiles):",
        s.profile.name()
    ));
    lines.extend(s.profile.global_lines(&[hw]));
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// `render`, then `extra` lines: one whose key is already set (not `NodeName`/`PartitionName`)
/// replaces that line, any other is appended.
pub fn render_with(s: &Settings, extra: &[String]) -> String {
    let mut lines: Vec<String> = render(s).lines().map(str::to_string).collect();
    let key = |l: &str| l.split_once('=').map(|(k, _)| k.trim().to_string());
    for e in extra {
        let k = key(e);
        let replaceable = k
            .as_deref()
            .is_some_and(|k| k != "NodeName" && k != "PartitionName");
        match lines.iter_mut().find(|l| replaceable && key(l) == k) {
            Some(l) => *l = e.clone(),
            None => lines.push(e.clone()),
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// `gres.conf`: one Apple GPU. `File=/dev/null` is a placeholder that lets Slurm count and
/// allocate the GPU; it isolates nothing (macOS has no device cgroup; any process can use
/// Metal whatever Slurm allocated).
pub fn render_gres(s: &Settings) -> String {
    format!(
        "# Generated by `cargo xtask cluster`. File=/dev/null is a documented placeholder: it\n\
         # lets Slurm count and allocate the GPU and isolates nothing.\n\
         NodeName={} Name=gpu Type=apple File=/dev/null\n",
        s.node
    )
}

/// `cgroup.conf`: `CgroupPlugin=disabled`. The cluster uses no cgroups, and a Mac has none:
/// 24.11's default `autodetect` makes slurmd fail there ("cgroup filesystem not mounted in
/// /sys/fs/cgroup/", "Unable to initialize cgroup plugin"; the 26.11 snapshot defaults to
/// `disabled` without `WITH_CGROUP`), as it now does in the darwin personality.
pub const CGROUP_CONF: &str = "# Generated by `cargo xtask cluster`: no cgroups (a Mac has none).\nCgroupPlugin=disabled\n";

/// `slurmdbd.conf` (mode 0600: it holds the database password).
pub fn render_dbd(s: &Settings) -> String {
    let l = &s.layout;
    let lines = [
        "# Generated by `cargo xtask cluster`: slurmdbd on loopback, private MariaDB.".to_string(),
        "AuthType=auth/slurm".into(),
        format!("DbdHost={}", s.hostname),
        "DbdAddr=127.0.0.1".into(),
        format!("DbdPort={}", s.ports.slurmdbd),
        format!("SlurmUser={}", s.user),
        format!("PluginDir={}", s.plugin_dir.display()),
        format!("LogFile={}", l.daemon_log("slurmdbd").display()),
        format!("PidFile={}", l.pids().join("slurmdbd.pid").display()),
        "DebugLevel=debug".into(),
        "StorageType=accounting_storage/mysql".into(),
        "StorageHost=127.0.0.1".into(),
        format!("StoragePort={}", s.ports.mariadb),
        format!("StorageUser={DB_USER}"),
        format!("StoragePass={}", s.db_password),
        format!("StorageLoc={DB_NAME}"),
    ];
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// The prolog or epilog: appends `<name> <job id> <uid>` to the hook log, and fails (exit 1)
/// while the fail flag exists.
pub fn render_hook(l: &Layout, name: &str) -> String {
    format!(
        "#!/bin/sh\n# Generated by `cargo xtask cluster`: records each run; fails while {flag} exists.\n\
         echo \"{name} $SLURM_JOB_ID $SLURM_JOB_UID\" >> '{log}'\n\
         if [ -e '{flag}' ]; then echo \"{name}: failing on purpose\" >&2; exit 1; fi\n\
         exit 0\n",
        flag = l.fail_flag(name).display(),
        log = l.hook_log().display(),
    )
}

/// The cluster's hardware file as `up` writes it: no key, so the shim's default Mac.
pub const MAC_HARDWARE: &str = "# The darwin personality's modelled Mac for this cluster's daemons and clients\n\
    # (SLURM_SHIM_MAC_HARDWARE; format: shim/src/emulate/mac_hardware.rs). No key set: the\n\
    # shim's default Mac (Apple M4 Pro, 10 performance + 4 efficiency cores, no GPU).\n\
    # Native builds never read it.\n";

/// Every configuration file of the cluster.
pub fn write_all(s: &Settings, extra: &[String]) -> Result<()> {
    let l = &s.layout;
    write_atomic(&l.conf(), render_with(s, extra).as_bytes(), 0o644)?;
    write_atomic(&l.gres_conf(), render_gres(s).as_bytes(), 0o644)?;
    write_atomic(&l.mac_hardware(), MAC_HARDWARE.as_bytes(), 0o644)?;
    write_atomic(&l.cgroup_conf(), CGROUP_CONF.as_bytes(), 0o644)?;
    write_atomic(&l.dbd_conf(), render_dbd(s).as_bytes(), 0o600)?;
    write_atomic(&l.prolog(), render_hook(l, "prolog").as_bytes(), 0o755)?;
    write_atomic(&l.epilog(), render_hook(l, "epilog").as_bytes(), 0o755)?;
    write_key(&l.key())
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
    #![allow(non_snake_case)]
    use super::*;

    const SLURMD_C: &str = "NodeName=vm CPUs=8 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=24105\nUpTime=0-00:07:18\n";

    fn settings(root: &Path) -> Settings {
        Settings {
            layout: Layout {
                root: root.to_path_buf(),
            },
            cluster: "xtask".into(),
            node: "smoke1".into(),
            hostname: "host".into(),
            ports: Ports {
                slurmctld: 40001,
                slurmd: 40002,
                slurmdbd: 40003,
                mariadb: 40004,
            },
            user: "root".into(),
            plugin_dir: PathBuf::from("/p/lib/slurm"),
            hw: parse_slurmd_c(SLURMD_C).unwrap(),
            profile: Profile::Default,
            db_password: "pw".into(),
        }
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
    fn render__has_loopback_ports_auth_accounting_gres_and_paths() {
        let conf = render(&settings(Path::new("/t")));
        for line in [
            "SlurmctldHost=host(127.0.0.1)",
            "SlurmctldPort=40001",
            "SlurmdPort=40002",
            "AuthType=auth/slurm",
            "CredType=cred/slurm",
            "SlurmUser=root",
            "ProctrackType=proctrack/pgid",
            "TaskPlugin=task/none",
            "StateSaveLocation=/t/state",
            "SlurmdSpoolDir=/t/spool",
            "SlurmctldPidFile=/t/pid/slurmctld.pid",
            "SlurmdLogFile=/t/log/slurmd.log",
            "PluginDir=/p/lib/slurm",
            "AccountingStorageType=accounting_storage/slurmdbd",
            "AccountingStoragePort=40003",
            "AccountingStorageTRES=gres/gpu",
            "GresTypes=gpu",
            "Prolog=/t/etc/prolog.sh",
            "Epilog=/t/etc/epilog.sh",
            "NodeName=smoke1 NodeAddr=127.0.0.1 NodeHostname=host CPUs=8 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=24105 Gres=gpu:apple:1 State=UNKNOWN",
            "SelectTypeParameters=CR_Core_Memory",
            "DefMemPerCPU=3013",
            "PartitionName=main Nodes=smoke1 Default=YES MaxTime=INFINITE State=UP",
        ] {
            assert!(
                conf.lines().any(|l| l == line),
                "missing `{line}` in:\n{conf}"
            );
        }
    }

    #[test]
    fn render__profile_lines_once_and_cpu_has_no_memory() {
        let mut s = settings(Path::new("/t"));
        for profile in [Profile::Default, Profile::Poc, Profile::Cpu] {
            s.profile = profile;
            let conf = render(&s);
            for key in [
                "SelectType=",
                "ProctrackType=",
                "TaskPlugin=",
                "AccountingStorageTRES=",
            ] {
                assert_eq!(
                    conf.lines().filter(|l| l.starts_with(key)).count(),
                    1,
                    "{key} in {profile:?}:\n{conf}"
                );
            }
        }
        assert!(!conf_has(&render(&s), "RealMemory") && !conf_has(&render(&s), "DefMemPerCPU"));
    }

    fn conf_has(conf: &str, word: &str) -> bool {
        conf.lines().any(|l| l.contains(word))
    }

    #[test]
    fn parse_slurmd_c__real_memory_is_required() {
        let err = parse_slurmd_c(&SLURMD_C.replace(" RealMemory=24105", "")).unwrap_err();
        assert!(err.to_string().contains("RealMemory"), "{err}");
    }

    #[test]
    fn render_with__replaces_scalars_appends_the_rest() {
        let s = settings(Path::new("/t"));
        let conf = render_with(
            &s,
            &[
                "MinJobAge=300".into(),
                "SelectTypeParameters=CR_CPU".into(),
                "PartitionName=bench Nodes=smoke1".into(),
            ],
        );
        assert!(conf.lines().any(|l| l == "MinJobAge=300"), "{conf}");
        assert!(!conf.lines().any(|l| l == "MinJobAge=30"), "{conf}");
        assert!(conf.lines().any(|l| l == "SelectTypeParameters=CR_CPU"));
        assert!(conf.lines().any(|l| l.starts_with("PartitionName=main ")));
        assert!(
            conf.lines()
                .any(|l| l == "PartitionName=bench Nodes=smoke1")
        );
    }

    #[test]
    fn render_dbd__mysql_on_loopback_with_the_password() {
        let conf = render_dbd(&settings(Path::new("/t")));
        for line in [
            "DbdHost=host",
            "DbdAddr=127.0.0.1",
            "DbdPort=40003",
            "StorageType=accounting_storage/mysql",
            "StorageHost=127.0.0.1",
            "StoragePort=40004",
            "StorageUser=slurm",
            "StoragePass=pw",
            "StorageLoc=slurm_acct_db",
            "LogFile=/t/log/slurmdbd.log",
        ] {
            assert!(
                conf.lines().any(|l| l == line),
                "missing `{line}` in:\n{conf}"
            );
        }
    }

    #[test]
    fn render_gres__placeholder_file_for_the_node() {
        let g = render_gres(&settings(Path::new("/t")));
        assert!(
            g.lines()
                .any(|l| l == "NodeName=smoke1 Name=gpu Type=apple File=/dev/null"),
            "{g}"
        );
    }

    #[test]
    fn render_hook__records_and_fails_on_flag() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout {
            root: dir.path().to_path_buf(),
        };
        l.create().unwrap();
        let script = dir.path().join("p.sh");
        write_atomic(&script, render_hook(&l, "prolog").as_bytes(), 0o755).unwrap();
        let run = || {
            std::process::Command::new(&script)
                .env("SLURM_JOB_ID", "7")
                .env("SLURM_JOB_UID", "0")
                .status()
                .unwrap()
        };
        assert!(run().success());
        std::fs::write(l.fail_flag("prolog"), "").unwrap();
        assert_eq!(run().code(), Some(1));
        assert_eq!(
            std::fs::read_to_string(l.hook_log()).unwrap(),
            "prolog 7 0\nprolog 7 0\n"
        );
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
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("slurm.key");
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
        l.create().unwrap();
        for d in [
            l.conf_dir(),
            l.state(),
            l.spool(),
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
