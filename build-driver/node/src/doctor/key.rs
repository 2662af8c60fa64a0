//! The auth/slurm key (`--key`, default `PREFIX/etc/slurm.key`): a regular file, owned by
//! root, mode 0600 or narrower, at least [`MIN_KEY_BYTES`], and (with `--expect-key`) the
//! same bytes as the controller's copy.
//!
//! What Slurm itself enforces (24.11.5 `src/plugins/auth/slurm/internal.c`,
//! `_check_key_permissions` and `init_internal`): fatal when any *other* bit is set
//! (`S_IRWXO`); a key owned by neither root nor SlurmUser only warns; the key is used at any
//! length (only a JWKS key is refused under 16 bytes, "key lacks sufficient entropy").
//! Doctor is stricter on purpose: a node's slurmd runs as root, so the key is root's, and
//! no group bit either; and the key is an HS256 secret (`jwt_set_alg(..., default_key->key,
//! default_key->keylen)`), for which RFC 7518 section 3.2 requires a key at least as long as
//! the hash, 256 bits. Slurm's own recipe makes 1024 bytes (doc/html/authentication.shtml).

use super::{Check, Finding, Problem};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The key size below which the check fails: install's warning threshold.
pub const MIN_KEY_BYTES: u64 = crate::install::config::MIN_KEY_BYTES as u64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyProblem {
    Unreadable { path: PathBuf, error: String },
    NotAFile { path: PathBuf },
    NotRoot { path: PathBuf, uid: u32 },
    Mode { path: PathBuf, mode: u32 },
    TooShort { path: PathBuf, len: u64 },
    Differs { path: PathBuf, expected: PathBuf },
    ExpectedUnreadable { expected: PathBuf, error: String },
}

impl KeyProblem {
    pub fn detail(&self) -> String {
        match self {
            KeyProblem::Unreadable { path, error } => {
                format!("{} cannot be read ({error})", path.display())
            }
            KeyProblem::NotAFile { path } => format!("{} is not a regular file", path.display()),
            KeyProblem::NotRoot { path, uid } => format!(
                "{} belongs to uid {uid}, not root: that user can change the cluster's key on this node",
                path.display()
            ),
            KeyProblem::Mode { path, mode } => format!(
                "{} has mode {mode:04o}: group or other users may use it{}",
                path.display(),
                if mode & 0o007 != 0 {
                    " (auth/slurm refuses to start: \"key file is insecure\")"
                } else {
                    ""
                }
            ),
            KeyProblem::TooShort { path, len } => format!(
                "{} holds {len} byte(s), fewer than {MIN_KEY_BYTES} (an HS256 key is at least 256 bits)",
                path.display()
            ),
            KeyProblem::Differs { path, expected } => format!(
                "{} is not the same key as {}: the controller will reject this node (\"Protocol authentication error\")",
                path.display(),
                expected.display()
            ),
            KeyProblem::ExpectedUnreadable { expected, error } => {
                format!(
                    "--expect-key {} cannot be read ({error})",
                    expected.display()
                )
            }
        }
    }

    pub fn fix(&self) -> String {
        let install = |from: &str, to: &Path| {
            format!("sudo install -o 0 -g 0 -m 600 {from} {}", to.display())
        };
        match self {
            KeyProblem::Unreadable { path, .. } | KeyProblem::NotAFile { path } => format!(
                "scp root@CONTROLLER:/etc/slurm/slurm.key ./slurm.key && {}",
                install("./slurm.key", path)
            ),
            KeyProblem::NotRoot { path, .. } => format!("sudo chown root {}", path.display()),
            KeyProblem::Mode { path, .. } => format!("sudo chmod 600 {}", path.display()),
            KeyProblem::TooShort { path, .. } => format!(
                "on the controller: `dd if=/dev/random of=/etc/slurm/slurm.key bs=1024 count=1`, copy it to every node and restart every daemon; here: {}",
                install("./slurm.key", path)
            ),
            KeyProblem::Differs { path, expected } => {
                install(&expected.display().to_string(), path)
            }
            KeyProblem::ExpectedUnreadable { .. } => {
                "pass the controller's slurm.key (a copy) to --expect-key".into()
            }
        }
    }
}

/// One finding per problem (all of them, so one run shows every fix), or one `ok`.
pub fn check(key: &Path, expect: Option<&Path>) -> Vec<Finding> {
    let problems = problems(key, expect);
    if problems.is_empty() {
        let len = std::fs::metadata(key).map(|m| m.len()).unwrap_or_default();
        let same = if expect.is_some() {
            ", the same bytes as --expect-key"
        } else {
            ""
        };
        return vec![Finding::ok(
            Check::Key,
            format!("{}: root's, mode 0600, {len} bytes{same}", key.display()),
        )];
    }
    problems
        .into_iter()
        .map(|p| Finding::fail(Check::Key, Problem::Key(p)))
        .collect()
}

/// The key's problems; none when it is fit.
pub fn problems(key: &Path, expect: Option<&Path>) -> Vec<KeyProblem> {
    let path = key.to_path_buf();
    let m = match std::fs::metadata(key) {
        Ok(m) => m,
        Err(e) => {
            return vec![KeyProblem::Unreadable {
                path,
                error: e.to_string(),
            }];
        }
    };
    if !m.is_file() {
        return vec![KeyProblem::NotAFile { path }];
    }
    let mut out = Vec::new();
    if m.uid() != 0 {
        out.push(KeyProblem::NotRoot {
            path: path.clone(),
            uid: m.uid(),
        });
    }
    let mode = m.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        out.push(KeyProblem::Mode {
            path: path.clone(),
            mode,
        });
    }
    if m.len() < MIN_KEY_BYTES {
        out.push(KeyProblem::TooShort {
            path: path.clone(),
            len: m.len(),
        });
    }
    if let Some(expected) = expect {
        out.extend(compare(key, expected));
    }
    out
}

fn compare(key: &Path, expected: &Path) -> Option<KeyProblem> {
    let theirs = match std::fs::read(expected) {
        Ok(b) => b,
        Err(e) => {
            return Some(KeyProblem::ExpectedUnreadable {
                expected: expected.to_path_buf(),
                error: e.to_string(),
            });
        }
    };
    match std::fs::read(key) {
        Ok(ours) if ours == theirs => None,
        Ok(_) => Some(KeyProblem::Differs {
            path: key.to_path_buf(),
            expected: expected.to_path_buf(),
        }),
        Err(e) => Some(KeyProblem::Unreadable {
            path: key.to_path_buf(),
            error: e.to_string(),
        }),
    }
}
