use super::*;
use crate::testing::zig_macho;

const PROGRAM: &str = "#include <stdio.h>\nint main(void){puts(\"hello\");return 0;}\n";

pub(super) fn text_byte(data: &[u8]) -> usize {
    // A byte of __TEXT past the load commands: the code.
    let l = Layout::parse(data).unwrap();
    l.first_section + 8
}

/// The bytes of `hello` (PROGRAM) linked by zig for `target`; `None` without zig (the
/// reason printed: the test is skipped).
pub(super) fn hello_program(target: &str) -> Option<Vec<u8>> {
    let d = tempfile::tempdir().unwrap();
    let exe = zig_macho(d.path(), target, "hello", PROGRAM, None)?;
    Some(std::fs::read(exe).unwrap())
}

#[test]
fn verify__accepts_zigs_linker_signature_and_rejects_a_flipped_text_byte() {
    let Some(data) = hello_program("aarch64-apple-darwin") else {
        return;
    };
    let v = verify(&data).unwrap();
    assert_eq!(v.identifier, "hello");
    assert!(v.flags & consts::CS_LINKER_SIGNED != 0, "{:#x}", v.flags);
    let mut bad = data.clone();
    bad[text_byte(&data)] ^= 0x01;
    let e = verify(&bad).unwrap_err();
    crate::testing::assert_mentions(&e, &["page 0", "does not match its hash"]);
}

#[test]
fn sign__resigned_file_verifies_keeps_identifier_and_a_later_edit_fails() {
    let d = tempfile::tempdir().unwrap();
    let Some(lib) = zig_macho(
        d.path(),
        "aarch64-apple-darwin",
        "libx.dylib",
        "int f(void){return 42;}\n",
        Some("/opt/homebrew/opt/x/lib/libx.dylib"),
    ) else {
        return;
    };
    let mut data = std::fs::read(&lib).unwrap();
    // An edit in the header padding (where a longer install name goes) breaks the linker's signature.
    let at = Layout::parse(&data).unwrap().commands_end + 4;
    data[at] ^= 0x20;
    assert!(verify(&data).is_err());
    sign(&mut data, "fallback").unwrap();
    let v = verify(&data).unwrap();
    assert_eq!(v.identifier, "libx.dylib");
    assert_eq!(v.flags, consts::CS_ADHOC);
    assert!(v.pages >= 1);
    // Signing twice gives the same bytes (no time, no randomness).
    let mut again = data.clone();
    sign(&mut again, "fallback").unwrap();
    assert_eq!(again, data);
    let mut bad = data.clone();
    bad[text_byte(&data)] ^= 0x80;
    assert!(
        verify(&bad)
            .unwrap_err()
            .contains("does not match its hash")
    );
}

#[test]
fn verify__catches_an_inconsistent_code_directory() {
    let Some(mut data) = hello_program("aarch64-apple-darwin") else {
        return;
    };
    sign(&mut data, "hello").unwrap();
    let (_, dataoff, _) = Layout::parse(&data).unwrap().signature.unwrap();
    let sb = dataoff as usize;
    let cd_off = u32::from_be_bytes(data[sb + 16..sb + 20].try_into().unwrap()) as usize;
    let cd = sb + cd_off;
    // nCodeSlots one too few.
    let mut bad = data.clone();
    let n = u32::from_be_bytes(bad[cd + 28..cd + 32].try_into().unwrap());
    bad[cd + 28..cd + 32].copy_from_slice(&(n - 1).to_be_bytes());
    assert!(
        verify(&bad).unwrap_err().contains("code slots"),
        "{}",
        verify(&bad).unwrap_err()
    );
    // The requirements blob changed: special slot -2 no longer matches.
    let mut bad = data.clone();
    let last = data.len() - 1;
    let req = (sb..last)
        .rev()
        .find(|i| data[*i..].starts_with(&consts::CSMAGIC_REQUIREMENTS.to_be_bytes()))
        .unwrap();
    bad[req + 11] = 1;
    assert!(verify(&bad).unwrap_err().contains("special slot -2"));
    // codeLimit short of the signature: the last bytes would be unsigned.
    let mut bad = data.clone();
    let limit = u32::from_be_bytes(bad[cd + 32..cd + 36].try_into().unwrap());
    bad[cd + 32..cd + 36].copy_from_slice(&(limit - 16).to_be_bytes());
    assert!(verify(&bad).unwrap_err().contains("codeLimit"));
}

#[test]
fn sign__adds_a_signature_to_an_unsigned_file() {
    let Some(mut data) = hello_program("x86_64-apple-darwin") else {
        return;
    };
    if Layout::parse(&data).unwrap().signature.is_some() {
        // zig signed this one: remove the command to exercise the unsigned path.
        let l = Layout::parse(&data).unwrap();
        let (lc, off, _) = l.signature.unwrap();
        assert_eq!(
            lc + 16,
            l.commands_end,
            "LC_CODE_SIGNATURE is not the last command"
        );
        data.truncate(off as usize);
        data[lc..lc + 16].fill(0);
        layout::put_le32(&mut data, 16, l.ncmds - 1);
        layout::put_le32(&mut data, 20, l.sizeofcmds - 16);
        let le = l.linkedit;
        layout::put_le64(&mut data, le.lc_offset + 48, off as u64 - le.fileoff);
    }
    assert!(verify(&data).unwrap_err().contains("not signed"));
    sign(&mut data, "hello").unwrap();
    assert_eq!(verify(&data).unwrap().identifier, "hello");
}
