//! zig as the C toolchain for macOS targets on a Linux host.
//!
//! zig comes from the PyPI package `ziglang`, pinned to [`ZIG_VERSION`]: the binary is found
//! with `python3 -c 'import ziglang'` (the package's directory holds `zig`), and its
//! `zig version` must be the pin, because the wrapper's argument rewriting and the SDK
//! stand-ins were checked against that version's headers and linker. A missing or different
//! zig is [`Error::Zig`] with the install command.
//!
//! [`prepare`] writes three scripts into `<staging>/toolchain/` (to `.part` files, then
//! renamed, so an interrupted run never leaves half a script):
//!
//! * `cc`: `zig cc -target <arch>-macos.<macos_min> -isystem <cross-sdk>/include -F
//!   <cross-sdk>/Frameworks` (the lane's IOKit and CoreFoundation frameworks: headers and
//!   `.tbd` link stubs for gpu/apple, which zig lacks), behind
//!   `ccache` when ccache is on PATH (ccache handles `zig cc`). Rewritten arguments:
//!   libtool links a darwin `-module` with `-bundle`, which zig ignores, producing an
//!   unusable file (DESIGN.md, zig pitfall); `-shared` makes the loadable Mach-O dylib that
//!   `-bundle` would have (with libtool's `-undefined dynamic_lookup`, flat-namespace binds).
//!   On a real Mac, Apple's ld64 gets libtool's `-bundle` unchanged and writes an
//!   `MH_BUNDLE`; both load with `dlopen`. And `-Wl,FILE.a`, `-Wl,FILE.o`, `-Wl,-lNAME`
//!   (how the shim's `LIB_LDFLAGS` hides its archive and libraries from libtool) become
//!   plain inputs, because zig's `-Wl` parser rejects anything but options there; a `-Wl`
//!   with a comma-separated value list is left alone.
//! * `ar`, `ranlib`: `zig ar`, `zig ranlib` (llvm-ar/ranlib; GNU ar cannot index Mach-O).
//!
//! Every link (not a compile) also gets `-L<cross-sdk>/lib`, so `-lresolv` and `-liconv`
//! find the lane's stubs as they would find the SDK's (see [`configure_env`]).

use driver_common::error::{Error, Result};
use driver_common::targets::Target;
use driver_common::util::fs::write_script;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

/// The pinned zig release (PyPI `ziglang`); `ci/setup-debian.sh` installs the same.
pub const ZIG_VERSION: &str = "0.17.0";

/// The stand-in headers and link stubs of the zig lane (`build-driver/cross-sdk`).
pub fn sdk_dir(root: &Path) -> PathBuf {
    root.join("build-driver").join("cross-sdk")
}

/// How to install the pinned zig.
pub fn install_hint() -> String {
    format!(
        "install the pinned zig: `python3 -m pip install ziglang=={ZIG_VERSION}` (Debian 12: add \
         --break-system-packages, or run ci/setup-debian.sh)"
    )
}

/// The pinned zig: the one zig every macOS-target build uses (Slurm's cross build and the
/// `deps` libraries), found by [`find`] and version-checked there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zig {
    /// The zig binary of the `ziglang` package.
    pub path: PathBuf,
    /// `zig version`: always [`ZIG_VERSION`].
    pub version: String,
}

impl Zig {
    /// The binary as one single-quoted POSIX-shell word.
    pub fn quoted(&self) -> String {
        sh_quote(&self.path.display().to_string())
    }
}

/// The prepared toolchain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZigToolchain {
    /// The zig binary.
    pub zig: PathBuf,
    /// `zig version`.
    pub version: String,
    /// The wrapper scripts.
    pub cc: PathBuf,
    pub ar: PathBuf,
    pub ranlib: PathBuf,
    /// `build-driver/cross-sdk`.
    pub sdk: PathBuf,
}

/// Finds the zig binary of the `ziglang` package and checks its version.
pub fn find(sh: &Shell) -> Result<Zig> {
    let dir = cmd!(
        sh,
        "python3 -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__))'"
    )
    .quiet()
    .ignore_stderr()
    .read()
    .map_err(|_| Error::Zig(format!("python3 cannot import ziglang; {}", install_hint())))?;
    let zig = PathBuf::from(dir.trim()).join("zig");
    let version = cmd!(sh, "{zig} version").quiet().read().map_err(|e| {
        Error::Zig(format!(
            "{} does not run ({e}); {}",
            zig.display(),
            install_hint()
        ))
    })?;
    check_version(version.trim())?;
    Ok(Zig {
        path: zig,
        version: version.trim().to_string(),
    })
}

/// Errors unless `version` is the pin.
pub fn check_version(version: &str) -> Result<()> {
    if version == ZIG_VERSION {
        Ok(())
    } else {
        Err(Error::Zig(format!(
            "zig {version} is installed, the build is pinned to {ZIG_VERSION}; {}",
            install_hint()
        )))
    }
}

/// POSIX-shell single quoting.
pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The text of the `cc` wrapper.
pub fn cc_wrapper(
    zig: &Path,
    version: &str,
    target: &Target,
    sdk: &Path,
    ccache: bool,
    after: &[String],
) -> Result<String> {
    let zt = target.zig_target()?;
    let min = target.macos_min()?;
    let launcher = if ccache { "ccache " } else { "" };
    let after: String = after.iter().map(|a| format!(" {}", sh_quote(a))).collect();
    Ok(format!(
        r#"#!/bin/sh
# Generated by `cargo xtask build-slurm` (build-driver/src/cross/zig.rs); do not edit.
# zig {version} as the C compiler for {rust}: macOS >= {min}, with the lane's
# stand-ins for the SDK headers and frameworks zig lacks (build-driver/cross-sdk).
# Rewritten arguments (everything else is passed through unchanged):
#   -bundle          libtool's darwin module flag; zig ignores it and writes an
#                    unusable file, -shared gives the loadable Mach-O dylib instead
#   -Wl,FILE.a|.o    a linker input hidden from libtool; zig's -Wl parser rejects
#                    file names, so it is passed as an ordinary input
#   -Wl,-lNAME       likewise a library hidden from libtool: -lNAME
#   -Wl,-r           libtool's darwin relocatable link (reload_cmds); zig takes
#                    the driver's -r but not the linker's
# Added on links: -Wl,--no-gc-sections. With -O1 or higher on the link line (Slurm's
# CFLAGS are there) zig's Mach-O linker dead-strips every function nothing in the image
# references, such as slurmctld's sort_job_queue that only plugins call; Apple's ld64
# keeps every global of an image unless -dead_strip is given. Found by the audit.
# Added last on every call: the build machine's directories mapped to neutral names and
# -g0 (util/host_paths.rs: no installed file may name this machine's paths).
link=1
n=$#
while [ "$n" -gt 0 ]; do
  a=$1
  shift
  n=$((n - 1))
  case $a in
    -c | -E | -S | -M | -MM) link=0 ;;
  esac
  case $a in
    -bundle) set -- "$@" -shared ;;
    -Wl,-r) set -- "$@" -r ;;
    -Wl,*,*) set -- "$@" "$a" ;;
    -Wl,*.a | -Wl,*.o | -Wl,-l*) set -- "$@" "${{a#-Wl,}}" ;;
    *) set -- "$@" "$a" ;;
  esac
done
# The link stubs (-lresolv, -liconv) are found like the SDK's: on every link, whatever
# LDFLAGS a configure test set (not on compiles: -Werror tests would see "unused -L").
# -Wl,-S: no debug stabs in the image (ld64's -S): the prebuilt Rust standard library in
# the shim archive carries debug information, whose N_OSO entries would name this
# machine's archive path in libslurm and libslurmfull.
if [ "$link" = 1 ]; then
  set -- "$@" -L{lib} -Wl,--no-gc-sections -Wl,-S
fi
exec {launcher}{zig} cc -target {zt} -isystem {inc} -F {fw} "$@"{after}
"#,
        rust = target.rust,
        zig = sh_quote(&zig.display().to_string()),
        inc = sh_quote(&sdk.join("include").display().to_string()),
        fw = sh_quote(&sdk.join("Frameworks").display().to_string()),
        lib = sh_quote(&sdk.join("lib").display().to_string()),
    ))
}

/// The text of the `ar` or `ranlib` wrapper (`tool` is `ar` or `ranlib`).
pub fn tool_wrapper(zig: &Path, version: &str, tool: &str) -> String {
    format!(
        "#!/bin/sh\n# Generated by `cargo xtask build-slurm` (build-driver/src/cross/zig.rs); do not edit.\n\
         # zig {version}'s {tool} (LLVM's; indexes Mach-O archives).\nexec {} {tool} \"$@\"\n",
        sh_quote(&zig.display().to_string())
    )
}

/// Writes the wrappers for `target` into `dir` with the given zig.
pub fn write_wrappers(
    dir: &Path,
    zig: &Path,
    version: &str,
    target: &Target,
    root: &Path,
    ccache: bool,
) -> Result<ZigToolchain> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let sdk = sdk_dir(root);
    let tc = ZigToolchain {
        zig: zig.to_path_buf(),
        version: version.to_string(),
        cc: dir.join("cc"),
        ar: dir.join("ar"),
        ranlib: dir.join("ranlib"),
        sdk: sdk.clone(),
    };
    let after =
        driver_common::util::host_paths::cc_reproducible(&driver_common::staging::host_dirs(root));
    write_script(
        &tc.cc,
        &cc_wrapper(zig, version, target, &sdk, ccache, &after)?,
    )?;
    write_script(&tc.ar, &tool_wrapper(zig, version, "ar"))?;
    write_script(&tc.ranlib, &tool_wrapper(zig, version, "ranlib"))?;
    Ok(tc)
}

/// Finds zig and writes the wrappers into `<staging>/toolchain`.
pub fn prepare(
    sh: &Shell,
    root: &Path,
    staging: &Path,
    target: &Target,
    ccache: bool,
) -> Result<ZigToolchain> {
    let zig = find(sh)?;
    write_wrappers(
        &staging.join("toolchain"),
        &zig.path,
        &zig.version,
        target,
        root,
        ccache,
    )
}

/// The variables configure gets besides `CC`: `AR`, `RANLIB`, the user's `LDFLAGS` if any
/// (the lane's link stubs come from the wrapper, see [`cc_wrapper`]: Slurm's `x_ac_*.m4`
/// replace `LDFLAGS` during their tests, which lost `-lresolv` when the stub directory was
/// in `LDFLAGS`, measured with `--with-jwt`), and
/// `lt_cv_prog_gnu_ld=no`: libtool asks the compiler for its linker (`-print-prog-name=ld`),
/// zig answers `ld`, that is the build machine's GNU ld, and libtool would then use its
/// GNU/ELF recipes (`-shared -soname`, no `-undefined dynamic_lookup`) instead of the darwin
/// ones (measured: every plugin link failed on undefined Slurm symbols).
pub fn configure_env(tc: &ZigToolchain, user_ldflags: Option<&str>) -> Vec<String> {
    let mut v = vec![
        format!("AR={}", tc.ar.display()),
        format!("RANLIB={}", tc.ranlib.display()),
    ];
    if let Some(u) = user_ldflags.filter(|u| !u.trim().is_empty()) {
        v.push(format!("LDFLAGS={u}"));
    }
    v.push("lt_cv_prog_gnu_ld=no".to_string());
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use driver_common::targets::rows;

    #[test]
    fn check_version__only_the_pin() {
        assert!(check_version(ZIG_VERSION).is_ok());
        for v in ["0.16.0", "0.17.1", "0.17.0-dev.1", ""] {
            match check_version(v) {
                Err(Error::Zig(m)) => assert!(m.contains("pip install ziglang==0.17.0"), "{m}"),
                other => panic!("{v}: {other:?}"),
            }
        }
    }

    #[test]
    fn pin__matches_ci_setup_script() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/setup-debian.sh");
        let text = std::fs::read_to_string(&script).unwrap();
        assert!(
            text.lines()
                .any(|l| l.trim() == format!("ZIGLANG_VERSION={ZIG_VERSION}")),
            "ci/setup-debian.sh does not pin ziglang {ZIG_VERSION}"
        );
    }

    #[test]
    fn cc_wrapper__target_sdk_and_bundle_rewrite() {
        let t = rows::mac_arm();
        let after = ["-ffile-prefix-map=/r=/x".to_string(), "-g0".to_string()];
        let w = cc_wrapper(
            Path::new("/z/zig"),
            "0.17.0",
            t,
            Path::new("/r/sdk"),
            false,
            &after,
        )
        .unwrap();
        assert!(w.starts_with("#!/bin/sh\n"));
        assert!(
            w.contains(
                "exec '/z/zig' cc -target aarch64-macos.12.0 -isystem '/r/sdk/include' -F '/r/sdk/Frameworks' \"$@\" \
                 '-ffile-prefix-map=/r=/x' '-g0'\n"
            ),
            "{w}"
        );
        assert!(w.contains("-bundle) set -- \"$@\" -shared ;;"));
        let c = cc_wrapper(
            Path::new("/z/zig"),
            "0.17.0",
            t,
            Path::new("/r/sdk"),
            true,
            &[],
        )
        .unwrap();
        assert!(c.contains("exec ccache '/z/zig' cc"), "{c}");
    }

    #[test]
    fn sh_quote__survives_quotes() {
        assert_eq!(sh_quote("/a b/c"), "'/a b/c'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
    }

    /// Runs the generated wrapper with a fake zig that prints its arguments: `-bundle`
    /// becomes `-shared`, arguments with spaces and quotes survive, order is kept.
    #[test]
    fn cc_wrapper__rewrites_arguments_when_run() {
        use std::os::unix::fs::PermissionsExt;
        let (d, fake) = crate::testing::scratch("fake zig");
        std::fs::write(
            &fake,
            "#!/bin/sh\nfor a in \"$@\"; do printf '<%s>' \"$a\"; done\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let t = rows::mac_x86();
        let tc = write_wrappers(
            &d.path().join("tc"),
            &fake,
            "0.17.0",
            t,
            Path::new("/r"),
            false,
        )
        .unwrap();
        let out = std::process::Command::new(&tc.cc)
            .args([
                "-o",
                "x.so",
                "-bundle",
                "a b.o",
                "it's",
                "-Wl,-undefined",
                "-Wl,dynamic_lookup",
                "-Wl,-u,_s",
                "-Wl,/t/libslurm_shim.a",
                "-Wl,-lSystem",
                "-Wl,-rpath,/x/y.o",
                "-Wl,-r",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let (args, after) = text.split_at(text.find("<-ffile-prefix-map=").unwrap_or(text.len()));
        assert_eq!(
            args,
            "<cc><-target><x86_64-macos.12.0><-isystem></r/build-driver/cross-sdk/include>\
             <-F></r/build-driver/cross-sdk/Frameworks>\
             <-o><x.so><-shared><a b.o><it's><-Wl,-undefined><-Wl,dynamic_lookup>\
             <-Wl,-u,_s></t/libslurm_shim.a><-lSystem><-Wl,-rpath,/x/y.o><-r>\
             <-L/r/build-driver/cross-sdk/lib><-Wl,--no-gc-sections><-Wl,-S>"
        );
        // Last: the build machine's directories mapped away, and no debug information.
        assert!(
            after.starts_with("<-ffile-prefix-map=/r=/slurm-on-mac>"),
            "{after}"
        );
        assert!(after.ends_with("<-g0>"), "{after}");
        // A compile gets no -L (clang would warn that it is unused).
        let out = std::process::Command::new(&tc.cc)
            .args(["-c", "a.c"])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(
                "<cc><-target><x86_64-macos.12.0><-isystem></r/build-driver/cross-sdk/include>\
                 <-F></r/build-driver/cross-sdk/Frameworks><-c><a.c>\
                 <-ffile-prefix-map="
            ),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let ar = std::process::Command::new(&tc.ar)
            .args(["cr", "l.a"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&ar.stdout), "<ar><cr><l.a>");
        assert!(!d.path().join("tc/cc.part").exists());
    }

    #[test]
    fn configure_env__ar_ranlib_and_stub_dir_first() {
        let tc = ZigToolchain {
            zig: "/z".into(),
            version: ZIG_VERSION.into(),
            cc: "/t/cc".into(),
            ar: "/t/ar".into(),
            ranlib: "/t/ranlib".into(),
            sdk: "/r/sdk".into(),
        };
        assert_eq!(
            configure_env(&tc, Some("-L/opt/x")),
            vec![
                "AR=/t/ar",
                "RANLIB=/t/ranlib",
                "LDFLAGS=-L/opt/x",
                "lt_cv_prog_gnu_ld=no",
            ]
        );
        assert!(
            !configure_env(&tc, None)
                .iter()
                .any(|v| v.starts_with("LDFLAGS="))
        );
    }

    /// With real zig: an executable linked through the wrapper at -O2 keeps a global function
    /// that nothing in it calls (plugins resolve such functions in the program at dlopen);
    /// without `--no-gc-sections` zig drops it (the audit found slurmctld's sort_job_queue
    /// missing; seen failing with the flag removed).
    #[test]
    fn cc_wrapper__optimised_link_keeps_unreferenced_globals() {
        use object::{Object, ObjectSymbol};
        let sh = Shell::new().unwrap();
        let Ok(Zig { path: zig, version }) = find(&sh) else {
            eprintln!("skipped: zig not found ({})", install_hint());
            return;
        };
        let d = tempfile::tempdir().unwrap();
        let t = rows::mac_arm();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let tc = write_wrappers(&d.path().join("tc"), &zig, &version, t, root, false).unwrap();
        let a = d.path().join("a.c");
        let m = d.path().join("m.c");
        std::fs::write(
            &a,
            "int used(void){return 1;}\nint only_plugins_call(void){return 2;}\n",
        )
        .unwrap();
        std::fs::write(&m, "int used(void);\nint main(void){return used();}\n").unwrap();
        let exe = d.path().join("prog");
        crate::testing::output_ok(
            std::process::Command::new(&tc.cc)
                .arg("-O2")
                .args([&m, &a])
                .arg("-o")
                .arg(&exe),
            "zig cc -O2 m.c a.c",
        );
        let bytes = std::fs::read(&exe).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        let names: Vec<String> = file
            .symbols()
            .filter_map(|s| s.name().ok().map(str::to_string))
            .collect();
        assert!(
            names.iter().any(|n| n == "_only_plugins_call"),
            "dead-stripped: {names:?}"
        );
    }
}
