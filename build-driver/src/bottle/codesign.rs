//! The bottle's signatures: the signer and verifier shared with the node tool
//! ([`driver_common::codesign`]: the layout, ad-hoc signing and our verifier) and, with the
//! `apple-codesign` feature, that crate as a second verifier ([`apple`], [`bottle_verdict`]).

#[cfg(feature = "apple-codesign")]
pub mod apple;

pub use driver_common::codesign::*;

/// Whether the bottle check asks `apple-codesign` too (the cargo feature of that name).
pub const SECOND_VERIFIER: bool = cfg!(feature = "apple-codesign");

/// The bottle check's verdict on one Mach-O file: our verifier's, and with the
/// `apple-codesign` feature that crate's too (both must accept, [`apple::verify_both`]).
pub fn bottle_verdict(data: &[u8]) -> Result<Verified, String> {
    #[cfg(feature = "apple-codesign")]
    return apple::verify_both(data).map_err(|e| e.to_string());
    #[cfg(not(feature = "apple-codesign"))]
    return verify(data).map_err(|e| format!("signature: {e}"));
}

#[cfg(test)]
mod tests;
