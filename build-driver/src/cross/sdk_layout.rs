//! The memory layout of the resolver types the zig lane declares itself
//! (`build-driver/cross-sdk/include/{resolv.h,arpa/nameser.h}`), and the values of the
//! constants its stand-ins define (`NS_*`, `MAXNS`..., the `PT_*` requests of `sys/ptrace.h`).
//!
//! Slurm allocates `struct __res_state`, `ns_msg` and `ns_rr` and libresolv fills them, so
//! the stand-in declarations must match the layout macOS's libresolv was built with, or a
//! Mach-O built by the lane would corrupt memory on a Mac. The probe ([`probe_source`]) is
//! compiled with zig for each Apple target; its data (sizes, alignments, member offsets,
//! constants, and the bytes of a resolver state whose `ndots`/`nsort` bit-fields are set) is
//! compared with [`RECORDED`]: the figures the same probe gives against the macOS 12.0 SDK's
//! own headers, measured identically for arm64 and x86_64. With `SLURM_ON_MAC_SDK_INCLUDE=<SDK>/usr/include` the
//! test also compiles the probe against that SDK and compares live.

/// (what is measured, the C expression) in the order of the probe's array.
pub const MEASURES: &[(&str, &str)] = &[
    ("sizeof(struct __res_state)", "sizeof(RS)"),
    ("alignof(struct __res_state)", "_Alignof(RS)"),
    ("retrans", "offsetof(RS, retrans)"),
    ("retry", "offsetof(RS, retry)"),
    ("options", "offsetof(RS, options)"),
    ("nscount", "offsetof(RS, nscount)"),
    ("nsaddr_list", "offsetof(RS, nsaddr_list)"),
    ("id", "offsetof(RS, id)"),
    ("dnsrch", "offsetof(RS, dnsrch)"),
    ("defdname", "offsetof(RS, defdname)"),
    ("pfcode", "offsetof(RS, pfcode)"),
    ("sort_list", "offsetof(RS, sort_list)"),
    ("res_h_errno", "offsetof(RS, res_h_errno)"),
    ("sizeof(ns_msg)", "sizeof(ns_msg)"),
    ("alignof(ns_msg)", "_Alignof(ns_msg)"),
    ("ns_msg._msg", "offsetof(ns_msg, _msg)"),
    ("ns_msg._eom", "offsetof(ns_msg, _eom)"),
    ("ns_msg._id", "offsetof(ns_msg, _id)"),
    ("ns_msg._flags", "offsetof(ns_msg, _flags)"),
    ("ns_msg._counts", "offsetof(ns_msg, _counts)"),
    ("ns_msg._sections", "offsetof(ns_msg, _sections)"),
    ("ns_msg._sect", "offsetof(ns_msg, _sect)"),
    ("ns_msg._rrnum", "offsetof(ns_msg, _rrnum)"),
    ("ns_msg._msg_ptr", "offsetof(ns_msg, _msg_ptr)"),
    ("sizeof(ns_rr)", "sizeof(ns_rr)"),
    ("alignof(ns_rr)", "_Alignof(ns_rr)"),
    ("ns_rr.name", "offsetof(ns_rr, name)"),
    ("ns_rr.type", "offsetof(ns_rr, type)"),
    ("ns_rr.rr_class", "offsetof(ns_rr, rr_class)"),
    ("ns_rr.ttl", "offsetof(ns_rr, ttl)"),
    ("ns_rr.rdlength", "offsetof(ns_rr, rdlength)"),
    ("ns_rr.rdata", "offsetof(ns_rr, rdata)"),
    ("ns_s_an", "ns_s_an"),
    ("ns_s_ar", "ns_s_ar"),
    ("ns_s_max", "ns_s_max"),
    ("NS_PACKETSZ", "NS_PACKETSZ"),
    ("NS_MAXDNAME", "NS_MAXDNAME"),
    ("NS_INT16SZ", "NS_INT16SZ"),
    ("NS_INT32SZ", "NS_INT32SZ"),
    ("MAXNS", "MAXNS"),
    ("MAXDNSRCH", "MAXDNSRCH"),
    ("MAXRESOLVSORT", "MAXRESOLVSORT"),
    ("PT_TRACE_ME", "PT_TRACE_ME"),
    ("PT_CONTINUE", "PT_CONTINUE"),
    ("PT_KILL", "PT_KILL"),
    ("PT_STEP", "PT_STEP"),
    ("PT_ATTACH", "PT_ATTACH"),
    ("PT_DETACH", "PT_DETACH"),
    ("PT_DENY_ATTACH", "PT_DENY_ATTACH"),
];

/// The values of [`MEASURES`] against the macOS 12.0 SDK headers (arm64 and x86_64 alike).
/// (Function prototypes, as in `util.h`, were compared by reading; a value probe cannot.)
pub const RECORDED: &[u64] = &[
    552, 8, 0, 4, 8, 16, 20, 68, 72, 128, 384, 396, 496, // struct __res_state
    80, 8, 0, 8, 16, 18, 20, 32, 64, 68, 72, // ns_msg
    1048, 8, 0, 1026, 1028, 1032, 1036, 1040, // ns_rr
    1, 3, 4, 512, 1025, 2, 4, // ns_sect, NS_* sizes
    3, 6, 10, // MAXNS, MAXDNSRCH, MAXRESOLVSORT
    0, 7, 8, 9, 10, 11, 31, // PT_* requests (sys/ptrace.h)
];

/// The non-zero bytes of a `struct __res_state` with `ndots = 9, nsort = 6` and every other
/// member zero, against the macOS 12.0 SDK: both 4-bit fields share byte 392.
pub const RECORDED_BITFIELD_BYTES: &[(usize, u8)] = &[(392, 0x69)];

/// The C source of the probe: two data symbols, `slurm_on_mac_layout` (the [`MEASURES`] as
/// `unsigned long long`) and `slurm_on_mac_bits` (the bit-field pattern).
pub fn probe_source() -> String {
    let mut s = String::from(
        "#include <sys/types.h>\n#include <netinet/in.h>\n#include <stddef.h>\n\
         #include <arpa/nameser.h>\n#include <resolv.h>\n#include <sys/ptrace.h>\n\
         #define RS struct __res_state\n\
         const unsigned long long slurm_on_mac_layout[] = {\n",
    );
    for (_, expr) in MEASURES {
        s.push_str(&format!("\t{expr},\n"));
    }
    s.push_str(
        "};\nconst union {\n\tRS s;\n\tunsigned char b[sizeof(RS)];\n} slurm_on_mac_bits = \
         { .s = { .ndots = 9, .nsort = 6 } };\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cross::zig::{find, install_hint};
    use object::{Object, ObjectSection, ObjectSymbol};
    use std::path::Path;
    use xshell::Shell;

    /// What one compilation of the probe measured.
    #[derive(Debug, PartialEq)]
    struct Layout {
        values: Vec<u64>,
        bitfield_bytes: Vec<(usize, u8)>,
    }

    fn symbol_bytes<'a>(file: &'a object::File<'a>, name: &str, len: usize) -> &'a [u8] {
        let sym = file
            .symbols()
            .find(|s| s.name() == Ok(name))
            .unwrap_or_else(|| panic!("{name} not in the probe object"));
        let section = file
            .section_by_index(sym.section_index().expect("defined symbol"))
            .unwrap();
        let start = (sym.address() - section.address()) as usize;
        &section.data().unwrap()[start..start + len]
    }

    fn measure(zig: &Path, zig_target: &str, include: &Path, dir: &Path) -> Layout {
        let src = dir.join("probe.c");
        std::fs::write(&src, probe_source()).unwrap();
        let obj = dir.join(format!("probe-{zig_target}.o"));
        crate::testing::output_ok(
            std::process::Command::new(zig)
                .args(["cc", "-target", zig_target, "-c", "-isystem"])
                .arg(include)
                .arg(&src)
                .arg("-o")
                .arg(&obj),
            &format!(
                "probe does not compile for {zig_target} with {}",
                include.display()
            ),
        );
        let bytes = std::fs::read(&obj).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        let raw = symbol_bytes(&file, "_slurm_on_mac_layout", 8 * MEASURES.len());
        let values: Vec<u64> = raw
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let bits = symbol_bytes(&file, "_slurm_on_mac_bits", values[0] as usize);
        let bitfield_bytes = bits
            .iter()
            .enumerate()
            .filter(|(_, b)| **b != 0)
            .map(|(i, b)| (i, *b))
            .collect();
        Layout {
            values,
            bitfield_bytes,
        }
    }

    fn explain(got: &Layout, want: &Layout) -> String {
        MEASURES
            .iter()
            .zip(got.values.iter().zip(&want.values))
            .filter(|(_, (g, w))| g != w)
            .map(|((name, _), (g, w))| format!("{name}: {g}, expected {w}\n"))
            .collect::<String>()
            + &format!(
                "bit-field bytes: {:?}, expected {:?}",
                got.bitfield_bytes, want.bitfield_bytes
            )
    }

    #[test]
    fn recorded__one_value_per_measure() {
        assert_eq!(RECORDED.len(), MEASURES.len());
    }

    /// With real zig: the stand-in headers give the SDK's layout and constants on both Apple CPUs.
    #[test]
    fn cross_sdk__stand_ins_have_the_sdk_layout_and_values() {
        let sh = Shell::new().unwrap();
        let Ok(crate::cross::zig::Zig { path: zig, .. }) = find(&sh) else {
            eprintln!("skipped: zig not found ({})", install_hint());
            return;
        };
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let ours = crate::cross::zig::sdk_dir(root).join("include");
        let sdk = std::env::var_os("SLURM_ON_MAC_SDK_INCLUDE").map(std::path::PathBuf::from);
        if sdk.is_none() {
            eprintln!(
                "note: SLURM_ON_MAC_SDK_INCLUDE unset: compared with the recorded macOS 12.0 \
                 figures only"
            );
        }
        let recorded = Layout {
            values: RECORDED.to_vec(),
            bitfield_bytes: RECORDED_BITFIELD_BYTES.to_vec(),
        };
        let d = tempfile::tempdir().unwrap();
        for zig_target in ["aarch64-macos.12.0", "x86_64-macos.12.0"] {
            let got = measure(&zig, zig_target, &ours, d.path());
            assert!(
                got == recorded,
                "{zig_target}, cross-sdk vs recorded SDK layout:\n{}",
                explain(&got, &recorded)
            );
            if let Some(sdk) = &sdk {
                let live = measure(&zig, zig_target, sdk, d.path());
                assert!(
                    got == live,
                    "{zig_target}, cross-sdk vs {}:\n{}",
                    sdk.display(),
                    explain(&got, &live)
                );
            }
        }
    }
}
