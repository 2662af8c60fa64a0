//! A second verifier beside ours ([`super::verify`]): the `apple-codesign` crate (the library
//! behind `rcodesign`, written by other people from the same xnu layout). Its
//! `verify_macho_data` parses the SuperBlob and the CodeDirectory, hashes every code page of
//! the file and compares them with the CodeDirectory's slots, and checks the special slots
//! against their blobs and the signature's place (the last data of `__LINKEDIT`, the last
//! segment).
//!
//! An ad-hoc signature has no CMS signature: `codesign -s -` and our signer write an empty CMS
//! wrapper, zig's linker none. `apple-codesign` reports both as problems (an empty wrapper
//! fails to parse as CMS; no wrapper is "no cryptographic signature"), so those two are
//! dropped when the crate's own reading of the CMS slot (`EmbeddedSignature::signed_data`)
//! finds nothing and the CodeDirectory carries `CS_ADHOC`. Every other problem rejects.

use super::Verified;
use apple_codesign::{
    CodeSignatureFlags, MachOBinary, VerificationProblem, VerificationProblemType,
    verify_macho_data,
};

/// Why `apple-codesign` rejects a file's signature.
#[derive(Debug, thiserror::Error)]
pub enum Rejected {
    #[error("apple-codesign cannot read the signature: {0}")]
    Unreadable(String),
    #[error(
        "apple-codesign finds a CMS signature or no CS_ADHOC flag (flags {flags:#x}): \
         the bottle carries ad-hoc signatures only"
    )]
    NotAdHoc { flags: u32 },
    #[error("apple-codesign: {}", .0.join("; "))]
    Problems(Vec<String>),
}

/// Both verifiers on one file disagree, or both reject it.
#[derive(Debug, thiserror::Error)]
pub enum Disagreement {
    #[error(
        "signature rejected by both verifiers: ours: {ours}; {apple}; \
         fix: sign the file after its last edit (bottle::codesign::sign)"
    )]
    Both { ours: String, apple: Rejected },
    #[error(
        "our verifier rejects the signature ({ours}) but apple-codesign accepts it; \
         fix: find which verifier is wrong (`rcodesign verify` on the file gives a third view)"
    )]
    OursOnly { ours: String },
    #[error(
        "our verifier accepts the signature but {apple}; \
         fix: find which verifier is wrong (`rcodesign verify` on the file gives a third view)"
    )]
    AppleOnly { apple: Rejected },
}

/// `apple-codesign`'s verdict on the ad-hoc signature of a thin Mach-O file.
pub fn verify(data: &[u8]) -> Result<(), Rejected> {
    let macho = MachOBinary::parse(data).map_err(|e| Rejected::Unreadable(e.to_string()))?;
    let signature = macho
        .code_signature()
        .map_err(|e| Rejected::Unreadable(e.to_string()))?
        .ok_or_else(|| Rejected::Unreadable("no LC_CODE_SIGNATURE".into()))?;
    let cd = signature
        .code_directory()
        .map_err(|e| Rejected::Unreadable(e.to_string()))?
        .ok_or_else(|| Rejected::Unreadable("no CodeDirectory".into()))?;
    let no_cms = signature
        .signed_data()
        .map_err(|e| Rejected::Unreadable(e.to_string()))?
        .is_none();
    if !no_cms || !cd.flags.contains(CodeSignatureFlags::ADHOC) {
        return Err(Rejected::NotAdHoc {
            flags: cd.flags.bits(),
        });
    }
    let problems: Vec<String> = verify_macho_data(data)
        .into_iter()
        .filter(|p| !is_ad_hoc_cms(p))
        .map(|p| p.to_string())
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Rejected::Problems(problems))
    }
}

/// The problems an ad-hoc signature has by design (no CMS signature to check).
fn is_ad_hoc_cms(p: &VerificationProblem) -> bool {
    matches!(
        p.problem,
        VerificationProblemType::NoCryptographicSignature | VerificationProblemType::CmsError(_)
    )
}

/// Our verifier and `apple-codesign` on one file: `Ok` when both accept.
pub fn verify_both(data: &[u8]) -> Result<Verified, Disagreement> {
    match (super::verify(data), verify(data)) {
        (Ok(v), Ok(())) => Ok(v),
        (Err(ours), Err(apple)) => Err(Disagreement::Both { ours, apple }),
        (Err(ours), Ok(())) => Err(Disagreement::OursOnly { ours }),
        (Ok(_), Err(apple)) => Err(Disagreement::AppleOnly { apple }),
    }
}

#[cfg(test)]
mod tests;
