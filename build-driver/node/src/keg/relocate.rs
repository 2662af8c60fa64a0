//! The Homebrew prefix inside a keg's files, replaced by the copy's root of the same length.
//!
//! Slurm compiles its paths into the programs (the keg for `PluginDir` and slurmstepd, the
//! Homebrew prefix's `etc/slurm` and `var`), and the bottle's dylibs name each other by the
//! formula's opt path. Those strings sit in `__TEXT,__cstring`, in load commands and in text
//! files. A linker may let one string end inside another (tail merging), so a string cannot
//! be moved or shortened safely: the root must have exactly as many bytes as the prefix, and
//! every occurrence is overwritten in place. A Mach-O file that changed is signed again (an
//! arm64 Mac refuses a file whose page hashes no longer match) and its new signature checked.

use driver_common::codesign;
use driver_common::error::{Error, Result};
use std::path::Path;

/// Bytes a path component may continue with: an occurrence of the prefix followed by one of
/// them is another path (`/opt/homebrew2`), not ours.
fn continues_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+' | b'@')
}

/// `data` with every occurrence of `from` (not followed by a name byte) overwritten by `to`;
/// `None` when there is none. `from` and `to` have the same length.
pub fn rewrite(data: &[u8], from: &[u8], to: &[u8]) -> Option<Vec<u8>> {
    assert_eq!(
        from.len(),
        to.len(),
        "a relocation keeps every string's length"
    );
    let mut out: Option<Vec<u8>> = None;
    let mut at = 0;
    while let Some(i) = find(&data[at..], from) {
        let start = at + i;
        let end = start + from.len();
        if data.get(end).is_none_or(|&b| !continues_name(b)) {
            out.get_or_insert_with(|| data.to_vec())[start..end].copy_from_slice(to);
        }
        at = start + 1;
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A thin 64-bit Mach-O file (the bottle's only kind); a universal one is refused below.
pub fn is_macho(data: &[u8]) -> bool {
    data.starts_with(&[0xcf, 0xfa, 0xed, 0xfe])
}

fn is_universal(data: &[u8]) -> bool {
    data.starts_with(&[0xca, 0xfe, 0xba, 0xbe]) || data.starts_with(&[0xbe, 0xba, 0xfe, 0xca])
}

/// The relocated bytes of the file at `path` (for messages) and whether they changed. A
/// Mach-O file that changed is signed ad hoc again, keeping its identifier, and verified.
pub fn file(path: &Path, data: Vec<u8>, from: &str, to: &str) -> Result<(Vec<u8>, bool)> {
    let Some(mut new) = rewrite(&data, from.as_bytes(), to.as_bytes()) else {
        return Ok((data, false));
    };
    if is_universal(&new) {
        return Err(Error::file(
            path,
            format!(
                "is a universal Mach-O file naming {from}: the copy re-signs thin files only; \
                 reinstall the formula from its bottle for this Mac's architecture"
            ),
        ));
    }
    if is_macho(&new) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        codesign::sign(&mut new, &name)
            .and_then(|()| codesign::verify(&new).map(|_| ()))
            .map_err(|e| {
                Error::file(
                    path,
                    format!(
                        "cannot be signed again after its prefix was rewritten ({e}); \
                         reinstall the formula and run this again"
                    ),
                )
            })?;
    }
    Ok((new, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &[u8] = b"/opt/homebrew";
    const R: &[u8] = b"/opt/slurmmac";

    #[test]
    fn rewrite__every_occurrence_in_place_but_not_a_longer_name() {
        let t = b"\0/opt/homebrew/Cellar/slurm-wlm/24.11.5/lib/slurm\0/opt/homebrew\0-L/opt/homebrew/lib /opt/homebrew2/x /opt/homebrew.old";
        let out = rewrite(t, P, R).unwrap();
        assert_eq!(out.len(), t.len());
        let s = String::from_utf8(out).unwrap();
        assert_eq!(
            s,
            "\0/opt/slurmmac/Cellar/slurm-wlm/24.11.5/lib/slurm\0/opt/slurmmac\0-L/opt/slurmmac/lib /opt/homebrew2/x /opt/homebrew.old"
        );
        assert_eq!(rewrite(b"/usr/local/lib", P, R), None);
    }

    #[test]
    fn file__text_changes_without_signing_and_a_universal_macho_is_refused() {
        let (out, changed) = file(
            Path::new("slurm.pc"),
            b"prefix=/opt/homebrew/Cellar/slurm-wlm/1\n".to_vec(),
            "/opt/homebrew",
            "/opt/slurmmac",
        )
        .unwrap();
        assert!(changed);
        assert_eq!(out, b"prefix=/opt/slurmmac/Cellar/slurm-wlm/1\n");
        let mut fat = vec![0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2];
        fat.extend_from_slice(b"/opt/homebrew/lib\0");
        let e = file(Path::new("x"), fat, "/opt/homebrew", "/opt/slurmmac").unwrap_err();
        driver_common::testing::assert_mentions(&e.to_string(), &["universal", "x"]);
    }
}
