//! Where a job runs and what it creates (SMD-103, 105): working directories in the user's
//! home, `/tmp`, a path with spaces and non-ASCII characters and one the user may not enter
//! (Slurm falls back to `/tmp`); the submitter's umask on Slurm's output files and on the
//! files and directories the job makes.

use super::super::user::{TestUser, ensure_test_user};
use super::client::{CLIENT_TIMEOUT, Ctx, JOB_TIMEOUT, q};
use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::run_bounded;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A directory owned by `user` (mode 0755).
fn user_dir(path: &Path, user: &TestUser) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|e| Error::io(path, e))?;
    nix::unistd::chown(
        path,
        Some(nix::unistd::Uid::from_raw(user.uid)),
        Some(nix::unistd::Gid::from_raw(user.gid)),
    )
    .map_err(|e| Error::io(path, std::io::Error::from(e)))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| Error::io(path, e))
}

fn physical(p: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(p).map_err(|e| Error::io(p, e))
}

/// SMD-103: the test user's batch job and step with `--chdir` set to its home, `/tmp`, a
/// directory whose name holds spaces and non-ASCII characters, and a root-only directory
/// (0700). The first three run there (`pwd -P`); for the last Slurm documents a fallback to
/// `/tmp` (slurmstepd: "couldn't chdir ... going to /tmp instead"): the job runs in `/tmp`
/// and says why, never in the forbidden directory.
pub fn workdirs(ctx: &mut Ctx<'_>) -> Result<String> {
    let user = ensure_test_user()?;
    let spaced = ctx.path("work dir ✓ 日本語 é");
    user_dir(&spaced, &user)?;
    let forbidden = ctx.path("root-only");
    std::fs::create_dir_all(&forbidden).map_err(|e| Error::io(&forbidden, e))?;
    std::fs::set_permissions(&forbidden, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| Error::io(&forbidden, e))?;
    let tmp = physical(Path::new("/tmp"))?;
    let cases: [(&str, PathBuf, PathBuf); 4] = [
        (
            "home",
            PathBuf::from(&user.home),
            physical(Path::new(&user.home))?,
        ),
        ("tmp", PathBuf::from("/tmp"), tmp.clone()),
        ("spaces+unicode", spaced.clone(), physical(&spaced)?),
        ("EACCES", forbidden.clone(), tmp),
    ];
    let mut seen = Vec::new();
    for (i, (what, dir, want)) in cases.iter().enumerate() {
        let chdir = format!("--chdir={}", dir.display());
        let stem = format!("workdir-{i}");
        let id = ctx.sbatch_as(&user.name, &stem, &["-n1", &chdir], "pwd -P\n")?;
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
        let got = ctx.wait_lines(&ctx.path(&format!("{stem}.out")), 1, JOB_TIMEOUT)?;
        let mut c = ctx.tool_as(&user.name, "srun");
        c.current_dir(&user.home).args(["-N1", &chdir, "pwd", "-P"]);
        let step = run_bounded(c, CLIENT_TIMEOUT)?;
        let step_out = String::from_utf8_lossy(&step.stdout).trim().to_string();
        let want_s = want.display().to_string();
        if got != [want_s.as_str()] || step_out != want_s || !step.status.success() {
            return Err(Error::Scenario(format!(
                "{what} ({}): batch job {id} ran in {got:?}, srun ({}) in {step_out:?}; expected {want_s:?}",
                dir.display(),
                step.status
            )));
        }
        if *what == "EACCES" {
            let err = std::fs::read_to_string(ctx.path(&format!("{stem}.err"))).unwrap_or_default();
            let said = err
                .lines()
                .chain(String::from_utf8_lossy(&step.stderr).lines())
                .find(|l| l.contains("chdir") && l.contains("/tmp"))
                .map(|l| l.trim().to_string())
                .ok_or_else(|| {
                    Error::Scenario(format!(
                        "EACCES: job {id} fell back to /tmp without saying so (stderr {err:?})"
                    ))
                })?;
            seen.push(format!("{what}: /tmp ({said:?})"));
        } else {
            seen.push(format!("{what}: {want_s}"));
        }
    }
    Ok(format!(
        "batch and srun of {} in each: {}",
        user.name,
        seen.join("; ")
    ))
}

/// SMD-105: the test user submits with umask 0022, 0027 and 0077 (its shell's, which sbatch
/// carries as `SLURM_UMASK`). Slurm's output file and the file and directory the job makes
/// get the modes that umask gives (0644/0755, 0640/0750, 0600/0700) and belong to the user.
pub fn umask(ctx: &mut Ctx<'_>) -> Result<String> {
    let user = ensure_test_user()?;
    let mut seen = Vec::new();
    for mask in [0o022_u32, 0o027, 0o077] {
        let stem = format!("umask-{mask:04o}");
        let (file, dir) = (
            ctx.path(&format!("{stem}.file")),
            ctx.path(&format!("{stem}.dir")),
        );
        let mut c = ctx.tool_as(&user.name, "sbatch");
        driver_common::util::process::spawn::umask(&mut c, mask);
        let body = format!("umask\ntouch {}\nmkdir {}\n", q(&file), q(&dir));
        let id = ctx.sbatch_using(c, &stem, &["-n1"], &body)?;
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
        let out = ctx.path(&format!("{stem}.out"));
        let printed = ctx.wait_lines(&out, 1, JOB_TIMEOUT)?;
        let (want_file, want_dir) = (0o666 & !mask, 0o777 & !mask);
        let mut got = Vec::new();
        for (p, want) in [(&out, want_file), (&file, want_file), (&dir, want_dir)] {
            let m = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
            let mode = m.permissions().mode() & 0o777;
            if mode != want || m.uid() != user.uid || m.gid() != user.gid {
                return Err(Error::Scenario(format!(
                    "umask {mask:04o} (job {id} printed {printed:?}): {} is {mode:04o} {}:{}, expected {want:04o} {}:{}",
                    p.display(),
                    m.uid(),
                    m.gid(),
                    user.uid,
                    user.gid
                )));
            }
            got.push(format!("{mode:04o}"));
        }
        seen.push(format!("{mask:04o}: output/file/dir {}", got.join("/")));
    }
    Ok(format!(
        "jobs of {} ({}:{}): {}",
        user.name,
        user.uid,
        user.gid,
        seen.join("; ")
    ))
}
