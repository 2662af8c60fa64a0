//! The driver's one error type. Every message names the step, the program or file, and a fix.

use std::path::{Path, PathBuf};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("could not start a shell: {0}")]
    Shell(String),
    #[error("{step}: `{program}` failed: {detail}")]
    Command {
        step: String,
        program: String,
        detail: String,
    },
    #[error("{program} not found (needed for {step}): {fix}")]
    MissingTool {
        program: String,
        step: String,
        fix: String,
    },
    #[error("{path}: {detail}")]
    Io { path: PathBuf, detail: String },
    #[error("codegen: {0}")]
    Codegen(String),
    #[error("slurm_shim.h is stale: run `cargo xtask codegen` and commit the result")]
    StaleHeader,
    #[error("unknown Slurm version `{version}`; pinned versions: {known}")]
    UnknownVersion { version: String, known: String },
    #[error("pins file {path}: {detail}")]
    Pins { path: PathBuf, detail: String },
    #[error(
        "{what}: sha256 mismatch: expected {expected}, got {actual}; the file is corrupt or not the pinned release (delete it and fetch again)"
    )]
    HashMismatch {
        what: String,
        expected: String,
        actual: String,
    },
    #[error("{what}: cannot unpack: {detail}")]
    Unpack { what: String, detail: String },
    #[error("no source given: pass --version V (pinned) or --source PATH")]
    NoSource,
    #[error("source {path} is not fetched: run `cargo xtask fetch --version {version}` first")]
    NotFetched { path: PathBuf, version: String },
    #[error("patch {patch} failed to apply ({file}): {detail}")]
    Patch {
        patch: String,
        file: String,
        detail: String,
    },
    #[error("unknown target triple `{triple}`; known: {known}")]
    UnknownTarget { triple: String, known: String },
    #[error("{0}")]
    Unsupported(String),
    #[error("{step} failed; see {log}:\n{tail}")]
    Build {
        step: String,
        log: PathBuf,
        tail: String,
    },
    #[error("non-regression: test results differ between the pristine and the patched tree:\n{0}")]
    Regression(String),
    #[error("cluster: {0}")]
    Cluster(String),
    #[error(
        "pin `{version}` in {path} has no verified sha256 yet (sha256 = \"\"): verify the release tarball and fill in its hash first"
    )]
    UnverifiedPin { version: String, path: PathBuf },
    #[error(
        "{path}: sha256 {actual} matches no pinned tarball (pinned: {known}); pass --version V to check it against one pin, or add a pin"
    )]
    UnknownTarball {
        path: PathBuf,
        actual: String,
        known: String,
    },
    #[error("{path} is not a Slurm source: {detail}")]
    NotASource { path: PathBuf, detail: String },
    #[error(
        "{repo}: commit {commit} pinned for `{version}` is not in this repository; fetch it there (`git --git-dir {repo} fetch <remote> {commit}`) or pass a repository that has it"
    )]
    MissingCommit {
        repo: PathBuf,
        commit: String,
        version: String,
    },
    #[error(
        "patch {patch} touches the generated file {file}: patch its source of truth (configure.ac, *.m4, Makefile.am) instead; the driver regenerates generated files"
    )]
    GeneratedFile { patch: String, file: String },
    #[error(
        "{path} is not a Slurm install prefix: {detail} (pass the --prefix given to build-slurm, the directory holding sbin/ and lib/slurm/)"
    )]
    NotASlurmPrefix { path: PathBuf, detail: String },
    #[error(
        "{0}: no plugins (*.so, *.dylib); was the install complete? (cargo xtask build-slurm installs them)"
    )]
    NoPlugins(PathBuf),
    #[error("audit: {0}")]
    Audit(String),
    #[error("lint: {0}")]
    Lint(String),
    #[error(
        "cluster `{name}` from an earlier run still runs in {dir} ({running}); stop it with `cargo xtask cluster down --name {name}` (or --dir {dir})"
    )]
    ClusterRunning {
        name: String,
        dir: PathBuf,
        running: String,
    },
    #[error("cluster: {daemon} (pid {pid}) died {when}; last lines of {log}:\n{tail}")]
    DaemonDied {
        daemon: String,
        pid: u32,
        when: String,
        log: PathBuf,
        tail: String,
    },
    #[error(
        "cluster: port {port} on 127.0.0.1 (for {daemon}) is already taken by another process; free it, or run `up` again to pick other ports"
    )]
    PortTaken { daemon: String, port: u16 },
    #[error("zig toolchain for the macOS cross build: {0}")]
    Zig(String),
    #[error(
        "{prefix}: the install is not a complete {target} Mach-O build; wrong or missing:\n{problems}"
    )]
    MachO {
        prefix: PathBuf,
        target: String,
        problems: String,
    },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, e: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            detail: e.to_string(),
        }
    }
}

/// The text of `path`, or `None` when there is no such file (other I/O errors are errors).
pub fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

impl From<xshell::Error> for Error {
    fn from(e: xshell::Error) -> Error {
        Error::Command {
            step: "command".into(),
            program: String::new(),
            detail: e.to_string(),
        }
    }
}
