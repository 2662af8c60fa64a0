//! The driver's one error type. Every message names the step, the program or file, and a fix.

use std::path::PathBuf;
use std::time::Duration;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("could not start a shell: {0}")]
    Shell(#[source] xshell::Error),
    #[error("{0}")]
    Xshell(#[from] xshell::Error),
    #[error("cannot run `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot wait for `{program}`: {source}")]
    Wait {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{call} failed: {source}")]
    Os {
        call: String,
        #[source]
        source: nix::errno::Errno,
    },
    #[error(
        "uid {0} has no entry in the password database (getpwuid); add the user or run as one that has one"
    )]
    UnknownUid(u32),
    #[error("{what} did not finish within {after:?}")]
    Timeout { what: String, after: Duration },
    #[error("timed out after {after:?} waiting for {waiting_for}")]
    TimedOut {
        waiting_for: String,
        after: Duration,
    },
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
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {problem}")]
    File { path: PathBuf, problem: String },
    #[error("codegen: {0}")]
    Codegen(String),
    #[error("slurm_shim.h is stale: run `cargo xtask codegen` and commit the result")]
    StaleHeader,
    #[error(
        "unknown Slurm release line `{line}` ({from}); known lines: {known} (each line's facts are in build-driver/common/src/lines.rs, its patches in patches/series)"
    )]
    UnknownLine {
        line: String,
        from: String,
        known: String,
    },
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
    #[error("make check: results differ beyond the recorded expectations: {0}")]
    UnexpectedResults(String),
    #[error("{context}: {source}")]
    Context {
        context: String,
        #[source]
        source: Box<Error>,
    },
    #[error("{what}: {source}")]
    Parse {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{0}")]
    Usage(String),
    #[error(
        "{prefix} was not staged by `cargo xtask build-slurm` (no {manifest}); build it with `cargo xtask build-slurm --prefix {prefix}`, or pass a prefix that was"
    )]
    NotStaged { prefix: PathBuf, manifest: PathBuf },
    /// What a cluster scenario (or peer/bench run) saw, against what it expects.
    #[error("cluster: {0}")]
    Scenario(String),
    #[error("{path} {why}: root would act on what another user can change\nfix: {fix}")]
    Untrusted {
        path: PathBuf,
        why: String,
        fix: String,
    },
    #[error("{what} must run as root: {why}")]
    NeedsRoot { what: String, why: String },
    #[error("no cluster in {dir} (no cluster.toml): start one with `cargo xtask cluster up`")]
    NoCluster { dir: PathBuf },
    #[error(
        "{dir} exists and is not a cluster directory (no cluster.toml); choose another --dir or --name than `{name}`, or remove it"
    )]
    NotAClusterDir { dir: PathBuf, name: String },
    #[error(
        "cluster `{name}` ({dir}) is in use by another `cargo xtask cluster test` (pid {holder}); wait for it or use another --name"
    )]
    ClusterBusy {
        name: String,
        dir: PathBuf,
        holder: String,
    },
    #[error(
        "{socket} is served by another Slurm daemon; without a private /run only one cluster runs at a time, so stop it first"
    )]
    SackInUse { socket: PathBuf },
    #[error(
        "{dir} does not exist and only root can create it; as root: mkdir -p {dir} && chown {uid} {dir}"
    )]
    SackDirMissing { dir: PathBuf, uid: u32 },
    #[error("cluster: {name} (pid {pid}) exited at once; see {output}")]
    ExitedAtOnce {
        name: String,
        pid: u32,
        output: PathBuf,
    },
    #[error("cluster: {name} (pid {pid}) survived SIGKILL for 10 s (stuck in the kernel?)")]
    Unkillable { name: String, pid: u32 },
    #[error("cluster: cannot signal {name} (pid {pid}): {source}")]
    Signal {
        name: String,
        pid: u32,
        #[source]
        source: std::io::Error,
    },
    #[error("cluster: down of {dir}: {failures}")]
    DownFailed { dir: PathBuf, failures: String },
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
        "cluster: node {node} never registered: its slurmd runs, but after {after:?} slurmctld still reports the node {state}; last lines of {log}:\n{tail}"
    )]
    NodeNeverRegistered {
        node: String,
        after: Duration,
        state: String,
        log: PathBuf,
        tail: String,
    },
    #[error(
        "cluster: port {port} on 127.0.0.1 (for {daemon}) is already taken by another process; free it, or run `up` again to pick other ports"
    )]
    PortTaken { daemon: String, port: u16 },
    #[error("join: the key {path} {problem}: {fix}")]
    JoinKey {
        path: PathBuf,
        problem: String,
        fix: String,
    },
    #[error("join: asking the controller at {controller}: {what}\nfix: {fix}{}", if detail.is_empty() { String::new() } else { format!("\n(what the probe saw:)\n{detail}") })]
    JoinController {
        controller: String,
        what: String,
        fix: String,
        detail: String,
    },
    #[error(
        "join: refused: this build is Slurm {node}, the controller runs {controller}: {why}\nfix: install Slurm {install} on this node (cargo xtask fetch and build-slurm of that line), or change the controller"
    )]
    JoinRefused {
        node: String,
        controller: String,
        why: String,
        install: String,
    },
    #[error(
        "doctor: {failed} problem(s) stop this machine from being a Slurm node; each FAIL above names its fix"
    )]
    DoctorFailed { failed: usize },
    /// A node tool command's own typed error (`slurm-mac power`'s `PowerError`), shown as is.
    #[error(transparent)]
    Node(Box<dyn std::error::Error + Send + Sync>),
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
    /// This error with `context` (what was being done) in front; the error stays its source.
    pub fn context(self, context: impl Into<String>) -> Error {
        Error::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// A value that did not parse: `what` names it and where it came from.
    pub fn parse(
        what: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Error {
        Error::Parse {
            what: what.into(),
            source: source.into(),
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A file (or directory) that is there but wrong: `problem` says how, and how to fix it.
    pub fn file(path: impl Into<PathBuf>, problem: impl Into<String>) -> Error {
        Error::File {
            path: path.into(),
            problem: problem.into(),
        }
    }
}
