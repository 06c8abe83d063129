//! Proof Key for Code Exchange (RFC 7636), S256 only: Terraform sends S256, and "plain"
//! would let whoever sees the authorization request redeem the code.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// A new random value of 256 bits, URL-safe: code verifiers, `state`, nonces, codes.
pub fn random_value() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The S256 challenge of a verifier: `BASE64URL(SHA256(verifier))`.
pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// True for a well-formed verifier (43 to 128 unreserved characters, RFC 7636 §4.1).
pub fn is_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// True for a well-formed S256 challenge (43 base64url characters).
pub fn is_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// True when `verifier` is the one `challenge` was made from (compared in constant time).
pub fn verifies(verifier: &str, challenge_sent: &str) -> bool {
    is_verifier(verifier)
        && bool::from(
            challenge(verifier)
                .as_bytes()
                .ct_eq(challenge_sent.as_bytes()),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_example_verifies() {
        // RFC 7636, appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let sent = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert_eq!(challenge(verifier), sent);
        assert!(is_challenge(sent));
        assert!(verifies(verifier, sent));
        assert!(!verifies(&verifier.replace('d', "e"), sent));
        assert!(!verifies("short", &challenge("short")));
        assert!(is_verifier(&random_value()));
    }
}
