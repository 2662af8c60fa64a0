//! `cargo xtask codegen [--check]`: generate `shim/include/slurm_shim.h`.
//!
//! The header has three parts, all derived from the shim crate:
//!
//! * `#if defined(__APPLE__)`: the SDK headers that declare functions of the same names are
//!   included first (so a later `#define` cannot rename the SDK's own prototype), then the
//!   constants, `#[repr(C)]` types and prototypes that cbindgen extracts from the shim's
//!   sources, then the Linux spellings of the types and constants, glibc's `CPU_*` macros,
//!   and finally one `#define <linux> slurm_shim_<linux>` per row of the export table.
//! * `#elif defined(SLURM_SHIM_EMULATE_DARWIN)` (Linux, the darwin personality): no system
//!   header at all (a force-included header must not fix glibc's feature set before the
//!   translation unit's own `_GNU_SOURCE`); only `#pragma redefine_extname <linux>
//!   slurm_shim_<linux>` per row, which keeps glibc's prototypes and types and changes only
//!   the symbol each call links against.
//! * otherwise: nothing.
//!
//! cbindgen is a pinned library dependency (see the workspace manifest), so the output does
//! not depend on whatever cbindgen binary a machine has.

use clap::Args;
use driver_common::error::{Error, Result};
use slurm_shim::table::{ENTRIES, Map};
use std::fmt::Write as _;
use std::path::Path;
use xshell::Shell;

#[derive(Debug, Args)]
pub struct CodegenArgs {
    /// Fail if the committed header differs from what would be generated.
    #[arg(long)]
    pub check: bool,
}

/// Where the generated header lives, relative to the project root.
pub const HEADER: &str = "shim/include/slurm_shim.h";

/// SDK headers included before any mapping under `__APPLE__`.
const APPLE_INCLUDES: &[&str] = &[
    "stddef.h",
    "stdint.h",
    "string.h",
    "sys/types.h",
    "sys/socket.h",
    "sys/un.h",
    "netinet/in.h",
    "signal.h",
    "time.h",
    "pthread.h",
    "sched.h",
    "stdlib.h",
    "unistd.h",
    "grp.h",
];

/// Linux spellings of the shim's constants (`#define <linux> SLURM_SHIM_<linux>`).
const APPLE_CONSTANTS: &[&str] = &[
    "SOCK_CLOEXEC",
    "SOCK_NONBLOCK",
    "EFD_SEMAPHORE",
    "EFD_CLOEXEC",
    "EFD_NONBLOCK",
    "TIMER_ABSTIME",
    "CPU_SETSIZE",
    "SO_PEERCRED",
];

/// Linux spellings of the shim's types: (linux, shim, how). `typedef` for names used bare,
/// `tag` for names used as `struct <name>`. (`struct sysinfo` needs no row: the struct tag
/// and the function share the name `slurm_shim_sysinfo`, so the table's
/// `#define sysinfo slurm_shim_sysinfo` maps both, as Linux's `struct sysinfo`/`sysinfo()`.)
const APPLE_TYPES: &[(&str, &str, TypeMap)] = &[
    ("timer_t", "slurm_shim_timer_t", TypeMap::Typedef),
    ("cpu_set_t", "struct slurm_shim_cpu_set_t", TypeMap::Typedef),
    ("itimerspec", "slurm_shim_itimerspec", TypeMap::Tag),
    ("ucred", "slurm_shim_ucred", TypeMap::Tag),
];

#[derive(Clone, Copy)]
enum TypeMap {
    Typedef,
    Tag,
}

/// glibc's `CPU_*` macros over [`slurm_shim::cpuset::slurm_shim_cpu_set_t`]. Arguments may be
/// evaluated more than once (glibc uses GNU statement expressions; these stay ISO C).
const APPLE_CPU_MACROS: &str = r#"#define SLURM_SHIM_NCPUBITS (8 * sizeof(unsigned long))
#define SLURM_SHIM_CPUELT(cpu) ((size_t)(cpu) / SLURM_SHIM_NCPUBITS)
#define SLURM_SHIM_CPUMASK(cpu) (1UL << ((size_t)(cpu) % SLURM_SHIM_NCPUBITS))
#define CPU_ALLOC_SIZE(count) \
	((((size_t)(count) + SLURM_SHIM_NCPUBITS - 1) / SLURM_SHIM_NCPUBITS) * sizeof(unsigned long))
#define CPU_ALLOC(count) slurm_shim_sched_cpualloc(count)
#define CPU_FREE(set) slurm_shim_sched_cpufree(set)
#define CPU_ZERO_S(setsize, set) memset((set), 0, (setsize))
#define CPU_SET_S(cpu, setsize, set) \
	((size_t)(cpu) / 8 < (size_t)(setsize) \
	 ? ((set)->__bits[SLURM_SHIM_CPUELT(cpu)] |= SLURM_SHIM_CPUMASK(cpu)) : 0UL)
#define CPU_CLR_S(cpu, setsize, set) \
	((size_t)(cpu) / 8 < (size_t)(setsize) \
	 ? ((set)->__bits[SLURM_SHIM_CPUELT(cpu)] &= ~SLURM_SHIM_CPUMASK(cpu)) : 0UL)
#define CPU_ISSET_S(cpu, setsize, set) \
	((size_t)(cpu) / 8 < (size_t)(setsize) \
	 ? (((set)->__bits[SLURM_SHIM_CPUELT(cpu)] & SLURM_SHIM_CPUMASK(cpu)) != 0) : 0)
#define CPU_COUNT_S(setsize, set) slurm_shim_sched_cpucount((setsize), (set))
#define CPU_EQUAL_S(setsize, a, b) (memcmp((a), (b), (setsize)) == 0)
#define SLURM_SHIM_CPU_OP_S(setsize, dest, a, b, op) \
	do { \
		size_t slurm_shim_i_; \
		for (slurm_shim_i_ = 0; slurm_shim_i_ < (size_t)(setsize) / sizeof(unsigned long); \
		     slurm_shim_i_++) \
			(dest)->__bits[slurm_shim_i_] = \
				(a)->__bits[slurm_shim_i_] op (b)->__bits[slurm_shim_i_]; \
	} while (0)
#define CPU_AND_S(setsize, dest, a, b) SLURM_SHIM_CPU_OP_S(setsize, dest, a, b, &)
#define CPU_OR_S(setsize, dest, a, b) SLURM_SHIM_CPU_OP_S(setsize, dest, a, b, |)
#define CPU_XOR_S(setsize, dest, a, b) SLURM_SHIM_CPU_OP_S(setsize, dest, a, b, ^)
#define CPU_ZERO(set) CPU_ZERO_S(sizeof(cpu_set_t), set)
#define CPU_SET(cpu, set) CPU_SET_S(cpu, sizeof(cpu_set_t), set)
#define CPU_CLR(cpu, set) CPU_CLR_S(cpu, sizeof(cpu_set_t), set)
#define CPU_ISSET(cpu, set) CPU_ISSET_S(cpu, sizeof(cpu_set_t), set)
#define CPU_COUNT(set) CPU_COUNT_S(sizeof(cpu_set_t), set)
#define CPU_EQUAL(a, b) CPU_EQUAL_S(sizeof(cpu_set_t), a, b)
#define CPU_AND(dest, a, b) CPU_AND_S(sizeof(cpu_set_t), dest, a, b)
#define CPU_OR(dest, a, b) CPU_OR_S(sizeof(cpu_set_t), dest, a, b)
#define CPU_XOR(dest, a, b) CPU_XOR_S(sizeof(cpu_set_t), dest, a, b)
"#;

/// Header-only answers for the remaining class-A catalog items (no function behind them).
const APPLE_MISC: &str = r#"/* A10: Linux's name for the TCP socket-option level. */
#ifndef SOL_TCP
#define SOL_TCP IPPROTO_TCP
#endif
/* A11: macOS has no real-time signals; the valid signals are 1 .. NSIG-1. */
#ifndef SIGRTMAX
#define SIGRTMAX NSIG
#endif
/* A12: BIND 8 names that the SDK only declares under BIND_8_COMPAT. */
#ifndef C_IN
#define C_IN 1
#endif
#ifndef T_SRV
#define T_SRV 33
#endif
/* eventfd's counter type, as in <sys/eventfd.h>. */
typedef uint64_t eventfd_t;
"#;

pub fn run(sh: &Shell, root: &Path, args: CodegenArgs) -> Result<()> {
    let _ = sh;
    if args.check {
        check(root)?;
        println!("{HEADER} is up to date");
        return Ok(());
    }
    let text = generate(root)?;
    let path = root.join(HEADER);
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    if old == text {
        println!("{HEADER} unchanged");
        return Ok(());
    }
    driver_common::util::fs::write_atomic(&path, text.as_bytes(), 0o644)?;
    println!("wrote {HEADER} ({} functions mapped)", ENTRIES.len());
    Ok(())
}

/// Fails with [`Error::StaleHeader`] when the committed header differs from a fresh one.
pub fn check(root: &Path) -> Result<()> {
    let path = root.join(HEADER);
    let committed = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    if committed != generate(root)? {
        return Err(Error::StaleHeader);
    }
    Ok(())
}

/// The header text.
pub fn generate(root: &Path) -> Result<String> {
    let decls = cbindgen_declarations(&root.join("shim"))?;
    let mut out = String::new();
    let w = &mut out;
    w.push_str(PREAMBLE);
    w.push_str("#ifndef SLURM_SHIM_H\n#define SLURM_SHIM_H\n\n#if defined(__APPLE__)\n\n");
    for inc in APPLE_INCLUDES {
        let _ = writeln!(w, "#include <{inc}>");
    }
    w.push_str("\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    w.push_str("/* Constants, types and prototypes generated by cbindgen from shim/src. */\n");
    w.push_str(&decls);
    w.push_str("\n/* Linux spellings of the constants. */\n");
    for c in APPLE_CONSTANTS {
        let _ = writeln!(w, "#define {c} SLURM_SHIM_{c}");
    }
    w.push_str("\n/* Linux spellings of the types. */\n");
    for (linux, shim, how) in APPLE_TYPES {
        match how {
            TypeMap::Typedef => {
                let _ = writeln!(w, "typedef {shim} {linux};");
            }
            TypeMap::Tag => {
                let _ = writeln!(w, "#define {linux} {shim}");
            }
        }
    }
    w.push_str("\n/* glibc's CPU_* macros. */\n");
    w.push_str(APPLE_CPU_MACROS);
    w.push('\n');
    w.push_str(APPLE_MISC);
    w.push_str("\n/* Linux names mapped onto the shim (export table: shim/src/table.rs). */\n");
    for e in ENTRIES
        .iter()
        .filter(|e| matches!(e.map, Map::Both | Map::Apple))
    {
        let _ = writeln!(w, "#define {} {}", e.linux_name(), e.symbol);
    }
    w.push_str("\n#ifdef __cplusplus\n}\n#endif\n\n");
    w.push_str("#elif defined(SLURM_SHIM_EMULATE_DARWIN)\n\n");
    w.push_str(
        "/* Linux, darwin personality: glibc keeps its headers and prototypes; each call\n \
         * links against the shim instead (no system header may be included here). */\n",
    );
    redefine_extnames(w, Map::Both);
    w.push_str(EMULATE_MACOS_OPEN);
    redefine_extnames(w, Map::Emulate);
    w.push_str(EMULATE_AS_MACOS);
    w.push_str("#endif /* SLURM_SHIM_EMULATE_MACOS */\n");
    w.push_str(
        "\n#endif /* __APPLE__ / SLURM_SHIM_EMULATE_DARWIN */\n\n#endif /* SLURM_SHIM_H */\n",
    );
    Ok(out)
}

/// Opens the part of the emulation branch that applies at make time only
/// (`SLURM_SHIM_EMULATE_MACOS`, which the driver adds to make's `CPPFLAGS`, not to
/// configure's): the [`Map::Emulate`] rows re-target calls such as `fopen`, `open` and
/// `getrlimit` that configure's own test programs make, and those programs are linked
/// without the shim (configure then stops at "cannot run C compiled programs"; measured
/// with 24.11.5). Configure takes its answers from the cache variables instead.
const EMULATE_MACOS_OPEN: &str = r#"
#if defined(SLURM_SHIM_EMULATE_MACOS)
/* Make time only: macOS's runtime behaviour for calls glibc also has, and the macOS APIs
 * of Slurm's __APPLE__ branches (export table rows of kind Emulate). */
"#;

/// The end of the emulation branch: Slurm's sources are preprocessed as on macOS, so its
/// `__APPLE__` branches (and those of the patch series) are the ones compiled and run, and
/// its `__linux__` branches are not (issue 10 item 2). glibc's headers never test these
/// macros (checked: /usr/include of Debian 12, and the third-party headers Slurm includes;
/// see docs/MACOS-SEMANTICS.md). `weak_import` (Mach-O's weak reference, used by Slurm's
/// `__APPLE__` declarations of daemon-only symbols) becomes ELF's `weak`, which binds the
/// same way: NULL when nothing defines the symbol. Guarded by the include guard: this header
/// tests `__APPLE__` before it is defined here, so its own macOS branch is never taken.
const EMULATE_AS_MACOS: &str = r#"
/* Slurm's sources preprocessed as on macOS: its __APPLE__ branches run here, its
 * __linux__ branches do not; the macOS APIs they call are declared by the stand-ins in
 * shim/include/emulate/ and answered by the shim from Linux. */
#undef __linux__
#undef __linux
#undef linux
#undef __gnu_linux__
#define __APPLE__ 1
#define weak_import weak
"#;

const PREAMBLE: &str = "\
/* slurm_shim.h: generated by `cargo xtask codegen` from shim/src; do not edit.
 *
 * Force-include it into every C translation unit (-include slurm_shim.h). On macOS it
 * declares what the SDK lacks and maps each Linux name to its slurm_shim_ replacement;
 * on Linux it is empty unless SLURM_SHIM_EMULATE_DARWIN is defined.
 */
";

/// `#pragma redefine_extname` for every row of the table mapped as `map`: its glibc name
/// links against the shim's symbol.
fn redefine_extnames(w: &mut String, map: Map) {
    for e in ENTRIES.iter().filter(|e| e.map == map) {
        let _ = writeln!(
            w,
            "#pragma redefine_extname {} {}",
            e.linux_name(),
            e.symbol
        );
    }
}

fn cbindgen_declarations(shim_dir: &Path) -> Result<String> {
    let mut config = cbindgen::Config {
        language: cbindgen::Language::C,
        style: cbindgen::Style::Tag,
        no_includes: true,
        cpp_compat: false,
        documentation: true,
        documentation_style: cbindgen::DocumentationStyle::Doxy,
        usize_is_size_t: true,
        ..Default::default()
    };
    config.export.item_types = vec![
        cbindgen::ItemType::Constants,
        cbindgen::ItemType::Typedefs,
        cbindgen::ItemType::Structs,
        cbindgen::ItemType::Functions,
    ];
    for (from, to) in [
        ("sigevent", "struct sigevent"),
        ("timespec", "struct timespec"),
        ("sockaddr", "struct sockaddr"),
    ] {
        config.export.rename.insert(from.into(), to.into());
    }
    // Types no exported function mentions but the header must still declare.
    config.export.include = vec!["slurm_shim_ucred".into()];
    // Only the shim's own items: the flags module mirrors OS values for the implementation.
    config.export.exclude = vec![
        "SOCK_CLOEXEC".into(),
        "SOCK_NONBLOCK".into(),
        "EFD_CLOEXEC".into(),
        "EFD_NONBLOCK".into(),
        "EFD_SEMAPHORE".into(),
        "SO_PEERCRED".into(),
        "TIMER_ABSTIME".into(),
        "PREFIX".into(),
    ];
    // Emulation rows exist on Linux only and are reached through `#pragma redefine_extname`
    // on glibc's own prototypes: the `__APPLE__` part declares none of them.
    let emulated = ENTRIES.iter().filter(|e| e.map == Map::Emulate);
    config
        .export
        .exclude
        .extend(emulated.map(|e| e.symbol.to_string()));
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_crate(shim_dir)
        .generate()
        .map_err(|e| Error::Codegen(format!("cbindgen on {}: {e}", shim_dir.display())))?;
    let mut buf = Vec::new();
    bindings.write(&mut buf);
    let text = String::from_utf8(buf).map_err(|e| Error::Codegen(e.to_string()))?;
    Ok(keep_shim_items(&text))
}

/// Whether a cbindgen chunk declares a [`Map::Emulate`] function: those exist on Linux only
/// and are mapped by `#pragma redefine_extname` onto glibc's (or a stand-in header's)
/// prototype, so the `__APPLE__` branch must not declare them.
fn declares_emulate_row(decl: &str) -> bool {
    ENTRIES.iter().filter(|e| e.map == Map::Emulate).any(|e| {
        decl.contains(&format!(" {}(", e.symbol)) || decl.contains(&format!("*{}(", e.symbol))
    })
}

/// cbindgen emits every public constant and type of the crate; the header declares only the
/// shim's own (`slurm_shim_*`, `SLURM_SHIM_*`), so implementation constants of the modules
/// never leak into Slurm's namespace. Items are the blank-line-separated chunks cbindgen
/// prints (a doc comment followed by one declaration).
fn keep_shim_items(text: &str) -> String {
    let mut out = String::new();
    for chunk in text.split("\n\n") {
        let decl = chunk
            .lines()
            .map(str::trim_start)
            .find(|l| !l.is_empty() && !l.starts_with("/*") && !l.starts_with('*'))
            .unwrap_or("");
        if (decl.contains("slurm_shim_") || decl.contains("SLURM_SHIM_"))
            && !declares_emulate_row(chunk)
        {
            out.push_str(chunk.trim_matches('\n'));
            out.push_str("\n\n");
        }
    }
    out
}
