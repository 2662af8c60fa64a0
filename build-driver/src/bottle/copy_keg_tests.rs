//! The node tool's root-owned copy of a keg (`slurm-mac copy-keg`, build-driver/node/src/keg)
//! on real Mach-O files linked by zig: the Homebrew prefix in a C string and in a dylib's
//! install name is overwritten in place, and the file is signed again so that both verifiers
//! (ours and, with the feature, apple-codesign) accept it; without the new signature the
//! rewritten file is refused.

use super::codesign;
use crate::testing::zig_macho;
use slurm_mac::keg::relocate;

const P: &str = "/opt/homebrew";
const R: &str = "/opt/slurmmac";

fn has(data: &[u8], s: &str) -> bool {
    data.windows(s.len()).any(|w| w == s.as_bytes())
}

fn relocated_file_verifies(triple: &str) {
    let d = tempfile::tempdir().unwrap();
    let program = format!(
        "#include <stdio.h>\nconst char *conf = \"{P}/etc/slurm/slurm.conf\";\nint main(void){{puts(conf);return 0;}}\n"
    );
    let Some(exe) = zig_macho(d.path(), triple, "slurmd", &program, None) else {
        return;
    };
    let id = format!("{P}/opt/slurm-wlm/lib/libslurmfull.dylib");
    let lib = zig_macho(
        d.path(),
        triple,
        "libslurmfull.dylib",
        "int x(void){return 1;}\n",
        Some(&id),
    )
    .unwrap();
    for f in [exe, lib] {
        let data = std::fs::read(&f).unwrap();
        assert!(
            has(&data, P),
            "{}: the fixture names no prefix",
            f.display()
        );
        let unsigned = relocate::rewrite(&data, P.as_bytes(), R.as_bytes()).unwrap();
        assert!(
            codesign::verify(&unsigned).is_err(),
            "{}: rewritten bytes still verify",
            f.display()
        );
        let (new, changed) = relocate::file(&f, data.clone(), P, R).unwrap();
        assert!(changed);
        assert!(!has(&new, P), "{}: the prefix is left", f.display());
        assert!(has(&new, &format!("{R}/")), "{}", f.display());
        codesign::bottle_verdict(&new).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        // zig signs arm64 files only; an unsigned file gets its name as identifier.
        let before = codesign::verify(&data).map(|v| v.identifier);
        let name = f.file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(
            codesign::verify(&new).unwrap().identifier,
            before.unwrap_or(name)
        );
    }
}

#[test]
fn copy_keg__arm64_prefix_rewritten_in_place_and_signed_again() {
    relocated_file_verifies("aarch64-apple-darwin");
}

#[test]
fn copy_keg__x86_64_prefix_rewritten_in_place_and_signed_again() {
    relocated_file_verifies("x86_64-apple-darwin");
}
