//! OpenPGP, as far as a provider registry needs it: reading the public keys publishers put
//! under `keys/<namespace>/`, and verifying the detached signature of a release's SHA256SUMS.
//!
//! Built on `pgp` (rpgp), a pure-Rust implementation: no C toolchain or system GnuPG needed
//! in the Lambda functions. Keys that Terraform itself would refuse at install time are refused
//! here, at publish time, with the reason.

use std::io::Cursor;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pgp::composed::{Deserializable, DetachedSignature, SignedPublicKey};
use pgp::crypto::public_key::PublicKeyAlgorithm;
use pgp::packet::Signature;
use pgp::types::{KeyDetails, Timestamp, VerifyingKey};

/// Largest key or signature file read (real ones are a few KiB; a key is stored whole in
/// one DynamoDB item, which holds 400 KB at most).
pub const MAX_KEY_BYTES: u64 = 256 * 1024;

/// What the registry keeps of a trusted public key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PublicKeyInfo {
    /// The primary key's 64-bit key ID, uppercase hex, as Terraform shows it.
    pub key_id: String,
    /// The key as published (ASCII-armored), handed to Terraform in `signing_keys`.
    pub ascii_armor: String,
    /// When the primary key expires (Unix seconds), if it does.
    pub expires_at: Option<u64>,
}

impl PublicKeyInfo {
    pub fn is_expired(&self, now: SystemTime) -> bool {
        self.expires_at.is_some_and(|at| unix(now) >= at)
    }
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn is_eddsa(algorithm: PublicKeyAlgorithm) -> bool {
    matches!(
        algorithm,
        PublicKeyAlgorithm::EdDSALegacy | PublicKeyAlgorithm::Ed25519 | PublicKeyAlgorithm::Ed448
    )
}

/// The expiry a self-signature gives a component created at `created`.
fn expiry(created: Timestamp, signatures: &[Signature]) -> Option<u64> {
    // The newest self-signature is the one in force.
    let newest = signatures
        .iter()
        .max_by_key(|s| s.created().map(Timestamp::as_secs).unwrap_or(0))?;
    let after = newest.key_expiration_time()?.as_secs();
    (after != 0).then(|| u64::from(created.as_secs()) + u64::from(after))
}

/// Parses an armored public key, keeping only the key's own signatures on its user IDs:
/// certifications by other people (as `gpg --export` includes) say nothing about the key's
/// validity or expiry, and are not verifiable without their keys.
fn parse_armored(armor: &str) -> Result<SignedPublicKey, String> {
    let (mut key, _) = SignedPublicKey::from_armor_single(Cursor::new(armor.as_bytes()))
        .map_err(|e| format!("not an ASCII-armored OpenPGP public key: {e}"))?;
    let key_id = key.legacy_key_id();
    let fingerprint = key.fingerprint();
    let own = |s: &Signature| {
        s.issuer_key_id().into_iter().any(|id| *id == key_id)
            || s.issuer_fingerprint()
                .into_iter()
                .any(|f| *f == fingerprint)
    };
    for user in &mut key.details.users {
        user.signatures.retain(own);
    }
    key.details.users.retain(|u| !u.signatures.is_empty());
    Ok(key)
}

/// Reads and checks a published public key. Refused: anything that is not one armored
/// public key, revoked or expired keys, and EdDSA keys (Terraform fails on them with
/// "unsupported public key algorithm 22").
pub fn parse_public_key(bytes: &[u8], now: SystemTime) -> Result<PublicKeyInfo, String> {
    let armor = std::str::from_utf8(bytes)
        .map_err(|_| "not an ASCII-armored OpenPGP public key: the file is not text".to_owned())?;
    if armor.contains("PRIVATE KEY BLOCK") {
        return Err("this is a PRIVATE key: publish only the public key (gpg --armor --export KEYID), and rotate the key, since it has been exposed".into());
    }
    // What is checked is what is kept: signatures are verified against the kept text later,
    // and the armor parser's verdict can hang on a final newline after trailing text.
    let armor = format!("{}\n", armor.trim());
    let key = parse_armored(&armor)?;
    key.verify_bindings()
        .map_err(|e| format!("the key's self-signatures do not verify: {e}"))?;
    // Terraform reads no key without a user ID that the key itself signed.
    if key.details.users.is_empty() {
        return Err("the key has no user ID signed by the key itself, so Terraform cannot read it: publish the key as gpg --armor --export KEYID writes it".into());
    }
    let eddsa = std::iter::once(key.primary_key.algorithm())
        .chain(key.public_subkeys.iter().map(|s| s.key.algorithm()))
        .any(is_eddsa);
    if eddsa {
        return Err("EdDSA keys cannot be used: Terraform cannot verify their signatures (it fails with \"unsupported public key algorithm 22\"); sign releases with an RSA key".into());
    }
    if !key.details.revocation_signatures.is_empty() {
        return Err("the key has been revoked".into());
    }
    let user_signatures: Vec<Signature> = key
        .details
        .users
        .iter()
        .flat_map(|u| u.signatures.iter().cloned())
        .chain(key.details.direct_signatures.iter().cloned())
        .collect();
    let expires_at = expiry(key.primary_key.created_at(), &user_signatures);
    let info = PublicKeyInfo {
        key_id: hex::encode_upper(key.legacy_key_id().as_ref()),
        ascii_armor: armor,
        expires_at,
    };
    if info.is_expired(now) {
        let when = UNIX_EPOCH + Duration::from_secs(expires_at.unwrap_or(0));
        return Err(format!(
            "the key {} expired at {} (Unix time {}); Terraform refuses signatures by expired keys",
            info.key_id,
            date(when),
            unix(when)
        ));
    }
    Ok(info)
}

fn date(t: SystemTime) -> String {
    let mut text = humantime::format_rfc3339_seconds(t).to_string();
    text.truncate(10); // YYYY-MM-DD
    text
}

/// Parses a detached signature, binary (as `gpg --detach-sign` writes it) or armored.
fn parse_signature(bytes: &[u8]) -> Result<DetachedSignature, String> {
    let parsed = if bytes.starts_with(b"-----BEGIN PGP SIGNATURE-----") {
        DetachedSignature::from_armor_single(Cursor::new(bytes)).map(|(s, _)| s)
    } else {
        DetachedSignature::from_bytes(Cursor::new(bytes))
    };
    parsed.map_err(|e| format!("the signature file is not an OpenPGP detached signature: {e}"))
}

/// Checks that `signature` is a valid signature of `content` by the key `armor` (its primary
/// key or a signing subkey that is validly bound, unexpired and unrevoked at `now`).
pub fn verify_detached(
    armor: &str,
    signature: &[u8],
    content: &[u8],
    now: SystemTime,
) -> Result<(), String> {
    let key = parse_armored(armor)?;
    let signature = parse_signature(signature)?;
    if signature.verify(&key.primary_key, content).is_ok() {
        return Ok(());
    }
    for subkey in &key.public_subkeys {
        let bound = subkey.verify_bindings(&key.primary_key).is_ok();
        let revoked = subkey
            .signatures
            .iter()
            .any(|s| s.typ() == Some(pgp::packet::SignatureType::SubkeyRevocation));
        let expired =
            expiry(subkey.key.created_at(), &subkey.signatures).is_some_and(|at| unix(now) >= at);
        if bound && !revoked && !expired && verify_with(&signature, &subkey.key, content) {
            return Ok(());
        }
    }
    Err("the signature was not made by this key".into())
}

fn verify_with(signature: &DetachedSignature, key: &impl VerifyingKey, content: &[u8]) -> bool {
    signature.verify(key, content).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_refused_with_a_reason() {
        let now = SystemTime::now();
        assert!(parse_public_key(b"hello", now)
            .unwrap_err()
            .contains("not an ASCII-armored"));
        assert!(parse_public_key(&[0xff, 0xfe], now)
            .unwrap_err()
            .contains("not text"));
        let private =
            b"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n-----END PGP PRIVATE KEY BLOCK-----\n";
        assert!(parse_public_key(private, now)
            .unwrap_err()
            .contains("PRIVATE"));
        assert!(parse_signature(b"nope").is_err());
    }
}
