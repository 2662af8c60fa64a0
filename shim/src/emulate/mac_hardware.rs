//! The Mac the darwin personality pretends to run on: the answers of the machine sysctls
//! (`machdep.cpu.brand_string`, `hw.nperflevels`, `hw.perflevelN.*`) and of IOKit's registry
//! (the `AGXAccelerator` services of an Apple GPU), for [`super::sysctl`] and
//! [`super::iokit`]. Darwin personality only; a real Mac answers from its hardware.
//!
//! macOS behaviour modelled (xnu-11417.101.15): `bsd/kern/kern_mib.c` declares
//! `hw.nperflevels` and the nodes `hw.perflevel0` and `hw.perflevel1` only, each with
//! `physicalcpu`, `physicalcpu_max`, `logicalcpu`, `logicalcpu_max` (`int`) and `name`
//! (a string); a level at or above `hw.nperflevels` is `ENOENT` (`sysctl_hw_generic`).
//! `bsd/dev/arm64/sysctl.c` answers `machdep.cpu.brand_string` with the device tree's
//! string, NUL included ("Apple M4 Pro"). An Apple GPU is an IOKit service of class
//! `AGXAccelerator` (a subclass of `IOAccelerator`; the driver's own class, such as
//! `AGXAcceleratorG16X`, is its `IOClass`) with the properties `model` (a string: "Apple M4
//! Pro") and `gpu-core-count` (a number), as PyTorch's `aten/src/ATen/mps/MPSDevice.mm`
//! (`getCoreCount`) and fastfetch's `src/detection/gpu/gpu_apple.c` read them.
//!
//! Linux mechanism: a small text file named by `SLURM_SHIM_MAC_HARDWARE` ([`HARDWARE_ENV`]),
//! read on every query (so a test changes the machine by rewriting it):
//!
//! ```text
//! # a comment; blank lines are ignored; `key = value`
//! machdep.cpu.brand_string = Apple M4 Max
//! hw.nperflevels = 2
//! hw.perflevel0.physicalcpu = 12
//! hw.perflevel1.physicalcpu = 4
//! agx.0.model = Apple M4 Max
//! agx.0.gpu-core-count = 40
//! ```
//!
//! Keys: the sysctl names above (any subset; the rest keep their defaults), and
//! `agx.<n>.<property>` for a property of the `n`-th `AGXAccelerator` service (`n` from 0;
//! a bare integer is a CFNumber, anything else, or a value in double quotes, a CFString).
//! Without the variable: the default Mac, [`Hardware::default`]: "Apple M4 Pro", two levels,
//! 10 performance and 4 efficiency cores (`logicalcpu` = `physicalcpu`: Apple Silicon has no
//! SMT), and **no GPU**, so a cluster only sees a GPU it was given one.
//!
//! Portability problems not fixed: the perf-level counts are not tied to the Linux CPUs
//! (`hw.ncpu` still answers the online CPUs, so 10 + 4 need not add up to it); only the
//! `AGXAccelerator` class chain (`IOClass`, `AGXAccelerator`, `IOAccelerator`, `IOService`)
//! matches, no other IOKit service exists; a file that cannot be read or parsed makes every
//! query that needs it fail (the seams say how), it is never half used. The driver checks the
//! files it writes with [`parse`], which names the bad line.

use std::fmt;

/// Environment variable naming the hardware file.
pub const HARDWARE_ENV: &str = "SLURM_SHIM_MAC_HARDWARE";

/// The IOKit class of an Apple GPU (and its superclasses, most derived first).
pub const AGX_CLASSES: [&str; 3] = ["AGXAccelerator", "IOAccelerator", "IOService"];

/// A sysctl or registry value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// `int` (sysctl) or CFNumber (registry).
    Int(i64),
    /// A string (without NUL).
    Str(String),
}

/// One IOKit service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Service {
    /// Its properties, in file order.
    pub props: Vec<(String, Value)>,
}

impl Service {
    /// The value of property `key`.
    pub fn prop(&self, key: &str) -> Option<&Value> {
        self.props.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether IOKit's class matching (`IOServiceMatching(class)`: the class or a
    /// subclass) selects this service.
    pub fn conforms_to(&self, class: &str) -> bool {
        AGX_CLASSES.contains(&class)
            || matches!(self.prop("IOClass"), Some(Value::Str(c)) if c == class)
    }
}

/// One performance level (`hw.perflevelN`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfLevel {
    pub physicalcpu: i64,
    pub physicalcpu_max: i64,
    pub logicalcpu: i64,
    pub logicalcpu_max: i64,
    pub name: String,
}

/// The modelled Mac.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hardware {
    /// `machdep.cpu.brand_string`.
    pub brand: String,
    /// `hw.perflevel0`, `hw.perflevel1`, ... (`hw.nperflevels` is the length).
    pub levels: Vec<PerfLevel>,
    /// The `AGXAccelerator` services.
    pub gpus: Vec<Service>,
}

fn level(cpus: i64, name: &str) -> PerfLevel {
    PerfLevel {
        physicalcpu: cpus,
        physicalcpu_max: cpus,
        logicalcpu: cpus,
        logicalcpu_max: cpus,
        name: name.to_string(),
    }
}

impl Default for Hardware {
    /// An M-series-like Mac without a GPU: "Apple M4 Pro", 10 performance + 4 efficiency
    /// cores.
    fn default() -> Hardware {
        Hardware {
            brand: "Apple M4 Pro".into(),
            levels: vec![level(10, "Performance"), level(4, "Efficiency")],
            gpus: Vec::new(),
        }
    }
}

/// Names of the perf-level members, as `hw.perflevelN.<member>`.
const LEVEL_MEMBERS: [&str; 5] = [
    "physicalcpu",
    "physicalcpu_max",
    "logicalcpu",
    "logicalcpu_max",
    "name",
];

/// XNU declares two perf-level nodes (kern_mib.c).
const MAX_LEVELS: usize = 2;

impl Hardware {
    /// The answer to `sysctlbyname(name)`, `None` if `name` is not one of the modelled
    /// names, `Some(None)` if it is one but does not exist on this Mac (`ENOENT`).
    pub fn sysctl(&self, name: &str) -> Option<Option<Value>> {
        if name == "machdep.cpu.brand_string" {
            return Some(Some(Value::Str(self.brand.clone())));
        }
        if name == "hw.nperflevels" {
            return Some(Some(Value::Int(self.levels.len() as i64)));
        }
        let (n, member) = perflevel_name(name)?;
        let Some(l) = self.levels.get(n) else {
            return Some(None);
        };
        Some(Some(match member {
            "physicalcpu" => Value::Int(l.physicalcpu),
            "physicalcpu_max" => Value::Int(l.physicalcpu_max),
            "logicalcpu" => Value::Int(l.logicalcpu),
            "logicalcpu_max" => Value::Int(l.logicalcpu_max),
            _ => Value::Str(l.name.clone()),
        }))
    }

    /// The services `IOServiceMatching(class)` selects.
    pub fn matching(&self, class: &str) -> Vec<Service> {
        self.gpus
            .iter()
            .filter(|s| s.conforms_to(class))
            .cloned()
            .collect()
    }
}

/// `hw.perflevel<N>.<member>` for N below [`MAX_LEVELS`] and a known member.
fn perflevel_name(name: &str) -> Option<(usize, &str)> {
    let rest = name.strip_prefix("hw.perflevel")?;
    let (digits, member) = rest.split_once('.')?;
    let n: usize = digits.parse().ok()?;
    (n < MAX_LEVELS && n.to_string() == digits && LEVEL_MEMBERS.contains(&member))
        .then_some((n, member))
}

/// What is wrong with a hardware file: the line (from 1) and the problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub problem: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.problem)
    }
}

fn value_of(raw: &str) -> Value {
    if let Some(s) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        return Value::Str(s.to_string());
    }
    match raw.parse::<i64>() {
        Ok(n) => Value::Int(n),
        Err(_) => Value::Str(raw.to_string()),
    }
}

fn count(line: usize, key: &str, v: &Value) -> Result<i64, ParseError> {
    match v {
        Value::Int(n) if *n >= 0 && *n <= i32::MAX as i64 => Ok(*n),
        _ => Err(ParseError {
            line,
            problem: format!("`{key}` must be a count (0 to {}), not {v:?}", i32::MAX),
        }),
    }
}

/// Parses a hardware file (format in the module documentation). Keys not given keep the
/// default Mac's values, except the GPUs: the file lists every GPU there is.
pub fn parse(text: &str) -> Result<Hardware, ParseError> {
    let mut hw = Hardware::default();
    let mut nlevels: Option<(usize, usize)> = None;
    let mut set: Vec<(usize, String, usize, Value)> = Vec::new();
    let mut gpus: Vec<(usize, Service)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let Some((k, v)) = t.split_once('=') else {
            return Err(ParseError {
                line,
                problem: format!("`{t}` is not `key = value`"),
            });
        };
        let (key, value) = (k.trim(), value_of(v.trim()));
        if key == "machdep.cpu.brand_string" {
            hw.brand = match value {
                Value::Str(s) => s,
                Value::Int(n) => n.to_string(),
            };
        } else if key == "hw.nperflevels" {
            let n = count(line, key, &value)? as usize;
            if !(1..=MAX_LEVELS).contains(&n) {
                return Err(ParseError {
                    line,
                    problem: format!(
                        "hw.nperflevels is {n}; XNU has perf levels 0 and 1 only (1 or 2)"
                    ),
                });
            }
            nlevels = Some((line, n));
        } else if let Some((n, member)) = perflevel_name(key) {
            set.push((line, member.to_string(), n, value));
        } else if let Some(rest) = key.strip_prefix("agx.") {
            let (n, prop) = rest
                .split_once('.')
                .and_then(|(n, p)| Some((n.parse::<usize>().ok()?, p)))
                .filter(|(_, p)| !p.is_empty())
                .ok_or_else(|| ParseError {
                    line,
                    problem: format!("`{key}` is not `agx.<n>.<property>` (n = 0, 1, ...)"),
                })?;
            match gpus.iter_mut().find(|(i, _)| *i == n) {
                Some((_, s)) => s.props.push((prop.to_string(), value)),
                None => gpus.push((
                    n,
                    Service {
                        props: vec![(prop.to_string(), value)],
                    },
                )),
            }
        } else {
            return Err(ParseError {
                line,
                problem: format!(
                    "unknown key `{key}`: known are machdep.cpu.brand_string, hw.nperflevels, \
                     hw.perflevel{{0,1}}.{{{}}} and agx.<n>.<property>",
                    LEVEL_MEMBERS.join(",")
                ),
            });
        }
    }
    if let Some((_, n)) = nlevels {
        hw.levels.truncate(n);
        while hw.levels.len() < n {
            hw.levels.push(level(0, "Efficiency"));
        }
    }
    for (line, member, n, value) in set {
        let Some(l) = hw.levels.get_mut(n) else {
            return Err(ParseError {
                line,
                problem: format!(
                    "hw.perflevel{n}.{member} is set but hw.nperflevels is {}",
                    hw.levels.len()
                ),
            });
        };
        let key = format!("hw.perflevel{n}.{member}");
        match member.as_str() {
            "name" => {
                l.name = match value {
                    Value::Str(s) => s,
                    Value::Int(n) => n.to_string(),
                }
            }
            "physicalcpu" => {
                // The other counts follow unless the file sets them too (no SMT).
                let c = count(line, &key, &value)?;
                l.physicalcpu = c;
                l.physicalcpu_max = c;
                l.logicalcpu = c;
                l.logicalcpu_max = c;
            }
            "physicalcpu_max" => l.physicalcpu_max = count(line, &key, &value)?,
            "logicalcpu" => {
                let c = count(line, &key, &value)?;
                l.logicalcpu = c;
                l.logicalcpu_max = c;
            }
            _ => l.logicalcpu_max = count(line, &key, &value)?,
        }
    }
    gpus.sort_by_key(|(n, _)| *n);
    for (want, (n, _)) in gpus.iter().enumerate() {
        if *n != want {
            return Err(ParseError {
                line: 0,
                problem: format!(
                    "GPU agx.{want} is missing (GPUs are numbered from 0 without gaps; agx.{n} is given)"
                ),
            });
        }
    }
    hw.gpus = gpus.into_iter().map(|(_, s)| s).collect();
    Ok(hw)
}

/// Why the hardware file could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// The file named by [`HARDWARE_ENV`] cannot be read.
    Unreadable,
    /// It does not parse.
    Invalid(ParseError),
}

/// The modelled Mac: the file named by [`HARDWARE_ENV`], else the default.
pub fn load() -> Result<Hardware, LoadError> {
    let Some(path) = std::env::var_os(HARDWARE_ENV).filter(|p| !p.is_empty()) else {
        return Ok(Hardware::default());
    };
    let text = std::fs::read_to_string(path).map_err(|_| LoadError::Unreadable)?;
    parse(&text).map_err(LoadError::Invalid)
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn default__ten_performance_four_efficiency_no_gpu() {
        let hw = Hardware::default();
        assert_eq!(hw.sysctl("hw.nperflevels"), Some(Some(Value::Int(2))));
        assert_eq!(
            hw.sysctl("hw.perflevel0.physicalcpu"),
            Some(Some(Value::Int(10)))
        );
        assert_eq!(
            hw.sysctl("hw.perflevel1.logicalcpu"),
            Some(Some(Value::Int(4)))
        );
        assert_eq!(
            hw.sysctl("hw.perflevel1.name"),
            Some(Some(Value::Str("Efficiency".into())))
        );
        assert!(hw.matching("AGXAccelerator").is_empty());
        assert_eq!(hw.sysctl("hw.memsize"), None);
    }

    #[test]
    fn sysctl__levels_past_nperflevels_are_enoent_and_past_xnu_unknown() {
        let hw = parse("hw.nperflevels = 1\nhw.perflevel0.physicalcpu = 8\n").unwrap();
        assert_eq!(
            hw.sysctl("hw.perflevel0.logicalcpu"),
            Some(Some(Value::Int(8)))
        );
        assert_eq!(hw.sysctl("hw.perflevel1.physicalcpu"), Some(None));
        assert_eq!(hw.sysctl("hw.perflevel2.physicalcpu"), None);
        assert_eq!(hw.sysctl("hw.perflevel01.physicalcpu"), None);
        assert_eq!(hw.sysctl("hw.perflevel0.bogus"), None);
    }

    #[test]
    fn parse__gpu_properties_numbers_and_strings() {
        let hw = parse(
            "# a Mac\nmachdep.cpu.brand_string = Apple M4 Max\n\
             agx.0.model = Apple M4 Max\nagx.0.gpu-core-count = 40\nagx.0.IOClass = AGXAcceleratorG16X\n\
             agx.0.quoted = \"40\"\n",
        )
        .unwrap();
        assert_eq!(hw.brand, "Apple M4 Max");
        let g = hw.matching("AGXAccelerator");
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].prop("gpu-core-count"), Some(&Value::Int(40)));
        assert_eq!(g[0].prop("model"), Some(&Value::Str("Apple M4 Max".into())));
        assert_eq!(g[0].prop("quoted"), Some(&Value::Str("40".into())));
        assert_eq!(hw.matching("AGXAcceleratorG16X").len(), 1);
        assert_eq!(hw.matching("IOAccelerator").len(), 1);
        assert!(hw.matching("IOPCIDevice").is_empty());
    }

    #[test]
    fn parse__bad_lines_are_named() {
        let e = parse("hw.nperflevels = 2\nhw.cpufrequency = 3\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.problem.contains("unknown key `hw.cpufrequency`"), "{e}");
        assert_eq!(parse("just text\n").unwrap_err().line, 1);
        assert!(
            parse("hw.nperflevels = 3\n")
                .unwrap_err()
                .problem
                .contains("1 or 2")
        );
        assert!(
            parse("hw.nperflevels = 1\nhw.perflevel1.physicalcpu = 4\n")
                .unwrap_err()
                .problem
                .contains("hw.nperflevels is 1")
        );
        assert!(parse("hw.perflevel0.physicalcpu = -1\n").is_err());
        assert!(
            parse("agx.x.model = M\n")
                .unwrap_err()
                .problem
                .contains("agx.<n>")
        );
        assert!(
            parse("agx.1.model = M\n")
                .unwrap_err()
                .problem
                .contains("agx.0 is missing")
        );
    }
}
