//! One `cluster test` per cluster at a time (a lock file beside its directory), and what is
//! left in a cluster directory by an earlier run: stopped if it is a cluster's, refused if it
//! is not.

use super::procs::ProcRecord;
use super::state::State;
use driver_common::error::{Error, Result};
use nix::fcntl::{Flock, FlockArg};
use std::path::{Path, PathBuf};

/// Hold `<dir>.lock` (flock, with our PID in it) for as long as the returned file lives, so a
/// second `cluster test` on the same cluster refuses instead of stopping the first one's.
pub fn lock(name: &str, dir: &Path) -> Result<Flock<std::fs::File>> {
    use std::io::{Read, Seek, Write};
    let mut path = dir.as_os_str().to_owned();
    path.push(".lock");
    let path = PathBuf::from(path);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    let mut f = match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => locked,
        Err((mut f, _)) => {
            let mut holder = String::new();
            f.read_to_string(&mut holder).ok();
            return Err(Error::ClusterBusy {
                name: name.to_string(),
                dir: dir.to_path_buf(),
                holder: holder.trim().to_string(),
            });
        }
    };
    f.set_len(0).map_err(|e| Error::io(&path, e))?;
    f.rewind().map_err(|e| Error::io(&path, e))?;
    write!(f, "{}", std::process::id()).map_err(|e| Error::io(&path, e))?;
    Ok(f)
}

/// A recorded cluster that still runs: refuse. One that does not: remove its files.
/// A directory that is not a cluster directory: refuse (never delete unknown files).
pub(super) fn clear_leftover(name: &str, dir: &Path) -> Result<()> {
    match State::load(dir)? {
        Some(state) => {
            let running = state.running();
            if !running.is_empty() {
                return Err(Error::ClusterRunning {
                    name: state.name.clone(),
                    dir: dir.to_path_buf(),
                    running: describe(&running),
                });
            }
            if !state.daemons.is_empty() {
                println!(
                    "note: cluster `{}` in {} was not stopped by `down` (nothing of it runs any more); removing its files",
                    state.name,
                    dir.display()
                );
            }
            std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))
        }
        None if dir.exists()
            && std::fs::read_dir(dir)
                .map_err(|e| Error::io(dir, e))?
                .next()
                .is_some() =>
        {
            Err(Error::NotAClusterDir {
                dir: dir.to_path_buf(),
                name: name.to_string(),
            })
        }
        None => Ok(()),
    }
}

fn describe(running: &[&ProcRecord]) -> String {
    running
        .iter()
        .map(|d| format!("{} pid {}", d.name, d.pid))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_leftover__refuses_a_foreign_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("precious"), "x").unwrap();
        let err = clear_leftover("n", dir.path()).unwrap_err().to_string();
        assert!(err.contains("not a cluster directory"), "{err}");
        assert!(dir.path().join("precious").exists());
    }

    #[test]
    fn lock__second_holder_refused_with_the_pid() {
        let (_dir, c) = driver_common::testing::scratch("c");
        let first = lock("c", &c).unwrap();
        let err = lock("c", &c).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        lock("c", &c).unwrap();
    }
}
