//! Environment propagation into batch jobs and steps (also SMD-104: empty, unset, 8 KiB and
//! non-ASCII values, locale and PATH, a secret that must not reach a log), and a non-root
//! user's job running with that user's uid and gid.

use super::super::daemon::Daemon;
use super::super::user::ensure_test_user;
use super::client::{Ctx, JOB_TIMEOUT, no_faults, q};
use driver_common::error::{Error, Result};

/// `--export=ALL` carries the submitter's variables, `--export=NONE` does not (Slurm's own
/// variables are still set), and `srun --export=ALL,VAR=value` sets one for the step.
pub fn propagation(ctx: &mut Ctx<'_>) -> Result<String> {
    let body = "echo \"X=${XTASK_PROBE:-unset} ID=${SLURM_JOB_ID:-unset} N=${SLURM_NTASKS:-unset} SUB=${SLURM_SUBMIT_DIR:-unset}\"\n";
    let mut ids = Vec::new();
    for (stem, export) in [
        ("export-all", "--export=ALL"),
        ("export-none", "--export=NONE"),
    ] {
        let script = ctx.script(stem, body)?;
        let mut c = ctx.tool("sbatch");
        c.env("XTASK_PROBE", "carried")
            .args(["--parsable", "-J", stem, export, "-n1"])
            .arg("-o")
            .arg(ctx.path(&format!("{stem}.out")))
            .arg(&script);
        let id = super::super::jobs::sbatch_id(c)?;
        ids.push((stem, id));
    }
    let dir = ctx.dir.display().to_string();
    let mut seen = Vec::new();
    for (stem, id) in ids {
        ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
        let f = ctx.path(&format!("{stem}.out"));
        let text = ctx.wait_lines(&f, 1, JOB_TIMEOUT)?.join("\n");
        let want_x = if stem == "export-all" {
            "carried"
        } else {
            "unset"
        };
        let want = format!("X={want_x} ID={id} N=1 SUB={dir}");
        if text.trim() != want {
            return Err(Error::Scenario(format!(
                "job {id} ({stem}) printed {text:?}, expected {want:?}"
            )));
        }
        seen.push(format!("{stem}: X={want_x}"));
    }
    let mut c = ctx.tool("srun");
    c.env("XTASK_PROBE", "from-submitter").args([
        "-N1",
        "--export=ALL,XTASK_STEP=set-by-srun",
        "sh",
        "-c",
        "echo $XTASK_PROBE $XTASK_STEP",
    ]);
    let out = driver_common::util::process::bounded::run_bounded(c, super::client::CLIENT_TIMEOUT)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || stdout.trim() != "from-submitter set-by-srun" {
        return Err(Error::Scenario(format!(
            "srun --export: {}, stdout {stdout:?}",
            out.status
        )));
    }
    seen.push("srun --export=ALL,VAR=value: both seen".into());
    Ok(seen.join("; "))
}

/// A job submitted by the unprivileged test user runs with its uid, gid and name; sacct
/// records the user; the output file belongs to it.
pub fn identity(ctx: &mut Ctx<'_>) -> Result<String> {
    let user = ensure_test_user()?;
    let id = ctx.sbatch_as(
        &user.name,
        "identity",
        &["-n1"],
        "echo \"$(id -u) $(id -g) $(id -un) $SLURM_JOB_USER $SLURM_JOB_UID\"\n",
    )?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let f = ctx.path("identity.out");
    let line = ctx.wait_lines(&f, 1, JOB_TIMEOUT)?.join("");
    let want = format!(
        "{} {} {} {} {}",
        user.uid, user.gid, user.name, user.name, user.uid
    );
    if line.trim() != want {
        return Err(Error::Scenario(format!(
            "job {id} as {} printed {line:?}, expected {want:?}",
            user.name
        )));
    }
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&f).map_err(|e| Error::io(&f, e))?;
    if meta.uid() != user.uid {
        return Err(Error::Scenario(format!(
            "{} belongs to uid {}, expected {}",
            f.display(),
            meta.uid(),
            user.uid
        )));
    }
    let acct = ctx.acct_final(id, JOB_TIMEOUT)?;
    if acct.user != user.name {
        return Err(Error::Scenario(format!(
            "sacct: job {id} user {:?}, expected {:?}",
            acct.user, user.name
        )));
    }
    Ok(format!(
        "job {id} ran as uid {} gid {} ({}); output file owned by it; sacct User={}",
        user.uid, user.gid, user.name, acct.user
    ))
}

/// The variables SMD-104 sets in the submitter's environment, and `XT_UNSET`, which it
/// removes: (name, value; None: must be unset in the job).
fn probe_vars(secret: &str) -> Vec<(&'static str, Option<String>)> {
    let big: String = (0..8192)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    vec![
        ("XT_EMPTY", Some(String::new())),
        ("XT_UNSET", None),
        ("XT_8KIB", Some(big)),
        ("XT_UTF8", Some("héllo wörld ✓ 日本語 🚀".to_string())),
        ("XT_SPACES", Some("  two  spaces  ".to_string())),
        ("LANG", Some("C.UTF-8".to_string())),
        (
            "PATH",
            Some("/usr/local/bin:/usr/bin:/bin:/opt/xt probe/bin".to_string()),
        ),
        ("XT_SECRET", Some(secret.to_string())),
    ]
}

/// Parse `env -0` output into (name, value) pairs.
fn parse_env0(bytes: &[u8]) -> Vec<(String, String)> {
    bytes
        .split(|&b| b == 0)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// The batch step's id as its script sees it (POC D15, patch 0067): absent (24.11 to 25.11
/// skip a negative id) or slurm.conf(5)'s 4294967291, never the signed -5.
fn batch_step_id_problems(env: &[(String, String)]) -> Vec<String> {
    env.iter()
        .filter(|(k, _)| k == "SLURM_STEP_ID" || k == "SLURM_STEPID")
        .filter(|(_, v)| v != "4294967291")
        .map(|(k, v)| {
            format!("{k}={v:?} in the batch script (slurm.conf(5): the batch step is 4294967291)")
        })
        .collect()
}

/// Where the job's environment differs from what was submitted.
fn env_mismatches(env: &[(String, String)], vars: &[(&str, Option<String>)]) -> Vec<String> {
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let mut bad = Vec::new();
    for (name, want) in vars {
        let got = get(name);
        if got != *want {
            let show = |v: &Option<String>| match v {
                None => "unset".to_string(),
                Some(v) if v.len() > 40 => format!("{} bytes", v.len()),
                Some(v) => format!("{v:?}"),
            };
            bad.push(format!("{name}: {} (expected {})", show(&got), show(want)));
        }
    }
    if let Some((k, _)) = env.iter().find(|(k, _)| k.starts_with("SLURM_RLIMIT_")) {
        bad.push(format!("{k} reached the job (Slurm's internal variable)"));
    }
    bad
}

/// SMD-104: the submitter's empty, unset, 8 KiB and non-ASCII values, spaces, `LANG` and
/// `PATH` reach a batch job and an srun step unchanged (`--export=ALL`, Slurm's default); a
/// secret value passed the same way appears in no daemon log.
pub fn values(ctx: &mut Ctx<'_>) -> Result<String> {
    let secret = format!("xt-secret-{}", super::super::config::random_password()?);
    let vars = probe_vars(&secret);
    let apply = |c: &mut std::process::Command| {
        for (k, v) in &vars {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
    };
    let dump = ctx.path("batch.env");
    let mut c = ctx.tool("sbatch");
    apply(&mut c);
    let id = ctx.sbatch_using(
        c,
        "env-values",
        &["-n1"],
        &format!("env -0 > {}\n", q(&dump)),
    )?;
    ctx.wait_state(id, &["COMPLETED"], JOB_TIMEOUT)?;
    let batch = std::fs::read(&dump).map_err(|e| Error::io(&dump, e))?;
    let mut c = ctx.tool("srun");
    apply(&mut c);
    c.args(["-N1", "env", "-0"]);
    let step =
        driver_common::util::process::bounded::run_bounded(c, super::client::CLIENT_TIMEOUT)?;
    if !step.status.success() {
        return Err(Error::Scenario(format!(
            "srun env -0: {}, {}",
            step.status,
            String::from_utf8_lossy(&step.stderr).trim()
        )));
    }
    let mut bad = Vec::new();
    for (path, bytes) in [("batch job", &batch), ("srun step", &step.stdout)] {
        for m in env_mismatches(&parse_env0(bytes), &vars) {
            bad.push(format!("{path}: {m}"));
        }
    }
    bad.extend(batch_step_id_problems(&parse_env0(&batch)));
    let mut leaked = Vec::new();
    for d in ctx.cluster.daemons() {
        if matches!(d, Daemon::MariaDb) {
            continue;
        }
        for f in [ctx.cluster.log(d), ctx.cluster.output(d)] {
            if std::fs::read(&f).is_ok_and(|b| String::from_utf8_lossy(&b).contains(&secret)) {
                leaked.push(f.display().to_string());
            }
        }
    }
    if !leaked.is_empty() {
        bad.push(format!("the secret value is in {leaked:?}"));
    }
    no_faults(&bad, "")?;
    Ok(format!(
        "batch job {id} and an srun step saw XT_EMPTY empty, the batch step's id absent or 4294967291, XT_UNSET unset, an 8192-byte value, UTF-8, spaces, LANG and PATH as submitted; no SLURM_RLIMIT_*; the secret is in no daemon log"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_step_id__absent_or_unsigned_never_negative() {
        assert!(batch_step_id_problems(&parse_env0(b"A=1\0")).is_empty());
        let good = parse_env0(b"SLURM_STEP_ID=4294967291\0SLURM_STEPID=4294967291\0");
        assert!(batch_step_id_problems(&good).is_empty());
        let bad = batch_step_id_problems(&parse_env0(b"SLURM_STEP_ID=-5\0SLURM_STEPID=-5\0"));
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(bad[0].starts_with("SLURM_STEP_ID=\"-5\""), "{bad:?}");
    }

    #[test]
    fn env_mismatches__empty_unset_and_long_values() {
        let vars = vec![
            ("A", Some(String::new())),
            ("B", None),
            ("C", Some("x".repeat(100))),
        ];
        let env = parse_env0(b"A=\0C=xx\0B=1\0SLURM_RLIMIT_CPU=5\0");
        let bad = env_mismatches(&env, &vars);
        assert_eq!(bad.len(), 3, "{bad:?}");
        assert!(bad[0].starts_with("B: \"1\" (expected unset)"), "{bad:?}");
        assert!(bad[1].contains("C: \"xx\" (expected 100 bytes)"), "{bad:?}");
        assert!(bad[2].contains("SLURM_RLIMIT_CPU"), "{bad:?}");
        let good = parse_env0(format!("A=\0C={}\0", "x".repeat(100)).as_bytes());
        assert!(env_mismatches(&good, &vars).is_empty());
    }
}
