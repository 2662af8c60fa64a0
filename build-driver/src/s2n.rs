//! `cargo xtask s2n`: s2n-tls, the TLS library of Slurm's `tls/s2n` plugin (25.05 and
//! later; the proof of concept's SMD-407), built for this machine into
//! `$CARGO_TARGET_DIR/deps/<host triple>/s2n` (`include/s2n.h`, `lib/libs2n.so`), which
//! `build-slurm --with-s2n` hands to Slurm's configure (`--with-s2n=DIR`).
//!
//! Where the source comes from: s2n-tls is in no Debian release, but the registry's
//! `s2n-tls-sys` crate carries its C sources with upstream's `CMakeLists.txt`. The pin
//! (`slurm-src/s2n.toml`) names the crate, its exact version and the sha256 of its `.crate`
//! file. The file is taken from cargo's download cache, or fetched by `cargo fetch` of a
//! throwaway manifest that depends on exactly that version (so cargo's own registry
//! configuration decides where from), and its sha256 is checked before it is unpacked.
//!
//! How it is built: as Slurm's tls.shtml asks, a shared library (`-DBUILD_SHARED_LIBS=ON`:
//! configure's `X_AC_S2N` links its test program with `-ls2n` alone, so libcrypto must come
//! with the library), against this machine's libcrypto (Debian's libssl-dev), without tests.
//! A C program that calls `s2n_init()` is then linked and run, as configure will. The tree
//! is installed into a staging directory and renamed into place with its stamp (the pin's
//! hash): a failure leaves the previous installation as it was; an unchanged pin does nothing.
//!
//! For a macOS target (`--target aarch64-apple-darwin`, the Mach-O lane), see [`apple`]: a
//! static library cross-compiled against the target's libcrypto, and the configure answers
//! that stand for `X_AC_S2N`'s test program, which a cross build cannot run.

mod apple;
mod args;

use crate::deps::source::unpack;
use crate::fetch::archive::verify_sha256;
pub use args::S2nArgs;
use driver_common::error::{Error, Result};
use driver_common::lines::Line;
use driver_common::targets::{self, Os, Target};
use driver_common::util::fs::{Staging, write_atomic};
use driver_common::util::process::logged::{Progress, run_logged};
use driver_common::util::process::{require_tool, run_checked};
use driver_common::util::stamp::{self, Inputs};
use std::fs;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// The pin file, relative to the repository root.
pub const PIN_FILE: &str = "slurm-src/s2n.toml";

/// The first Slurm release line with `tls/s2n`.
pub const FIRST_LINE: Line = Line::L25_05;

/// The plugin s2n-tls is for, relative to an installation's prefix.
pub const PLUGIN: &str = "lib/slurm/tls_s2n.so";

/// `slurm-src/s2n.toml`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    #[serde(rename = "crate")]
    pub krate: String,
    pub version: String,
    pub sha256: String,
    pub source: String,
}

impl Pin {
    /// Parses and checks a pin's text (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Pin> {
        let bad = |detail: String| Error::Pins {
            path: path.to_path_buf(),
            detail,
        };
        let pin: Pin = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        if pin.sha256.len() != 64 || !pin.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad(format!(
                "sha256 `{}` is not 64 hex digits (the sha256 of the .crate file)",
                pin.sha256
            )));
        }
        if pin.sha256.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(bad("sha256 must be lower-case hex".into()));
        }
        let plain = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.+".contains(&b))
        };
        if !plain(&pin.krate) || !plain(&pin.version) || !plain(&pin.source) {
            return Err(bad(
                "crate, version and source must be plain names (letters, digits, - _ . +)".into(),
            ));
        }
        Ok(pin)
    }

    pub fn read(root: &Path) -> Result<Pin> {
        let path = root.join(PIN_FILE);
        let text = fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        Pin::parse(&text, &path)
    }

    /// The `.crate` file's name.
    pub fn file_name(&self) -> String {
        format!("{}-{}.crate", self.krate, self.version)
    }

    /// What the installation's stamp records (a target build adds its own after these).
    fn inputs(&self, recipe: &[&str]) -> Inputs {
        let mut i = Inputs::default();
        i.add("crate", &self.krate);
        i.add("version", &self.version);
        i.add("sha256", &self.sha256);
        i.add("source", &self.source);
        i.add("recipe", recipe.join(" "));
        i.add("cflags", "-ffile-prefix-map=<source>=s2n-tls");
        i
    }
}

/// cmake's options (the recipe is part of the stamp).
const RECIPE: &[&str] = &[
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=ON",
    "-DBUILD_TESTING=OFF",
    "-DUNSAFE_TREAT_WARNINGS_AS_ERRORS=OFF",
    "-DS2N_USE_CRYPTO_SHARED_LIBS=ON",
];

/// `$CARGO_TARGET_DIR/deps/<triple>/s2n`: the installation `--with-s2n` uses for `target`.
pub fn prefix_for(root: &Path, target: &Target) -> PathBuf {
    crate::deps::base_dir(root, target).join("s2n")
}

const STAMP: &str = ".s2n-stamp";

/// The library an installation for `target` has: shared on Linux (configure links `-ls2n`
/// alone and runs the result), static for macOS ([`apple`]).
fn library(target: &Target) -> &'static str {
    if target.os == Os::Apple {
        "lib/libs2n.a"
    } else {
        "lib/libs2n.so"
    }
}

/// Whether `prefix` holds an s2n installation for `target` (its header and library).
pub fn is_installed(prefix: &Path, target: &Target) -> bool {
    prefix.join("include/s2n.h").is_file() && prefix.join(library(target)).exists()
}

/// How one installation is built: cmake's arguments, and for a macOS target the toolchain
/// file's text and the libcrypto it links.
struct Recipe {
    target: &'static Target,
    args: Vec<String>,
    /// A macOS target's CMake toolchain file: where, and its text.
    toolchain: Option<(PathBuf, String)>,
    inputs: Inputs,
}

/// The recipe for `target`: this machine's (Debian's libcrypto, ccache as cmake's launcher),
/// or a macOS target's ([`apple`]).
fn recipe(sh: &Shell, root: &Path, pin: &Pin, target: &'static Target) -> Result<Recipe> {
    if target.os != Os::Apple {
        if target.rust != targets::host().rust {
            return Err(Error::Unsupported(format!(
                "s2n --target {}: s2n-tls is built for this machine or for a macOS target",
                target.rust
            )));
        }
        let mut args: Vec<String> = RECIPE.iter().map(|s| s.to_string()).collect();
        if driver_common::util::process::on_path(sh, "ccache") {
            args.push("-DCMAKE_C_COMPILER_LAUNCHER=ccache".into());
        }
        return Ok(Recipe {
            target,
            args,
            toolchain: None,
            inputs: pin.inputs(RECIPE),
        });
    }
    let base = crate::deps::base_dir(root, target);
    let crypto = apple::crypto_prefix(&base.join("prefix"), target)?;
    let tools = crate::deps::CrossTools::for_target(sh, &base.join("tools"), target)?;
    let toolchain_file = prefix_for(root, target).with_extension("toolchain.cmake");
    let (args, text) = apple::cmake_args(target, &tools, &crypto, &toolchain_file)?;
    let mut inputs = pin.inputs(apple::RECIPE);
    inputs.add("target", target.rust);
    inputs.add("tools", tools.identity());
    inputs.add("toolchain", &text);
    inputs.add(
        "libcrypto",
        driver_common::util::fs::sha256_file(&crypto.join("lib/libcrypto.a"))?,
    );
    Ok(Recipe {
        target,
        args,
        toolchain: Some((toolchain_file, text)),
        inputs,
    })
}

/// The `s2n` command: builds (or finds up to date) the pinned s2n-tls for this machine or
/// `--target`; returns its prefix.
pub fn run(sh: &Shell, root: &Path, args: S2nArgs) -> Result<PathBuf> {
    let pin = Pin::read(root)?;
    let target = match &args.target {
        Some(t) => targets::lookup(t)?,
        None => targets::host(),
    };
    let recipe = recipe(sh, root, &pin, target)?;
    let prefix = prefix_for(root, target);
    let inputs = &recipe.inputs;
    if is_installed(&prefix, target) && stamp::read(&prefix.join(STAMP)) == Some(inputs.hash()) {
        eprintln!(
            "s2n: {} {} up to date in {}",
            pin.krate,
            pin.version,
            prefix.display()
        );
        return Ok(prefix);
    }
    for tool in ["cmake", "cc"] {
        require_tool(
            sh,
            tool,
            "building s2n-tls",
            "install it (Debian: apt-get install cmake build-essential libssl-dev)",
        )?;
    }
    let parent = prefix
        .parent()
        .ok_or_else(|| Error::file(&prefix, "no parent directory"))?;
    fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let staging = Staging::new(parent, "s2n")?;
    let (_src, lib) = unpack_source(sh, &pin, &staging.dir)?;
    let inst = staging.dir.join("inst");
    let jobs = args
        .jobs
        .unwrap_or_else(driver_common::util::process::default_jobs)
        .max(1);
    if let Some((file, text)) = &recipe.toolchain {
        write_atomic(file, text.as_bytes(), 0o644)?;
    }
    let logs = parent.join("logs/s2n");
    cmake(
        &lib,
        &staging.dir.join("build"),
        &inst,
        &logs,
        &recipe.args,
        jobs,
    )?;
    if recipe.target.os == Os::Apple {
        // What can be proven without running it: every object is Mach-O for the target.
        crate::deps::prefix::check_archives(&inst, recipe.target)?;
    } else {
        smoke(sh, &inst, &staging.dir)?;
    }
    stamp::write(&inst.join(STAMP), inputs)?;
    if prefix.exists() {
        fs::remove_dir_all(&prefix).map_err(|e| Error::io(&prefix, e))?;
    }
    fs::rename(&inst, &prefix).map_err(|e| Error::io(&prefix, e))?;
    let for_target = match &args.target {
        Some(t) => format!(" --target {t}"),
        None => String::new(),
    };
    eprintln!(
        "s2n: {} {} installed in {} (use: cargo xtask build-slurm --version V{for_target} --with-s2n)",
        pin.krate,
        pin.version,
        prefix.display()
    );
    Ok(prefix)
}

/// The verified crate unpacked in `work`; returns the unpacked tree (removed when dropped:
/// keep it while building) and the directory with s2n-tls's CMakeLists.txt (the pin's
/// `source`).
fn unpack_source(sh: &Shell, pin: &Pin, work: &Path) -> Result<(Staging, PathBuf)> {
    let krate = crate_file(sh, pin, &cargo_home()?, work)?;
    let (src, top) = unpack(sh, &krate, &format!("{}-{}", pin.krate, pin.version), work)?;
    let lib = top.join(&pin.source);
    if !lib.join("CMakeLists.txt").is_file() {
        return Err(Error::Unpack {
            what: krate.display().to_string(),
            detail: format!(
                "no {}/CMakeLists.txt in the crate (is `source` in {PIN_FILE} right?)",
                pin.source
            ),
        });
    }
    Ok((src, lib))
}

/// cmake's configure (with `args`), build and install of `lib` into `inst`, each step
/// logged in `logs`.
fn cmake(
    lib: &Path,
    build: &Path,
    inst: &Path,
    logs: &Path,
    args: &[String],
    jobs: usize,
) -> Result<()> {
    fs::create_dir_all(logs).map_err(|e| Error::io(logs, e))?;
    let mut configure = std::process::Command::new("cmake");
    configure
        .arg("-S")
        .arg(lib)
        .arg("-B")
        .arg(build)
        .args(args)
        // Error messages name source files: by their place in s2n-tls, not this scratch tree.
        .arg(format!(
            "-DCMAKE_C_FLAGS=-ffile-prefix-map={}=s2n-tls",
            lib.display()
        ))
        .arg(format!("-DCMAKE_INSTALL_PREFIX={}", inst.display()));
    let mut make = std::process::Command::new("cmake");
    make.arg("--build")
        .arg(build)
        .args(["-j", &jobs.to_string()]);
    let mut install = std::process::Command::new("cmake");
    install.arg("--install").arg(build);
    for (c, step, log) in [
        (configure, "s2n: cmake", "configure.log"),
        (make, "s2n: build", "build.log"),
        (install, "s2n: install", "install.log"),
    ] {
        run_logged(c, step, &logs.join(log), Progress::Spinner)?;
    }
    Ok(())
}

/// Links and runs what Slurm's `X_AC_S2N` does (`s2n_init`, `s2n_cleanup_final`, `-ls2n`
/// alone): a library configure would not take fails here, with the reason.
fn smoke(sh: &Shell, inst: &Path, work: &Path) -> Result<()> {
    let c = work.join("smoke.c");
    write_atomic(
        &c,
        b"#include <s2n.h>\nint main(void) { if (s2n_init()) return 1; return s2n_cleanup_final() ? 2 : 0; }\n",
        0o644,
    )?;
    let exe = work.join("smoke");
    let inc = inst.join("include");
    let lib = inst.join("lib");
    run_checked(
        cmd!(sh, "cc -o {exe} {c} -I{inc} -L{lib} -Wl,-rpath,{lib} -ls2n"),
        "s2n: link a program with -ls2n alone, as Slurm's configure does",
        "cc",
    )?;
    run_checked(
        cmd!(sh, "{exe}"),
        "s2n: run s2n_init()",
        "the s2n smoke program",
    )
}

/// The s2n installation for `build-slurm --with-s2n [--s2n-prefix DIR]` (`None`: the default
/// for the target), refused with the reason for a line without tls/s2n or no installation.
pub fn for_build(
    root: &Path,
    given: Option<&Path>,
    line: Line,
    target: &Target,
) -> Result<PathBuf> {
    if line < FIRST_LINE {
        return Err(Error::Usage(format!(
            "--with-s2n: Slurm {} has no tls/s2n plugin (it came in {}); drop --with-s2n",
            line.name(),
            FIRST_LINE.name()
        )));
    }
    let dir = match given {
        None => prefix_for(root, target),
        Some(g) => std::path::absolute(g).map_err(|e| Error::io(g, e))?,
    };
    if !is_installed(&dir, target) {
        let command = if target.os == Os::Apple {
            format!("cargo xtask s2n --target {}", target.rust)
        } else {
            "cargo xtask s2n".to_string()
        };
        return Err(Error::Usage(format!(
            "--with-s2n: no s2n-tls in {} (include/s2n.h and {}): run `{command}` \
             first, or give the directory of another installation",
            dir.display(),
            library(target)
        )));
    }
    Ok(dir)
}

/// Slurm's configure arguments for the s2n installation `s2n` (none without one): the
/// option, and for a macOS target the answers of `X_AC_S2N`'s test program ([`apple`];
/// libcrypto from the deps prefix `crypto`). Cross-built, the test cannot run; on a Mac it
/// would link `-ls2n` alone, which a static libs2n.a does not satisfy without libcrypto.
pub fn configure_switches(
    s2n: Option<&Path>,
    mac_target: bool,
    crypto: Option<&Path>,
) -> Vec<String> {
    let Some(d) = s2n else {
        return Vec::new();
    };
    let mut args = vec![format!("--with-s2n={}", d.display())];
    if mac_target {
        args.extend(apple::configure_answers(d, crypto.unwrap_or(d)));
    }
    args
}

/// What a Slurm build's stamp records of the s2n installation it used: where, and its hash.
pub fn stamp_of(dir: &Path) -> String {
    let hash = stamp::read(&dir.join(STAMP)).unwrap_or_else(|| "no stamp".into());
    format!("{} {hash}", dir.display())
}

/// After a `--with-s2n` build: the plugin must be there (configure only warns when it does
/// not find s2n).
pub fn check_plugin(prefix: &Path, configure_log: &Path) -> Result<()> {
    let so = prefix.join(PLUGIN);
    if so.is_file() {
        eprintln!("build-slurm: tls/s2n built ({})", so.display());
        return Ok(());
    }
    Err(Error::Build {
        step: "build-slurm --with-s2n: tls_s2n.so was not built (configure did not take s2n)"
            .into(),
        log: configure_log.to_path_buf(),
        tail: driver_common::util::process::file_tail(configure_log, 20),
    })
}

/// `$CARGO_HOME`, or `~/.cargo`.
fn cargo_home() -> Result<PathBuf> {
    if let Some(h) = std::env::var_os("CARGO_HOME") {
        return Ok(PathBuf::from(h));
    }
    std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cargo"))
        .ok_or_else(|| Error::Usage("neither CARGO_HOME nor HOME is set".into()))
}

/// The pinned `.crate` file in cargo's download cache (`<home>/registry/cache/<registry>/`),
/// if any registry there has it.
pub fn cached_crate(home: &Path, pin: &Pin) -> Option<PathBuf> {
    let cache = home.join("registry").join("cache");
    let mut found: Vec<PathBuf> = fs::read_dir(&cache)
        .ok()?
        .flatten()
        .map(|d| d.path().join(pin.file_name()))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found.into_iter().next()
}

/// The verified `.crate` file: from cargo's cache, else after `cargo fetch` of a throwaway
/// manifest in `work` that depends on exactly the pinned version.
pub fn crate_file(sh: &Shell, pin: &Pin, home: &Path, work: &Path) -> Result<PathBuf> {
    let file = match cached_crate(home, pin) {
        Some(f) => f,
        None => {
            let dir = work.join("fetch");
            fs::create_dir_all(dir.join("src")).map_err(|e| Error::io(&dir, e))?;
            write_atomic(&dir.join("src/lib.rs"), b"", 0o644)?;
            let manifest = format!(
                "[package]\nname = \"s2n-source-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[dependencies]\n{} = \"={}\"\n\n[workspace]\n",
                pin.krate, pin.version
            );
            write_atomic(&dir.join("Cargo.toml"), manifest.as_bytes(), 0o644)?;
            let m = dir.join("Cargo.toml");
            eprintln!("s2n: cargo fetch {} {} ...", pin.krate, pin.version);
            let out = cmd!(sh, "cargo fetch --manifest-path {m}")
                .env("CARGO_HOME", home)
                .quiet()
                .ignore_status()
                .output()?;
            if !out.status.success() {
                return Err(Error::Command {
                    step: format!("fetching the {} {} crate", pin.krate, pin.version),
                    program: "cargo fetch".into(),
                    detail: String::from_utf8_lossy(&out.stderr).into_owned(),
                });
            }
            cached_crate(home, pin).ok_or_else(|| {
                Error::file(
                    home.join("registry/cache"),
                    format!(
                        "cargo fetch succeeded but {} is not in its cache",
                        pin.file_name()
                    ),
                )
            })?
        }
    };
    verify_sha256(&file, &pin.sha256)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "crate = \"s2n-tls-sys\"\nversion = \"0.3.47\"\nsha256 = \"bb636f37f6ca1cf91060a836d7078889d7276c456e5d4affbbe8244c9b85e6f0\"\nsource = \"lib\"\n";

    #[test]
    fn pin__the_committed_one_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let p = Pin::read(root).unwrap();
        assert_eq!(p.krate, "s2n-tls-sys");
        assert_eq!(p.file_name(), format!("s2n-tls-sys-{}.crate", p.version));
    }

    #[test]
    fn pin__bad_values_are_named() {
        let path = Path::new("s2n.toml");
        assert_eq!(Pin::parse(GOOD, path).unwrap().source, "lib");
        for (text, says) in [
            (GOOD.replace("bb636f", "bb636"), "64 hex digits"),
            (GOOD.replace("bb636f", "BB636F"), "lower-case"),
            (GOOD.replace("\"lib\"", "\"../lib\""), "plain names"),
            (format!("{GOOD}url = \"x\"\n"), "unknown field"),
            (GOOD.replace("source = \"lib\"\n", ""), "missing field"),
        ] {
            let e = Pin::parse(&text, path).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("s2n.toml"), "{e}");
        }
    }

    #[test]
    fn for_build__refuses_24_11_a_mac_and_a_missing_installation() {
        let root = Path::new("/nonexistent-root");
        let linux = driver_common::targets::rows::linux_x86();
        let e = for_build(root, None, Line::L24_11, linux).unwrap_err();
        assert!(e.to_string().contains("no tls/s2n plugin"), "{e}");
        let mac = driver_common::targets::lookup("aarch64-apple-darwin").unwrap();
        let none = Some(Path::new("/nonexistent-s2n"));
        let e = for_build(root, none, Line::L26_05, mac).unwrap_err();
        assert!(
            e.to_string()
                .contains("cargo xtask s2n --target aarch64-apple-darwin")
                && e.to_string().contains("lib/libs2n.a"),
            "{e}"
        );
        let e = for_build(
            root,
            Some(Path::new("/nonexistent-s2n")),
            Line::L26_05,
            linux,
        )
        .unwrap_err();
        assert!(e.to_string().contains("cargo xtask s2n"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("include")).unwrap();
        fs::create_dir_all(dir.path().join("lib")).unwrap();
        fs::write(dir.path().join("include/s2n.h"), "").unwrap();
        fs::write(dir.path().join("lib/libs2n.so"), "").unwrap();
        assert_eq!(
            for_build(root, Some(dir.path()), Line::L25_05, linux).unwrap(),
            dir.path()
        );
        // A macOS target wants the static library.
        assert!(for_build(root, Some(dir.path()), Line::L25_05, mac).is_err());
        fs::write(dir.path().join("lib/libs2n.a"), "").unwrap();
        assert_eq!(
            for_build(root, Some(dir.path()), Line::L25_05, mac).unwrap(),
            dir.path()
        );
    }

    #[test]
    fn crate_file__a_cached_file_of_another_hash_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let pin = Pin::parse(GOOD, Path::new("s2n.toml")).unwrap();
        let cache = home.path().join("registry/cache/some-registry");
        fs::create_dir_all(&cache).unwrap();
        fs::write(cache.join(pin.file_name()), b"not the pinned crate").unwrap();
        assert_eq!(
            cached_crate(home.path(), &pin),
            Some(cache.join(pin.file_name()))
        );
        let sh = Shell::new().unwrap();
        let e = crate_file(&sh, &pin, home.path(), home.path()).unwrap_err();
        assert!(matches!(e, Error::HashMismatch { .. }), "{e}");
        assert!(e.to_string().contains(&pin.sha256), "{e}");
    }
}
