//! `cargo xtask service install|uninstall|status|print`: slurmd (and sackd, for a Mac that
//! only runs client commands in a configless cluster) as a LaunchDaemon.
//!
//! `print` writes the property list ([`plist`]) to stdout on any OS. `install` writes it to
//! `/Library/LaunchDaemons/<label>.plist` (mode 0644, atomically) and loads it with
//! `launchctl bootstrap system`; a label already loaded is booted out first and waited for
//! ([`launchctl`]: the bootout race). `uninstall` boots it out, waits until launchd no longer
//! has the label, and removes the file. `status` prints what `launchctl print` says. The
//! Before anything changes, `install` refuses relative paths, a bad `--conf-server` and an
//! install another user can change (keg::trusted_install: sbin, lib with its plugins, etc,
//! the spool and log directories; driver_common::gate); launchctl itself (the system's, or
//! `--launchctl`) is trusted like any program root starts. A new job that does not load gets the old
//! plist and job back. The three need macOS's launchctl; `--launchctl` names a stand-in (the tests use a fake one).

pub mod launchctl;
pub mod plist;

use driver_common::error::{Error, Result};
use launchctl::Launchctl;
use plist::Service;
use std::path::{Path, PathBuf};
use xshell::Shell;

// The command's arguments (clap), read by `slurm-mac` and `cargo xtask`.
#[derive(Debug, clap::Args)]
pub struct ServiceArgs {
    #[command(subcommand)]
    pub action: ServiceAction,
}

#[derive(Debug, clap::Subcommand)]
pub enum ServiceAction {
    /// Write the plist to /Library/LaunchDaemons and load it (launchctl bootstrap system).
    Install(ServiceOptions),
    /// Unload it (launchctl bootout, waiting until the label is gone) and remove the plist.
    Uninstall(ServiceOptions),
    /// What launchd says about the label.
    Status(ServiceOptions),
    /// Print the plist (any OS).
    Print(ServiceOptions),
}

#[derive(Debug, clap::Args, Clone)]
pub struct ServiceOptions {
    /// Which daemon.
    #[arg(long, value_enum, default_value = "slurmd")]
    pub daemon: crate::launchd::Daemon,
    /// The prefix holding sbin/slurmd (root's: the default is the root-owned copy
    /// `slurm-mac copy-keg` makes of the Homebrew keg on Apple Silicon).
    #[arg(long, default_value = "/opt/slurmmac/opt/slurm-wlm")]
    pub prefix: PathBuf,
    /// Where the daemon's stdout and stderr go.
    #[arg(long, default_value = "/opt/slurmmac/var/log/slurm")]
    pub log_dir: PathBuf,
    /// Configless: slurmd --conf-server HOST[:PORT] (the controller).
    #[arg(long, value_name = "HOST[:PORT]")]
    pub conf_server: Option<String>,
    /// Run the daemon under `caffeinate -s`: no system sleep while it runs (AC power only).
    #[arg(long)]
    pub caffeinate: bool,
    /// The directory of system daemon plists.
    #[arg(long, default_value = crate::launchd::LAUNCH_DAEMONS)]
    pub launchd_dir: PathBuf,
    /// The launchctl program (default /bin/launchctl).
    #[arg(long)]
    pub launchctl: Option<PathBuf>,
}

/// macOS's launchctl.
pub const LAUNCHCTL: &str = "/bin/launchctl";

/// The service the options describe.
pub fn service_of(o: &ServiceOptions) -> Service {
    Service {
        daemon: o.daemon,
        prefix: o.prefix.clone(),
        log_dir: o.log_dir.clone(),
        conf_server: o.conf_server.clone(),
        caffeinate: o.caffeinate,
    }
}

/// [`service_of`] with `--conf-server` checked and written as `host:port` (`[v6]:port`):
/// the service `install` loads.
pub fn normalised(o: &ServiceOptions) -> Result<Service> {
    let mut svc = service_of(o);
    svc.conf_server = o
        .conf_server
        .as_deref()
        .map(|c| crate::controller::Controller::parse(c).map(|c| c.conf_server()))
        .transpose()?;
    Ok(svc)
}

pub(crate) fn launchctl_of(o: &ServiceOptions) -> Result<Launchctl> {
    let program = o
        .launchctl
        .clone()
        .unwrap_or_else(|| PathBuf::from(LAUNCHCTL));
    if !program.is_file() {
        return Err(Error::Unsupported(format!(
            "{} not found: `service install|uninstall|status` load daemons with macOS's launchd; \
             on another OS use `cargo xtask service print` to see the plist",
            program.display()
        )));
    }
    Ok(Launchctl {
        program: driver_common::gate::Program::checked(&program)?,
    })
}

fn plist_path(o: &ServiceOptions) -> PathBuf {
    o.launchd_dir.join(plist::file_name(o.daemon))
}

pub fn run(sh: &Shell, _root: &Path, args: ServiceArgs) -> Result<()> {
    match args.action {
        ServiceAction::Print(o) => {
            let xml = service_of(&o)
                .xml()
                .map_err(|e| Error::parse("the LaunchDaemon plist", e))?;
            print!("{}", String::from_utf8_lossy(&xml));
            Ok(())
        }
        ServiceAction::Install(o) => install(sh, &o),
        ServiceAction::Uninstall(o) => uninstall(sh, &o),
        ServiceAction::Status(o) => {
            let l = launchctl_of(&o)?;
            let label = o.daemon.label();
            if l.loaded(sh, &label)? {
                println!("{label}: loaded\n{}", l.print(sh, &label)?);
            } else {
                println!("{label}: not loaded (plist {})", plist_path(&o).display());
            }
            Ok(())
        }
    }
}

/// Refuses what launchd cannot use or root must not run: relative paths, a `--conf-server`
/// that is not HOST[:PORT], and a daemon, log or plist directory another user can change.
pub(crate) fn check_options(o: &ServiceOptions, program: &Path) -> Result<()> {
    for (flag, p) in [
        ("--prefix", &o.prefix),
        ("--log-dir", &o.log_dir),
        ("--launchd-dir", &o.launchd_dir),
    ] {
        if !p.is_absolute() {
            return Err(Error::Usage(format!(
                "{flag} {}: launchd needs an absolute path (it starts the daemon from /); \
                 give the full path",
                p.display()
            )));
        }
    }
    if let Some(c) = &o.conf_server {
        crate::controller::Controller::parse(c)
            .map_err(|e| e.context(format!("--conf-server `{}`", c.escape_debug())))?;
    }
    if !driver_common::util::process::is_executable(program) {
        return Err(Error::file(
            program,
            "is not an executable daemon: pass the --prefix Slurm is installed in \
             (Homebrew: the keg's root-owned copy `slurm-mac copy-keg` makes, \
             /opt/slurmmac/opt/slurm-wlm)",
        ));
    }
    // launchd runs it as root: no one else may be able to change it, what it loads, reads
    // or writes (driver_common::gate).
    crate::keg::trusted_install(&o.prefix, std::slice::from_ref(&o.log_dir))?;
    driver_common::gate::chain::trusted(&o.launchd_dir, driver_common::gate::Owners::caller())
}

/// Writes the plist and (re)loads it. When the new job does not load, the old plist is put
/// back and its job loaded again; the error says what runs now.
pub fn install(sh: &Shell, o: &ServiceOptions) -> Result<()> {
    let l = launchctl_of(o)?;
    let program = o.prefix.join("sbin").join(o.daemon.name());
    check_options(o, &program)?;
    let svc = normalised(o)?;
    let xml = svc
        .xml()
        .map_err(|e| Error::parse("the LaunchDaemon plist", e))?;
    driver_common::gate::dir::make_dirs(&o.log_dir, 0o755, driver_common::gate::Owners::caller())?;
    let label = o.daemon.label();
    let path = plist_path(o);
    let old = driver_common::util::fs::read_optional(&path)?;
    let was_loaded = l.loaded(sh, &label)?;
    l.bootout(sh, &label, launchctl::BOOTOUT_WAIT)?;
    let loaded = driver_common::util::fs::write_atomic(&path, &xml, 0o644)
        .and_then(|()| l.bootstrap(sh, &path));
    if let Err(e) = loaded {
        return Err(e.context(restore(sh, &l, &path, old, was_loaded)));
    }
    println!("{label}: {} written and loaded", path.display());
    Ok(())
}

/// Puts the old plist back (and loads it when it was loaded); says what runs now.
fn restore(
    sh: &Shell,
    l: &Launchctl,
    path: &Path,
    old: Option<String>,
    was_loaded: bool,
) -> String {
    let Some(old) = old else {
        let _ = driver_common::util::fs::remove_optional(path);
        return "the new service did not load; none was installed before, so none runs now".into();
    };
    let back = driver_common::util::fs::write_atomic(path, old.as_bytes(), 0o644);
    match (back, was_loaded) {
        (Ok(()), true) => match l.bootstrap(sh, path) {
            Ok(()) => "the new service did not load; the old plist is back and the old job runs".into(),
            Err(e) => format!("the new service did not load; the old plist is back but the old job did not load again ({e}): no service runs"),
        },
        (Ok(()), false) => "the new service did not load; the old plist is back (it was not loaded before, and runs nothing now)".into(),
        (Err(e), _) => format!("the new service did not load and the old plist could not be put back ({e}): no service runs"),
    }
}

/// Unloads (waiting for the label to go) and removes the plist.
pub fn uninstall(sh: &Shell, o: &ServiceOptions) -> Result<()> {
    let l = launchctl_of(o)?;
    let label = o.daemon.label();
    l.bootout(sh, &label, launchctl::BOOTOUT_WAIT)?;
    let path = plist_path(o);
    driver_common::util::fs::remove_optional(&path)?;
    println!("{label}: unloaded, {} removed", path.display());
    Ok(())
}

#[cfg(test)]
mod tests;
