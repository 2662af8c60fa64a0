//! Configure arguments per personality, the C compiler choice, and the darwin personality's
//! configure answers (cache variables, plus the two `config.h` answers that have none).

use crate::cross;
use driver_common::error::{Error, Result};
use driver_common::personality::Personality;
use driver_common::targets::{Os, Target};
use std::path::{Path, PathBuf};

/// The darwin personality's configure cache variables: what `configure` answers for an
/// `aarch64-apple-darwin` host (macOS 12 SDK: headers and the libSystem `.tbd` exports),
/// for the probes whose Linux answer differs and that Linux can run the macOS way.
/// Each is passed as `var=no` on the configure command line; Slurm 24.11 names.
///
/// Reproduced (the `HAVE_*` each controls, checked in `config.h` after configure):
/// `HAVE_EPOLL` (`ax_cv_have_epoll`), `HAVE_GETRANDOM`, `HAVE_GET_CURRENT_DIR_NAME`,
/// `HAVE_MEMFD_CREATE`, `HAVE_SETRESUID` (kept off on purpose, see DARWIN-CATALOG A7),
/// `HAVE_MTRACE` (`ac_cv_func_*`), `HAVE_SYS_PRCTL_H`, `HAVE_SYS_VFS_H`,
/// `HAVE_SYS_STATFS_H`, `HAVE_LINUX_SCHED_H`, `HAVE_MCHECK_H`, `HAVE_VALUES_H`
/// (`ac_cv_header_*`); `timer_create` is searched and not found (`ac_cv_search_timer_create`);
/// `HAVE_BPF` is off through `--without-bpf` (on macOS cgroup support, and with it bpf, is
/// off); `HAVE_PROGRAM_INVOCATION_NAME` has no cache variable and is undefined in `config.h`
/// after configure ([`CONFIG_H_ANSWERS`]).
///
/// Not reproduced, because Linux cannot give the macOS answer:
/// * `HAVE_SETPROCTITLE` (macOS's libSystem exports it; glibc has none, so claiming it would
///   fail to link). (`HAVE_SYSCTLBYNAME` is set in `config.h` ([`CONFIG_H_ANSWERS`]): the
///   shim's `sysctlbyname` answers it at make time; `HAVE_SYS_SYSCTL_H` comes out defined
///   because the personality's include path has the stand-in `<sys/sysctl.h>`.)
/// * `HAVE_STRUCT_SOCKADDR_*_LEN` (26.11 probes `sin_len`, `sin6_len`, `sa_len`, `sun_len`):
///   Linux's socket address structures have no length member; claiming one makes Slurm
///   assign a field that does not exist.
/// * `ns_initparse` in `-lresolv` (macOS's libresolv exports only `res_9_*`, DARWIN-CATALOG
///   C5): answering "no" on Linux drops `-lresolv` and the programs fail to link, which is
///   the bug a patch must fix, not something the personality can run.
/// * `USE_ALIAS` (0 on darwin, chosen by `case $host`): with 0, macros.h and slurm_xlator.h
///   spell symbols the Mach-O way (`_error`, `_list_sort`); an ELF link of the programs then
///   fails with hundreds of undefined `_<name>` references (measured with 24.11.5).
/// * What configure decides from the host triple rather than by probing: cgroup plugins and
///   `LINUX_BUILD`, `PS_USE_CLOBBER_ARGV`, skipping `AX_PTHREAD` (`HAVE_PTHREAD`,
///   `HAVE_PTHREAD_PRIO_INHERIT`), libtool's Mach-O link modes. Claiming a darwin `--host`
///   would make libtool and the compiler produce Mach-O-style commands.
///
/// Not forced: `HAVE_PTY_H`. macOS has no `<pty.h>`, but every macOS build gets the shim's
/// stand-in (`shim/include/compat/pty.h`, `<util.h>` under that name) on configure's include
/// path ([`configure_args`]), so macOS answers "yes" like Linux (DARWIN-CATALOG A15).
///
/// Not forced although `darwin-configure-diff.txt` lists them: `HAVE_TERMCAP_H`,
/// `HAVE_UTMP_H`, `HAVE_SYS_PTRACE_H` and `HAVE_EACCESS` are present in the macOS SDK
/// (`termcap.h`, `utmp.h`, `sys/ptrace.h`, `_eaccess` in libsystem_c); the diff's zig
/// cross-configure lacks them because zig's bundled headers do. The dependency rows (hwloc,
/// json, jwt, ...) reflect installed libraries, not the OS.
pub const DARWIN_CACHE_VARS: &[&str] = &[
    "ac_cv_func_get_current_dir_name",
    "ac_cv_func_getrandom",
    "ac_cv_func_memfd_create",
    "ac_cv_func_mtrace",
    "ac_cv_func_setresuid",
    "ac_cv_header_linux_sched_h",
    "ac_cv_header_mcheck_h",
    "ac_cv_header_sys_prctl_h",
    "ac_cv_header_sys_statfs_h",
    "ac_cv_header_sys_vfs_h",
    "ac_cv_header_values_h",
    "ac_cv_search_timer_create",
    "ax_cv_have_epoll",
    "ax_cv_have_epoll_pwait",
];

/// Extra configure switches of the darwin personality.
pub const DARWIN_SWITCHES: &[&str] = &["--without-bpf"];

/// The darwin personality's cache answers that are not "no": `(variable, macOS answer in
/// the personality's terms)`.
///
/// `x_ac_cv_apple_gpu_libs` (patch 0050's `auxdir/x_ac_apple_gpu.m4`): on a Mac,
/// `-framework IOKit -framework CoreFoundation` link gpu/apple's IOKit calls; in the
/// personality the shim answers those calls from libslurmfull, so "none required" (the
/// macro's word for "links without extra flags") builds the plugin with no framework flags.
/// Harmless for a tree without the patch (nothing reads the variable).
///
/// `slurm_cv_darwin_plugins` (patches/*/0040) `yes`: builds the macOS process plugins
/// (jobacct_gather/darwin, proctrack/darwin, task/darwin), whose macOS calls the shim answers
/// here. A macOS target says yes by itself (`host_os` darwin); a native Linux build says no,
/// so its plugin set is upstream's.
pub const DARWIN_CACHE_ANSWERS: &[(&str, &str)] = &[
    ("x_ac_cv_apple_gpu_libs", "none required"),
    ("slurm_cv_darwin_plugins", "yes"),
];

/// `config.h` answers without a cache variable: `(macro, macOS value)`; `None` = undefined.
/// `HAVE_PROGRAM_INVOCATION_NAME` is set by a link test that ignores presets (slurm.m4).
/// `HAVE_SYSCTLBYNAME`: macOS's libSystem has it (so `slurm_protocol_defs.h` includes
/// `<sys/param.h>` and `<sys/sysctl.h>`, as on a Mac); configure's link test cannot see the
/// shim's, which exists at make time only.
/// `WITH_CGROUP`: configure decides it from the host triple (`auxdir/x_ac_cgroup.m4`: no on
/// darwin); undefined in `config.h` only, so Slurm's cgroup interface behaves as on a Mac
/// (no autodetection under `/sys/fs/cgroup`) while the cgroup plugins, which a Mac never
/// loads, still build.
pub const CONFIG_H_ANSWERS: &[(&str, Option<&str>)] = &[
    ("HAVE_PROGRAM_INVOCATION_NAME", None),
    ("HAVE_SYSCTLBYNAME", Some("1")),
    ("WITH_CGROUP", None),
];

/// The macros that must be undefined in a darwin-personality `config.h` (checked).
pub const DARWIN_UNDEFINED: &[&str] = &[
    "HAVE_BPF",
    "HAVE_EPOLL",
    "HAVE_GETRANDOM",
    "HAVE_GET_CURRENT_DIR_NAME",
    "HAVE_LINUX_SCHED_H",
    "HAVE_MCHECK_H",
    "HAVE_MEMFD_CREATE",
    "HAVE_MTRACE",
    "HAVE_PROGRAM_INVOCATION_NAME",
    "HAVE_SETRESUID",
    "HAVE_SYS_PRCTL_H",
    "HAVE_SYS_STATFS_H",
    "HAVE_SYS_VFS_H",
    "HAVE_VALUES_H",
];

/// The C compiler for a build, and whether the user chose it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compiler {
    /// The compiler command (may contain arguments, e.g. `zig cc -target aarch64-macos`).
    pub cc: String,
    /// The environment variable it came from (`None`: the driver's default).
    pub from_env: Option<String>,
    /// `ccache`, prefixed to a default compiler when ccache is on PATH.
    pub launcher: Option<String>,
}

impl Compiler {
    /// The value given to configure as `CC=`.
    pub fn command(&self) -> String {
        match &self.launcher {
            Some(l) => format!("{l} {}", self.cc),
            None => self.cc.clone(),
        }
    }
}

/// The compiler the user chose, with the `cc` crate's lookup order: `CC_<triple>`,
/// `CC_<triple_with_underscores>`, `TARGET_CC` (cross) or `HOST_CC` (native), `CC`.
pub fn user_compiler(
    target: &Target,
    cross: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Compiler> {
    let names = [
        format!("CC_{}", target.rust),
        format!("CC_{}", target.rust.replace('-', "_")),
        if cross {
            "TARGET_CC".to_string()
        } else {
            "HOST_CC".to_string()
        },
        "CC".to_string(),
    ];
    names.into_iter().find_map(|name| {
        env(&name)
            .filter(|v| !v.trim().is_empty())
            .map(|v| Compiler {
                cc: v,
                from_env: Some(name),
                launcher: None,
            })
    })
}

/// Chooses the C compiler: the user's ([`user_compiler`]) as is; else `zig_cc`, the
/// prepared zig wrapper of a macOS target built on Linux (it runs ccache itself); else the
/// table's compiler for the target (native or cross), behind `ccache` when `ccache_on_path`.
pub fn compiler(
    target: &Target,
    host: &Target,
    cross: bool,
    env: &dyn Fn(&str) -> Option<String>,
    ccache_on_path: bool,
    zig_cc: Option<&Path>,
) -> Result<Compiler> {
    if let Some(c) = user_compiler(target, cross, env) {
        return Ok(c);
    }
    if let Some(z) = zig_cc {
        return Ok(Compiler {
            cc: z.display().to_string(),
            from_env: None,
            launcher: None,
        });
    }
    let cc = if cross {
        target.cross_cc.ok_or_else(|| {
            Error::Unsupported(format!(
                "no default C compiler for {} on {}: set CC_{} (e.g. to `python3 -m ziglang cc -target {}`)",
                target.rust,
                host.rust,
                target.rust.replace('-', "_"),
                target.zig.unwrap_or(target.rust)
            ))
        })?
    } else {
        target.native_cc
    };
    Ok(Compiler {
        cc: cc.to_string(),
        from_env: None,
        launcher: ccache_on_path.then(|| "ccache".to_string()),
    })
}

/// Everything the configure command line depends on.
#[derive(Clone, Debug)]
pub struct ConfigureSpec<'a> {
    pub personality: Personality,
    pub target: &'a Target,
    pub host: &'a Target,
    /// Whether target and host differ (the plan decides it once).
    pub cross: bool,
    pub prefix: PathBuf,
    /// `--sysconfdir`/`--localstatedir` when chosen (a Homebrew bottle's `/opt/homebrew/etc/slurm`).
    pub sysconfdir: Option<PathBuf>,
    pub localstatedir: Option<PathBuf>,
    pub compiler: Compiler,
    /// The force-included shim header (used when [`uses_shim`] is true).
    pub header: PathBuf,
    /// The user's own `CPPFLAGS` (from the environment), kept in front of ours.
    pub user_cppflags: Option<String>,
    /// macOS targets: the prefix of the target's json-c, libjwt and hwloc (`None`: built
    /// without them).
    pub deps_prefix: Option<PathBuf>,
    /// `--with-s2n=DIR`: s2n-tls for the tls/s2n plugin (`build-slurm --with-s2n`).
    pub s2n: Option<PathBuf>,
    /// Variables for the toolchain (`AR=`, `RANLIB=`, `LDFLAGS=`; the zig lane's).
    pub tool_vars: Vec<String>,
}

/// Whether a build force-includes the shim header and links the shim: always for macOS
/// targets, and for the darwin personality on Linux. A native Linux build does neither.
pub fn uses_shim(personality: Personality, target: &Target) -> bool {
    target.os == Os::Apple || personality == Personality::Darwin
}

/// The `CPPFLAGS` that force-include the shim header (empty when the shim is not used).
pub fn shim_cppflags(spec: &ConfigureSpec) -> Vec<String> {
    if !uses_shim(spec.personality, spec.target) {
        return Vec::new();
    }
    let mut v = vec!["-include".to_string(), spec.header.display().to_string()];
    if spec.personality == Personality::Darwin {
        v.push("-DSLURM_SHIM_EMULATE_DARWIN".to_string());
        v.push(format!("-I{}", emulate_dir(spec).display()));
    }
    v
}

/// The darwin personality's own headers (`shim/include/emulate`, beside the shim header):
/// wrappers that give glibc's headers macOS's behaviour (for example `<pthread.h>` with
/// signed static initialisers) and stand-ins for macOS headers the personality's `__APPLE__`
/// branches include. Searched before the system headers; never used for a real macOS build.
fn emulate_dir(spec: &ConfigureSpec) -> PathBuf {
    beside_header(spec, "emulate")
}

/// The directory `name` beside the shim header (`name` alone when the header has no parent).
fn beside_header(spec: &ConfigureSpec, name: &str) -> PathBuf {
    spec.header
        .parent()
        .map(|d| d.join(name))
        .unwrap_or_else(|| PathBuf::from(name))
}

/// `CPPFLAGS=<user's> <shim_cppflags>`, or `None` when the shim is not used.
fn cppflags_with_shim(spec: &ConfigureSpec) -> Option<String> {
    let shim = shim_cppflags(spec);
    if shim.is_empty() {
        return None;
    }
    Some(cppflags_after_user(spec, shim))
}

/// `CPPFLAGS=<user's, if any> <ours>`.
fn cppflags_after_user(spec: &ConfigureSpec, ours: Vec<String>) -> String {
    let mut cpp: Vec<String> = spec
        .user_cppflags
        .iter()
        .filter(|s| !s.trim().is_empty())
        .cloned()
        .collect();
    cpp.extend(ours);
    format!("CPPFLAGS={}", cpp.join(" "))
}

/// macOS targets: the `CPPFLAGS=...` make variable that force-includes the shim header.
/// On macOS the header is given to make, not to configure: its `__APPLE__` branch includes
/// SDK headers (`<string.h>`, ...), and configure's `AC_CHECK_FUNCS` test programs, which
/// declare `char strlcpy ();` themselves, then fail to compile and report `strlcpy`,
/// `strndup`, `strsignal`, `faccessat`, ... missing (measured with 24.11.5 and zig), and
/// autoconf 2.71 stops at "cannot make cc report undeclared builtins". Configure sees the
/// plain SDK, which is the truth about macOS. (The Linux darwin personality keeps the header
/// in configure's `CPPFLAGS`: its emulation branch includes no system header.)
/// The shim's stand-ins for headers macOS lacks (`<sys/eventfd.h>`, `<magic.h>`) come with
/// it: `-I <header dir>/compat`.
pub fn apple_make_cppflags(spec: &ConfigureSpec) -> Option<String> {
    if spec.target.os != Os::Apple {
        return None;
    }
    cppflags_with_shim(spec).map(|c| format!("{c} -I{}", compat_dir(spec).display()))
}

/// The darwin personality: make's `CPPFLAGS`, configure's plus `-DSLURM_SHIM_EMULATE_MACOS`,
/// which turns on the header's make-time part (the macOS runtime models and `__APPLE__`
/// preprocessing, see `codegen::EMULATE_MACOS_OPEN`); configure's test programs would not
/// link with it.
pub fn darwin_make_cppflags(spec: &ConfigureSpec) -> Option<String> {
    if spec.personality != Personality::Darwin || spec.target.os == Os::Apple {
        return None;
    }
    cppflags_with_shim(spec).map(|c| format!("{c} -DSLURM_SHIM_EMULATE_MACOS"))
}

/// The shim's stand-in headers (`shim/include/compat`, beside the shim header).
fn compat_dir(spec: &ConfigureSpec) -> PathBuf {
    beside_header(spec, "compat")
}

/// macOS targets: configure's `CPPFLAGS`, the user's followed by `-I <compat dir>` and no
/// force-included header. Configure must see the stand-in `<pty.h>` (DARWIN-CATALOG A15:
/// macOS declares `openpty`/`login_tty` in `<util.h>`): then `HAVE_PTY_H` is defined and
/// `srun --pty` is built. configure.ac probes none of the other stand-ins (`<magic.h>`,
/// `<sys/eventfd.h>`; 24.11.5 and the 26.11 snapshot).
fn apple_configure_cppflags(spec: &ConfigureSpec) -> Option<String> {
    if spec.target.os != Os::Apple {
        return None;
    }
    let compat = format!("-I{}", compat_dir(spec).display());
    Some(cppflags_after_user(spec, vec![compat]))
}

/// The arguments after `<src>/configure`. Native: `--prefix`, `CC` and, when cross-compiling,
/// `--build`/`--host`; nothing else, so a native build is configured exactly like plain
/// upstream. Darwin: the same, plus `CPPFLAGS` with the shim header, [`DARWIN_SWITCHES`],
/// every [`DARWIN_CACHE_VARS`] as `var=no` and every [`DARWIN_CACHE_ANSWERS`] as given.
pub fn configure_args(spec: &ConfigureSpec) -> Vec<String> {
    let mut args = vec![format!("--prefix={}", spec.prefix.display())];
    if let Some(d) = &spec.sysconfdir {
        args.push(format!("--sysconfdir={}", d.display()));
    }
    if let Some(d) = &spec.localstatedir {
        args.push(format!("--localstatedir={}", d.display()));
    }
    if spec.cross {
        args.push(format!("--build={}", spec.host.autoconf_host));
        args.push(format!("--host={}", spec.target.autoconf_host));
    }
    args.push(format!("CC={}", spec.compiler.command()));
    if spec.target.os != Os::Apple {
        if let Some(cpp) = cppflags_with_shim(spec) {
            args.push(cpp);
        }
    }
    args.extend(apple_configure_cppflags(spec));
    if spec.personality == Personality::Darwin {
        args.extend(DARWIN_SWITCHES.iter().map(|s| s.to_string()));
        args.extend(DARWIN_CACHE_VARS.iter().map(|v| format!("{v}=no")));
        args.extend(DARWIN_CACHE_ANSWERS.iter().map(|(v, a)| format!("{v}={a}")));
    }
    if spec.target.os == Os::Apple {
        args.extend(cross::APPLE_SWITCHES.iter().map(|s| s.to_string()));
        if spec.cross {
            args.extend(cross::CROSS_SWITCHES.iter().map(|s| s.to_string()));
        }
        args.extend(cross::dep_switches(spec.deps_prefix.as_deref()));
    }
    args.extend(crate::s2n::configure_switches(
        spec.s2n.as_deref(),
        spec.target.os == Os::Apple,
        spec.deps_prefix.as_deref(),
    ));
    args.extend(spec.tool_vars.iter().cloned());
    args
}

/// The line before each macOS value of [`CONFIG_H_ANSWERS`] in `config.h`.
pub const APPLE_GUARD: &str = "#if defined(__APPLE__) /* darwin personality (make time) */";

/// Rewrites `config.h` text with [`CONFIG_H_ANSWERS`]; errors if a macro is not there at all
/// (a Slurm version that no longer has it must be looked at, not silently passed). A macOS
/// value is guarded by `__APPLE__`, which the personality's header defines at make time.
pub fn apply_config_h_answers(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut seen = vec![false; CONFIG_H_ANSWERS.len()];
    let mut guarded = false;
    for line in text.lines() {
        let mut replaced = None;
        for (i, (name, value)) in CONFIG_H_ANSWERS.iter().enumerate() {
            if macro_line_name(line) == Some(name) {
                seen[i] = true;
                replaced = Some(match value {
                    // Already inside the guard (a second run): the line as it is.
                    Some(v) if guarded => format!("#define {name} {v}"),
                    // Only where the personality's header says macOS (make time): a plain
                    // compile against this build (Slurm's Python suite compiles programs
                    // with gcc and this config.h) keeps Linux's answer.
                    Some(v) => format!("{APPLE_GUARD}\n#define {name} {v}\n#endif"),
                    None => format!("/* #undef {name} */ /* darwin personality */"),
                });
            }
        }
        out.push_str(replaced.as_deref().unwrap_or(line));
        out.push('\n');
        guarded = line == APPLE_GUARD;
    }
    let missing: Vec<&str> = CONFIG_H_ANSWERS
        .iter()
        .zip(&seen)
        .filter(|(_, s)| !**s)
        .map(|((n, _), _)| *n)
        .collect();
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(format!("config.h has no line for {}", missing.join(", ")))
    }
}

/// The macro a `#define X ...` or `/* #undef X */` line is about.
fn macro_line_name(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let rest = t
        .strip_prefix("#define ")
        .or_else(|| t.strip_prefix("/* #undef "))?;
    rest.split_whitespace().next()
}

/// The macros of [`DARWIN_UNDEFINED`] that `config.h` defines, and the [`CONFIG_H_ANSWERS`]
/// values it does not have (empty = the darwin answers are all in place).
pub fn darwin_config_h_violations(text: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let defined = |name: &str| -> Option<String> {
        text.lines().find_map(|l| {
            let t = l.trim_start().strip_prefix("#define ")?;
            let mut it = t.splitn(2, char::is_whitespace);
            (it.next() == Some(name)).then(|| it.next().unwrap_or("").trim().to_string())
        })
    };
    for name in DARWIN_UNDEFINED {
        if let Some(v) = defined(name) {
            bad.push(format!("{name} is defined ({v})"));
        }
    }
    for (name, want) in CONFIG_H_ANSWERS {
        let have = defined(name);
        if have.as_deref() != *want {
            bad.push(format!("{name} is {have:?}, want {want:?}"));
        }
    }
    bad
}

/// Checks and (for darwin) rewrites `<build>/config.h` after configure.
pub fn fix_config_h(build_dir: &Path, personality: Personality) -> Result<()> {
    if personality != Personality::Darwin {
        return Ok(());
    }
    let path = build_dir.join("config.h");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let new = apply_config_h_answers(&text).map_err(|detail| Error::File {
        path: path.clone(),
        problem: detail,
    })?;
    if new != text {
        std::fs::write(&path, &new).map_err(|e| Error::io(&path, e))?;
    }
    verify_config_h(build_dir)
}

/// Errors unless `<build>/config.h` carries every darwin answer.
pub fn verify_config_h(build_dir: &Path) -> Result<()> {
    let path = build_dir.join("config.h");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let bad = darwin_config_h_violations(&text);
    if bad.is_empty() {
        Ok(())
    } else {
        Err(Error::File {
            path,
            problem: format!(
                "darwin personality: configure gave Linux answers: {}; the cache variable names \
                 in build_slurm/configure.rs may not match this Slurm version's configure",
                bad.join("; ")
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use driver_common::targets::rows;

    fn spec<'a>(
        p: Personality,
        target: &'a Target,
        host: &'a Target,
        prefix: &str,
    ) -> ConfigureSpec<'a> {
        ConfigureSpec {
            personality: p,
            target,
            host,
            cross: target.rust != host.rust,
            prefix: PathBuf::from(prefix),
            sysconfdir: None,
            localstatedir: None,
            compiler: Compiler {
                cc: "gcc".into(),
                from_env: None,
                launcher: Some("ccache".into()),
            },
            header: PathBuf::from("/r/shim/include/slurm_shim.h"),
            user_cppflags: None,
            deps_prefix: None,
            s2n: None,
            tool_vars: Vec::new(),
        }
    }

    fn linux() -> &'static Target {
        rows::linux_x86()
    }

    #[test]
    fn configure_args__native_is_plain_upstream() {
        let args = configure_args(&spec(Personality::Native, linux(), linux(), "/p"));
        assert_eq!(
            args,
            vec!["--prefix=/p".to_string(), "CC=ccache gcc".to_string()]
        );
    }

    #[test]
    fn configure_args__native_patched_and_unpatched_differ_only_in_prefix() {
        let a = configure_args(&spec(
            Personality::Native,
            linux(),
            linux(),
            "/t/24.11.5-native/prefix",
        ));
        let b = configure_args(&spec(
            Personality::Native,
            linux(),
            linux(),
            "/t/24.11.5-native-nopatch/prefix",
        ));
        assert_eq!(a[1..], b[1..]);
        assert_ne!(a[0], b[0]);
    }

    #[test]
    fn configure_args__darwin_adds_header_switches_and_every_cache_var() {
        let args = configure_args(&spec(Personality::Darwin, linux(), linux(), "/p"));
        assert_eq!(args[0], "--prefix=/p");
        assert!(
            args.contains(
                &"CPPFLAGS=-include /r/shim/include/slurm_shim.h -DSLURM_SHIM_EMULATE_DARWIN -I/r/shim/include/emulate"
                    .to_string()
            )
        );
        assert!(args.contains(&"--without-bpf".to_string()));
        for v in DARWIN_CACHE_VARS {
            assert!(
                args.contains(&format!("{v}=no")),
                "{v} missing from {args:?}"
            );
        }
        assert!(
            args.contains(&"x_ac_cv_apple_gpu_libs=none required".to_string()),
            "gpu/apple is built in the darwin personality: {args:?}"
        );
        assert!(
            args.contains(&"slurm_cv_darwin_plugins=yes".to_string()),
            "the darwin plugins are built: {args:?}"
        );
        assert!(
            !args.iter().any(|a| a.starts_with("--host")),
            "native host: no --host"
        );
        assert!(
            !args.iter().any(|a| a.starts_with("LIBS")),
            "the shim stays out of configure's LIBS"
        );
    }

    #[test]
    fn configure_args__darwin_keeps_user_cppflags_first() {
        let mut s = spec(Personality::Darwin, linux(), linux(), "/p");
        s.user_cppflags = Some("-I/opt/x/include".into());
        let args = configure_args(&s);
        assert!(args.contains(&"CPPFLAGS=-I/opt/x/include -include /r/shim/include/slurm_shim.h -DSLURM_SHIM_EMULATE_DARWIN -I/r/shim/include/emulate".to_string()));
    }

    #[test]
    fn configure_args__macos_keeps_user_cppflags_before_the_compat_dir() {
        let mac = rows::mac_arm();
        let mut s = spec(Personality::Native, mac, mac, "/p");
        s.user_cppflags = Some("-I/opt/homebrew/include".into());
        let args = configure_args(&s);
        assert!(
            args.contains(&"CPPFLAGS=-I/opt/homebrew/include -I/r/shim/include/compat".to_string()),
            "{args:?}"
        );
    }

    #[test]
    fn compat_dir__has_the_pty_h_stand_in() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let mut s = spec(Personality::Native, linux(), linux(), "/p");
        s.header = root.join(crate::codegen::HEADER);
        let pty = compat_dir(&s).join("pty.h");
        let text = std::fs::read_to_string(&pty).unwrap();
        assert!(text.contains("#include <util.h>"), "{}", pty.display());
    }

    #[test]
    fn configure_args__mysql_off_only_when_cross_compiling_to_macos() {
        let mac = rows::mac_arm();
        let off = "--without-mysql_config".to_string();
        let cross = configure_args(&spec(Personality::Native, mac, linux(), "/p"));
        assert!(cross.contains(&off), "{cross:?}");
        // On a Mac, Homebrew's MariaDB client gives slurmdbd its storage plugin (cluster test).
        let on_mac = configure_args(&spec(Personality::Native, mac, mac, "/p"));
        assert!(!on_mac.contains(&off), "{on_mac:?}");
        assert!(
            on_mac.contains(&"--without-munge".to_string()),
            "{on_mac:?}"
        );
    }

    #[test]
    fn configure_args__cross_gets_build_and_host_from_the_table() {
        let mac = rows::mac_arm();
        let args = configure_args(&spec(Personality::Native, mac, linux(), "/p"));
        assert!(args.contains(&"--build=x86_64-linux-gnu".to_string()));
        assert!(args.contains(&"--host=aarch64-apple-darwin".to_string()));
        // A macOS target force-includes the header at make time, not in configure; configure
        // gets only the stand-in headers' directory (for <pty.h>).
        let cpp: Vec<&String> = args.iter().filter(|a| a.starts_with("CPPFLAGS=")).collect();
        assert_eq!(cpp, ["CPPFLAGS=-I/r/shim/include/compat"], "{args:?}");
        assert_eq!(
            apple_make_cppflags(&spec(Personality::Native, mac, linux(), "/p")).as_deref(),
            Some("CPPFLAGS=-include /r/shim/include/slurm_shim.h -I/r/shim/include/compat"),
            "without the emulation switch"
        );
        assert_eq!(
            apple_make_cppflags(&spec(Personality::Darwin, linux(), linux(), "/p")),
            None
        );
        assert!(
            !args
                .iter()
                .any(|a| a.ends_with("=no") || a.ends_with("=yes"))
        );
        // Optional features off, the dependencies off without a prefix, cache answers.
        for a in [
            "--disable-pam",
            "--without-munge",
            "--without-json",
            "--without-jwt",
        ] {
            assert!(args.contains(&a.to_string()), "{a}");
        }
    }

    #[test]
    fn configure_args__macos_deps_prefix_and_tool_vars_last() {
        let mac = rows::mac_x86();
        let mut sp = spec(Personality::Native, mac, linux(), "/p");
        sp.deps_prefix = Some(PathBuf::from("/deps"));
        sp.tool_vars = vec!["AR=/t/ar".into(), "LDFLAGS=-L/sdk/lib".into()];
        let args = configure_args(&sp);
        assert!(args.contains(&"--with-json=/deps".to_string()));
        assert!(args.contains(&"--with-hwloc=/deps".to_string()));
        assert!(!args.iter().any(|a| a.starts_with("--without-json")));
        assert_eq!(args[args.len() - 2..], ["AR=/t/ar", "LDFLAGS=-L/sdk/lib"]);
        // A Linux build gets none of this.
        let lin = configure_args(&spec(Personality::Native, linux(), linux(), "/p"));
        assert!(
            !lin.iter()
                .any(|a| a.contains("without") || a.contains("ac_cv"))
        );
    }

    #[test]
    fn configure_args__macos_s2n_gets_x_ac_s2n_answers_after_the_switch_off() {
        let mac = rows::mac_x86();
        let mut sp = spec(Personality::Native, mac, linux(), "/p");
        sp.deps_prefix = Some(PathBuf::from("/deps"));
        sp.s2n = Some(PathBuf::from("/s2n"));
        let args = configure_args(&sp);
        let at = |a: &str| args.iter().position(|x| x == a);
        // APPLE_SWITCHES' --without-s2n comes first; the later --with-s2n wins in configure.
        assert!(at("--without-s2n").unwrap() < at("--with-s2n=/s2n").unwrap());
        assert!(at("s2n_run_ok=yes").is_some() && at("x_ac_cv_s2n_dir=/s2n").is_some());
        assert!(at("S2N_LDFLAGS=-L/s2n/lib -L/deps/lib").is_some());
        // On a Mac itself (no cross build) the answers too: the static library would fail
        // the test's `-ls2n` alone.
        let mut native_mac = spec(Personality::Native, mac, mac, "/p");
        native_mac.s2n = Some(PathBuf::from("/s2n"));
        assert!(configure_args(&native_mac).contains(&"s2n_run_ok=yes".to_string()));
        // A Linux build with s2n runs configure's own test: the option alone.
        let mut lin = spec(Personality::Native, linux(), linux(), "/p");
        lin.s2n = Some(PathBuf::from("/s2n"));
        let lin = configure_args(&lin);
        assert!(lin.contains(&"--with-s2n=/s2n".to_string()));
        assert!(
            !lin.iter()
                .any(|a| a.contains("s2n_run_ok") || a.starts_with("S2N_"))
        );
    }

    /// The compiler command of a native Linux build with environment `env`.
    fn linux_cc(env: &dyn Fn(&str) -> Option<String>, ccache_on_path: bool) -> String {
        compiler(linux(), linux(), false, env, ccache_on_path, None)
            .unwrap()
            .command()
    }

    #[test]
    fn compiler__user_cc_wins_in_cc_crate_order_and_gets_no_ccache() {
        let env = |k: &str| match k {
            "CC_x86_64_unknown_linux_gnu" => Some("clang-16".to_string()),
            "CC" => Some("gcc-12".to_string()),
            _ => None,
        };
        let c = compiler(linux(), linux(), false, &env, true, None).unwrap();
        assert_eq!(c.command(), "clang-16");
        assert_eq!(c.from_env.as_deref(), Some("CC_x86_64_unknown_linux_gnu"));
        let only_cc = |k: &str| (k == "CC").then(|| "gcc-12".to_string());
        assert_eq!(linux_cc(&only_cc, true), "gcc-12");
        let host_cc = |k: &str| (k == "HOST_CC").then(|| "gcc-13".to_string());
        assert_eq!(linux_cc(&host_cc, true), "gcc-13");
    }

    #[test]
    fn compiler__default_uses_ccache_only_when_present() {
        let none = |_: &str| None;
        assert_eq!(linux_cc(&none, true), "ccache gcc");
        assert_eq!(linux_cc(&none, false), "gcc");
        let arm = rows::linux_arm();
        assert_eq!(
            compiler(arm, linux(), true, &none, false, None)
                .unwrap()
                .command(),
            "aarch64-linux-gnu-gcc"
        );
    }

    #[test]
    fn compiler__macos_target_from_linux_zig_default_and_user_override() {
        let mac = rows::mac_arm();
        let none = |_: &str| None;
        match compiler(mac, linux(), true, &none, true, None) {
            Err(Error::Unsupported(m)) => assert!(m.contains("CC_aarch64_apple_darwin"), "{m}"),
            other => panic!("expected Unsupported, got {other:?}"),
        }
        let zig = Path::new("/s/toolchain/cc");
        let c = compiler(mac, linux(), true, &none, true, Some(zig)).unwrap();
        assert_eq!(
            c.command(),
            "/s/toolchain/cc",
            "the wrapper runs ccache itself"
        );
        assert_eq!(c.from_env, None);
        let user = |k: &str| (k == "CC_aarch64_apple_darwin").then(|| "my-cc".to_string());
        assert_eq!(
            compiler(mac, linux(), true, &user, true, Some(zig))
                .unwrap()
                .command(),
            "my-cc"
        );
        assert!(user_compiler(mac, true, &none).is_none());
        let target_cc =
            |k: &str| (k == "TARGET_CC").then(|| "zig cc -target aarch64-macos".to_string());
        assert_eq!(
            compiler(mac, linux(), true, &target_cc, true, None)
                .unwrap()
                .command(),
            "zig cc -target aarch64-macos"
        );
    }

    const CONFIG_H: &str = "/* x */\n#define HAVE_EPOLL 1\n#define HAVE_PROGRAM_INVOCATION_NAME 1\n#define USE_ALIAS 1\n/* #undef HAVE_SETRESUID */\n/* #undef HAVE_SYSCTLBYNAME */\n#define WITH_CGROUP 1\n";

    #[test]
    fn apply_config_h_answers__sets_the_macos_values() {
        let out = apply_config_h_answers(CONFIG_H).unwrap();
        assert!(out.contains("/* #undef HAVE_PROGRAM_INVOCATION_NAME */"));
        assert!(!out.contains("#define HAVE_PROGRAM_INVOCATION_NAME"));
        assert!(out.contains(
            "#if defined(__APPLE__) /* darwin personality (make time) */\n#define HAVE_SYSCTLBYNAME 1\n#endif\n"
        ));
        assert!(
            out.contains("#define USE_ALIAS 1\n"),
            "USE_ALIAS stays (Mach-O only)"
        );
        assert!(out.contains("#define HAVE_EPOLL 1"), "other lines are kept");
        // Idempotent.
        assert_eq!(apply_config_h_answers(&out).unwrap(), out);
    }

    #[test]
    fn apply_config_h_answers__missing_macro_is_an_error() {
        let err = apply_config_h_answers("#define HAVE_EPOLL 1\n").unwrap_err();
        assert!(err.contains("HAVE_PROGRAM_INVOCATION_NAME"), "{err}");
    }

    #[test]
    fn darwin_config_h_violations__names_each_linux_answer() {
        let bad = darwin_config_h_violations(CONFIG_H);
        assert!(
            bad.iter().any(|b| b.starts_with("HAVE_EPOLL is defined")),
            "{bad:?}"
        );
        assert!(
            bad.iter()
                .any(|b| b.starts_with("HAVE_PROGRAM_INVOCATION_NAME")),
            "{bad:?}"
        );
        assert!(
            !bad.iter().any(|b| b.starts_with("HAVE_SETRESUID")),
            "{bad:?}"
        );
        let fixed = apply_config_h_answers(
            &CONFIG_H.replace("#define HAVE_EPOLL 1", "/* #undef HAVE_EPOLL */"),
        )
        .unwrap();
        assert_eq!(darwin_config_h_violations(&fixed), Vec::<String>::new());
    }

    #[test]
    fn uses_shim__native_linux_no_darwin_yes_macos_always() {
        let mac = rows::mac_arm();
        assert!(!uses_shim(Personality::Native, linux()));
        assert!(uses_shim(Personality::Darwin, linux()));
        assert!(uses_shim(Personality::Native, mac));
    }
}
