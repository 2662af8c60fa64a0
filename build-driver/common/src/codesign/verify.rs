//! The verifier: reads the embedded signature from the file's bytes (it shares no code with
//! the signer but the load-command reader) and checks the SuperBlob, every CodeDirectory's
//! consistency and every page hash against the file.

use super::consts::*;
use super::layout::Layout;
use sha2::{Digest, Sha256};

/// What a valid signature says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub identifier: String,
    pub flags: u32,
    /// Code pages hashed (and checked).
    pub pages: usize,
}

fn be32(b: &[u8], off: usize) -> Result<u32, String> {
    b.get(off..off + 4)
        .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
        .ok_or_else(|| format!("signature truncated at byte {off}"))
}

fn be64(b: &[u8], off: usize) -> Result<u64, String> {
    Ok((u64::from(be32(b, off)?) << 32) | u64::from(be32(b, off + 4)?))
}

/// A SuperBlob's entries: (slot, blob bytes).
type Blobs<'a> = Vec<(u32, &'a [u8])>;

/// The signature's offset and the SuperBlob's entries.
fn superblob(data: &[u8]) -> Result<(usize, Blobs<'_>), String> {
    let layout = Layout::parse(data)?;
    let (_, dataoff, datasize) = layout.signature.ok_or("no LC_CODE_SIGNATURE: not signed")?;
    let (dataoff, datasize) = (dataoff as usize, datasize as usize);
    let end = dataoff
        .checked_add(datasize)
        .filter(|e| *e <= data.len())
        .ok_or("LC_CODE_SIGNATURE runs past the end of the file")?;
    let linkedit_end = (layout.linkedit.fileoff + layout.linkedit.filesize) as usize;
    if dataoff < layout.linkedit.fileoff as usize || end > linkedit_end {
        return Err("the signature is not inside __LINKEDIT".into());
    }
    let sig = &data[dataoff..end];
    if be32(sig, 0)? != CSMAGIC_EMBEDDED_SIGNATURE {
        return Err(format!("bad SuperBlob magic {:#x}", be32(sig, 0)?));
    }
    let length = be32(sig, 4)? as usize;
    if length > sig.len() || length < 12 {
        return Err(format!(
            "SuperBlob length {length} exceeds LC_CODE_SIGNATURE's {datasize}"
        ));
    }
    let sig = &sig[..length];
    let count = be32(sig, 8)? as usize;
    if count > 64 || 12 + count * 8 > length {
        return Err(format!("SuperBlob claims {count} entries"));
    }
    let mut blobs = Vec::with_capacity(count);
    for i in 0..count {
        let slot = be32(sig, 12 + i * 8)?;
        let off = be32(sig, 16 + i * 8)? as usize;
        if off < 12 + count * 8 {
            return Err(format!("blob of slot {slot:#x} overlaps the index"));
        }
        let blen = be32(sig, off + 4)? as usize;
        let blob = sig
            .get(off..off.checked_add(blen).ok_or("blob length overflow")?)
            .ok_or_else(|| format!("blob of slot {slot:#x} runs past the SuperBlob"))?;
        if blen < 8 {
            return Err(format!("blob of slot {slot:#x} is {blen} bytes"));
        }
        blobs.push((slot, blob));
    }
    Ok((dataoff, blobs))
}

/// The identifier of the file's (primary) CodeDirectory, if it has a readable one.
pub fn identifier(data: &[u8]) -> Option<String> {
    let (_, blobs) = superblob(data).ok()?;
    let cd = blobs.iter().find(|(s, _)| *s == CSSLOT_CODEDIRECTORY)?.1;
    let off = be32(cd, 20).ok()? as usize;
    let rest = cd.get(off..)?;
    let nul = rest.iter().position(|b| *b == 0)?;
    String::from_utf8(rest[..nul].to_vec()).ok()
}

/// Verifies the embedded ad-hoc signature of a thin Mach-O file.
pub fn verify(data: &[u8]) -> Result<Verified, String> {
    let layout = Layout::parse(data)?;
    let (dataoff, blobs) = superblob(data)?;
    let mut primary = None;
    for (slot, blob) in &blobs {
        let is_cd = *slot == CSSLOT_CODEDIRECTORY
            || (CSSLOT_ALTERNATE_CODEDIRECTORIES..CSSLOT_ALTERNATE_CODEDIRECTORIES + 5)
                .contains(slot);
        if !is_cd {
            continue;
        }
        let v = code_directory(data, blob, dataoff, &layout, &blobs)
            .map_err(|e| format!("CodeDirectory (slot {slot:#x}): {e}"))?;
        if *slot == CSSLOT_CODEDIRECTORY {
            primary = Some(v);
        }
    }
    let v = primary.ok_or("the SuperBlob has no CodeDirectory")?;
    if v.flags & CS_ADHOC == 0 {
        return Err(format!(
            "flags {:#x} lack CS_ADHOC (not an ad-hoc signature)",
            v.flags
        ));
    }
    Ok(v)
}

/// Checks one CodeDirectory: its fields against the file and itself, every code page and
/// the special slots of the blobs present.
fn code_directory(
    data: &[u8],
    cd: &[u8],
    dataoff: usize,
    layout: &Layout,
    blobs: &[(u32, &[u8])],
) -> Result<Verified, String> {
    let h = CdHeader::read(cd, dataoff)?;
    let identifier = h.identifier(cd)?;
    if h.version >= CS_SUPPORTSEXECSEG {
        let (base, limit) = (be64(cd, 64)?, be64(cd, 72)?);
        if base != layout.text.fileoff || limit > layout.text.filesize {
            return Err(format!(
                "executable segment {base:#x}+{limit:#x} is not __TEXT ({:#x}+{:#x})",
                layout.text.fileoff, layout.text.filesize
            ));
        }
    }
    h.check_pages(data, cd)?;
    h.check_specials(cd, blobs)?;
    Ok(Verified {
        identifier,
        flags: h.flags,
        pages: h.n_code,
    })
}

/// The fixed fields of a CodeDirectory that the checks use.
struct CdHeader {
    length: usize,
    version: u32,
    flags: u32,
    hash_offset: usize,
    ident_offset: usize,
    n_special: usize,
    n_code: usize,
    code_limit: usize,
    page: usize,
}

impl CdHeader {
    /// Reads the header and checks it against itself and the signature's offset `dataoff`.
    fn read(cd: &[u8], dataoff: usize) -> Result<CdHeader, String> {
        if be32(cd, 0)? != CSMAGIC_CODEDIRECTORY {
            return Err("bad magic".into());
        }
        let length = be32(cd, 4)? as usize;
        if length != cd.len() {
            return Err(format!(
                "length field {length} but blob is {} bytes",
                cd.len()
            ));
        }
        let version = be32(cd, 8)?;
        let flags = be32(cd, 12)?;
        let hash_offset = be32(cd, 16)? as usize;
        let ident_offset = be32(cd, 20)? as usize;
        let n_special = be32(cd, 24)? as usize;
        let n_code = be32(cd, 28)? as usize;
        let code_limit = be32(cd, 32)? as usize;
        let hdr = cd.get(36..40).ok_or("truncated header")?;
        let (hash_size, hash_type, page_shift) = (hdr[0] as usize, hdr[1], hdr[3]);
        if version < 0x2_0001 {
            return Err(format!("version {version:#x} is too old"));
        }
        if hash_type != CS_HASHTYPE_SHA256 || hash_size != 32 {
            return Err(format!(
                "hash type {hash_type}/size {hash_size}: only SHA-256 is checked"
            ));
        }
        if !(12..=16).contains(&page_shift) {
            return Err(format!("page size 2^{page_shift} is not a code page size"));
        }
        let h = CdHeader {
            length,
            version,
            flags,
            hash_offset,
            ident_offset,
            n_special,
            n_code,
            code_limit,
            page: 1usize << page_shift,
        };
        if h.code_limit != dataoff {
            return Err(format!(
                "codeLimit {} is not the signature's offset {dataoff}: bytes are unsigned or the signature is hashed",
                h.code_limit
            ));
        }
        if h.n_code != h.code_limit.div_ceil(h.page) {
            return Err(format!(
                "{} code slots for {} bytes of {}-byte pages",
                h.n_code, h.code_limit, h.page
            ));
        }
        Ok(h)
    }

    /// The identifier string, checked to lie between the header and the hash slots.
    fn identifier(&self, cd: &[u8]) -> Result<String, String> {
        let (length, hash_offset, n_code) = (self.length, self.hash_offset, self.n_code);
        let header_end = if self.version >= CS_SUPPORTSEXECSEG {
            88
        } else {
            44
        };
        let ident_offset = self.ident_offset;
        if ident_offset < header_end || ident_offset >= length {
            return Err(format!("identifier offset {ident_offset} outside the blob"));
        }
        let ident_bytes = &cd[ident_offset..];
        let nul = ident_bytes
            .iter()
            .position(|b| *b == 0)
            .ok_or("identifier is not NUL-terminated")?;
        let identifier = String::from_utf8_lossy(&ident_bytes[..nul]).into_owned();
        let specials_start = hash_offset
            .checked_sub(self.n_special * 32)
            .filter(|s| *s >= header_end)
            .ok_or("special slots overlap the header")?;
        if hash_offset + n_code * 32 != length {
            return Err(format!(
                "hashOffset {hash_offset} + {n_code} slots does not end the blob ({length})"
            ));
        }
        if ident_offset + nul >= specials_start {
            return Err("identifier overlaps the hash slots".into());
        }
        Ok(identifier)
    }

    /// Every code page of `data` against its hash slot.
    fn check_pages(&self, data: &[u8], cd: &[u8]) -> Result<(), String> {
        let (page, hash_offset) = (self.page, self.hash_offset);
        for i in 0..self.n_code {
            let start = i * page;
            let end = (start + page).min(self.code_limit);
            let want = &cd[hash_offset + i * 32..hash_offset + (i + 1) * 32];
            if Sha256::digest(&data[start..end]).as_slice() != want {
                return Err(format!(
                    "page {i} (bytes {start:#x}..{end:#x}) does not match its hash"
                ));
            }
        }
        Ok(())
    }

    /// The special slots: each matches its blob, or is zero where the blob is absent.
    fn check_specials(&self, cd: &[u8], blobs: &[(u32, &[u8])]) -> Result<(), String> {
        let hash_offset = self.hash_offset;
        for k in 1..=self.n_special {
            let want = &cd[hash_offset - k * 32..hash_offset - (k - 1) * 32];
            match blobs.iter().find(|(s, _)| *s as usize == k) {
                Some((_, blob)) => {
                    if Sha256::digest(blob).as_slice() != want {
                        return Err(format!("special slot -{k} does not match its blob"));
                    }
                }
                None if want.iter().all(|b| *b == 0) => {}
                None => {
                    return Err(format!(
                        "special slot -{k} names a blob the signature lacks"
                    ));
                }
            }
        }
        Ok(())
    }
}
