//! Compiling and running C as the darwin personality compiles Slurm: `-include
//! slurm_shim.h -DSLURM_SHIM_EMULATE_DARWIN -Ishim/include/emulate` (configure) plus
//! `-DSLURM_SHIM_EMULATE_MACOS` (make), linked to this build's
//! `libslurm_shim.a`. The emulation models' tests use it to check what a Slurm translation
//! unit sees (macOS constants, the calls re-targeted to the shim, the macOS answers).

use std::path::{Path, PathBuf};
use std::process::Command;

/// What a C program printed and how it ended, and the emulation log it wrote.
#[derive(Debug)]
pub struct Run {
    /// Exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The lines `SLURM_SHIM_EMULATION_LOG` received.
    pub log: String,
}

fn shim_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The host `libslurm_shim.a` cargo built with this test binary: the newest
/// `libslurm_shim-<hash>.a` beside it in `deps/` (the copy one level up is only refreshed
/// by `cargo build`).
pub fn staticlib() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let newest = std::fs::read_dir(deps)
        .expect("read deps dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libslurm_shim-") && n.ends_with(".a"))
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok());
    newest.unwrap_or_else(|| panic!("no libslurm_shim-*.a in {}", deps.display()))
}

/// Compiles `source` in darwin-personality mode (plus `extra` compiler arguments), links it
/// to the shim and runs it with `env` (an empty value removes that variable).
pub fn run(name: &str, source: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
    let exe = build(name, source, extra);
    exec(name, &exe, &[], env)
}

fn scratch(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("darwin-c")
        .join(name)
}

/// Compiles `source` in darwin-personality mode (plus `extra` compiler arguments) and links
/// it to the shim; returns the executable.
pub fn build(name: &str, source: &str, extra: &[&str]) -> PathBuf {
    let dir = scratch(name);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).expect("write C source");
    let exe = dir.join(name);
    let include = shim_dir().join("include");
    let out = Command::new("cc")
        .args(["-std=gnu99", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg("-include")
        .arg(include.join("slurm_shim.h"))
        .arg("-DSLURM_SHIM_EMULATE_DARWIN")
        .arg("-DSLURM_SHIM_EMULATE_MACOS")
        .arg(format!("-I{}", include.join("emulate").display()))
        .args(extra)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg(staticlib())
        .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lgcc_s", "-lutil"])
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "compiling {name}.c failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs a program [`build`] made, with `args` and `env` (an empty value removes that
/// variable), collecting the emulation log it writes.
pub fn exec(name: &str, exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let log = scratch(name).join("emulation.log");
    let _ = std::fs::remove_file(&log);
    let mut cmd = Command::new(exe);
    cmd.args(args);
    // Hermetic: only the switches a test names (CI may export SLURM_SHIM_EMULATION_OFF for
    // its live clusters).
    cmd.env_remove("SLURM_SHIM_EMULATION_OFF");
    cmd.env("SLURM_SHIM_EMULATION_LOG", &log);
    for (k, v) in env {
        // An empty value removes the variable (e.g. no emulation log at all).
        if v.is_empty() {
            cmd.env_remove(k);
        } else {
            cmd.env(k, v);
        }
    }
    let out = cmd.output().expect("run the C program");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        log: std::fs::read_to_string(&log).unwrap_or_default(),
    }
}

/// Compiles `src` for `aarch64-macos` with zig against the SDK headers zig bundles (no
/// stand-in on the path), as the layout checks do: a failed `_Static_assert` means a
/// stand-in differs from the SDK. Panics with the compiler's message naming `what`.
pub fn compile_against_sdk(dir_name: &str, src: &str, what: &str) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("darwin-c")
        .join(dir_name);
    std::fs::create_dir_all(&dir).expect("dir");
    let c = dir.join("probe.c");
    std::fs::write(&c, src).expect("write");
    let out = Command::new("python3")
        .args(["-m", "ziglang", "cc", "-target", "aarch64-macos", "-c"])
        .arg(&c)
        .arg("-o")
        .arg(dir.join("probe.o"))
        .output()
        .expect("zig cc");
    assert!(
        out.status.success(),
        "{what} differ from the SDK: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
