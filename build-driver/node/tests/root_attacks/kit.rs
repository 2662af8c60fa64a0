//! The attacks' kit: a scratch Slurm prefix of stand-ins, the other user, and a run of the
//! binary with a hostile environment.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const NOBODY: u32 = 65534;

/// The environment a hostile caller leaves for root: code to load, another configuration,
/// another temporary directory.
pub const HOSTILE: &[(&str, &str)] = &[
    ("LD_PRELOAD", "/nonexistent/evil.so"),
    ("DYLD_INSERT_LIBRARIES", "/nonexistent/evil.dylib"),
    ("SLURM_CONF", "/nonexistent/evil.conf"),
];

/// Whether the attacks can run; says why not otherwise.
pub fn root() -> bool {
    let ok = nix::unistd::geteuid().is_root();
    if !ok {
        eprintln!("not run: the attacks need root (chown to another user); CI runs as root");
    }
    ok
}

pub fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

pub fn give_away(p: &Path) {
    nix::unistd::fchownat(
        nix::fcntl::AT_FDCWD,
        p,
        Some(nix::unistd::Uid::from_raw(NOBODY)),
        Some(nix::unistd::Gid::from_raw(NOBODY)),
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .unwrap();
}

pub fn put(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A scratch tree (root's, 0755) with a prefix of stand-ins and a record of what ran.
pub struct Kit {
    pub dir: tempfile::TempDir,
    pub prefix: PathBuf,
    pub record: PathBuf,
}

impl Kit {
    pub fn new() -> Kit {
        let dir = tempfile::tempdir().unwrap();
        chmod(dir.path(), 0o755);
        let prefix = dir.path().join("slurm");
        let record = dir.path().join("ran.log");
        let k = Kit {
            dir,
            prefix,
            record,
        };
        for p in [
            "sbin/slurmd",
            "sbin/sackd",
            "sbin/slurmstepd",
            "bin/scontrol",
        ] {
            k.stand_in(&k.prefix.join(p));
        }
        put(&k.prefix.join("lib/slurm/task_darwin.so"), "plugin");
        put(&k.prefix.join("lib/libslurmfull.so"), "lib");
        put(&k.prefix.join("etc/slurm.conf"), "ClusterName=x\n");
        k
    }

    /// A program that appends one line to the record (uid, its path, argv, cwd and the
    /// hostile variables as it sees them) and answers `-V` like slurmd.
    pub fn stand_in(&self, p: &Path) {
        put(
            p,
            &format!(
                "#!/bin/sh\necho \"uid=$(id -u) prog=$0 args=$* cwd=$(pwd) LD_PRELOAD=${{LD_PRELOAD-}} DYLD_INSERT_LIBRARIES=${{DYLD_INSERT_LIBRARIES-}} SLURM_CONF=${{SLURM_CONF-}} TMPDIR=${{TMPDIR-}} SLURM_SACK_KEY=${{SLURM_SACK_KEY-}}\" >> {}\n[ \"$1\" = -V ] && echo 'slurm 24.11.5'\nexit 0\n",
                self.record.display()
            ),
        );
        chmod(p, 0o755);
    }

    /// The record's lines: what ran.
    pub fn ran(&self) -> Vec<String> {
        std::fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// A key (0600) beside the prefix.
    pub fn key(&self) -> PathBuf {
        let k = self.dir.path().join("slurm.key");
        std::fs::write(&k, [7u8; 64]).unwrap();
        chmod(&k, 0o600);
        k
    }

    /// `slurm-mac ARGS` with the hostile environment.
    pub fn run(&self, args: &[&str]) -> Output {
        run_hostile(args, &[])
    }
}

/// `slurm-mac ARGS` with [`HOSTILE`] and `extra` set.
pub fn run_hostile(args: &[&str], extra: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_slurm-mac"));
    c.args(args);
    for (k, v) in HOSTILE.iter().chain(extra) {
        c.env(k, v);
    }
    c.output().unwrap()
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The record holds no line, and the run failed naming `culprit` (path) and `why`.
pub fn refused(k: &Kit, o: &Output, culprit: &Path, why: &[&str]) {
    let t = text(o);
    assert!(k.ran().is_empty(), "ran as root: {:?}\n{t}", k.ran());
    assert!(!o.status.success(), "exit 0:\n{t}");
    assert!(
        t.contains(&culprit.display().to_string()),
        "culprit not named:\n{t}"
    );
    for w in why {
        assert!(t.contains(w), "`{w}` not said:\n{t}");
    }
}

/// The control: the stand-ins ran, as root, and saw nothing of the hostile environment.
pub fn ran_clean(k: &Kit, o: &Output) {
    let lines = k.ran();
    assert!(
        !lines.is_empty(),
        "nothing ran (the control must run):\n{}",
        text(o)
    );
    for l in &lines {
        assert!(l.starts_with("uid=0 "), "{l}");
        assert!(l.contains("cwd=/ "), "not started from /: {l}");
        assert!(
            !l.contains("/nonexistent/evil"),
            "the caller's environment reached the child: {l}"
        );
        assert!(!l.contains("TMPDIR=/"), "TMPDIR reached the child: {l}");
    }
}
