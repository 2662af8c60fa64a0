//! `cargo xtask gres-conf --prefix P [--hardware FILE]`: the `gres.conf` and the slurm.conf
//! `NodeName=` line of the machine it runs on, from the built slurmd.
//!
//! It runs `P/sbin/slurmd -v -C` once. With the series' patches 0050-0052, slurmd -C prints
//! the `NodeName=` line (with `Gres=gpu:<type>:1` when gpu/apple found a GPU), the
//! `Found gpu:... with Autodetect=apple` line, and `Extra={...}` (the CPU brand and the
//! performance/efficiency cores slurmd sends as the node's Extra); `-v` lets gpu/apple's info
//! line through on stderr (model, GPU cores, unified memory). From those it prints:
//!
//! * `gres.conf`: `AutoDetect=apple` with the GPU described in comments, and the equivalent
//!   static line for a build without gpu/apple; or, without a GPU, a comment saying so;
//! * slurm.conf: `GresTypes=gpu` (with a GPU) and slurmd's `NodeName=` line with `Features=`
//!   made from the Extra ([`features`]: `apple_m4_pro,pcores_10,ecores_4`).
//!
//! On a Mac the values are the hardware's (IOKit and sysctl through slurmd). On Linux only
//! a darwin-personality prefix can answer (it has `lib/slurm/gpu_apple.so`), and what it
//! reports is the shim's modelled Mac (`SLURM_SHIM_MAC_HARDWARE`, `--hardware FILE`, or the
//! default Apple M4 Pro without a GPU): the output says so in its first lines. A native
//! Linux prefix has no gpu/apple and is refused with the reason.

use driver_common::error::{Error, Result};
use driver_common::util::process::bounded::run_bounded;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

// The command's arguments (clap), read by `slurm-mac` and `cargo xtask`.
#[derive(Debug, clap::Args)]
pub struct GresConfArgs {
    /// The installed Slurm prefix whose sbin/slurmd is asked (a macOS build on a Mac; on
    /// Linux a darwin-personality build).
    #[arg(long)]
    pub prefix: PathBuf,
    /// Linux, darwin personality: the modelled Mac's hardware file (SLURM_SHIM_MAC_HARDWARE;
    /// format in shim/src/emulate/mac_hardware.rs). Default: that variable, else the shim's
    /// default Mac (no GPU).
    #[arg(long, value_name = "FILE")]
    pub hardware: Option<PathBuf>,
}

/// How long `slurmd -C` may take (hwloc's topology scan, the GPU probe).
const SLURMD_C_TIMEOUT: Duration = Duration::from_secs(60);

/// What gpu/apple said about the GPU (its info line on stderr).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gpu {
    /// `Apple M4 Max`.
    pub model: String,
    /// `gpu-core-count`, if IOKit had it.
    pub cores: Option<u64>,
    /// hw.memsize in MB.
    pub memory_mb: u64,
    /// The GRES type (`apple_m4_max`).
    pub gres_type: String,
}

/// What `slurmd -v -C` reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The `NodeName=` line, as printed.
    pub node_line: String,
    /// The GPU, if gpu/apple found one.
    pub gpu: Option<Gpu>,
    /// The `Extra=` JSON, if slurmd printed one (macOS builds with patch 0052).
    pub extra: Option<String>,
    /// gpu/apple's "no Apple GPU" line, if it printed one.
    pub no_gpu: Option<String>,
    /// Every line gpu/apple logged (stderr lines with `gpu/apple:`).
    pub gpu_apple_lines: Vec<String>,
}

/// The value of `"key":` in a flat JSON object (numbers and strings without escapes, as
/// patch 0052 writes them; a string with escapes is returned unescaped of `\"` and `\\`).
pub fn json_field(json: &str, key: &str) -> Option<String> {
    let at = json.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &json[at..];
    if let Some(s) = rest.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return Some(out),
                '\\' => out.push(chars.next()?),
                c => out.push(c),
            }
        }
        None
    } else {
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim().to_string())
    }
}

/// A node feature name from free text: lower case, runs of anything but `[a-z0-9]` as `_`.
pub fn feature_name(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

/// `Features=` values from slurmd's Extra: the CPU brand (`apple_m4_pro`), `pcores_<n>` and
/// `ecores_<n>` (physical performance and efficiency cores).
pub fn features(extra: &str) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(b) = json_field(extra, "cpu_brand").map(|b| feature_name(&b)) {
        if !b.is_empty() {
            v.push(b);
        }
    }
    for (key, name) in [("perf_cores", "pcores"), ("eff_cores", "ecores")] {
        if let Some(n) = json_field(extra, key).and_then(|n| n.parse::<u64>().ok()) {
            v.push(format!("{name}_{n}"));
        }
    }
    v
}

/// The text of one of gpu/apple's `AutoDetect=apple:` lines, from `AutoDetect=apple:` on.
/// Slurm's log prefixes a gpu plugin's messages with `gpu/apple: <function>: `
/// (`SLURM_PLUGIN_DEBUG`, as for every gpu plugin).
pub fn autodetect_text(line: &str) -> Option<&str> {
    let (_, rest) = line.split_once("gpu/apple: ")?;
    rest.find("AutoDetect=apple: ").map(|at| &rest[at..])
}

/// gpu/apple's info line: `...gpu/apple: <function>: AutoDetect=apple: <model>, <n> GPU
/// cores, <m> MB unified memory ...: gpu:<type>:1, File=...`.
fn parse_gpu_line(line: &str) -> Option<Gpu> {
    let rest = autodetect_text(line)?.strip_prefix("AutoDetect=apple: ")?;
    let (model, rest) = rest.split_once(", ")?;
    let (cores, rest) = rest.split_once(" GPU cores, ")?;
    let (mem, rest) = rest.split_once(" MB unified memory")?;
    let gres_type = rest.split("gpu:").nth(1)?.split(':').next()?.to_string();
    Some(Gpu {
        model: model.to_string(),
        cores: cores
            .parse::<i64>()
            .ok()
            .and_then(|c| u64::try_from(c).ok()),
        memory_mb: mem.trim().parse().ok()?,
        gres_type,
    })
}

/// Reads what `slurmd -v -C` printed.
pub fn parse(stdout: &str, stderr: &str) -> Result<Report> {
    let node_line = stdout
        .lines()
        .find(|l| l.starts_with("NodeName="))
        .ok_or_else(|| {
            Error::Scenario(format!("`slurmd -C` printed no NodeName= line: {stdout:?}"))
        })?
        .trim()
        .to_string();
    let gpu = stderr.lines().find_map(parse_gpu_line);
    if gpu.is_none() && node_line.contains("Gres=gpu:") {
        return Err(Error::Scenario(format!(
            "`slurmd -C` reports a GPU ({node_line}) but gpu/apple printed no description of it on stderr: {stderr:?}"
        )));
    }
    Ok(Report {
        node_line,
        gpu,
        extra: stdout
            .lines()
            .find_map(|l| l.strip_prefix("Extra="))
            .map(|e| e.trim().to_string()),
        no_gpu: stderr
            .lines()
            .filter_map(autodetect_text)
            .find(|t| t.starts_with("AutoDetect=apple: this machine has no Apple GPU"))
            .map(|t| t.trim().to_string()),
        gpu_apple_lines: stderr
            .lines()
            .filter(|l| l.contains("gpu/apple:"))
            .map(|l| l.trim().to_string())
            .collect(),
    })
}

/// Where the values came from, for the first comment lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A Mac: IOKit and sysctl through slurmd.
    Mac,
    /// Linux, a darwin-personality prefix: the shim's modelled Mac, from this file or the
    /// default.
    Seam(Option<PathBuf>),
}

/// The text printed: `gres.conf`, then the slurm.conf lines.
pub fn render(r: &Report, source: &Source, slurmd: &Path) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# gres.conf (cargo xtask gres-conf; from `{} -v -C`)",
        slurmd.display()
    );
    if let Source::Seam(file) = source {
        let what = match file {
            Some(f) => format!("the hardware file {}", f.display()),
            None => "its default Mac (Apple M4 Pro, 10 performance + 4 efficiency cores, no GPU)"
                .to_string(),
        };
        let _ = writeln!(
            o,
            "# NOT THIS MACHINE'S HARDWARE: this is Linux, and the prefix is a darwin-personality\n\
             # build, whose shim answers IOKit and sysctl from a modelled Mac ({what};\n\
             # shim/src/emulate/mac_hardware.rs). Run this on the Mac for its real values."
        );
    }
    match &r.gpu {
        Some(g) => {
            let cores = g
                .cores
                .map(|c| format!("{c} GPU cores"))
                .unwrap_or_else(|| "GPU core count not reported".into());
            let _ = writeln!(
                o,
                "# GPU: {}, {cores}, {} MB unified memory shared with the CPUs (hw.memsize).\n\
                 # gpu/apple finds it at every slurmd start. Slurm requires a File for a GPU and\n\
                 # stat()s it; an Apple GPU has none, so File=/dev/null is a placeholder. It\n\
                 # isolates nothing: macOS cannot keep other processes off the GPU, so a job\n\
                 # without gres/gpu can still use it. Slurm only counts and schedules it.\n\
                 AutoDetect=apple\n\
                 # The same GPU without gpu/apple (a build without patch 0050):\n\
                 # Name=gpu Type={} File=/dev/null Count=1",
                g.model, g.memory_mb, g.gres_type
            );
        }
        None => {
            let why = r
                .no_gpu
                .as_deref()
                .map(|l| format!(" ({l})"))
                .unwrap_or_default();
            let _ = writeln!(
                o,
                "# No Apple GPU found{why}: nothing to configure. AutoDetect=apple would add no GPU."
            );
        }
    }
    let _ = writeln!(o, "\n# slurm.conf");
    if r.gpu.is_some() {
        let _ = writeln!(o, "GresTypes=gpu");
    }
    let mut node = r.node_line.clone();
    match r.extra.as_deref().map(features) {
        Some(f) if !f.is_empty() => {
            let _ = write!(node, " Features={}", f.join(","));
            let _ = writeln!(
                o,
                "# Features from slurmd's Extra {}",
                r.extra.as_deref().unwrap_or_default()
            );
        }
        _ => {
            let _ = writeln!(
                o,
                "# (slurmd printed no Extra=: not a macOS build with patch 0052)"
            );
        }
    }
    let _ = writeln!(o, "{node}");
    o
}

/// Where slurmd is, or why it cannot be used.
pub fn slurmd_of(prefix: &Path) -> Result<PathBuf> {
    if !prefix.is_dir() {
        return Err(Error::NotASlurmPrefix {
            path: prefix.to_path_buf(),
            detail: [prefix.exists().then_some("is a file, not a directory")]
                .into_iter()
                .flatten()
                .next()
                .unwrap_or("no such directory")
                .into(),
        });
    }
    let slurmd = prefix.join("sbin/slurmd");
    if !slurmd.is_file() {
        return Err(Error::NotASlurmPrefix {
            path: prefix.to_path_buf(),
            detail: format!("{} is missing", slurmd.display()),
        });
    }
    Ok(slurmd)
}

/// The source of the values for this host and prefix, or why this prefix cannot say.
pub fn source_of(prefix: &Path, hardware: Option<&Path>) -> Result<Source> {
    if cfg!(target_os = "macos") {
        if hardware.is_some() {
            return Err(Error::Usage(
                "--hardware describes the darwin personality's modelled Mac; on a Mac the hardware answers".into(),
            ));
        }
        return Ok(Source::Mac);
    }
    if !prefix.join("lib/slurm/gpu_apple.so").is_file() {
        return Err(Error::NotASlurmPrefix {
            path: prefix.to_path_buf(),
            detail: "lib/slurm/gpu_apple.so is missing, so this is neither a macOS build nor a darwin-personality build \
                     (a native Linux build has no gpu/apple); build one with `cargo xtask build-slurm --personality darwin`"
                .into(),
        });
    }
    let file = hardware
        .map(Path::to_path_buf)
        .or_else(|| hardware_env().map(PathBuf::from));
    if let Some(f) = &file {
        check_hardware_file(f)?;
    }
    Ok(Source::Seam(file))
}

fn hardware_env() -> Option<std::ffi::OsString> {
    std::env::var_os(HARDWARE_VAR).filter(|v| !v.is_empty())
}

/// A hardware file for the darwin personality's modelled Mac must parse (the shim would
/// fail every query and say only that it cannot use the file).
#[cfg(target_os = "linux")]
pub fn check_hardware_file(f: &Path) -> Result<()> {
    // Trusted like a program (slurmd run as root reads it), and its content never quoted:
    // root may read what the caller could not.
    let text = driver_common::gate::file::read_trusted_text(f)?;
    slurm_shim::emulate::mac_hardware::parse(&text).map_err(|e| Error::File {
        path: f.to_path_buf(),
        problem: format!(
            "not a hardware file (line {} is not valid); the format is in shim/src/emulate/mac_hardware.rs",
            e.line
        ),
    })?;
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn check_hardware_file(_: &Path) -> Result<()> {
    Ok(())
}

/// Runs `slurmd -v -C` of `prefix` (with the hardware file, in the darwin personality) and
/// reads its report.
pub fn report(prefix: &Path, source: &Source) -> Result<Report> {
    let slurmd = slurmd_of(prefix)?;
    crate::keg::trusted_install(prefix, &[])?;
    let mut cmd = driver_common::gate::Program::checked(&slurmd)?.command();
    // -v first: -C prints and exits while the options are read.
    cmd.args(["-v", "-C"]);
    if let Source::Seam(Some(f)) = source {
        driver_common::gate::env::allow(&mut cmd, HARDWARE_VAR, f);
    }
    let out = run_bounded(cmd, SLURMD_C_TIMEOUT)?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if !out.status.success() {
        return Err(Error::Command {
            step: "gres-conf".into(),
            program: format!("{} -v -C", slurmd.display()),
            detail: format!("{}: {}", out.status, stderr.trim()),
        });
    }
    parse(&stdout, &stderr)
}

/// The variable naming the darwin personality's hardware file
/// (`slurm_shim::emulate::mac_hardware::HARDWARE_ENV`, which exists on Linux only).
pub const HARDWARE_VAR: &str = "SLURM_SHIM_MAC_HARDWARE";

/// `cargo xtask gres-conf`.
pub fn run(args: GresConfArgs) -> Result<()> {
    let slurmd = slurmd_of(&args.prefix)?;
    let source = source_of(&args.prefix, args.hardware.as_deref())?;
    let r = report(&args.prefix, &source)?;
    print!("{}", render(&r, &source, &slurmd));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STDOUT: &str = "NodeName=mac1 CPUs=14 Boards=1 SocketsPerBoard=1 CoresPerSocket=14 ThreadsPerCore=1 RealMemory=49152 Gres=gpu:apple_m4_max:1\n\
        Found gpu:apple_m4_max:1 with Autodetect=apple (Substring of gpu name may be used instead)\n\
        Extra={\"cpu_brand\":\"Apple M4 Max\",\"perf_levels\":2,\"perf_cores\":10,\"perf_cpus\":10,\"eff_cores\":4,\"eff_cpus\":4}\n\
        UpTime=0-01:02:03\n";
    const STDERR: &str = "slurmd: gpu/apple: _get_system_gpu_list_apple: AutoDetect=apple: Apple M4 Max, 40 GPU cores, 49152 MB unified memory shared with the CPUs (hw.memsize): gpu:apple_m4_max:1, File=/dev/null (a placeholder: macOS cannot isolate a GPU)\n";

    #[test]
    fn parse__node_line_gpu_and_extra() {
        let r = parse(STDOUT, STDERR).unwrap();
        assert!(
            r.node_line
                .ends_with("RealMemory=49152 Gres=gpu:apple_m4_max:1")
        );
        assert_eq!(
            r.gpu,
            Some(Gpu {
                model: "Apple M4 Max".into(),
                cores: Some(40),
                memory_mb: 49152,
                gres_type: "apple_m4_max".into()
            })
        );
        assert_eq!(
            features(r.extra.as_deref().unwrap()),
            ["apple_m4_max", "pcores_10", "ecores_4"]
        );
    }

    #[test]
    fn parse__a_gpu_without_its_description_is_an_error() {
        let e = parse(STDOUT, "").unwrap_err().to_string();
        assert!(e.contains("printed no description"), "{e}");
        assert!(
            parse("UpTime=1\n", "")
                .unwrap_err()
                .to_string()
                .contains("no NodeName=")
        );
    }

    #[test]
    fn render__seam_output_is_marked_and_node_line_gets_features() {
        let r = parse(STDOUT, STDERR).unwrap();
        let t = render(&r, &Source::Seam(None), Path::new("/p/sbin/slurmd"));
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].starts_with("# NOT THIS MACHINE'S HARDWARE"), "{t}");
        assert!(t.contains("\nAutoDetect=apple\n"), "{t}");
        assert!(
            t.contains("# Name=gpu Type=apple_m4_max File=/dev/null Count=1"),
            "{t}"
        );
        assert!(t.contains("isolates nothing"), "{t}");
        assert!(t.contains("\nGresTypes=gpu\n"), "{t}");
        assert!(
            lines
                .last()
                .unwrap()
                .ends_with("Gres=gpu:apple_m4_max:1 Features=apple_m4_max,pcores_10,ecores_4"),
            "{t}"
        );
        let mac = render(&r, &Source::Mac, Path::new("/p/sbin/slurmd"));
        assert!(!mac.contains("NOT THIS MACHINE"), "{mac}");
    }

    #[test]
    fn render__no_gpu_says_so_and_configures_none() {
        let out = "NodeName=mac1 CPUs=14 Boards=1 SocketsPerBoard=1 CoresPerSocket=14 ThreadsPerCore=1 RealMemory=49152\n";
        let err = "slurmd: gpu/apple: _get_system_gpu_list_apple: AutoDetect=apple: this machine has no Apple GPU (no IOKit AGXAccelerator service): no GPU detected\n";
        let r = parse(out, err).unwrap();
        let t = render(&r, &Source::Mac, Path::new("/p/sbin/slurmd"));
        assert!(
            t.contains("# No Apple GPU found (AutoDetect=apple: this machine has no Apple GPU"),
            "{t}"
        );
        assert!(
            !t.contains("\nAutoDetect=apple\n") && !t.contains("GresTypes"),
            "{t}"
        );
        assert!(t.contains("printed no Extra="), "{t}");
    }

    #[test]
    fn json_field__strings_numbers_and_escapes() {
        let j = r#"{"cpu_brand":"Apple \"M4\" Pro","perf_levels":2,"eff_cores":0}"#;
        assert_eq!(
            json_field(j, "cpu_brand").as_deref(),
            Some("Apple \"M4\" Pro")
        );
        assert_eq!(json_field(j, "perf_levels").as_deref(), Some("2"));
        assert_eq!(json_field(j, "eff_cores").as_deref(), Some("0"));
        assert_eq!(json_field(j, "missing"), None);
        assert_eq!(
            feature_name("Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz"),
            "intel_r_core_tm_i9_9880h_cpu_2_30ghz"
        );
    }

    #[test]
    fn slurmd_of__missing_prefix_and_missing_slurmd_are_named() {
        let d = tempfile::tempdir().unwrap();
        let e = slurmd_of(&d.path().join("nope")).unwrap_err().to_string();
        assert!(e.contains("no such directory"), "{e}");
        std::fs::write(d.path().join("f"), "").unwrap();
        let e = slurmd_of(&d.path().join("f")).unwrap_err().to_string();
        assert!(e.contains("is a file"), "{e}");
        let e = slurmd_of(d.path()).unwrap_err().to_string();
        driver_common::testing::assert_mentions(&e, &["sbin/slurmd is missing", "--prefix"]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn hardware_var__is_the_shims_variable() {
        assert_eq!(
            HARDWARE_VAR,
            slurm_shim::emulate::mac_hardware::HARDWARE_ENV
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn source_of__native_prefix_is_refused_and_bad_hardware_file_named() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("lib/slurm")).unwrap();
        let e = source_of(d.path(), None).unwrap_err().to_string();
        driver_common::testing::assert_mentions(
            &e,
            &["gpu_apple.so is missing", "--personality darwin"],
        );
        std::fs::write(d.path().join("lib/slurm/gpu_apple.so"), "").unwrap();
        let hw = d.path().join("hw");
        std::fs::write(&hw, "agx.0.model = M\nbogus line\n").unwrap();
        let e = source_of(d.path(), Some(&hw)).unwrap_err().to_string();
        driver_common::testing::assert_mentions(&e, &["line 2", "not a hardware file"]);
        std::fs::write(&hw, "agx.0.model = Apple M4 Max\n").unwrap();
        assert_eq!(
            source_of(d.path(), Some(&hw)).unwrap(),
            Source::Seam(Some(hw))
        );
    }
}
