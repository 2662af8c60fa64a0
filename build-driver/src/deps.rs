//! `cargo xtask deps --target TRIPLE`: the third-party libraries a macOS compute node needs
//! (OpenSSL's libcrypto, jansson, json-c, hwloc, libjwt 1.x), built for the target from the
//! pinned, hash-checked sources of `slurm-src/deps.toml` into
//! `$CARGO_TARGET_DIR/deps/<triple>/prefix` (`include/`, `lib/`, `lib/pkgconfig/`).
//!
//! Why each library (read from Slurm 24.11.5's and 26.11's `auxdir/x_ac_*.m4` and plugin
//! `Makefile.am`s; both lines are the same here):
//! - **libjwt** (`X_AC_JWT`, `--with-jwt`): `src/plugins/auth/Makefile.am` builds
//!   `auth/slurm` (whose `auth_slurm.so` also carries `cred/slurm`) only `if WITH_JWT`;
//!   it signs and checks its tokens with libjwt (HS256). 26.11's configure also requires
//!   `jwt_get_grants_json` (1.x or 2.x; libjwt 3 is refused). 1.17.2 is the reachable 1.x.
//!   Debian's orig tarball leaves out upstream's `libjwt/base64.{c,h}`; our own RFC 4648
//!   implementation (`build-driver/deps-overlay/libjwt/`, the pin's `overlay`) is copied in.
//! - **jansson**: libjwt 1.x's JSON library (not used by Slurm itself).
//! - **OpenSSL** (`openssl-src` crate): libjwt's crypto backend; only `libcrypto` is used.
//! - **json-c** (`X_AC_JSON`, `--with-json`): `serializer/json` is built only
//!   `if WITH_JSON_PARSER`.
//! - **hwloc** (`X_AC_HWLOC`, `--with-hwloc`): `HAVE_HWLOC`, slurmd's CPU topology.
//!   Built without libxml2, PCI, GPUs and plugins; on Linux with zig also without Apple's
//!   IOKit/Foundation frameworks (zig ships no frameworks), so hwloc's Darwin backend takes
//!   core kinds from `sysctl` only. Homebrew's hwloc on a Mac has them.
//!
//! ## Link form: static archives, libjwt's carrying jansson and libcrypto
//!
//! Every library is a static, position-independent archive (`lib*.a`). Slurm's configure
//! tests link with plain `-ljson-c`, `-lhwloc` and `-ljwt`, and its plugins link the same
//! way. json-c and hwloc need nothing else on macOS. libjwt needs jansson and libcrypto,
//! so their objects are merged into `libjwt.a` (the pin's `bundle`, an `ar -M` script):
//! `-ljwt` is then complete, exactly as the configure test assumes, and Slurm's configure
//! needs only `--with-json=P --with-jwt=P --with-hwloc=P` ([`DepsPrefix::configure_args`];
//! no `LIBS`).
//!
//! Why not `LIBS="-ljansson -lcrypto"` with separate archives (tried first): jansson and
//! json-c both define `json_object_get` (and more); with those `LIBS` on every link line,
//! the json-c test program fails with a duplicate symbol (zig's linker pulls jansson's
//! `value.c.o` too), so `serializer/json` would be lost. With the bundle, jansson only ever
//! enters `auth_slurm.so` (through `-ljwt`) and json-c only `serializer_json.so`; each
//! plugin holds its own copy, bound at link time, so the two never meet.
//!
//! Why not dylibs: a dylib needs an install name (`@rpath/libjwt.dylib`), an rpath in every
//! Slurm binary that loads it and a copy in the Slurm prefix, and Slurm's own
//! `-Wl,-rpath,<build prefix>` would point at this machine. Static archives leave nothing to
//! ship: the code is inside `slurmd`, `auth_slurm.so`, `serializer_json.so`.
//!
//! ## Steps, stamps and failure
//!
//! Each library is built in a scratch directory (unpacked with `tar` from the verified
//! tarball, see `source.rs`), installed with `DESTDIR` into a staging directory and renamed
//! to `pkgs/<name>` with its stamp (the hash of its pin, the tools, the recipe and its
//! dependencies' stamps) inside. The prefix is assembled the same way (staging, rename) and
//! carries the hash of all library stamps: an unchanged re-run does nothing; a failure
//! leaves the previous installation as it was. Each step's full output goes to
//! `logs/<name>/<step>.log`.
//!
//! After assembly the driver proves the result: every member of every `lib/*.a` is a
//! 64-bit Mach-O object for the target's CPU (`macho.rs`), and three C programs (libjwt +
//! libcrypto, json-c, hwloc; `prefix::SMOKES`) link for the target with `-ljwt`,
//! `-ljson-c`, `-lhwloc` alone, as Slurm's configure tests and plugins do (kept as
//! `deps/<triple>/smoke-*`; not run: no Mac here).
//!
//! On macOS: see docs/MACOS-TARGETS.md ("Third-party libraries for macOS"): Homebrew's json-c and
//! hwloc are usable as they are (`--with-json=$(brew --prefix json-c)`), libjwt must be
//! this 1.x build because Homebrew's libjwt 3 is refused by Slurm's configure.

mod args;
pub mod pins;
pub mod prefix;
pub mod recipes;
pub mod source;
pub mod tools;

pub use args::DepsArgs;
use driver_common::error::{Error, Result};
use driver_common::staging::cargo_target_dir;
use driver_common::targets::{self, Target};
use driver_common::util::fs::Staging;
use driver_common::util::process::{on_path, require_tool};
use driver_common::util::stamp::{Inputs, contents_digest};
use pins::{BuildKind, DepPins};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;
pub use tools::CrossTools;
use xshell::Shell;

pub use prefix::STAMP;

/// A finished prefix and how Slurm's configure uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepsPrefix {
    /// The built prefix.
    pub dir: PathBuf,
    pub target: String,
    /// Libraries taken from Homebrew instead (macOS only): library name, `brew --prefix`.
    pub system: Vec<(String, PathBuf)>,
}

impl DepsPrefix {
    /// The directory holding `lib` (`json-c`, `libjwt`, `hwloc`, ...).
    pub fn dir_of(&self, lib: &str) -> &Path {
        self.system
            .iter()
            .find(|(n, _)| n == lib)
            .map_or(self.dir.as_path(), |(_, p)| p.as_path())
    }

    /// `--with-json=P --with-jwt=P --with-hwloc=P`.
    pub fn configure_args(&self) -> Vec<String> {
        [("json", "json-c"), ("jwt", "libjwt"), ("hwloc", "hwloc")]
            .iter()
            .map(|(w, lib)| format!("--with-{w}={}", self.dir_of(lib).display()))
            .collect()
    }
}

/// `$CARGO_TARGET_DIR/deps/<triple>`.
pub fn base_dir(root: &Path, target: &Target) -> PathBuf {
    cargo_target_dir(root, std::env::var("CARGO_TARGET_DIR").ok())
        .join("deps")
        .join(target.label())
}

/// The `deps` command.
pub fn run(sh: &Shell, root: &Path, args: DepsArgs) -> Result<DepsPrefix> {
    let target = targets::lookup(&args.target)?.with_macos_min(args.macos_min.as_deref())?;
    let tools = CrossTools::for_target(sh, &base_dir(root, target).join("tools"), target)?;
    let jobs = args
        .jobs
        .unwrap_or_else(driver_common::util::process::default_jobs);
    let p = ensure_with(
        sh,
        root,
        target,
        &tools,
        jobs.max(1),
        args.debian_mirror.as_deref(),
        args.build_all,
    )?;
    println!("deps: prefix {}", p.dir.display());
    println!("deps: Slurm configure: {}", p.configure_args().join(" "));
    Ok(p)
}

/// The inputs whose hash is a library's stamp: target, pin, tools, recipe and the stamps
/// of the libraries it needs (`done`: name, directory, stamp hash of earlier libraries).
pub fn lib_inputs(job: &recipes::Job<'_>, done: &[(String, PathBuf, String)]) -> Inputs {
    let mut inputs = Inputs::default();
    inputs.add("target", job.target.label());
    inputs.add("pin", job.lib.identity());
    inputs.add("tools", job.tools.identity());
    inputs.add("recipe", recipes::describe(job));
    for n in &job.lib.needs {
        let h = done
            .iter()
            .find(|(d, _, _)| d == n)
            .map_or(String::new(), |(_, _, h)| h.clone());
        inputs.add(format!("needs {n}"), h);
    }
    inputs
}

/// True if `dir` holds a complete installation whose stamp is `hash`.
pub fn is_current(dir: &Path, hash: &str) -> bool {
    read_stamp(dir).as_deref() == Some(hash)
}

/// Libraries a Mac may take from Homebrew instead of building them: Slurm's configure
/// accepts Homebrew's json-c and hwloc as they are. Not libjwt (Homebrew ships libjwt 3,
/// which Slurm refuses), nor jansson/OpenSSL (only the libjwt 1.x built here needs them).
pub const HOMEBREW_LIBS: &[&str] = &["json-c", "hwloc"];

/// `brew --prefix <formula>` of each installed formula among `names` (macOS; an absent
/// `brew` or formula gives nothing, and the library is built instead).
fn homebrew(sh: &Shell, names: &[&str]) -> Vec<(String, PathBuf)> {
    if !on_path(sh, "brew") {
        return Vec::new();
    }
    names
        .iter()
        .filter_map(|n| {
            let out = xshell::cmd!(sh, "brew --prefix --installed {n}")
                .quiet()
                .ignore_status()
                .output()
                .ok()?;
            let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            (out.status.success() && p.join("include").is_dir()).then(|| (n.to_string(), p))
        })
        .collect()
}

/// Removes `.tmp-*` directories below `dir` (one `deps` run per target at a time).
fn remove_stale_staging(dir: &Path) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.filter_map(|e| e.ok()) {
        if e.file_name().to_string_lossy().starts_with(".tmp-") {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

fn read_stamp(dir: &Path) -> Option<String> {
    fs::read_to_string(dir.join(STAMP))
        .ok()
        .and_then(|t| t.lines().next().map(str::to_string))
}

/// Builds what is missing or stale and returns the prefix (see the module doc). `tools`
/// are the target's compiler/archiver (the Slurm cross build passes its own).
// The entry point for `build-slurm --target <apple>`, which is wired separately.
#[allow(dead_code)]
pub fn ensure(
    sh: &Shell,
    root: &Path,
    target: &Target,
    tools: &CrossTools,
    jobs: usize,
) -> Result<DepsPrefix> {
    ensure_with(sh, root, target, tools, jobs, None, false)
}

/// [`ensure`], with a Debian mirror for machines without apt (see `--debian-mirror`), and
/// `build_all`: build json-c and hwloc too where Homebrew has them (a self-contained prefix,
/// as a bottle needs: no Homebrew formula at run time).
pub fn ensure_with(
    sh: &Shell,
    root: &Path,
    target: &Target,
    tools: &CrossTools,
    jobs: usize,
    debian_mirror: Option<&str>,
    build_all: bool,
) -> Result<DepsPrefix> {
    let pins = DepPins::load(root)?;
    let base = base_dir(root, target);
    let pkgs_dir = base.join("pkgs");
    fs::create_dir_all(&pkgs_dir).map_err(|e| Error::io(&pkgs_dir, e))?;
    require_build_tools(sh, &pins, tools)?;
    // Staging directories left by a killed run (a normal failure removes its own).
    for dir in [base.join("build"), pkgs_dir.clone(), base.clone()] {
        remove_stale_staging(&dir);
    }
    let start = Instant::now();
    let system = if cfg!(target_os = "macos") && !build_all {
        homebrew(sh, HOMEBREW_LIBS)
    } else {
        Vec::new()
    };
    let run = LibRun {
        sh,
        root,
        target,
        tools,
        jobs,
        debian_mirror,
        base: &base,
        pkgs_dir: &pkgs_dir,
    };
    let mut done: Vec<(String, PathBuf, String)> = Vec::new();
    let mut timings: Vec<(String, Option<f64>)> = Vec::new();
    for lib in &pins.libs {
        if let Some((_, p)) = system.iter().find(|(n, _)| n == &lib.name) {
            eprintln!("deps: {}: using Homebrew's ({})", lib.name, p.display());
            continue;
        }
        let (dir, hash, secs) = run.lib(lib, &done)?;
        timings.push((lib.name.clone(), secs));
        done.push((lib.name.clone(), dir, hash));
    }
    let (result, rebuilt) = run.prefix(&done, &system)?;
    if rebuilt {
        eprintln!("deps: timings ({} jobs):", jobs);
        for (n, t) in &timings {
            match t {
                Some(s) => eprintln!("  {n:<10} {s:>6.0}s"),
                None => eprintln!("  {n:<10}  (up to date)"),
            }
        }
        eprintln!("  {:<10} {:>6.0}s", "total", start.elapsed().as_secs_f64());
    }
    Ok(result)
}

/// The build tools the pinned libraries need, on the PATH.
fn require_build_tools(sh: &Shell, pins: &DepPins, tools: &CrossTools) -> Result<()> {
    let need = |kind: BuildKind| pins.libs.iter().any(|l| l.build == kind);
    if need(BuildKind::Cmake) {
        require_tool(
            sh,
            "cmake",
            "deps",
            "Debian: apt-get install cmake; macOS: brew install cmake",
        )?;
    }
    if need(BuildKind::Autotools) || need(BuildKind::OpensslSrc) {
        require_tool(sh, "make", "deps", "Debian: apt-get install make")?;
    }
    if need(BuildKind::OpensslSrc) {
        require_tool(sh, "perl", "deps: OpenSSL's Configure", "install perl")?;
    }
    if !tools.cc.is_absolute() {
        require_tool(
            sh,
            &tools.cc.display().to_string(),
            "deps",
            "install a C compiler",
        )?;
    }
    Ok(())
}

/// What every library build of one `deps` run shares.
struct LibRun<'a> {
    sh: &'a Shell,
    root: &'a Path,
    target: &'a Target,
    tools: &'a CrossTools,
    jobs: usize,
    debian_mirror: Option<&'a str>,
    base: &'a Path,
    pkgs_dir: &'a Path,
}

impl LibRun<'_> {
    /// Builds `lib` unless its installation is current: its directory, its input hash, and
    /// the seconds the build took (`None`: up to date).
    fn lib(
        &self,
        lib: &pins::Lib,
        done: &[(String, PathBuf, String)],
    ) -> Result<(PathBuf, String, Option<f64>)> {
        let dir = self.pkgs_dir.join(&lib.name);
        let deps: Vec<(String, PathBuf)> = lib
            .needs
            .iter()
            .filter_map(|n| done.iter().find(|(d, _, _)| d == n))
            .map(|(n, p, _)| (n.clone(), p.clone()))
            .collect();
        let logs = self.base.join("logs").join(&lib.name);
        let build_parent = self.base.join("build");
        let probe = recipes::Job {
            lib,
            target: self.target,
            tools: self.tools,
            src: None,
            work: &build_parent,
            prefix: &dir,
            destdir: &build_parent,
            deps: deps.clone(),
            jobs: self.jobs,
            logs: &logs,
        };
        let mut inputs = lib_inputs(&probe, done);
        let overlay = lib
            .overlay
            .as_ref()
            .map(|o| self.root.join(pins::OVERLAY_DIR).join(o));
        if let Some(o) = &overlay {
            inputs.add("overlay", contents_digest(o, std::slice::from_ref(o))?);
        }
        let hash = inputs.hash();
        if is_current(&dir, &hash) {
            eprintln!("deps: {} {}: up to date", lib.name, lib.version);
            return Ok((dir, hash, None));
        }
        eprintln!("deps: {} {} ({})", lib.name, lib.version, lib.why);
        let t0 = Instant::now();
        let (src_staging, tree) = self.source(lib, overlay.as_deref(), &build_parent)?;
        let dest = Staging::new(self.pkgs_dir, &lib.name)?;
        let job = recipes::Job {
            src: tree.as_deref(),
            work: &src_staging.dir,
            destdir: &dest.dir,
            ..probe
        };
        recipes::build(self.sh, &job)?;
        let installed = dest.dir.join(dir.strip_prefix("/").unwrap_or(&dir));
        if !installed.join("lib").is_dir() {
            return Err(Error::Build {
                step: format!("deps: {} install", lib.name),
                log: logs.join("install.log"),
                tail: format!("nothing was installed below {}", installed.display()),
            });
        }
        self.bundle(lib, &installed, &deps)?;
        let st = installed.join(STAMP);
        fs::write(&st, inputs.stamp_text()).map_err(|e| Error::io(&st, e))?;
        if dir.exists() {
            fs::rename(&dir, dest.dir.join("old")).map_err(|e| Error::io(&dir, e))?;
        }
        fs::rename(&installed, &dir).map_err(|e| Error::io(&dir, e))?;
        drop(src_staging);
        let secs = t0.elapsed().as_secs_f64();
        eprintln!("deps: {} built in {secs:.0}s", lib.name);
        Ok((dir, hash, Some(secs)))
    }

    /// `lib`'s source unpacked (with its overlay) in a staging directory below
    /// `build_parent`; `None` for a library without a tarball (openssl-src's bundled source).
    fn source(
        &self,
        lib: &pins::Lib,
        overlay: Option<&Path>,
        build_parent: &Path,
    ) -> Result<(Staging, Option<PathBuf>)> {
        let Some(t) = &lib.tarball else {
            return Ok((Staging::new(build_parent, &lib.name)?, None));
        };
        let downloads = self.root.join("slurm-src/downloads");
        let tarball = source::tarball(self.sh, lib, t, &downloads, self.debian_mirror)?;
        let (s, tree) = source::unpack(self.sh, &tarball, &t.top_dir, build_parent)?;
        if let Some(o) = overlay {
            driver_common::util::fs::copy_into(o, &tree, &[])?;
        }
        Ok((s, Some(tree)))
    }

    /// Merges the archives of `lib.bundle`'s libraries into `lib`'s one archive.
    fn bundle(&self, lib: &pins::Lib, installed: &Path, deps: &[(String, PathBuf)]) -> Result<()> {
        if lib.bundle.is_empty() {
            return Ok(());
        }
        let own = prefix::archives_in(&installed.join("lib"))?;
        let [own] = own.as_slice() else {
            return Err(Error::Unsupported(format!(
                "deps: {} bundles {:?} but installed {} archives (expected one)",
                lib.name,
                lib.bundle,
                own.len()
            )));
        };
        let mut others = Vec::new();
        for b in &lib.bundle {
            let dir = &deps.iter().find(|(n, _)| n == b).map(|(_, d)| d.clone());
            if let Some(d) = dir {
                others.extend(prefix::archives_in(&d.join("lib"))?);
            }
        }
        prefix::merge_archives(self.sh, &self.tools.ar, own, &others)
    }

    /// The prefix of every built library, assembled and checked in a staging copy before it
    /// replaces the old one; `true` when it was (re)assembled.
    fn prefix(
        &self,
        done: &[(String, PathBuf, String)],
        system: &[(String, PathBuf)],
    ) -> Result<(DepsPrefix, bool)> {
        let (sh, target, base) = (self.sh, self.target, self.base);
        let prefix_dir = base.join("prefix");
        let mut all = Inputs::default();
        for (n, _, h) in done {
            all.add(n.clone(), h.clone());
        }
        for (n, l, text) in prefix::SMOKES {
            all.add(format!("smoke {n} {l}"), *text);
        }
        for (n, p) in system {
            all.add(format!("homebrew {n}"), p.display().to_string());
        }
        let result = DepsPrefix {
            dir: prefix_dir.clone(),
            target: target.rust.to_string(),
            system: system.to_vec(),
        };
        if is_current(&prefix_dir, &all.hash()) {
            eprintln!("deps: prefix up to date: {}", prefix_dir.display());
            return Ok((result, false));
        }
        let pkgs: Vec<(String, PathBuf)> = done
            .iter()
            .map(|(n, p, _)| (n.clone(), p.clone()))
            .collect();
        // Check before the prefix is replaced: assemble into a staging copy first.
        let check_dir = Staging::new(base, "check")?;
        let trial = check_dir.dir.join("prefix");
        prefix::assemble(&trial, &pkgs, &all.stamp_text())?;
        let archives = prefix::check_archives(&trial, target)?;
        for (a, n) in &archives {
            eprintln!(
                "deps: {a}: {n} objects, all 64-bit Mach-O for {}",
                target.rust
            );
        }
        let extra: Vec<PathBuf> = system.iter().map(|(_, p)| p.clone()).collect();
        let smokes = prefix::link_smoke(sh, &trial, &extra, target, self.tools, base)?;
        for p in &smokes {
            eprintln!(
                "deps: test program links for {} (not run: no Mac here): {}",
                target.rust,
                p.display()
            );
        }
        prefix::assemble(&prefix_dir, &pkgs, &all.stamp_text())?;
        Ok((result, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use driver_common::targets::rows;

    #[test]
    fn stamp__unchanged_inputs_skip_and_any_change_rebuilds() {
        let d = tempfile::tempdir().unwrap();
        let root = crate::project_root();
        let pins = DepPins::load(&root).unwrap();
        let t = rows::mac_arm();
        let Some(tools) = tools::tests::zig_or_skip(&d.path().join("tools"), t.rust) else {
            return;
        };
        let lib_of = |n: &str| pins.libs.iter().find(|l| l.name == n).unwrap();
        let (logs, dir) = (d.path().join("logs"), d.path().join("pkgs/libjwt"));
        let job = |lib, deps: Vec<(String, PathBuf)>| recipes::Job {
            lib,
            target: t,
            tools: &tools,
            src: None,
            work: d.path(),
            prefix: &dir,
            destdir: d.path(),
            deps,
            jobs: 2,
            logs: &logs,
        };
        let deps = vec![
            ("openssl".to_string(), d.path().join("pkgs/openssl")),
            ("jansson".to_string(), d.path().join("pkgs/jansson")),
        ];
        let done = vec![
            (
                "openssl".to_string(),
                deps[0].1.clone(),
                "h-ssl".to_string(),
            ),
            (
                "jansson".to_string(),
                deps[1].1.clone(),
                "h-jansson".to_string(),
            ),
        ];
        let jwt = lib_of("libjwt");
        let inputs = lib_inputs(&job(jwt, deps.clone()), &done);
        let hash = inputs.hash();
        assert!(!is_current(&dir, &hash), "nothing installed yet");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(STAMP), inputs.stamp_text()).unwrap();
        assert!(is_current(&dir, &hash), "same inputs: skipped");
        assert_eq!(lib_inputs(&job(jwt, deps.clone()), &done).hash(), hash);

        // A rebuilt dependency, another pin, other tools: each changes the stamp.
        let mut done2 = done.clone();
        done2[1].2 = "h-jansson-2".into();
        assert_ne!(lib_inputs(&job(jwt, deps.clone()), &done2).hash(), hash);
        let mut other = jwt.clone();
        other.options.push("-DX=1".into());
        assert_ne!(lib_inputs(&job(&other, deps.clone()), &done).hash(), hash);
        let x86 =
            tools::tests::zig_or_skip(&d.path().join("tools-x86"), "x86_64-apple-darwin").unwrap();
        let mut j = job(jwt, deps);
        j.tools = &x86;
        assert_ne!(lib_inputs(&j, &done).hash(), hash);
    }

    #[test]
    fn deps_prefix__configure_args_and_link_flags() {
        let p = DepsPrefix {
            dir: PathBuf::from("/p"),
            target: "aarch64-apple-darwin".into(),
            system: vec![],
        };
        assert_eq!(
            p.configure_args(),
            ["--with-json=/p", "--with-jwt=/p", "--with-hwloc=/p"]
        );
        let brew = DepsPrefix {
            system: vec![("hwloc".into(), PathBuf::from("/opt/homebrew/opt/hwloc"))],
            ..p
        };
        assert_eq!(
            brew.configure_args(),
            [
                "--with-json=/p",
                "--with-jwt=/p",
                "--with-hwloc=/opt/homebrew/opt/hwloc"
            ]
        );
    }
}
