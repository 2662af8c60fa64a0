//! `join --client`: a Mac that only submits jobs (a login or submit host) of a configless
//! cluster. It gets the cluster's key and a sackd, and no slurmd: no slurmd command, no
//! slurm.conf, no slurmd LaunchDaemon.
//!
//! ```text
//! slurm-mac join --client --prefix P --controller HOST[:PORT] [--key FILE] [--etc DIR]
//!                [--log-dir DIR] [--apply]
//! ```
//!
//! What the client commands need, from Slurm 24.11.5's source (`slurm-src/24.11.5`):
//!
//! - **A credential.** With auth/slurm only sackd, slurmd, slurmctld and slurmdbd sign with
//!   the key (`run_in_daemon(..., "sackd,slurmd,slurmctld,slurmdbd")`,
//!   `src/plugins/auth/slurm/auth_slurm.c`); `sbatch`, `squeue`, `scancel` ask the SACK
//!   socket `/run/slurm/sack.socket` (`src/common/sack_api.c`; `/var/run/...` on macOS,
//!   patches/24.11/0011). On a node without slurmd, sackd serves it.
//! - **The key**, for sackd: `SLURM_SACK_KEY`, else `slurm.key` beside the compiled-in
//!   slurm.conf (`init_internal()` in `src/plugins/auth/slurm/internal.c`,
//!   `get_extra_conf_path()` in `src/common/read_config.c`): `<etc>/slurm.key`, which others
//!   may not read.
//! - **The configuration.** `sackd --conf-server host[:port]` fetches it from slurmctld
//!   (`CONFIG_REQUEST_SACKD`, retried every 10 s) and writes it under `/run/slurm/conf`
//!   (`dir` in `src/sackd/sackd.c`; `/var/run/slurm/conf` on macOS, 0011). A client looks
//!   for slurm.conf in this order (`_establish_config_source()`, `src/common/read_config.c`):
//!   its argument, `SLURM_CONF`, the compiled-in `<sysconfdir>/slurm.conf` if it exists,
//!   `/run/slurm/conf/slurm.conf`, then `SLURM_CONF_SERVER` or DNS SRV. So the clients need
//!   no `SLURM_CONF`: it must be unset, and `<etc>/slurm.conf` must not exist, or they read
//!   that file instead of sackd's copy. `join --client` refuses the file and prints the
//!   environment (`PATH`, `unset SLURM_CONF`).
//! - **Its run directory.** sackd makes `/run/slurm/conf` with a plain `mkdir()` before
//!   anything else, and dies when `/run/slurm` is missing (`fatal: _establish_config_source:
//!   failed to create a clean cache dir at /var/run/slurm/conf`, seen with the darwin
//!   personality's sackd in an empty `/run`): upstream's `etc/sackd.service.in` has systemd
//!   make it (`RuntimeDirectory=slurm`); launchd has no such key, so `--apply` makes it.
//! - **Updates.** slurmctld records the address a sackd fetched from and pushes each new
//!   configuration to it at SlurmdPort (`sackd_mgr_add_node()`,
//!   `src/slurmctld/sackd_mgr.c`; sackd's `_listen_for_reconf()`): the Mac must accept that
//!   port from the controller, or its copy stays as it was when sackd started.
//!
//! A compute node needs none of this: its slurmd serves the SACK socket and links
//! `/run/slurm/conf` to its own cache (`_handle_slash_run()`, `src/slurmd/slurmd/slurmd.c`).
//! A sackd beside it would take over the same socket, so a Mac with the slurmd
//! LaunchDaemon is refused.
//!
//! The checks are those of `join` (the key, the version rule, asked with the prefix's own
//! sackd and scontrol: join.rs), and with `--apply` those of `service install` (the whole
//! install, the log and LaunchDaemons directories trusted by the gate; launchctl trusted) and of the key's
//! directory, all before anything is written. Then the key (write.rs, atomically) and
//! sackd as the LaunchDaemon `org.slurm-on-mac.sackd` through [`service::install`], the
//! very code `slurm-mac service install --daemon sackd` runs: the plist's program arguments
//! are [`ClientPlan::sackd`]. If the service does not load, the key is taken back.

use super::JoinArgs;
use super::ask::{Controller, Source, make_run_dir};
use super::plan::{Install, key_install, quote, render_installs};
use super::write;
use crate::launchd::{Daemon, LAUNCH_DAEMONS};
use crate::service;
use crate::service::ServiceOptions;
use driver_common::error::{Error, Result};
use driver_common::gate::{Owners, chain::trusted};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The run-state directory of sackd's SACK socket and configuration copy (patch 0011 on
/// macOS).
pub const RUN_DIR: &str = if cfg!(target_os = "macos") {
    "/var/run/slurm"
} else {
    "/run/slurm"
};

/// sackd's copy of the configuration, where the clients find it.
pub const RUN_CONF: &str = if cfg!(target_os = "macos") {
    "/var/run/slurm/conf"
} else {
    "/run/slurm/conf"
};

/// sackd's log directory when `--log-dir` gives none: root's, on every Mac (Homebrew's
/// `/opt/homebrew/var/log` belongs to the admin user, which the gate refuses).
pub const DEFAULT_LOG_DIR: &str = "/var/log/slurm";

/// Everything `join --client` would do.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    /// The key (none when `--key` is `<etc>/slurm.key` already).
    pub installs: Vec<Install>,
    /// sackd's LaunchDaemon, as `service install --daemon sackd` takes it.
    pub service: ServiceOptions,
    /// [`RUN_DIR`], made (0755) when missing: sackd does not make it (module doc).
    pub run_dir: PathBuf,
}

/// The choices the plan is made from.
#[derive(Debug, Clone)]
pub struct ClientInputs {
    pub prefix: PathBuf,
    pub etc: PathBuf,
    pub key: PathBuf,
    pub controller: Controller,
    pub log_dir: PathBuf,
    /// Where LaunchDaemons live (`/Library/LaunchDaemons`; tests: a scratch directory).
    pub launchd_dir: PathBuf,
    /// The launchctl program (`None`: /bin/launchctl).
    pub launchctl: Option<PathBuf>,
    /// [`RUN_DIR`] (tests: a scratch directory).
    pub run_dir: PathBuf,
}

impl ClientPlan {
    pub fn new(i: &ClientInputs) -> ClientPlan {
        ClientPlan {
            installs: key_install(&i.etc, &i.key).into_iter().collect(),
            service: ServiceOptions {
                daemon: Daemon::Sackd,
                prefix: i.prefix.clone(),
                log_dir: i.log_dir.clone(),
                conf_server: Some(i.controller.conf_server()),
                caffeinate: false,
                launchd_dir: i.launchd_dir.clone(),
                launchctl: i.launchctl.clone(),
            },
            run_dir: i.run_dir.clone(),
        }
    }

    /// sackd's command line: the LaunchDaemon's `ProgramArguments`
    /// (`P/sbin/sackd -D --conf-server HOST:PORT`).
    pub fn sackd(&self) -> Vec<String> {
        service::service_of(&self.service).arguments()
    }

    /// The client commands' environment, as `sh` lines.
    pub fn environment(&self) -> String {
        let bin = self.service.prefix.join("bin");
        format!(
            "export PATH={}:\"$PATH\"\nunset SLURM_CONF\n",
            quote(&bin.display().to_string())
        )
    }

    /// The plan as a person reads it: the key, sackd, the environment.
    pub fn render(&self) -> String {
        let mut out = render_installs(&self.installs);
        out.push_str(&format!(
            "install -d -m 755 {}\n",
            quote(&self.run_dir.display().to_string())
        ));
        let plist = self
            .service
            .launchd_dir
            .join(service::plist::file_name(Daemon::Sackd));
        out.push_str(&format!(
            "# sackd as the LaunchDaemon {} ({}), what `slurm-mac service install --daemon sackd` loads:\n",
            Daemon::Sackd.label(),
            plist.display()
        ));
        let argv: Vec<String> = self.sackd().iter().map(|a| quote(a)).collect();
        out.push_str(&argv.join(" "));
        out.push_str(&format!(
            "\n# the client commands' environment: no SLURM_CONF, they read sackd's copy in {RUN_CONF}\n"
        ));
        out.push_str(&self.environment());
        out
    }
}

/// The local refusals, before the controller is asked: a slurm.conf the clients would read
/// instead of sackd's copy, and a slurmd LaunchDaemon (a compute node serves its clients).
pub fn preflight(etc: &Path, launchd_dir: &Path) -> Result<()> {
    let conf = etc.join("slurm.conf");
    if conf.exists() {
        return Err(Error::file(
            &conf,
            format!(
                "exists: the client commands would read it instead of sackd's copy of the \
                 controller's configuration ({RUN_CONF}/slurm.conf); move it away, or run the \
                 clients with it and no sackd"
            ),
        ));
    }
    let slurmd = launchd_dir.join(service::plist::file_name(Daemon::Slurmd));
    if slurmd.exists() {
        return Err(Error::file(
            &slurmd,
            "exists: this Mac is a compute node, whose slurmd already serves the client \
             commands (the SACK socket and the configuration); a sackd would take its socket. \
             Keep it, or remove it first with `slurm-mac service uninstall --daemon slurmd`",
        ));
    }
    Ok(())
}

/// Every check `--apply` needs before it writes: `service install`'s (absolute paths,
/// `--conf-server`, sackd, log and LaunchDaemons directories trusted), launchctl present, and
/// the key's directory trusted.
fn check_apply(plan: &ClientPlan) -> Result<()> {
    let o = &plan.service;
    let program = o.prefix.join("sbin").join(Daemon::Sackd.name());
    service::check_options(o, &program)?;
    service::launchctl_of(o)?;
    for i in &plan.installs {
        if let Some(dir) = i.to.parent() {
            trusted(dir, Owners::caller())?;
        }
    }
    trusted(&plan.run_dir, Owners::caller())
}

/// What [`put_files`] wrote, to take back.
#[derive(Debug, Default)]
pub struct Written {
    files: Vec<write::Before>,
    run_dir: Option<PathBuf>,
}

impl Written {
    /// Removes what was made, gives replaced files their old bytes back.
    pub fn undo(&self) {
        write::undo(&self.files);
        if let Some(dir) = &self.run_dir {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The files `--apply` puts in place before sackd starts: the key (atomically, its
/// directory trusted) and the run directory. All or nothing.
pub fn put_files(plan: &ClientPlan) -> Result<Written> {
    let me = nix::unistd::geteuid().as_raw();
    let mut w = Written::default();
    let result = write::put(&plan.installs, me, &mut w.files).and_then(|()| {
        if make_run_dir(&plan.run_dir)? {
            w.run_dir = Some(plan.run_dir.clone());
        }
        Ok(())
    });
    match result {
        Ok(()) => Ok(w),
        Err(e) => {
            w.undo();
            Err(e)
        }
    }
}

/// Carries the plan out: every check, then the files, then sackd's LaunchDaemon; if the
/// service does not load, the files are taken back.
pub fn apply(sh: &xshell::Shell, plan: &ClientPlan) -> Result<()> {
    check_apply(plan)?;
    let written = put_files(plan)?;
    let result = service::install(sh, &plan.service);
    if result.is_err() {
        written.undo();
    }
    result
}

/// `join --client` (join.rs hands over after parsing).
pub fn run(args: &JoinArgs, prefix: &Path, etc: PathBuf, key: &Path) -> Result<()> {
    let given = args
        .controller
        .as_deref()
        .ok_or_else(|| Error::Usage("join --client: pass --controller HOST[:PORT]".into()))?;
    let controller = Controller::parse(given)?;
    preflight(&etc, Path::new(LAUNCH_DAEMONS))?;
    let source = Source::Configless(controller.clone());
    let checked = super::check(prefix, &source, key, Duration::from_secs(args.timeout))?;
    println!(
        "join --client: this build is Slurm {}, the controller runs {}: accepted",
        checked.node.text, checked.controller.text
    );
    let plan = ClientPlan::new(&ClientInputs {
        prefix: prefix.to_path_buf(),
        etc,
        key: std::path::absolute(key).map_err(|e| Error::io(key, e))?,
        controller,
        log_dir: args
            .log_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_LOG_DIR)),
        launchd_dir: PathBuf::from(LAUNCH_DAEMONS),
        launchctl: None,
        run_dir: PathBuf::from(RUN_DIR),
    });
    print!("{}", plan.render());
    if args.apply {
        let sh = xshell::Shell::new().map_err(Error::Shell)?;
        apply(&sh, &plan)?;
        println!(
            "join --client: sackd runs; in a new shell with the environment above, `sinfo` shows the cluster"
        );
    } else {
        println!("join --client: nothing done (pass --apply to install the key and load sackd)");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
