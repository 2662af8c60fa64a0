//! The unprivileged test user shared by the cluster scenarios (a job must run with its uid
//! and gid) and Slurm's Python test suite (which wants a user with a `NOPASSWD: ALL` sudo
//! rule, or skips most tests). Created idempotently; root only.

use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::{read_bounded, run_bounded};
use std::path::Path;
use std::time::Duration;
use xshell::{Shell, cmd};

/// The one test user name for every harness.
pub const TEST_USER: &str = "slurmtest";

/// A local user: name, uid, primary gid, home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: String,
}

/// Create `slurmtest` (home directory, /bin/bash) if absent and give it the sudo rule
/// `/etc/sudoers.d/slurmtest` (`NOPASSWD: ALL`, checked with `visudo -c` before it is put in
/// place). Returns its ids.
pub fn ensure_test_user() -> Result<TestUser> {
    let t = Duration::from_secs(30);
    let sh = Shell::new().map_err(Error::Shell)?;
    if lookup(TEST_USER)?.is_none() {
        let c = cmd!(sh, "useradd --create-home --shell /bin/bash {TEST_USER}");
        read_bounded(c, t).map_err(|e| {
            e.context(format!(
                "cannot create the test user {TEST_USER} (needs root)"
            ))
        })?;
    }
    let rule = format!("{TEST_USER} ALL=(ALL) NOPASSWD: ALL\n");
    let dest = Path::new("/etc/sudoers.d").join(TEST_USER);
    if std::fs::read_to_string(&dest).ok().as_deref() != Some(rule.as_str()) {
        let part = Path::new("/etc/sudoers.d").join(format!(".{TEST_USER}.part"));
        driver_common::util::fs::write_atomic(&part, rule.as_bytes(), 0o440)?;
        if let Err(e) = read_bounded(cmd!(sh, "visudo -cf {part}"), t) {
            std::fs::remove_file(&part).ok();
            return Err(e.context(format!("sudo rule for {TEST_USER} rejected")));
        }
        std::fs::rename(&part, &dest).map_err(|e| Error::io(&dest, e))?;
    }
    lookup(TEST_USER)?
        .ok_or_else(|| Error::Scenario(format!("{TEST_USER} still does not exist after useradd")))
}

/// A local group, created (`groupadd`) if absent; returns its gid. Root only.
pub fn ensure_group(name: &str) -> Result<u32> {
    let t = Duration::from_secs(30);
    let sh = Shell::new().map_err(Error::Shell)?;
    if let Some(gid) = group_gid(name)? {
        return Ok(gid);
    }
    read_bounded(cmd!(sh, "groupadd {name}"), t)
        .map_err(|e| e.context(format!("cannot create the test group {name} (needs root)")))?;
    group_gid(name)?
        .ok_or_else(|| Error::Scenario(format!("group {name} still does not exist after groupadd")))
}

/// A local user without a password login, with a home directory, whose supplementary groups
/// are exactly `groups` (created if absent; `usermod -G` if they differ). Root only.
pub fn ensure_user(name: &str, groups: &[&str]) -> Result<TestUser> {
    let t = Duration::from_secs(30);
    let sh = Shell::new().map_err(Error::Shell)?;
    for g in groups {
        ensure_group(g)?;
    }
    let list = groups.join(",");
    if lookup(name)?.is_none() {
        let c = if groups.is_empty() {
            cmd!(sh, "useradd --create-home --shell /bin/sh {name}")
        } else {
            cmd!(sh, "useradd --create-home --shell /bin/sh -G {list} {name}")
        };
        read_bounded(c, t)
            .map_err(|e| e.context(format!("cannot create the test user {name} (needs root)")))?;
    }
    let mut have: Vec<String> = supplementary(name)?;
    let mut want: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    have.sort();
    want.sort();
    if have != want {
        read_bounded(cmd!(sh, "usermod -G {list} {name}"), t)
            .map_err(|e| e.context(format!("cannot set the groups of {name}")))?;
    }
    lookup(name)?
        .ok_or_else(|| Error::Scenario(format!("{name} still does not exist after useradd")))
}

/// The gid of group `name` (`getent group`), None if there is none.
pub fn group_gid(name: &str) -> Result<Option<u32>> {
    let sh = Shell::new().map_err(Error::Shell)?;
    let out = run_bounded(cmd!(sh, "getent group {name}"), Duration::from_secs(10))?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(':')
        .nth(2)
        .and_then(|g| g.parse().ok()))
}

/// The names of `user`'s supplementary groups (`id -Gn` minus the primary group).
fn supplementary(user: &str) -> Result<Vec<String>> {
    let sh = Shell::new().map_err(Error::Shell)?;
    let t = Duration::from_secs(10);
    let all = read_bounded(cmd!(sh, "id -Gn {user}"), t)?;
    let primary = read_bounded(cmd!(sh, "id -gn {user}"), t)?;
    Ok(all
        .split_whitespace()
        .filter(|g| *g != primary.trim())
        .map(str::to_string)
        .collect())
}

/// `getent passwd NAME`, parsed.
pub fn lookup(name: &str) -> Result<Option<TestUser>> {
    let sh = Shell::new().map_err(Error::Shell)?;
    let out = run_bounded(cmd!(sh, "getent passwd {name}"), Duration::from_secs(10))?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(parse_passwd(&String::from_utf8_lossy(&out.stdout)))
}

fn parse_passwd(line: &str) -> Option<TestUser> {
    let f: Vec<&str> = line.trim().split(':').collect();
    if f.len() < 7 {
        return None;
    }
    Some(TestUser {
        name: f[0].to_string(),
        uid: f[2].parse().ok()?,
        gid: f[3].parse().ok()?,
        home: f[5].to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_passwd__fields() {
        assert_eq!(
            parse_passwd("slurmtest:x:1001:1002::/home/slurmtest:/bin/bash\n"),
            Some(TestUser {
                name: "slurmtest".into(),
                uid: 1001,
                gid: 1002,
                home: "/home/slurmtest".into()
            })
        );
        assert_eq!(parse_passwd("garbage"), None);
    }

    #[test]
    fn lookup__root_is_uid_0_and_nobody_absent() {
        assert_eq!(lookup("root").unwrap().unwrap().uid, 0);
        assert_eq!(lookup("no-such-user-xyz").unwrap(), None);
    }
}
