//! The LaunchDaemon property lists of slurmd and sackd, written with the `plist` crate.
//!
//! Keys (launchd.plist(5); facts and sources in ../shared/docs/PACKAGING.md):
//! - `ProgramArguments`: the daemon in the foreground (`-D`): launchd supervises the process
//!   it started, a daemon that forks away is seen as exited and restarted.
//! - `RunAtLoad`, `KeepAlive`: started at boot, restarted when it exits.
//! - `ProcessType` `Interactive`: no resource throttling (unset means `Standard`, which
//!   launchd may throttle; a compute node's daemon must not be).
//! - `AbandonProcessGroup`: when slurmd exits or is restarted, launchd does not kill the
//!   rest of its process group. slurmd `setsid()`s before it execs slurmstepd (Slurm's
//!   `src/slurmd/slurmd/req.c`), and the systemd unit upstream ships uses `KillMode=process`
//!   for the same reason: running jobs' slurmstepd must outlive a slurmd restart. (The real
//!   check needs a Mac: `ci/macos-arm64.yml`.)
//! - `ExitTimeOut`: seconds between SIGTERM and SIGKILL at stop.
//! - `SoftResourceLimits`/`HardResourceLimits` `NumberOfFiles`: finite, 131072 (the upstream
//!   systemd unit's `LimitNOFILE`). Never unlimited: with an infinite soft NOFILE limit Slurm's
//!   `closeall()` loops over about 2^31 descriptors before each exec on macOS
//!   (../shared/docs/POC-DEFECTS.md, D13).
//! - `StandardOutPath`/`StandardErrorPath`: under `<var>/log/slurm/`.
//! - Sleep: with `caffeinate`, the daemon runs as `/usr/bin/caffeinate -s <daemon> -D`, which
//!   keeps the system awake while slurmd runs, on AC power only (caffeinate(8)); on battery
//!   a Mac sleeps anyway.

#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;

/// `NumberOfFiles`, soft and hard.
pub const NUMBER_OF_FILES: u64 = 131_072;
/// `ExitTimeOut` in seconds (Slurm's own default `KillWait` is 30 s; slurmd needs less).
pub const EXIT_TIMEOUT: u64 = 60;
pub use crate::launchd::Daemon;

/// Where the daemon and its logs are, and how it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    pub daemon: Daemon,
    /// The prefix holding `sbin/` (a Homebrew opt link, or an install prefix).
    pub prefix: PathBuf,
    /// The log directory (`<var>/log/slurm`).
    pub log_dir: PathBuf,
    /// `--conf-server host[:port]`: configless, the configuration comes from slurmctld.
    pub conf_server: Option<String>,
    /// Run under `caffeinate -s` (no sleep while on AC power).
    pub caffeinate: bool,
}

impl Service {
    /// The daemon's command line.
    pub fn arguments(&self) -> Vec<String> {
        let program = self.prefix.join("sbin").join(self.daemon.name());
        let mut args = Vec::new();
        if self.caffeinate {
            args.extend(["/usr/bin/caffeinate".to_string(), "-s".to_string()]);
        }
        args.push(program.display().to_string());
        args.push("-D".to_string());
        if let Some(server) = &self.conf_server {
            args.push("--conf-server".to_string());
            args.push(server.clone());
        }
        args
    }

    fn log(&self, stream: &str) -> String {
        self.log_dir
            .join(format!("{}.{stream}.log", self.daemon.name()))
            .display()
            .to_string()
    }

    /// The property list.
    pub fn plist(&self) -> plist::Value {
        let mut limits = plist::Dictionary::new();
        limits.insert(
            "NumberOfFiles".into(),
            plist::Value::Integer(NUMBER_OF_FILES.into()),
        );
        let mut d = plist::Dictionary::new();
        d.insert("Label".into(), self.daemon.label().into());
        d.insert(
            "ProgramArguments".into(),
            plist::Value::Array(self.arguments().into_iter().map(Into::into).collect()),
        );
        d.insert("RunAtLoad".into(), true.into());
        d.insert("KeepAlive".into(), true.into());
        d.insert("ProcessType".into(), "Interactive".into());
        d.insert("AbandonProcessGroup".into(), true.into());
        d.insert(
            "ExitTimeOut".into(),
            plist::Value::Integer(EXIT_TIMEOUT.into()),
        );
        d.insert("SoftResourceLimits".into(), limits.clone().into());
        d.insert("HardResourceLimits".into(), limits.into());
        d.insert("StandardOutPath".into(), self.log("out").into());
        d.insert("StandardErrorPath".into(), self.log("err").into());
        plist::Value::Dictionary(d)
    }

    /// The property list as XML (what `plutil -lint` and launchd read).
    pub fn xml(&self) -> Result<Vec<u8>, plist::Error> {
        let mut out = Vec::new();
        self.plist().to_writer_xml(&mut out)?;
        out.push(b'\n');
        Ok(out)
    }
}

/// The plist file name for a daemon: `<label>.plist` (Homebrew's `name macos:` and
/// `/Library/LaunchDaemons` both use it).
pub fn file_name(daemon: Daemon) -> String {
    format!("{}.plist", daemon.label())
}

/// Reads a property list back (tests).
#[cfg(test)]
pub fn parse(bytes: &[u8], what: &Path) -> driver_common::error::Result<plist::Value> {
    plist::Value::from_reader(std::io::Cursor::new(bytes))
        .map_err(|e| driver_common::error::Error::parse(what.display().to_string(), e))
}

/// A property list's `ProgramArguments`, as strings (tests).
#[cfg(test)]
pub fn program_arguments(v: &plist::Value) -> Vec<&str> {
    v.as_dictionary().unwrap()["ProgramArguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_string().unwrap())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slurmd() -> Service {
        Service {
            daemon: Daemon::Slurmd,
            prefix: "/opt/homebrew/opt/slurm-wlm".into(),
            log_dir: "/opt/homebrew/var/log/slurm".into(),
            conf_server: Some("ctl.example.org:6817".into()),
            caffeinate: false,
        }
    }

    #[test]
    fn plist__round_trip_has_every_key_with_finite_limits() {
        let xml = slurmd().xml().unwrap();
        let v = parse(&xml, Path::new("t")).unwrap();
        let d = v.as_dictionary().unwrap();
        assert_eq!(d["Label"].as_string(), Some("org.slurm-on-mac.slurmd"));
        let args = program_arguments(&v);
        assert_eq!(
            args,
            [
                "/opt/homebrew/opt/slurm-wlm/sbin/slurmd",
                "-D",
                "--conf-server",
                "ctl.example.org:6817"
            ]
        );
        for key in ["RunAtLoad", "KeepAlive", "AbandonProcessGroup"] {
            assert_eq!(d[key].as_boolean(), Some(true), "{key}");
        }
        assert_eq!(d["ProcessType"].as_string(), Some("Interactive"));
        assert_eq!(d["ExitTimeOut"].as_unsigned_integer(), Some(EXIT_TIMEOUT));
        for key in ["SoftResourceLimits", "HardResourceLimits"] {
            let n = d[key].as_dictionary().unwrap()["NumberOfFiles"].as_unsigned_integer();
            assert_eq!(n, Some(NUMBER_OF_FILES), "{key}");
        }
        assert_eq!(
            d["StandardErrorPath"].as_string(),
            Some("/opt/homebrew/var/log/slurm/slurmd.err.log")
        );
        assert!(String::from_utf8(xml).unwrap().starts_with("<?xml"));
    }

    #[test]
    fn arguments__caffeinate_wraps_the_daemon_and_sackd_has_its_own_label() {
        let s = Service {
            daemon: Daemon::Sackd,
            caffeinate: true,
            conf_server: None,
            ..slurmd()
        };
        assert_eq!(
            s.arguments(),
            [
                "/usr/bin/caffeinate",
                "-s",
                "/opt/homebrew/opt/slurm-wlm/sbin/sackd",
                "-D"
            ]
        );
        assert_eq!(file_name(Daemon::Sackd), "org.slurm-on-mac.sackd.plist");
    }
}
