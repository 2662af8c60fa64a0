//! Carrying out a [`Plan`] (`join --apply`): the files first, each atomically
//! (util::fs::write_atomic: a `.part` beside it, synced, renamed; the key with mode 0600),
//! then slurmd. The whole install slurmd will use (keg::trusted_install) and each file's
//! directory are trusted first (driver_common::gate), directories made only below trusted
//! ones, slurmd started through the gate with a clean environment. Nothing is left
//! half-done: when a later step fails, every file this run created is removed again and
//! every file it replaced gets its old bytes back.

use super::plan::{Install, Plan};
use driver_common::error::{Error, Result};
use driver_common::gate::{Owners, Program};
use driver_common::util::fs::write_atomic;
use driver_common::util::process::bounded::run_bounded;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a file held before we wrote it: `None` when it did not exist.
pub(super) type Before = (PathBuf, Option<(Vec<u8>, u32)>);

/// Removes the files this run created and gives replaced ones their old bytes back, newest
/// first.
pub(super) fn undo(done: &[Before]) {
    for (path, before) in done.iter().rev() {
        match before {
            None => {
                let _ = std::fs::remove_file(path);
            }
            Some((bytes, mode)) => {
                let _ = write_atomic(path, bytes, *mode);
            }
        }
    }
}

/// Puts each file in place atomically (its directory made and trusted first) and records
/// what it replaced in `done`, so that [`undo`] can take every write back; stops at the
/// first failure.
pub(super) fn put(installs: &[Install], me: u32, done: &mut Vec<Before>) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for i in installs {
        // The key or the --conf copy: read without following a link (--conf was trusted by
        // join's checks before this).
        let bytes = driver_common::gate::file::read_nofollow(&i.from)?;
        if let Some(dir) = i.to.parent() {
            driver_common::gate::dir::make_dirs(dir, 0o755, Owners { user: me })?;
        }
        let before = match std::fs::read(&i.to) {
            Ok(b) => {
                let mode = std::fs::metadata(&i.to)
                    .map(|m| m.permissions().mode() & 0o7777)
                    .unwrap_or(i.mode);
                Some((b, mode))
            }
            Err(_) => None,
        };
        write_atomic(&i.to, &bytes, i.mode)?;
        done.push((i.to.clone(), before));
    }
    Ok(())
}

/// Put the plan's files in place and start slurmd (which detaches itself); on any failure,
/// undo the files.
pub fn apply(plan: &Plan) -> Result<()> {
    let mut done: Vec<Before> = Vec::new();
    // What root runs and where it writes the key: no one but root (or, for a run by another
    // user, that user) may be able to change them. Checked before anything is written.
    let me = nix::unistd::geteuid().as_raw();
    let program = plan
        .slurmd
        .first()
        .ok_or_else(|| Error::Usage("join: empty slurmd command".into()))?;
    let program = Path::new(program);
    let prefix = program.parent().and_then(Path::parent).unwrap_or(program);
    crate::keg::trusted_install(prefix, &[])?;
    for i in &plan.installs {
        if let Some(dir) = i.to.parent() {
            driver_common::gate::chain::trusted(dir, Owners { user: me })?;
        }
    }
    let slurmd = Program::checked(program)?;
    let result = (|| {
        put(&plan.installs, me, &mut done)?;
        let mut c = slurmd.command();
        c.args(plan.slurmd.iter().skip(1));
        let out = run_bounded(c, Duration::from_secs(60))?;
        if !out.status.success() {
            return Err(Error::Command {
                step: "join: starting slurmd".into(),
                program: plan.slurmd.join(" "),
                detail: driver_common::util::process::tail(&[out.stdout, out.stderr].concat(), 15),
            });
        }
        Ok(())
    })();
    if result.is_err() {
        undo(&done);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// `<dir>/sbin/slurmd`, a script that runs `body`: a prefix the gate judges.
    fn stand_in(dir: &Path, body: &str) -> String {
        let p = dir.join("sbin/slurmd");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.display().to_string()
    }

    #[test]
    fn apply__failing_slurmd_leaves_no_file_behind_and_restores_replaced_ones() {
        let (dir, key) = driver_common::testing::scratch("src.key");
        driver_common::testing::write(&key, "new key");
        let etc = dir.path().join("etc");
        std::fs::create_dir(&etc).unwrap();
        std::fs::write(etc.join("slurm.conf"), "old conf").unwrap();
        let plan = Plan {
            installs: vec![
                Install {
                    from: key.clone(),
                    to: etc.join("slurm.key"),
                    mode: 0o600,
                },
                Install {
                    from: key.clone(),
                    to: etc.join("slurm.conf"),
                    mode: 0o644,
                },
            ],
            slurmd: vec![stand_in(dir.path(), "exit 1")],
            controller_line: None,
        };
        let e = apply(&plan).unwrap_err();
        assert!(e.to_string().contains("starting slurmd"), "{e}");
        assert!(!etc.join("slurm.key").exists());
        driver_common::testing::assert_file(&etc.join("slurm.conf"), "old conf");
    }

    #[test]
    fn apply__key_is_0600() {
        let (dir, key) = driver_common::testing::scratch("src.key");
        std::fs::write(&key, "k").unwrap();
        let to = dir.path().join("etc/slurm.key");
        let plan = Plan {
            installs: vec![Install {
                from: key,
                to: to.clone(),
                mode: 0o600,
            }],
            slurmd: vec![stand_in(dir.path(), "exit 0")],
            controller_line: None,
        };
        apply(&plan).unwrap();
        assert_eq!(
            std::fs::metadata(&to).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
