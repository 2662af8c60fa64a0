//! Text relocation, as `brew bottle` does it before packing (Homebrew/brew `keg_relocate.rb`
//! at aad366f, `replace_locations_with_placeholders`): in every text file of the keg the
//! Cellar becomes `@@HOMEBREW_CELLAR@@` and the prefix `@@HOMEBREW_PREFIX@@`, longest first,
//! where the path is not glued to a preceding letter or digit (brew's
//! `RELOCATABLE_PATH_REGEX_PREFIX`: `(?<=-F|-I|-L|-isystem)` or `(?<![a-zA-Z0-9])`). The
//! changed files go into the receipt's `changed_files`; at pour brew rewrites exactly those
//! back (`replace_placeholders_with_locations`). Mach-O files are never text: their compiled
//! strings stay literal, which is why the formula pours only into the default prefix.

pub const PREFIX_PLACEHOLDER: &str = "@@HOMEBREW_PREFIX@@";
pub const CELLAR_PLACEHOLDER: &str = "@@HOMEBREW_CELLAR@@";

/// Whether brew treats the bytes as text: no NUL byte (brew asks `file`, which calls such
/// files text; Mach-O files and archives always hold NULs).
pub fn is_text(data: &[u8]) -> bool {
    !data.contains(&0)
}

fn boundary_ok(text: &[u8], at: usize) -> bool {
    if at == 0 || !text[at - 1].is_ascii_alphanumeric() {
        return true;
    }
    ["-F", "-I", "-L", "-isystem"]
        .iter()
        .any(|f| text[..at].ends_with(f.as_bytes()))
}

fn replace(text: &[u8], from: &str, to: &str) -> Vec<u8> {
    let f = from.as_bytes();
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with(f) && boundary_ok(text, i) {
            out.extend_from_slice(to.as_bytes());
            i += f.len();
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    out
}

/// The text with the keg's locations as placeholders; `None` when nothing matched.
pub fn to_placeholders(text: &[u8], cellar: &str, prefix: &str) -> Option<Vec<u8>> {
    let out = replace(
        &replace(text, cellar, CELLAR_PLACEHOLDER),
        prefix,
        PREFIX_PLACEHOLDER,
    );
    (out != text).then_some(out)
}

/// What brew writes back at pour.
#[cfg(test)]
pub fn from_placeholders(text: &[u8], cellar: &str, prefix: &str) -> Vec<u8> {
    replace(
        &replace(text, CELLAR_PLACEHOLDER, cellar),
        PREFIX_PLACEHOLDER,
        prefix,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    const C: &str = "/opt/homebrew/Cellar";
    const P: &str = "/opt/homebrew";

    #[test]
    fn to_placeholders__cellar_before_prefix_boundaries_and_flags() {
        let t = b"prefix=/opt/homebrew/Cellar/slurm-wlm/24.11.5\nCflags: -I/opt/homebrew/include\nconf /opt/homebrew/etc/slurm x/opt/homebrew y";
        let out = to_placeholders(t, C, P).unwrap();
        let s = String::from_utf8(out.clone()).unwrap();
        assert!(
            s.contains("prefix=@@HOMEBREW_CELLAR@@/slurm-wlm/24.11.5\n"),
            "{s}"
        );
        assert!(s.contains("-I@@HOMEBREW_PREFIX@@/include"), "{s}");
        assert!(s.contains("conf @@HOMEBREW_PREFIX@@/etc/slurm"), "{s}");
        // Glued to a letter: not a path, left as it is.
        assert!(s.contains("x/opt/homebrew y"), "{s}");
        assert_eq!(from_placeholders(&out, C, P), t.to_vec());
        assert_eq!(to_placeholders(b"nothing here", C, P), None);
    }

    #[test]
    fn is_text__nul_means_binary() {
        assert!(is_text(b"#!/bin/sh\n"));
        assert!(!is_text(b"\xcf\xfa\xed\xfe\0\0"));
    }
}
