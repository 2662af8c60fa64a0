use super::super::tests::{hello_program, text_byte};
use super::super::{Layout, consts, layout, sign};
use super::*;
use std::time::{Duration, Instant};

#[test]
fn verify_both__accepts_zigs_and_our_signatures_and_both_reject_a_flipped_page_byte() {
    let Some(mut data) = hello_program("aarch64-apple-darwin") else {
        return;
    };
    // zig's linker signature, then ours: both verifiers accept each.
    assert_eq!(verify_both(&data).unwrap().identifier, "hello");
    sign(&mut data, "hello").unwrap();
    assert_eq!(verify_both(&data).unwrap().flags, consts::CS_ADHOC);
    verify(&data).unwrap();
    let mut bad = data.clone();
    let at = text_byte(&data);
    bad[at] ^= 0x01;
    // Our signer hashes 4 KiB pages: both name the page of the flipped byte.
    let page = at >> consts::PAGE_SHIFT;
    match verify_both(&bad) {
        Err(Disagreement::Both { ours, apple }) => {
            crate::testing::assert_mentions(
                &ours,
                &[&format!("page {page} "), "does not match its hash"],
            );
            crate::testing::assert_mentions(
                &apple.to_string(),
                &[
                    "apple-codesign: ",
                    &format!("code digest mismatch for entry {page};"),
                ],
            );
        }
        other => panic!("both verifiers must reject a flipped page byte: {other:?}"),
    }
}

#[test]
fn apple_verify__rejects_a_missing_signature_and_names_why() {
    let Some(data) = hello_program("aarch64-apple-darwin") else {
        return;
    };
    let l = Layout::parse(&data).unwrap();
    let (lc, _, _) = l.signature.unwrap();
    // LC_CODE_SIGNATURE turned into an unknown command: no signature for either verifier.
    let mut bad = data.clone();
    layout::put_le32(&mut bad, lc, 0x7fff_0000);
    let e = verify_both(&bad).unwrap_err().to_string();
    crate::testing::assert_mentions(
        &e,
        &[
            "rejected by both verifiers",
            "not signed",
            "no LC_CODE_SIGNATURE",
        ],
    );
}

#[test]
fn apple_sign__its_ad_hoc_signature_passes_our_verifier() {
    let Some(data) = hello_program("aarch64-apple-darwin") else {
        return;
    };
    let mut settings = apple_codesign::SigningSettings::default();
    settings.set_binary_identifier(apple_codesign::SettingsScope::Main, "hello-by-apple");
    let mut signed = Vec::new();
    apple_codesign::MachOSigner::new(&data)
        .unwrap()
        .write_signed_binary(&settings, &mut signed)
        .unwrap();
    assert_ne!(signed, data, "apple-codesign signed again");
    let v = verify_both(&signed).unwrap();
    assert_eq!(v.identifier, "hello-by-apple");
    assert!(v.flags & consts::CS_ADHOC != 0, "{:#x}", v.flags);
}

/// The Mach-O files of the bottle named by `SLURM_BOTTLE` (a `.bottle.tar.gz`), by name.
fn bottle_macho_files(bottle: &str) -> Vec<(String, Vec<u8>)> {
    let file = std::fs::File::open(bottle).unwrap();
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut out = Vec::new();
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut data).unwrap();
        if crate::macho::inspect(&data).is_ok() {
            out.push((e.path().unwrap().display().to_string(), data));
        }
    }
    out
}

/// A bottle made elsewhere (`cargo xtask bottle`, or CI's), given as `SLURM_BOTTLE`: both
/// verifiers accept every Mach-O file, each verifier's time printed; a flipped byte in a
/// signed page of the first one, both reject.
#[test]
fn verify_both__every_mach_o_of_a_real_bottle() {
    let Ok(bottle) = std::env::var("SLURM_BOTTLE") else {
        eprintln!("SKIP: SLURM_BOTTLE (a .bottle.tar.gz) is not set");
        return;
    };
    let files = bottle_macho_files(&bottle);
    assert!(!files.is_empty(), "no Mach-O file in {bottle}");
    let (mut pages, mut ours, mut apple) = (0, Duration::ZERO, Duration::ZERO);
    for (name, data) in &files {
        let t = Instant::now();
        pages += super::super::verify(data)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .pages;
        ours += t.elapsed();
        let t = Instant::now();
        verify(data).unwrap_or_else(|e| panic!("{name}: {e}"));
        apple += t.elapsed();
    }
    eprintln!(
        "{} Mach-O files, {pages} pages: ours {:.2} s, apple-codesign {:.2} s",
        files.len(),
        ours.as_secs_f64(),
        apple.as_secs_f64()
    );
    let (name, data) = &files[0];
    let mut bad = data.clone();
    bad[text_byte(data)] ^= 0x01;
    assert!(
        matches!(verify_both(&bad), Err(Disagreement::Both { .. })),
        "{name}: {:?}",
        verify_both(&bad)
    );
}
