//! Export lists of macOS system libraries from the SDK's text stubs (`.tbd`, Apple's "TAPI"
//! YAML format). On Linux there is no libSystem to read, so the audit of a Mach-O prefix
//! resolves system imports against these lists. zig ships `lib/libc/darwin/libSystem.tbd`
//! (the umbrella and the `/usr/lib/system/*` libraries it re-exports, one YAML document each).
//!
//! Read keys (tbd v3 and v4): `install-name`; the `exports` and `reexports` sections, each a
//! list of `{targets | archs, symbols, weak-symbols, thread-local-symbols}`. Objective-C
//! classes and ivars are not read (Slurm imports none).

use std::collections::HashSet;
use yaml_rust2::{Yaml, YamlLoader};

/// One library described by a stub: its install name and the symbols it exports for one
/// architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StubLibrary {
    pub install_name: String,
    pub exports: HashSet<String>,
    /// `reexported-libraries` for this architecture: loading this library makes their
    /// exports visible too (the SDK's libSystem re-exports `/usr/lib/system/*`).
    pub reexports: Vec<String>,
}

/// Parse a `.tbd` file and keep the symbols exported for `arch` (`arm64` or `x86_64`, the
/// `object` crate's naming mapped by the caller). A section applies when one of its targets
/// (v4: `arm64e-macos`) or archs (v3: `arm64`) has that architecture; `arm64e` counts as
/// `arm64` (the SDK lists arm64e for both, and zig links arm64 against it).
pub fn parse(text: &str, arch: &str) -> Result<Vec<StubLibrary>, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for doc in &docs {
        let Some(install_name) = doc["install-name"].as_str() else {
            return Err("a document without install-name".into());
        };
        let mut exports = HashSet::new();
        for section in ["exports", "reexports"] {
            let Some(blocks) = doc[section].as_vec() else {
                continue;
            };
            for block in blocks {
                if !block_applies(block, arch) {
                    continue;
                }
                for key in ["symbols", "weak-symbols", "thread-local-symbols"] {
                    if let Some(list) = block[key].as_vec() {
                        exports.extend(list.iter().filter_map(Yaml::as_str).map(String::from));
                    }
                }
            }
        }
        let mut reexports = Vec::new();
        for block in doc["reexported-libraries"].as_vec().into_iter().flatten() {
            if block_applies(block, arch) {
                if let Some(list) = block["libraries"].as_vec() {
                    reexports.extend(list.iter().filter_map(Yaml::as_str).map(String::from));
                }
            }
        }
        out.push(StubLibrary {
            install_name: install_name.to_string(),
            exports,
            reexports,
        });
    }
    Ok(out)
}

fn block_applies(block: &Yaml, arch: &str) -> bool {
    let list = block["targets"]
        .as_vec()
        .or_else(|| block["archs"].as_vec())
        .cloned()
        .unwrap_or_default();
    list.iter().filter_map(Yaml::as_str).any(|t| {
        // v4 target: `arm64e-macos`, `arm64e.x1-maccatalyst`; v3 arch: `arm64`.
        let (a, platform) = t.split_once('-').unwrap_or((t, "macos"));
        let a = a.split('.').next().unwrap_or(a);
        platform == "macos"
            && (a == arch
                || (arch == "arm64" && a == "arm64e")
                || (arch == "x86_64" && a == "x86_64h"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STUB: &str = "--- !tapi-tbd
tbd-version:     4
targets:         [ x86_64-macos, arm64e-macos ]
install-name:    '/usr/lib/libSystem.B.dylib'
reexported-libraries:
  - targets:         [ x86_64-macos, arm64e-macos ]
    libraries:       [ '/usr/lib/system/libsystem_c.dylib' ]
exports:
  - targets:         [ x86_64-macos, arm64e-macos ]
    symbols:         [ _both ]
  - targets:         [ x86_64-macos ]
    symbols:         [ _x86_only ]
    weak-symbols:    [ _weak_x86 ]
reexports:
  - targets:         [ arm64e-macos, arm64e-maccatalyst ]
    symbols:         [ _arm_reexport ]
...
--- !tapi-tbd
tbd-version:     4
targets:         [ arm64e-macos ]
install-name:    '/usr/lib/system/libsystem_c.dylib'
parent-umbrella:
  - targets:         [ arm64e-macos ]
    umbrella:        System
exports:
  - targets:         [ arm64e-macos ]
    symbols:         [ _malloc, _free ]
    thread-local-symbols: [ _tls ]
  - targets:         [ arm64e-maccatalyst ]
    symbols:         [ _catalyst_only ]
...
";

    #[test]
    fn parse__per_document_and_architecture() {
        let arm = parse(STUB, "arm64").unwrap();
        assert_eq!(arm.len(), 2);
        assert_eq!(arm[0].install_name, "/usr/lib/libSystem.B.dylib");
        let mut a: Vec<_> = arm[0].exports.iter().cloned().collect();
        a.sort();
        assert_eq!(a, ["_arm_reexport", "_both"]);
        let mut c: Vec<_> = arm[1].exports.iter().cloned().collect();
        c.sort();
        assert_eq!(c, ["_free", "_malloc", "_tls"]);
        assert_eq!(arm[0].reexports, ["/usr/lib/system/libsystem_c.dylib"]);
        assert!(arm[1].reexports.is_empty());

        let x86 = parse(STUB, "x86_64").unwrap();
        let mut x: Vec<_> = x86[0].exports.iter().cloned().collect();
        x.sort();
        assert_eq!(x, ["_both", "_weak_x86", "_x86_only"]);
        assert!(x86[1].exports.is_empty());
    }

    #[test]
    fn parse__v3_archs() {
        let v3 = "--- !tapi-tbd-v3\narchs: [ arm64 ]\ninstall-name: /usr/lib/libresolv.9.dylib\nexports:\n  - archs: [ arm64 ]\n    symbols: [ _res_9_init ]\n...\n";
        let libs = parse(v3, "arm64").unwrap();
        assert!(libs[0].exports.contains("_res_9_init"));
    }

    /// The cross lane's hand-written stubs carry comments between the tag and the keys.
    #[test]
    fn parse__comments_and_arm64_targets() {
        let stub = "--- !tapi-tbd\n# a comment\n# another\ntbd-version: 4\ntargets: [ x86_64-macos, arm64-macos ]\ninstall-name: '/usr/lib/libresolv.9.dylib'\nexports:\n  - targets: [ x86_64-macos, arm64-macos ]\n    symbols: [ _res_9_ninit,\n               _res_9_nclose ]\n...\n";
        let libs = parse(stub, "arm64").unwrap();
        assert_eq!(libs[0].install_name, "/usr/lib/libresolv.9.dylib");
        assert!(libs[0].exports.contains("_res_9_nclose"));
        assert_eq!(libs[0].exports.len(), 2);
    }

    #[test]
    fn parse__rejects_garbage() {
        assert!(parse("key: [unclosed", "arm64").is_err());
        assert!(parse("foo: 1\n", "arm64").is_err());
    }
}
