//! A private mount namespace for `cluster peer` and `cluster bench`.
//!
//! Slurm 24.11's auth/slurm serves its SACK sockets at fixed paths (`/run/slurmctld`,
//! `/run/slurm`), so two clusters on one machine collide there. Both commands therefore run
//! themselves again under `unshare --mount --propagation private` (root only) and, inside,
//! bind-mount a directory of their own onto `/run` for each cluster they start. Slurm's test
//! suite runs commands as the SlurmUser through `sudo ... bash -l`, which resets `PATH` and
//! drops `SLURM_CONF`; a private copy of `/etc/profile.d` with one more script that exports
//! both is bind-mounted over the real one, in the namespace only.
//!
//! Nothing outside the namespace changes, and its mounts vanish when its last process exits,
//! whatever happened to the driver.

use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::read_bounded;
use std::path::{Path, PathBuf};
use std::time::Duration;
use xshell::{Shell, cmd};

/// Set by the driver on its own re-execution inside the namespace.
const MARKER: &str = "XTASK_PRIVATE_MOUNT_NS";

/// Where the caller is after [`enter`].
#[derive(Debug, PartialEq, Eq)]
pub enum Entered {
    /// In the private namespace: do the work.
    Inside,
    /// The re-executed driver did the work and succeeded: return.
    Done,
}

/// Inside the namespace, return `Inside`. Outside, run this driver again under `unshare` with
/// `args` (the subcommand that does the work, so a caller such as `ci` can use it too) and
/// return `Done` when it succeeded.
pub fn enter(sh: &Shell, what: &str, args: &[std::ffi::OsString]) -> Result<Entered> {
    if std::env::var_os(MARKER).is_some() {
        // `unshare` execs us, so our parent is the driver that ran it, outside.
        let parent = std::os::unix::process::parent_id().to_string();
        if mount_ns("self")? == mount_ns(&parent)? {
            return Err(Error::Usage(format!(
                "{MARKER} is set but this process shares its parent's mount namespace; unset it"
            )));
        }
        return Ok(Entered::Inside);
    }
    let uid = read_bounded(cmd!(sh, "id -u"), Duration::from_secs(10))?;
    if uid.trim() != "0" {
        return Err(Error::NeedsRoot {
            what: what.to_string(),
            why: "it creates a private mount namespace, a test user and a sudo rule".into(),
        });
    }
    let exe = running_exe(std::process::id());
    cmd!(
        sh,
        "unshare --mount --propagation private -- {exe} {args...}"
    )
    .env(MARKER, "1")
    .quiet()
    .run()
    .map_err(|e| {
        Error::from(e).context(format!(
            "{what} failed inside its private mount namespace (its messages are above)"
        ))
    })?;
    Ok(Entered::Done)
}

/// The program process `pid` runs, as a path `exec` accepts even after its file was deleted
/// or replaced (a `cargo build` while `cargo xtask ci` runs relinks `target/debug/build-driver`):
/// the kernel's link to the running image, not the name it was started by.
fn running_exe(pid: u32) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/exe"))
}

fn mount_ns(pid: &str) -> Result<PathBuf> {
    let link = PathBuf::from(format!("/proc/{pid}/ns/mnt"));
    std::fs::read_link(&link).map_err(|e| Error::io(&link, e))
}

/// A bind mount, undone on drop (best effort: the namespace's end undoes it anyway).
#[derive(Debug)]
pub struct Bind {
    target: PathBuf,
}

impl Bind {
    /// `mount --bind source target`; only inside the private namespace.
    pub fn new(sh: &Shell, source: &Path, target: &Path) -> Result<Bind> {
        if std::env::var_os(MARKER).is_none() {
            return Err(Error::NeedsRoot {
                what: format!("bind-mounting over {}", target.display()),
                why: "refused outside the private mount namespace".into(),
            });
        }
        read_bounded(
            cmd!(sh, "mount --bind {source} {target}"),
            Duration::from_secs(10),
        )?;
        Ok(Bind {
            target: target.to_path_buf(),
        })
    }
}

impl Drop for Bind {
    fn drop(&mut self) {
        let target = &self.target;
        if let Ok(sh) = Shell::new() {
            cmd!(sh, "umount {target}").quiet().run().ok();
        }
    }
}

/// The private `/run` and `/etc/profile.d` of one cluster: `dir/run` (empty) and
/// `dir/profile.d` (a copy of the real one plus `zz-xtask-slurm.sh`).
#[derive(Debug)]
pub struct Private {
    // Dropped in reverse order of creation.
    _profile: Bind,
    _run: Bind,
}

impl Private {
    pub fn new(sh: &Shell, dir: &Path, prefix: &Path, conf: &Path) -> Result<Private> {
        let run = dir.join("run");
        let profile = dir.join("profile.d");
        for d in [&run, &profile] {
            std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
        }
        let system = Path::new("/etc/profile.d");
        if system.is_dir() {
            for entry in std::fs::read_dir(system).map_err(|e| Error::io(system, e))? {
                let entry = entry.map_err(|e| Error::io(system, e))?;
                if entry.path().is_file() {
                    let to = profile.join(entry.file_name());
                    std::fs::copy(entry.path(), &to).map_err(|e| Error::io(&to, e))?;
                }
            }
        }
        let script = profile.join("zz-xtask-slurm.sh");
        std::fs::write(&script, profile_script(prefix, conf)).map_err(|e| Error::io(&script, e))?;
        let run_bind = Bind::new(sh, &run, Path::new("/run"))?;
        let profile_bind = Bind::new(sh, &profile, system)?;
        Ok(Private {
            _profile: profile_bind,
            _run: run_bind,
        })
    }
}

/// The login-shell snippet: the build's programs first in `PATH`, and its `SLURM_CONF`.
pub fn profile_script(prefix: &Path, conf: &Path) -> String {
    format!(
        "# Generated by cargo xtask (private mount namespace only): this cluster's Slurm.\n\
         export PATH=\"{p}/bin:{p}/sbin:$PATH\"\nexport SLURM_CONF=\"{c}\"\n",
        p = prefix.display(),
        c = conf.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_script__puts_the_prefix_first_and_exports_the_conf() {
        let s = profile_script(Path::new("/p"), Path::new("/c/slurm.conf"));
        let sh = Shell::new().unwrap();
        let out = cmd!(sh, "sh -c")
            .arg(format!(
                "PATH=/usr/bin:/bin; {s} echo \"$PATH|$SLURM_CONF\""
            ))
            .read()
            .unwrap();
        assert_eq!(out, "/p/bin:/p/sbin:/usr/bin:/bin|/c/slurm.conf");
    }

    /// A program whose file is deleted while it runs can still be started again through
    /// [`running_exe`], and not by its name. Linux only: `/proc` (the driver's tests also run
    /// on the Mac of ci/macos-arm64.yml, where `unshare` does not exist either).
    #[cfg(target_os = "linux")]
    #[test]
    fn running_exe__starts_the_running_image_after_its_file_is_gone() {
        let (_dir, copy) = driver_common::testing::scratch("sleep-copy");
        std::fs::copy("/bin/sleep", &copy).unwrap();
        // Another test thread may fork while the copy's write descriptor is open, and its child
        // holds it until its exec: spawning the copy then fails with ETXTBSY (seen 2 in 13
        // runs under load). Try again for up to a second.
        let mut tries = 0;
        let mut running = loop {
            match std::process::Command::new(&copy).arg("30").spawn() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                other => break other.unwrap(),
            }
        };
        std::fs::remove_file(&copy).unwrap();
        let again = |exe: &Path| {
            std::process::Command::new(exe)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let by_name = again(&copy);
        let by_image = again(&running_exe(running.id()));
        running.kill().unwrap();
        running.wait().unwrap();
        assert!(!by_name, "{} still runs after its removal", copy.display());
        assert!(
            by_image,
            "/proc/<pid>/exe of a running program did not start"
        );
    }

    #[test]
    fn bind__refused_outside_the_namespace() {
        if std::env::var_os(MARKER).is_some() {
            return;
        }
        let sh = Shell::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let err = Bind::new(&sh, dir.path(), dir.path()).unwrap_err();
        assert!(
            err.to_string()
                .contains("outside the private mount namespace")
        );
    }
}
