//! The ad-hoc signer: replaces (or adds) a file's embedded signature with a SuperBlob of a
//! version-0x20400 CodeDirectory (SHA-256 page hashes, the executable segment), an empty
//! requirements set and an empty CMS wrapper, as `codesign -s -` does.

use super::consts::*;
use super::layout::{Layout, put_le32, put_le64};
use sha2::{Digest, Sha256};

/// The fixed part of a version-0x20400 CodeDirectory (up to `execSegFlags`).
const CD_HEADER: usize = 88;
/// Special slots: -1 (Info.plist, none) and -2 (requirements).
const SPECIAL_SLOTS: u32 = 2;

/// Signs `data` ad hoc, in place. `identifier` is kept from the old CodeDirectory when there
/// is one, else `fallback_identifier` (the file name, as codesign does).
pub fn sign(data: &mut Vec<u8>, fallback_identifier: &str) -> Result<(), String> {
    let layout = Layout::parse(data)?;
    let identifier =
        super::verify::identifier(data).unwrap_or_else(|| fallback_identifier.to_string());
    let page = 1usize << PAGE_SHIFT;
    // Where the signature goes: where the old one started, or the 16-aligned end of the
    // __LINKEDIT data for a file that had none.
    let (lc_offset, dataoff) = match layout.signature {
        Some((lc, off, _)) => (lc, off as usize),
        None => add_signature_command(data, &layout)?,
    };
    let sig_len = signature_len(&identifier, dataoff.div_ceil(page));
    let datasize = sig_len.next_multiple_of(16);
    let le = |v: usize| u32::try_from(v).map_err(|_| format!("{v} does not fit in 32 bits"));
    put_le32(data, lc_offset + 8, le(dataoff)?);
    put_le32(data, lc_offset + 12, le(datasize)?);
    let linkedit = layout.linkedit;
    let filesize = (dataoff + datasize) as u64 - linkedit.fileoff;
    let seg_page: u64 = if layout.cputype == object::macho::CPU_TYPE_ARM64.0 {
        0x4000
    } else {
        0x1000
    };
    put_le64(data, linkedit.lc_offset + 48, filesize);
    put_le64(
        data,
        linkedit.lc_offset + 32,
        linkedit.vmsize.max(filesize.next_multiple_of(seg_page)),
    );
    data.resize(dataoff, 0);
    let blob = superblob(data, &identifier, &layout)?;
    data.extend_from_slice(&blob);
    data.resize(dataoff + datasize, 0);
    Ok(())
}

/// Adds an `LC_CODE_SIGNATURE` command after the last one (into the header's padding) and
/// returns its offset and the signature's `dataoff`.
fn add_signature_command(data: &mut [u8], layout: &Layout) -> Result<(usize, usize), String> {
    let at = layout.commands_end;
    if at + 16 > layout.first_section {
        return Err(
            "no room in the header for LC_CODE_SIGNATURE (link with more header padding)".into(),
        );
    }
    let end = (layout.linkedit.fileoff + layout.linkedit.filesize) as usize;
    if end != data.len() {
        return Err("__LINKEDIT does not end the file: cannot append a signature".into());
    }
    let dataoff = end.next_multiple_of(16);
    for (i, v) in [LC_CODE_SIGNATURE, 16, dataoff as u32, 0]
        .into_iter()
        .enumerate()
    {
        put_le32(data, at + 4 * i, v);
    }
    put_le32(data, 16, layout.ncmds + 1);
    put_le32(data, 20, layout.sizeofcmds + 16);
    Ok((at, dataoff))
}

/// The SuperBlob's length for an identifier and `pages` code slots.
fn signature_len(identifier: &str, pages: usize) -> usize {
    let cd = CD_HEADER + identifier.len() + 1 + (SPECIAL_SLOTS as usize + pages) * 32;
    12 + 3 * 8 + cd + 12 + 8
}

/// The empty requirements set.
fn requirements() -> Vec<u8> {
    let mut v = Vec::new();
    for w in [CSMAGIC_REQUIREMENTS, 12, 0] {
        v.extend_from_slice(&w.to_be_bytes());
    }
    v
}

/// The CodeDirectory over `code` (the file up to the signature).
fn code_directory(code: &[u8], identifier: &str, layout: &Layout) -> Result<Vec<u8>, String> {
    let page = 1usize << PAGE_SHIFT;
    let pages = code.len().div_ceil(page);
    let ident_offset = CD_HEADER;
    let hash_offset = ident_offset + identifier.len() + 1 + SPECIAL_SLOTS as usize * 32;
    let length = hash_offset + pages * 32;
    let u32_of = |v: usize| u32::try_from(v).map_err(|_| format!("{v} does not fit in 32 bits"));
    let mut cd = Vec::with_capacity(length);
    for w in [
        CSMAGIC_CODEDIRECTORY,
        u32_of(length)?,
        CS_SUPPORTSEXECSEG,
        CS_ADHOC,
        u32_of(hash_offset)?,
        u32_of(ident_offset)?,
        SPECIAL_SLOTS,
        u32_of(pages)?,
        u32_of(code.len())?,
    ] {
        cd.extend_from_slice(&w.to_be_bytes());
    }
    cd.extend_from_slice(&[CS_SHA256_LEN, CS_HASHTYPE_SHA256, 0, PAGE_SHIFT]);
    cd.extend_from_slice(&0u32.to_be_bytes()); // spare2
    cd.extend_from_slice(&0u32.to_be_bytes()); // scatterOffset
    cd.extend_from_slice(&0u32.to_be_bytes()); // teamOffset
    cd.extend_from_slice(&0u32.to_be_bytes()); // spare3
    cd.extend_from_slice(&0u64.to_be_bytes()); // codeLimit64
    let exec_flags = if layout.filetype == object::macho::MH_EXECUTE.0 {
        CS_EXECSEG_MAIN_BINARY
    } else {
        0
    };
    for w in [layout.text.fileoff, layout.text.filesize, exec_flags] {
        cd.extend_from_slice(&w.to_be_bytes());
    }
    debug_assert_eq!(cd.len(), CD_HEADER);
    cd.extend_from_slice(identifier.as_bytes());
    cd.push(0);
    cd.extend_from_slice(&Sha256::digest(requirements())); // slot -2
    cd.extend_from_slice(&[0u8; 32]); // slot -1: no Info.plist
    for chunk in code.chunks(page) {
        cd.extend_from_slice(&Sha256::digest(chunk));
    }
    Ok(cd)
}

/// The whole embedded signature for `code`.
fn superblob(code: &[u8], identifier: &str, layout: &Layout) -> Result<Vec<u8>, String> {
    let cd = code_directory(code, identifier, layout)?;
    let req = requirements();
    let mut cms = Vec::new();
    for w in [CSMAGIC_BLOBWRAPPER, 8] {
        cms.extend_from_slice(&w.to_be_bytes());
    }
    let index_end = 12 + 3 * 8;
    let blobs = [
        (CSSLOT_CODEDIRECTORY, &cd),
        (CSSLOT_REQUIREMENTS, &req),
        (CSSLOT_SIGNATURESLOT, &cms),
    ];
    let total = index_end + blobs.iter().map(|(_, b)| b.len()).sum::<usize>();
    let mut out = Vec::with_capacity(total);
    for w in [CSMAGIC_EMBEDDED_SIGNATURE, total as u32, blobs.len() as u32] {
        out.extend_from_slice(&w.to_be_bytes());
    }
    let mut offset = index_end;
    for (slot, b) in &blobs {
        out.extend_from_slice(&slot.to_be_bytes());
        out.extend_from_slice(&(offset as u32).to_be_bytes());
        offset += b.len();
    }
    for (_, b) in &blobs {
        out.extend_from_slice(b);
    }
    Ok(out)
}
