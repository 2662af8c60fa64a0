//! Ad-hoc code signatures of Mach-O files: a small signer ([`sign`]) and an independent
//! verifier ([`verify`]), on the layout Apple documents in xnu `osfmk/kern/cs_blobs.h`
//! (xnu-11417.101.15): an embedded-signature SuperBlob (`0xfade0cc0`) at the end of
//! `__LINKEDIT`, named by `LC_CODE_SIGNATURE`, holding a CodeDirectory (`0xfade0c02`) whose
//! code slots are the SHA-256 of every 4 KiB page of the file up to the signature, an empty
//! requirements set (`0xfade0c01`) and an empty CMS wrapper (`0xfade0b01`), as `codesign -s -`
//! writes for an ad-hoc signature (flags `CS_ADHOC`, no certificate).
//!
//! Why our own signer and not the `apple-codesign` crate's: an ad-hoc signature needs SHA-256
//! (the `sha2` crate the driver has) and three blobs; `apple-codesign` adds about 300 crates
//! to a driver that CI compiles from nothing, and its `ring` cannot be built for macOS on the
//! Linux CI host (docs/PACKAGING.md has the figures). The verifier is written apart from the
//! signer (it shares only the load-command reader), checks every page hash against the file's
//! bytes and the CodeDirectory's own consistency, and accepts the signatures zig's linker
//! writes (`CS_LINKER_SIGNED`), which this signer did not make. The build driver's
//! `apple-codesign` feature adds that crate as a second verifier of every bottle file.
//!
//! Arm64 macOS refuses to run code without a valid signature; a file changed after linking
//! (an install name rewritten) must be signed again, which is what [`sign`] is for.

//!
//! Shared by the build driver (the bottle's keg) and the node tool (`slurm-mac install
//! --from-keg` signs the root-owned copy of a keg after rewriting its prefix).

pub mod layout;
mod sign;
mod verify;

pub use layout::Layout;
pub use sign::sign;
pub use verify::{Verified, identifier, verify};

/// Magic numbers and slots from xnu `osfmk/kern/cs_blobs.h`.
pub mod consts {
    pub const CSMAGIC_REQUIREMENTS: u32 = 0xfade_0c01;
    pub const CSMAGIC_CODEDIRECTORY: u32 = 0xfade_0c02;
    pub const CSMAGIC_EMBEDDED_SIGNATURE: u32 = 0xfade_0cc0;
    pub const CSMAGIC_BLOBWRAPPER: u32 = 0xfade_0b01;
    pub const CSSLOT_CODEDIRECTORY: u32 = 0;
    pub const CSSLOT_REQUIREMENTS: u32 = 2;
    pub const CSSLOT_ALTERNATE_CODEDIRECTORIES: u32 = 0x1000;
    pub const CSSLOT_SIGNATURESLOT: u32 = 0x10000;
    pub const CS_ADHOC: u32 = 0x2;
    pub const CS_LINKER_SIGNED: u32 = 0x2_0000;
    pub const CS_EXECSEG_MAIN_BINARY: u64 = 0x1;
    pub const CS_SUPPORTSEXECSEG: u32 = 0x2_0400;
    pub const CS_HASHTYPE_SHA256: u8 = 2;
    pub const CS_SHA256_LEN: u8 = 32;
    /// log2 of the 4 KiB pages codesign hashes (on arm64 too).
    pub const PAGE_SHIFT: u8 = 12;
    pub const LC_CODE_SIGNATURE: u32 = 0x1d;
}
