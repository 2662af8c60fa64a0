//! How each build kind is configured, built and installed. Every recipe installs with
//! `DESTDIR` (or, for openssl-src, by copying) into a staging directory; the caller renames
//! the result into place, so a failed build installs nothing.
//!
//! Static, position-independent archives only (see the link-form decision in `deps.rs`).

use super::pins::{BuildKind, Lib};
use super::tools::{CrossTools, cmake_toolchain};
use driver_common::error::{Error, Result};
use driver_common::targets::{Target, host};
use driver_common::util::process::logged::{Progress, run_logged};
use std::fs;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// Everything one library build needs.
#[derive(Debug)]
pub struct Job<'a> {
    pub lib: &'a Lib,
    pub target: &'a Target,
    pub tools: &'a CrossTools,
    /// The unpacked source (None for openssl-src).
    pub src: Option<&'a Path>,
    /// A scratch directory for the build tree.
    pub work: &'a Path,
    /// The final installation directory (`pkgs/<name>`), used as the configured prefix.
    pub prefix: &'a Path,
    /// Where the files land: `DESTDIR`; the tree appears at `<destdir>/<prefix>`.
    pub destdir: &'a Path,
    /// Installed directories of the libraries in `lib.needs`.
    pub deps: Vec<(String, PathBuf)>,
    pub jobs: usize,
    /// Per-library log directory (`<step>.log` files).
    pub logs: &'a Path,
}

impl Job<'_> {
    fn log(&self, step: &str) -> PathBuf {
        self.logs.join(format!("{step}.log"))
    }

    fn label(&self, step: &str) -> String {
        format!("{} {step}", self.lib.name)
    }

    /// Runs one step of the build (`step` names it on the terminal) with its output in
    /// `<log>.log`.
    fn run(&self, command: xshell::Cmd<'_>, step: &str, log: &str) -> Result<u64> {
        run_logged(
            command,
            &self.label(step),
            &self.log(log),
            Progress::Spinner,
        )
    }

    fn dep_flags(&self) -> (Vec<String>, Vec<String>) {
        let inc = self
            .deps
            .iter()
            .map(|(_, d)| format!("-I{}", d.join("include").display()))
            .collect();
        let lib = self
            .deps
            .iter()
            .map(|(_, d)| format!("-L{}", d.join("lib").display()))
            .collect();
        (inc, lib)
    }

    /// `PKG_CONFIG_LIBDIR`: only the dependencies' `.pc` files, never the build machine's.
    fn pkg_config_libdir(&self) -> String {
        let dirs: Vec<String> = self
            .deps
            .iter()
            .map(|(_, d)| d.join("lib/pkgconfig").display().to_string())
            .collect();
        if dirs.is_empty() {
            self.work.join("no-pkgconfig").display().to_string()
        } else {
            dirs.join(":")
        }
    }

    fn dep(&self, name: &str) -> Option<&Path> {
        self.deps
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d.as_path())
    }
}

/// What a build runs, as data (for the stamp: a changed recipe rebuilds).
pub fn describe(job: &Job<'_>) -> String {
    // OpenSSL's recipe changed on its own: its compiler is named through PATH.
    let revision = match job.lib.build {
        BuildKind::OpensslSrc => " cc-on-path",
        _ => "",
    };
    format!(
        "recipe v2{revision} {:?} cflags={} deps={:?}",
        job.lib.build,
        job.tools.cflags_with(&[]),
        job.deps.iter().map(|(n, _)| n).collect::<Vec<_>>()
    )
}

/// Builds and installs `job.lib` below `job.destdir`.
pub fn build(sh: &Shell, job: &Job<'_>) -> Result<()> {
    fs::create_dir_all(job.logs).map_err(|e| Error::io(job.logs, e))?;
    match job.lib.build {
        BuildKind::Cmake => cmake(sh, job),
        BuildKind::Autotools => autotools(sh, job),
        BuildKind::OpensslSrc => openssl(sh, job),
    }
}

fn src<'a>(job: &Job<'a>) -> Result<&'a Path> {
    job.src
        .ok_or_else(|| Error::Unsupported(format!("deps: {} has no source tree", job.lib.name)))
}

fn cmake(sh: &Shell, job: &Job<'_>) -> Result<()> {
    let src = src(job)?;
    let b = job.work.join("build");
    let (inc, _) = job.dep_flags();
    let mut args: Vec<String> = vec![
        "-S".into(),
        src.display().to_string(),
        "-B".into(),
        b.display().to_string(),
        "-G".into(),
        "Unix Makefiles".into(),
        format!("-DCMAKE_INSTALL_PREFIX={}", job.prefix.display()),
        "-DCMAKE_INSTALL_LIBDIR=lib".into(),
        "-DCMAKE_BUILD_TYPE=Release".into(),
        "-DCMAKE_POSITION_INDEPENDENT_CODE=ON".into(),
        format!("-DCMAKE_C_FLAGS={}", job.tools.cflags_with(&inc)),
    ];
    let roots: Vec<PathBuf> = job.deps.iter().map(|(_, d)| d.clone()).collect();
    if job.tools.cross {
        let tc = job.work.join("toolchain.cmake");
        let text = cmake_toolchain(job.target, job.tools, &roots)?;
        fs::write(&tc, text).map_err(|e| Error::io(&tc, e))?;
        args.push(format!("-DCMAKE_TOOLCHAIN_FILE={}", tc.display()));
    } else {
        args.push(format!("-DCMAKE_C_COMPILER={}", job.tools.cc.display()));
        args.push(format!(
            "-DCMAKE_PREFIX_PATH={}",
            roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(";")
        ));
    }
    if let Some(ssl) = job.dep("openssl") {
        args.push(format!("-DOPENSSL_ROOT_DIR={}", ssl.display()));
        // Only libcrypto is built. libjwt's CMake links `${OPENSSL_LIBRARIES}`, which is
        // NOTFOUND without libssl; naming libcrypto there satisfies it (a static libjwt.a
        // records no link, and libjwt calls nothing from libssl).
        args.push(format!(
            "-DOPENSSL_SSL_LIBRARY={}",
            ssl.join("lib/libcrypto.a").display()
        ));
    }
    args.extend(job.lib.options.iter().cloned());
    let pkg = job.pkg_config_libdir();
    let c = cmd!(sh, "cmake {args...}")
        .env("PKG_CONFIG_LIBDIR", &pkg)
        .env("PKG_CONFIG_PATH", "");
    job.run(c, "cmake", "configure")?;
    let jobs = job.jobs.to_string();
    let c = cmd!(sh, "cmake --build {b} --parallel {jobs}");
    job.run(c, "build", "build")?;
    let c = cmd!(sh, "cmake --install {b}").env("DESTDIR", job.destdir);
    job.run(c, "install", "install")?;
    Ok(())
}

fn autotools(sh: &Shell, job: &Job<'_>) -> Result<()> {
    let src = src(job)?;
    let b = job.work.join("build");
    fs::create_dir_all(&b).map_err(|e| Error::io(&b, e))?;
    let (inc, libs) = job.dep_flags();
    let mut args: Vec<String> = vec![format!("--prefix={}", job.prefix.display())];
    if job.tools.cross {
        args.push(format!("--host={}", job.target.autoconf_host));
        args.push(format!("--build={}", host().autoconf_host));
    }
    args.extend([
        format!("CC={}", job.tools.cc.display()),
        format!("AR={}", job.tools.ar.display()),
        format!("RANLIB={}", job.tools.ranlib.display()),
        format!("CFLAGS={}", job.tools.cflags_with(&["-O2".into()])),
        format!("CPPFLAGS={}", inc.join(" ")),
        format!("LDFLAGS={}", libs.join(" ")),
        format!("PKG_CONFIG_LIBDIR={}", job.pkg_config_libdir()),
    ]);
    args.extend(job.lib.options.iter().cloned());
    let _dir = sh.push_dir(&b);
    let configure = src.join("configure");
    let c = cmd!(sh, "{configure} {args...}").env("PKG_CONFIG_PATH", "");
    job.run(c, "configure", "configure")?;
    let jobs = format!("-j{}", job.jobs);
    let c = cmd!(sh, "make {jobs}");
    job.run(c, "make", "build")?;
    let destdir = format!("DESTDIR={}", job.destdir.display());
    let c = cmd!(sh, "make install {destdir}");
    job.run(c, "install", "install")?;
    Ok(())
}

/// `flags` without any `-arch X` pair.
fn without_arch(flags: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        if f == "-arch" {
            it.next();
        } else {
            out.push(f.clone());
        }
    }
    out
}

/// OpenSSL's `Configure` target for an Apple target.
pub fn openssl_config(target: &Target) -> Result<&'static str> {
    match target.rust {
        "aarch64-apple-darwin" => Ok("darwin64-arm64-cc"),
        "x86_64-apple-darwin" => Ok("darwin64-x86_64-cc"),
        other => Err(Error::Unsupported(format!(
            "deps: no OpenSSL configuration for {other}"
        ))),
    }
}

/// A compiler's file name, and a `PATH` that finds it under that name first: its directory
/// before this process's `PATH` (unchanged for a compiler given by name).
pub fn compiler_on_path(cc: &Path) -> Result<(std::ffi::OsString, std::ffi::OsString)> {
    let current = std::env::var_os("PATH").unwrap_or_default();
    let (Some(dir), Some(name)) = (cc.parent(), cc.file_name()) else {
        return Ok((cc.as_os_str().to_owned(), current));
    };
    if dir.as_os_str().is_empty() {
        return Ok((name.to_owned(), current));
    }
    let dirs = std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&current));
    let path = std::env::join_paths(dirs)
        .map_err(|e| Error::Usage(format!("{}: cannot go on PATH: {e}", dir.display())))?;
    Ok((name.to_owned(), path))
}

/// OpenSSL from the source bundled in the `openssl-src` crate, configured here rather than
/// through the crate's `Build` (which takes no options and builds libssl too): only
/// `libcrypto.a`, with the pin's `no-*` options. Installed by copying the headers and the
/// archive, plus a `libcrypto.pc` written here.
fn openssl(sh: &Shell, job: &Job<'_>) -> Result<()> {
    let src = job.work.join("openssl");
    driver_common::util::fs::copy_into(&openssl_src::source_dir(), &src, &[])?;
    let _dir = sh.push_dir(&src);
    let config = openssl_config(job.target)?;
    // The files are copied into the prefix by hand below; Configure's prefix only becomes
    // the ENGINESDIR/MODULESDIR strings compiled into libcrypto (where dynamic engines and
    // providers would be loaded from). This static libcrypto loads none, so they name
    // macOS's always-empty, root-owned /var/empty, not a directory of this machine that
    // would end up in every program linking it (util/host_paths.rs).
    let prefix = "--prefix=/var/empty".to_string();
    let options = &job.lib.options;
    // Extra compiler flags go on the command line (added to the target's flags; a CFLAGS
    // variable would replace them). `-arch X` is the config target's own.
    let cflags = without_arch(&job.tools.cflags);
    // OpenSSL compiles `CC` and its flags into libcrypto ("compiler: ...", for
    // `OpenSSL_version(OPENSSL_CFLAGS)`), and s2n-tls links that object in: a compiler named
    // by a path of this machine would end up in the bottle's tls_s2n.so (its check refuses
    // it). So the compiler is named by its file name and found through PATH.
    let (cc, path) = compiler_on_path(&job.tools.cc)?;
    let c = cmd!(
        sh,
        "perl Configure {config} {prefix} --openssldir=/private/etc/ssl --libdir=lib {options...} {cflags...}"
    )
    .env("CC", &cc)
        .env("PATH", &path)
        .env("AR", &job.tools.ar)
        .env("RANLIB", &job.tools.ranlib)
        .env_remove("CROSS_COMPILE");
    job.run(c, "Configure", "configure")?;
    let jobs = format!("-j{}", job.jobs);
    let c = cmd!(sh, "make {jobs} build_generated libcrypto.a").env("PATH", &path);
    job.run(c, "make libcrypto.a", "build")?;
    let dest = job
        .destdir
        .join(job.prefix.strip_prefix("/").unwrap_or(job.prefix));
    let inc = dest.join("include/openssl");
    fs::create_dir_all(&inc).map_err(|e| Error::io(&inc, e))?;
    let headers = src.join("include/openssl");
    for e in fs::read_dir(&headers).map_err(|e| Error::io(&headers, e))? {
        let p = e.map_err(|e| Error::io(&headers, e))?.path();
        if let (Some(name), true) = (p.file_name(), p.extension().is_some_and(|x| x == "h")) {
            fs::copy(&p, inc.join(name)).map_err(|e| Error::io(&p, e))?;
        }
    }
    let lib = dest.join("lib");
    fs::create_dir_all(lib.join("pkgconfig")).map_err(|e| Error::io(&lib, e))?;
    fs::copy(src.join("libcrypto.a"), lib.join("libcrypto.a"))
        .map_err(|e| Error::io(lib.join("libcrypto.a"), e))?;
    let pc = lib.join("pkgconfig/libcrypto.pc");
    let version = job
        .lib
        .version
        .split('+')
        .nth(1)
        .unwrap_or(&job.lib.version);
    fs::write(
        &pc,
        format!(
            "prefix={}\nlibdir=${{prefix}}/lib\nincludedir=${{prefix}}/include\n\n\
             Name: OpenSSL-libcrypto\nDescription: OpenSSL cryptography library (libcrypto only)\n\
             Version: {version}\nLibs: -L${{libdir}} -lcrypto\nCflags: -I${{includedir}}\n",
            job.prefix.display()
        ),
    )
    .map_err(|e| Error::io(&pc, e))?;
    let _ = fs::remove_dir_all(&src);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiler_on_path__names_the_file_and_puts_its_directory_first() {
        let (cc, path) = compiler_on_path(Path::new("/t/tools/zig-cc")).unwrap();
        assert_eq!(cc, "zig-cc");
        let first = std::env::split_paths(&path).next().unwrap();
        assert_eq!(first, Path::new("/t/tools"));
        let (cc, path) = compiler_on_path(Path::new("cc")).unwrap();
        assert_eq!(cc, "cc");
        assert_eq!(path, std::env::var_os("PATH").unwrap_or_default());
    }
}
