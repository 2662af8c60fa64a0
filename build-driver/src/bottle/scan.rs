//! The scan that fails a bottle: no file may contain a directory of the build machine
//! ([`driver_common::util::host_paths`]: the project root, the cargo target directory, `$HOME`, cargo's
//! and rustup's homes). The compile maps those directories away at the source; this finds
//! anything that slipped through (a configure path, an rpath, a panic location).

use driver_common::util::host_paths::PathMap;

/// The byte strings to look for: each directory, as written. `$HOME` itself is not one
/// (root's home directory also appears in an example path of Slurm's own man pages); the
/// hidden directories below it are (`.cargo`, `.rustup` come as their own maps, plus
/// `.pyenv`, where zig is installed, `.cache` and `.local`).
pub fn needles(maps: &[PathMap]) -> Vec<Vec<u8>> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let mut v: Vec<Vec<u8>> = maps
        .iter()
        .filter(|m| Some(&m.from) != home.as_ref())
        .map(|m| m.from.as_os_str().as_encoded_bytes().to_vec())
        .collect();
    if let Some(h) = &home {
        for hidden in [".pyenv", ".cache", ".local"] {
            v.push(h.join(hidden).as_os_str().as_encoded_bytes().to_vec());
        }
    }
    v.sort();
    v.dedup();
    v
}

fn is_path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.+".contains(&b)
}

/// Every occurrence of a needle as a whole path component sequence: not followed by a byte
/// that would continue its last component (`/home/u` matches `/home/u/x` and `/home/u\0`, not
/// `/home/user`), and not preceded by one that would extend its first. Each hit is the string
/// around it, for the message.
pub fn hits(data: &[u8], needles: &[Vec<u8>]) -> Vec<String> {
    let mut out = Vec::new();
    for n in needles {
        if n.is_empty() {
            continue;
        }
        for at in memchr::memmem::find_iter(data, n) {
            let end = at + n.len();
            let before_ok = at == 0 || !is_path_byte(data[at - 1]);
            let after_ok = end == data.len() || !is_path_byte(data[end]);
            if before_ok && after_ok {
                let s = data[at..]
                    .iter()
                    .take_while(|b| b.is_ascii_graphic())
                    .take(160);
                out.push(String::from_utf8_lossy(&s.copied().collect::<Vec<u8>>()).into_owned());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits__whole_components_only() {
        let n = vec![b"/home/u".to_vec(), b"/w/proj".to_vec()];
        let data = b"x\0/home/u/.cargo/registry/src/libc/lib.rs\0/home/user\0a/w/proj\0/w/proj/target/x.c\0/w/project\0";
        let h = hits(data, &n);
        assert_eq!(
            h,
            vec![
                "/home/u/.cargo/registry/src/libc/lib.rs",
                "/w/proj/target/x.c"
            ]
        );
        assert!(hits(b"/opt/homebrew/etc/slurm", &n).is_empty());
    }
}
