//! OpenPGP, as far as a provider registry needs it: reading the public keys publishers put
//! under `keys/<namespace>/`, and verifying the detached signature of a release's SHA256SUMS.
//!
//! Built on `pgp` (rpgp), a pure-Rust implementation: no C toolchain or system GnuPG needed
//! in the Lambda functions. Keys and signatures that Terraform itself would refuse at install
//! time are refused here, at publish time, with the reason: rpgp alone accepts more than
//! Terraform's OpenPGP library does (armored signatures, signed messages, a file whose first
//! signature is by another key), so the signature file is read the way Terraform reads it.
//! One rule is the registry's own: expired keys are refused (Terraform 1.11 would still
//! accept their signatures).

use std::io::{BufReader, Cursor};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pgp::composed::{Deserializable, SignedPublicKey};
use pgp::crypto::public_key::PublicKeyAlgorithm;
use pgp::packet::{Packet, PacketParser, PacketTrait, Signature, SignatureType, SubpacketData};
use pgp::types::{KeyDetails, Timestamp};

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
    /// True from the key's expiry on.
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
/// public key, revoked keys, EdDSA keys (Terraform fails on them with "unsupported public
/// key algorithm 22"), and expired keys (the registry's rule: Terraform ignores expiry).
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
            "the key {} expired at {} (Unix time {}): the registry offers nothing signed by an expired key; extend it (gpg --quick-set-expire) and publish it again, or sign with a valid key",
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

/// How a publisher makes a signature Terraform can read.
const HOW_TO_SIGN: &str = "sign SHA256SUMS with `gpg --detach-sign` (binary, without --armor), as goreleaser's default `signs` configuration does";

/// Why Terraform cannot read a signature file at all, whatever key it is checked with; `None`
/// when it may be a binary detached signature.
///
/// Terraform reads `shasums_signature_url` as binary OpenPGP packets only: text (an armored
/// signature, a cleartext-signed file) fails on its first byte with "openpgp: invalid data:
/// tag byte does not have MSB set". Such a file is refused rather than converted: the
/// registry serves each file as it was uploaded (in the AWS shape, a presigned URL serves
/// the S3 object itself), so a converted copy would be a file nobody published, and the
/// publisher's own `.sig` would still be wrong wherever else it is used.
pub fn signature_file_problem(bytes: &[u8]) -> Option<String> {
    const TERRAFORM: &str =
        "Terraform reads only binary signatures (it fails with \"openpgp: invalid data: tag byte does not have MSB set\")";
    let text = bytes.trim_ascii_start();
    let (what, fix) = if bytes.is_empty() {
        return Some(format!("the signature file is empty: {HOW_TO_SIGN}"));
    } else if text.starts_with(b"-----BEGIN PGP SIGNATURE-----") {
        (
            "the signature is ASCII-armored (-----BEGIN PGP SIGNATURE-----)",
            format!("{HOW_TO_SIGN}, or convert this one with `gpg --dearmor < FILE.sig > FILE.bin` and publish the binary file under the .sig name"),
        )
    } else if text.starts_with(b"-----BEGIN PGP SIGNED MESSAGE-----") {
        (
            "the file is a cleartext-signed copy of SHA256SUMS (gpg --clearsign), not a detached signature",
            HOW_TO_SIGN.to_owned(),
        )
    } else if text.starts_with(b"-----BEGIN PGP MESSAGE-----") {
        (
            "the file is an armored OpenPGP message (gpg --sign --armor), not a detached signature",
            HOW_TO_SIGN.to_owned(),
        )
    } else if bytes[0] & 0x80 == 0 {
        (
            "the file is not a binary OpenPGP signature",
            HOW_TO_SIGN.to_owned(),
        )
    } else {
        return None;
    };
    // No "signature:" in the text: log redaction takes what follows it for a secret.
    Some(format!("{what}; {TERRAFORM}: {fix}"))
}

/// A signature that verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// When the signature itself expires (Unix seconds), if it does: Terraform refuses an
    /// expired signature, so the release is served only until then.
    pub expires_at: Option<u64>,
}

/// Why a key did not verify a signature file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotVerified {
    /// The file holds no signature by this key (Terraform's "unknown issuer"): another key
    /// may have made it.
    NotByThisKey,
    /// Terraform, given this key, would fail on this file: the reason.
    Refused(String),
}

/// A key of the published key that may sign: the primary key or a subkey.
enum Signer<'a> {
    Primary(&'a pgp::packet::PublicKey),
    Subkey(&'a pgp::composed::SignedPublicSubKey),
}

impl Signer<'_> {
    fn issued(&self, signature: &Signature) -> bool {
        let (id, fingerprint) = match self {
            Signer::Primary(key) => (key.legacy_key_id(), key.fingerprint()),
            Signer::Subkey(sub) => (sub.key.legacy_key_id(), sub.key.fingerprint()),
        };
        signature.issuer_key_id().iter().any(|i| **i == id)
            || signature
                .issuer_fingerprint()
                .iter()
                .any(|f| **f == fingerprint)
    }

    fn verifies(&self, signature: &Signature, content: &[u8]) -> bool {
        match self {
            Signer::Primary(key) => signature.verify(*key, content).is_ok(),
            Signer::Subkey(sub) => signature.verify(&sub.key, content).is_ok(),
        }
    }
}

/// The keys Terraform would check a signature with: those whose self-signature (the
/// primary's on its user ID, a subkey's binding) allows signing. A certify-only primary key
/// with a signing subkey is the usual shape of a release key.
fn signers(key: &SignedPublicKey) -> Vec<Signer<'_>> {
    let newest = |signatures: &[Signature]| {
        signatures
            .iter()
            .max_by_key(|s| s.created().map(Timestamp::as_secs).unwrap_or(0))
            .is_some_and(|s| s.key_flags().sign())
    };
    let user_signatures: Vec<Signature> = key
        .details
        .users
        .iter()
        .flat_map(|u| u.signatures.iter().cloned())
        .collect();
    let mut signers = Vec::new();
    if newest(&user_signatures) {
        signers.push(Signer::Primary(&key.primary_key));
    }
    for sub in &key.public_subkeys {
        if newest(&sub.signatures) && sub.verify_bindings(&key.primary_key).is_ok() {
            signers.push(Signer::Subkey(sub));
        }
    }
    signers
}

/// Checks a release's signature file against one published key, as Terraform does at
/// install (given that key in `signing_keys`): the file is read packet by packet; every
/// packet up to the first signature by the key must be a signature (anything else, such as
/// the literal data of `gpg --sign`, fails); that first signature by the key is the one
/// checked (later packets are never read); it must be a signature of a document (binary or
/// text), carry no critical notation, verify, and be in force now: not made in the future,
/// not expired. The key itself must not be revoked, nor (the registry's own rule) expired.
pub fn check_detached(
    armor: &str,
    signature: &[u8],
    content: &[u8],
    now: SystemTime,
) -> Result<Verified, NotVerified> {
    use NotVerified::{NotByThisKey, Refused};
    if let Some(problem) = signature_file_problem(signature) {
        return Err(Refused(problem));
    }
    let key = parse_armored(armor).map_err(Refused)?;
    let signers = signers(&key);
    for packet in PacketParser::new(BufReader::new(signature)) {
        let packet = match packet {
            // Terraform's reader skips what it does not know (marker, trust, padding
            // packets; unsupported versions), as rpgp reports them.
            Ok(Packet::Marker(_) | Packet::Trust(_) | Packet::Padding(_)) => continue,
            Ok(Packet::ModDetectionCode(_)) => continue,
            Err(pgp::errors::Error::Unsupported { .. }) => continue,
            Err(pgp::errors::Error::InvalidPacketContent { source })
                if matches!(*source, pgp::errors::Error::Unsupported { .. }) =>
            {
                continue
            }
            Ok(packet) => packet,
            Err(e) => {
                return Err(Refused(format!(
                    "the signature file holds a packet that cannot be read ({e}): {HOW_TO_SIGN}"
                )))
            }
        };
        let Packet::Signature(found) = packet else {
            return Err(Refused(format!(
                "the signature file holds a {:?} packet, so it is not a detached signature (gpg --sign makes a signed message, which Terraform refuses with \"non signature packet found\"): {HOW_TO_SIGN}",
                packet.tag()
            )));
        };
        if found.issuer_key_id().is_empty() && found.issuer_fingerprint().is_empty() {
            return Err(Refused(
                "a signature in the file does not name the key that made it, and Terraform refuses it (\"signature doesn't have an issuer\")".into(),
            ));
        }
        let by: Vec<&Signer<'_>> = signers.iter().filter(|s| s.issued(&found)).collect();
        if by.is_empty() {
            continue; // Terraform reads on, to a signature by this key
        }
        return judge_signature(&key, &found, &by, content, now);
    }
    Err(NotByThisKey)
}

/// The verdict on the one signature Terraform checks with a key.
fn judge_signature(
    key: &SignedPublicKey,
    signature: &Signature,
    by: &[&Signer<'_>],
    content: &[u8],
    now: SystemTime,
) -> Result<Verified, NotVerified> {
    use NotVerified::Refused;
    let key_id = hex::encode_upper(key.legacy_key_id().as_ref());
    if !matches!(
        signature.typ(),
        Some(SignatureType::Binary | SignatureType::Text)
    ) {
        return Err(Refused(format!(
            "the signature by key {key_id} is a {:?} signature, not a signature of a document: Terraform refuses it (\"unsupported signature type\"); {HOW_TO_SIGN}",
            signature.typ()
        )));
    }
    let critical_notation = signature.config().is_some_and(|c| {
        c.hashed_subpackets()
            .any(|p| p.is_critical && matches!(p.data, SubpacketData::Notation(_)))
    });
    if critical_notation {
        return Err(Refused(format!(
            "the signature by key {key_id} carries a critical notation (gpg --sig-notation '!...'), and Terraform refuses it (\"unknown critical notation\"): sign again without it"
        )));
    }
    let Some(signer) = by.iter().find(|s| s.verifies(signature, content)) else {
        return Err(Refused(format!(
            "the signature by key {key_id} does not match this SHA256SUMS (Terraform fails with \"invalid signature\"): was SHA256SUMS changed after it was signed? Sign it again"
        )));
    };
    if let Signer::Subkey(sub) = signer {
        let subkey_id = hex::encode_upper(sub.key.legacy_key_id().as_ref());
        let revoked = sub
            .signatures
            .iter()
            .any(|s| s.typ() == Some(SignatureType::SubkeyRevocation));
        if revoked {
            return Err(Refused(format!(
                "the signature was made by subkey {subkey_id} of key {key_id}, which has been revoked"
            )));
        }
        if let Some(at) = expiry(sub.key.created_at(), &sub.signatures) {
            if unix(now) >= at {
                return Err(Refused(format!(
                    "the signature was made by subkey {subkey_id} of key {key_id}, which expired at {}",
                    date(UNIX_EPOCH + Duration::from_secs(at))
                )));
            }
        }
    }
    let created = signature.created().map_or(0, |t| u64::from(t.as_secs()));
    if created > unix(now) {
        return Err(Refused(format!(
            "the signature by key {key_id} was made in the future ({}, Unix time {created}): Terraform refuses it until then (\"signature expired\"); check the signing machine's clock and sign again",
            date(UNIX_EPOCH + Duration::from_secs(created))
        )));
    }
    let expires_at = signature
        .signature_expiration_time()
        .map(|d| u64::from(d.as_secs()))
        .filter(|&secs| secs != 0)
        .map(|secs| created + secs);
    if let Some(at) = expires_at.filter(|&at| unix(now) > at) {
        return Err(Refused(signature_expired(&key_id, at)));
    }
    Ok(Verified { expires_at })
}

/// Why a signature that expired is refused.
pub fn signature_expired(key_id: &str, at: u64) -> String {
    format!(
        "the signature by key {key_id} expired at {} (Unix time {at}), and Terraform refuses expired signatures (\"signature expired\"): sign SHA256SUMS again without an expiry and publish the new .sig",
        date(UNIX_EPOCH + Duration::from_secs(at))
    )
}

/// Checks that `signature` is a valid signature of `content` by the key `armor`, as
/// [`check_detached`] does, with the reason as text.
pub fn verify_detached(
    armor: &str,
    signature: &[u8],
    content: &[u8],
    now: SystemTime,
) -> Result<(), String> {
    match check_detached(armor, signature, content, now) {
        Ok(_) => Ok(()),
        Err(NotVerified::NotByThisKey) => Err("the signature was not made by this key".into()),
        Err(NotVerified::Refused(reason)) => Err(reason),
    }
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
        for (text, what) in [
            (&b"nope"[..], "not a binary OpenPGP signature"),
            (b"", "empty"),
            (b"-----BEGIN PGP SIGNATURE-----\n", "ASCII-armored"),
            (
                b"\n-----BEGIN PGP SIGNED MESSAGE-----\n",
                "cleartext-signed",
            ),
            (b"-----BEGIN PGP MESSAGE-----\n", "armored OpenPGP message"),
        ] {
            let problem = signature_file_problem(text).unwrap();
            assert!(problem.contains(what), "{problem}");
        }
        // Binary packets are for the key to judge.
        assert_eq!(signature_file_problem(&[0x89, 0x01]), None);
        let check = |bytes: &[u8]| {
            verify_detached(
                &String::from_utf8_lossy(include_bytes!("../tests/fixtures/release.asc")),
                bytes,
                b"",
                now,
            )
        };
        // A truncated packet is refused with a reason, never a panic.
        let truncated = check(&[0x89, 0x00, 0x10, 0x04]).unwrap_err();
        assert!(truncated.contains("cannot be read"), "{truncated}");
    }
}
