//! The one-node cluster `cluster peer` and `cluster bench` run against: slurmctld and slurmd
//! from one prefix, configured like the smoke test's cluster (config.rs) plus a few lines, in
//! the private mount namespace (private_ns.rs) with its own `/run`. Stopped by PID; the
//! daemons are our children and are killed if the driver unwinds.

use super::config::{self, Layout, Settings};
use super::daemons::{Daemon, file_tail, poll, read_bounded, run_bounded};
use super::private_ns::Private;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use xshell::{Shell, cmd};

const READY_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_GRACE: Duration = Duration::from_secs(20);
pub const NODE: &str = "node1";

/// A running cluster.
#[derive(Debug)]
pub struct Lab {
    pub prefix: PathBuf,
    pub layout: Layout,
    slurmd: Daemon,
    ctld: Daemon,
    _private: Private,
}

impl Lab {
    /// Configure and start a cluster from `prefix` below `dir` (which must not exist), with
    /// `extra` lines appended to `slurm.conf`, and wait until the node is idle.
    pub fn start(sh: &Shell, prefix: &Path, dir: &Path, extra: &[String]) -> Result<Lab> {
        super::check_prefix(prefix)?;
        let layout = Layout {
            root: dir.join("cluster"),
        };
        layout.create()?;
        let slurmd_bin = prefix.join("sbin/slurmd");
        let slurmctld_bin = prefix.join("sbin/slurmctld");
        let hw = config::parse_slurmd_c(&read_bounded(
            cmd!(sh, "{slurmd_bin} -C"),
            Duration::from_secs(30),
        )?)?;
        let hostname = read_bounded(cmd!(sh, "hostname -s"), Duration::from_secs(10))?
            .trim()
            .to_string();
        let ports = config::free_ports(2)?;
        let settings = Settings {
            layout: layout.clone(),
            cluster: "xtask".into(),
            node: NODE.into(),
            hostname,
            ctld_port: ports[0],
            slurmd_port: ports[1],
            user: "root".into(),
            plugin_dir: prefix.join("lib/slurm"),
            hw,
        };
        let conf = layout.conf();
        let mut text = config::render(&settings);
        for line in extra {
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(&conf, text).map_err(|e| Error::io(&conf, e))?;
        config::write_key(&layout.key())?;
        let private = Private::new(sh, dir, prefix, &conf)?;

        let _env = sh.push_env("SLURM_CONF", &conf);
        let t = Instant::now();
        let mut ctld = Daemon::start(
            "slurmctld",
            cmd!(sh, "{slurmctld_bin} -D -i -f {conf}"),
            &layout.daemon_output("slurmctld"),
        )?;
        let mut slurmd = Daemon::start(
            "slurmd",
            cmd!(sh, "{slurmd_bin} -D -N {NODE} -f {conf}"),
            &layout.daemon_output("slurmd"),
        )?;
        let sinfo = prefix.join("bin/sinfo");
        let ready = poll(
            &format!("node {NODE} to become idle"),
            READY_TIMEOUT,
            Duration::from_millis(500),
            || {
                ctld.check_running()?;
                slurmd.check_running()?;
                let out = run_bounded(
                    cmd!(sh, "{sinfo} -h -N -n {NODE} -o %T"),
                    Duration::from_secs(20),
                )?;
                // One line per partition the node is in.
                let states = String::from_utf8_lossy(&out.stdout).to_string();
                let idle = states.lines().count() > 0 && states.lines().all(|l| l.trim() == "idle");
                Ok((out.status.success() && idle).then_some(()))
            },
        );
        let lab = Lab {
            prefix: prefix.to_path_buf(),
            layout,
            slurmd,
            ctld,
            _private: private,
        };
        if let Err(e) = ready {
            lab.report();
            return Err(e);
        }
        println!(
            "  cluster up from {} (slurmctld port {}, slurmd port {}) in {:.1?}",
            prefix.display(),
            ports[0],
            ports[1],
            t.elapsed()
        );
        Ok(lab)
    }

    pub fn conf(&self) -> PathBuf {
        self.layout.conf()
    }

    /// A client program of the prefix.
    pub fn tool(&self, name: &str) -> PathBuf {
        self.prefix.join("bin").join(name)
    }

    /// Print the tails of the daemon logs.
    pub fn report(&self) {
        for d in ["slurmctld", "slurmd"] {
            for f in [self.layout.daemon_log(d), self.layout.daemon_output(d)] {
                if f.exists() {
                    eprintln!("---- tail of {} ----\n{}", f.display(), file_tail(&f, 30));
                }
            }
        }
    }

    /// Stop slurmd then slurmctld; an error if either had died before.
    pub fn stop(mut self, sh: &Shell) -> Result<()> {
        let mut died = Vec::new();
        for d in [&mut self.slurmd, &mut self.ctld] {
            if d.stop(sh, STOP_GRACE)? == super::daemons::Stopped::AlreadyExited {
                died.push(d.name.clone());
            }
        }
        if died.is_empty() {
            Ok(())
        } else {
            self.report();
            Err(Error::Cluster(format!(
                "{} exited before the end of the run",
                died.join(" and ")
            )))
        }
    }
}
