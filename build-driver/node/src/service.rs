//! `cargo xtask service install|uninstall|status|print`: slurmd (and sackd, for a Mac that
//! only runs client commands in a configless cluster) as a LaunchDaemon.
//!
//! `print` writes the property list ([`plist`]) to stdout on any OS. `install` writes it to
//! `/Library/LaunchDaemons/<label>.plist` (mode 0644, atomically) and loads it with
//! `launchctl bootstrap system`; a label already loaded is booted out first and waited for
//! ([`launchctl`]: the bootout race). `uninstall` boots it out, waits until launchd no longer
//! has the label, and removes the file. `status` prints what `launchctl print` says. The
//! three need macOS's launchctl; `--launchctl` names a stand-in (the tests use a fake one).

pub mod launchctl;
pub mod plist;

use crate::cli::{ServiceAction, ServiceArgs, ServiceOptions};
use driver_common::error::{Error, Result};
use launchctl::Launchctl;
use plist::Service;
use std::path::{Path, PathBuf};
use xshell::Shell;

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

fn launchctl_of(o: &ServiceOptions) -> Result<Launchctl> {
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
    Ok(Launchctl { program })
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

/// Writes the plist and (re)loads it.
pub fn install(sh: &Shell, o: &ServiceOptions) -> Result<()> {
    let l = launchctl_of(o)?;
    let svc = service_of(o);
    let program = svc.prefix.join("sbin").join(o.daemon.name());
    if !driver_common::util::process::is_executable(&program) {
        return Err(Error::file(
            &program,
            "is not an executable daemon: pass the --prefix Slurm is installed in \
             (Homebrew: /opt/homebrew/opt/slurm-wlm)",
        ));
    }
    let xml = svc
        .xml()
        .map_err(|e| Error::parse("the LaunchDaemon plist", e))?;
    std::fs::create_dir_all(&o.log_dir).map_err(|e| Error::io(&o.log_dir, e))?;
    let label = o.daemon.label();
    l.bootout(sh, &label, launchctl::BOOTOUT_WAIT)?;
    let path = plist_path(o);
    driver_common::util::fs::write_atomic(&path, &xml, 0o644)?;
    l.bootstrap(sh, &path)?;
    println!("{label}: {} written and loaded", path.display());
    Ok(())
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
