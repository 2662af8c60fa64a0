//! A cpuset cgroup of one CPU for a running process: cgroup v1's `cpuset` hierarchy
//! (`/sys/fs/cgroup/cpuset`) or cgroup v2's unified one (`/sys/fs/cgroup`, the `cpuset`
//! controller enabled for the root's children). Its children are created in it.

use driver_common::error::{Error, Result};
use std::path::{Path, PathBuf};

const V1: &str = "/sys/fs/cgroup/cpuset";
const V2: &str = "/sys/fs/cgroup";

/// The hierarchy's root: v1's cpuset mount, or v2's root where it offers `cpuset`.
fn root() -> Result<PathBuf> {
    if Path::new(V1).join("cpuset.cpus").exists() {
        return Ok(PathBuf::from(V1));
    }
    let controllers = std::fs::read_to_string(Path::new(V2).join("cgroup.controllers"))
        .map_err(|e| Error::io(Path::new(V2), e))?;
    if !controllers.split_whitespace().any(|c| c == "cpuset") {
        return Err(Error::Scenario(format!(
            "no cpuset controller: neither {V1} nor {V2}/cgroup.controllers has it"
        )));
    }
    let subtree = Path::new(V2).join("cgroup.subtree_control");
    let on = std::fs::read_to_string(&subtree).map_err(|e| Error::io(&subtree, e))?;
    if !on.split_whitespace().any(|c| c == "cpuset") {
        std::fs::write(&subtree, "+cpuset").map_err(|e| Error::io(&subtree, e))?;
    }
    Ok(PathBuf::from(V2))
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(|e| Error::io(path, e))
}

/// The first number of a cpuset list (`0-3,8` -> `0`).
fn first(list: &str) -> Option<&str> {
    list.trim()
        .split([',', '-'])
        .next()
        .filter(|s| !s.is_empty())
}

/// Create cgroup `name` with the first CPU and memory node of the root, and move `pid` into
/// it; returns the cpuset (`0`).
pub fn confine(name: &str, pid: u32) -> Result<String> {
    let root = root()?;
    let dir = root.join(name);
    if !dir.exists() {
        std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    let read = |f: &str| {
        let p = root.join(f);
        std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))
    };
    let (cpus, mems) = if root == Path::new(V1) {
        (read("cpuset.cpus")?, read("cpuset.mems")?)
    } else {
        (
            read("cpuset.cpus.effective")?,
            read("cpuset.mems.effective")?,
        )
    };
    let cpu = first(&cpus)
        .ok_or_else(|| Error::Scenario(format!("no CPU in the root cpuset: {cpus:?}")))?
        .to_string();
    let mem = first(&mems).unwrap_or("0");
    write(&dir.join("cpuset.mems"), mem)?;
    write(&dir.join("cpuset.cpus"), &cpu)?;
    write(&dir.join("cgroup.procs"), &pid.to_string())?;
    Ok(cpu)
}

/// Remove cgroup `name` once it is empty (a few tries; a leftover is reported, not fatal).
pub fn remove(name: &str) {
    let Ok(root) = root() else { return };
    let dir = root.join(name);
    for _ in 0..50 {
        if !dir.exists() || std::fs::remove_dir(&dir).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    eprintln!("cgroup {} is left (not empty)", dir.display());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first__takes_the_first_cpu_of_a_list() {
        assert_eq!(first("0-3,8\n"), Some("0"));
        assert_eq!(first("2,4"), Some("2"));
        assert_eq!(first("\n"), None);
    }
}
