//! Where a thin 64-bit little-endian Mach-O file (arm64, x86_64) keeps what signing needs:
//! its load commands, `__TEXT`, `__LINKEDIT` and `LC_CODE_SIGNATURE`, read through `object`.

use super::consts::LC_CODE_SIGNATURE;
use object::LittleEndian as LE;
use object::macho;
use object::read::macho::{MachHeader, Section, Segment as _};

/// A segment's load command and its extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// File offset of the `LC_SEGMENT_64` command.
    pub lc_offset: usize,
    pub fileoff: u64,
    pub filesize: u64,
    pub vmsize: u64,
}

/// The parts of a Mach-O file a signature depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub filetype: u32,
    pub cputype: u32,
    pub ncmds: u32,
    pub sizeofcmds: u32,
    /// Where the load commands end (header + `sizeofcmds`).
    pub commands_end: usize,
    /// The lowest file offset of any section's contents: load commands may grow up to here.
    pub first_section: usize,
    pub text: Segment,
    pub linkedit: Segment,
    /// `LC_CODE_SIGNATURE`: its command's file offset, `dataoff` and `datasize`.
    pub signature: Option<(usize, u32, u32)>,
}

/// The size of a 64-bit Mach-O header.
pub const HEADER_SIZE: usize = 32;

impl Layout {
    /// Reads the layout; `Err` says why the file cannot be signed here.
    pub fn parse(data: &[u8]) -> Result<Layout, String> {
        let header = macho::MachHeader64::<LE>::parse(data, 0)
            .map_err(|_| "not a thin 64-bit little-endian Mach-O file".to_string())?;
        if !header.is_little_endian() {
            return Err("big-endian Mach-O is not supported".into());
        }
        let e = LE;
        let mut commands = header
            .load_commands(e, data, 0)
            .map_err(|err| format!("bad load commands: {err}"))?;
        let (mut text, mut linkedit, mut signature) = (None, None, None);
        let mut first_section = data.len();
        while let Some(lc) = commands
            .next()
            .map_err(|err| format!("bad load command: {err}"))?
        {
            let offset = usize::try_from(lc.offset()).map_err(|_| "offset overflow")?;
            if lc.cmd() == macho::LC_SEGMENT_64 {
                let Some((seg, section_data)) = lc
                    .segment_64()
                    .map_err(|err| format!("bad segment command: {err}"))?
                else {
                    continue;
                };
                let s = Segment {
                    lc_offset: offset,
                    fileoff: seg.fileoff.get(e),
                    filesize: seg.filesize.get(e),
                    vmsize: seg.vmsize.get(e),
                };
                for section in seg
                    .sections(e, section_data)
                    .map_err(|err| format!("bad sections: {err}"))?
                {
                    let off = section.offset.get(e) as usize;
                    let kind = section.flags(e).0 & macho::SECTION_TYPE;
                    let zerofill = [
                        macho::S_ZEROFILL,
                        macho::S_GB_ZEROFILL,
                        macho::S_THREAD_LOCAL_ZEROFILL,
                    ]
                    .iter()
                    .any(|z| u32::from(z.0) == kind);
                    if off != 0 && !zerofill {
                        first_section = first_section.min(off);
                    }
                }
                match &seg.segname {
                    n if n.starts_with(b"__TEXT\0") => text = Some(s),
                    n if n.starts_with(b"__LINKEDIT\0") => linkedit = Some(s),
                    _ => {}
                }
            } else if lc.cmd().0 == LC_CODE_SIGNATURE {
                let raw = lc.raw_data();
                if raw.len() < 16 {
                    return Err("LC_CODE_SIGNATURE is shorter than 16 bytes".into());
                }
                signature = Some((offset, le32(raw, 8), le32(raw, 12)));
            }
        }
        let sizeofcmds = header.sizeofcmds(e);
        Ok(Layout {
            filetype: header.filetype(e).0,
            cputype: header.cputype(e).0,
            ncmds: header.ncmds(e),
            sizeofcmds,
            commands_end: HEADER_SIZE + sizeofcmds as usize,
            first_section,
            text: text.ok_or("no __TEXT segment")?,
            linkedit: linkedit.ok_or("no __LINKEDIT segment")?,
            signature,
        })
    }
}

/// A little-endian u32 at `off` (the caller has checked the length).
pub fn le32(b: &[u8], off: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(w)
}

/// Writes a little-endian u32 at `off`.
pub fn put_le32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes a little-endian u64 at `off`.
pub fn put_le64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}
