//! OpenPGP, as far as a registry needs it: reading the public keys publishers put under
//! `keys/<namespace>/`, and judging detached signatures (a release's `SHA256SUMS.sig`, a
//! module archive's `.sig`, an attachment's signature) against them.
//!
//! Built on `pgp` (rpgp), a pure-Rust implementation: no C toolchain or system GnuPG needed
//! in the Lambda functions. **One judgement** ([`check_detached`]) decides for every path
//! (publishing checks, the indexer, module signatures, attachments, `tfreg publish`, `tfreg
//! sync` and the upstream cache), and its rules are Terraform's: what Terraform 1.11.4
//! installs is accepted, what it refuses is refused, each rule held against the real CLI by
//! e2e `signatures`. rpgp alone accepts more than Terraform (armored signatures, signed
//! messages, a file whose first signature is by another key), so the signature file is
//! read the way Terraform reads it, and the key as [`key`] says.
//!
//! Two rules are the registry's own, stricter than Terraform and said so in their messages:
//! a signature made after its key had expired is refused (Terraform ignores key expiry
//! altogether), and so is an expired or future-dated signature by an expired key (Terraform
//! stops checking at the key's expiry). Neither depends on the time of judgement, so a
//! release that verified once is never unpublished because its key later expires.

mod judge;
mod key;

pub use judge::{check_detached, signature_expired, verify_detached, NotVerified, Verified};

use std::io::Cursor;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pgp::composed::{Deserializable, SignedPublicKey};
use pgp::packet::Signature;
use pgp::types::KeyDetails;

/// Largest key or signature file read (real ones are a few KiB; a key is stored whole in
/// one DynamoDB item, which holds 400 KB at most).
pub const MAX_KEY_BYTES: u64 = 256 * 1024;

/// Keys that expire within this long are warned about (`tfreg status`, the pages).
pub const EXPIRY_WARNING: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// What the registry keeps of a trusted public key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PublicKeyInfo {
    /// The primary key's 64-bit key ID, uppercase hex, as Terraform shows it.
    pub key_id: String,
    /// The key as published (ASCII-armored), handed to Terraform in `signing_keys`.
    pub ascii_armor: String,
    /// When the primary key expires (Unix seconds), if it does. Expiry never refuses a
    /// signature made before it; it is only warned about.
    pub expires_at: Option<u64>,
}

impl PublicKeyInfo {
    /// True from the key's expiry on.
    pub fn is_expired(&self, now: SystemTime) -> bool {
        self.expires_at.is_some_and(|at| unix(now) >= at)
    }

    /// True while the key is valid but expires within [`EXPIRY_WARNING`].
    pub fn expires_soon(&self, now: SystemTime) -> bool {
        let now = unix(now);
        self.expires_at
            .is_some_and(|at| at > now && at - now <= EXPIRY_WARNING.as_secs())
    }
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
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

/// The primary key's fingerprint, uppercase hex, of an ASCII-armored public key: what
/// identifies the key that verified a signature (a key ID is only what someone claims).
pub fn fingerprint(armor: &str) -> Result<String, String> {
    let key = parse_armored(armor)?;
    Ok(hex::encode_upper(key.fingerprint().as_bytes()))
}

/// Why Terraform cannot read a key with no self-signed user ID.
const NO_IDENTITY: &str = "the key has no user ID signed by the key itself, so Terraform cannot read it: publish the key as gpg --armor --export KEYID writes it";

/// Reads and checks a published public key. Refused: anything that is not one armored
/// public key, a private key, a key without a self-signed user ID, and a revoked key
/// (Terraform refuses every signature by it). Any algorithm Terraform verifies is accepted
/// (RSA, DSA, EdDSA), and so is an expired key: Terraform ignores key expiry, and so does
/// every signature made while the key was valid.
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
    let Some(identity) = key::primary_identity(&key) else {
        return Err(NO_IDENTITY.into());
    };
    let key_id = hex::encode_upper(key.legacy_key_id().as_ref());
    if key::key_revoked(&key, unix(now)) {
        return Err(format!(
            "the key {key_id} has been revoked, and Terraform refuses every signature made by a revoked key (\"signature made by revoked key\"): publish a key that is not revoked and sign the releases again"
        ));
    }
    Ok(PublicKeyInfo {
        key_id,
        expires_at: key::primary_expiry(&key, &identity),
        ascii_armor: armor,
    })
}

/// `YYYY-MM-DD` of a Unix time.
pub fn date(unix_secs: u64) -> String {
    let mut text =
        humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(unix_secs)).to_string();
    text.truncate(10);
    text
}

/// The warning about a published key (`keys/...`) that has expired or expires within
/// [`EXPIRY_WARNING`], with the fix; `None` for any other key.
pub fn key_expiry_warning(key: &str, info: &PublicKeyInfo, now: SystemTime) -> Option<String> {
    let at = info.expires_at?;
    let id = &info.key_id;
    if info.is_expired(now) {
        Some(format!(
            "{key}: key {id} expired on {}. What it signed before then stays served (Terraform ignores key expiry), but a signature it makes now is refused: extend it (gpg --quick-set-expire {id} 2y), publish it again as {key}, and sign with it again; or sign new releases with another key",
            date(at)
        ))
    } else if info.expires_soon(now) {
        Some(format!(
            "{key}: key {id} expires on {} (within {} days). What it signed stays served after that, but signatures it makes then are refused: extend it (gpg --quick-set-expire {id} 2y) and publish it again as {key} before then",
            date(at),
            EXPIRY_WARNING.as_secs() / 86_400
        ))
    } else {
        None
    }
}

/// The note on a served release or module version about the key that signed it (`key_id`,
/// expiring at `expires_at`): that it has expired since (the version stays served), or that
/// it expires within [`EXPIRY_WARNING`]; `None` otherwise.
pub fn signer_expiry_note(
    key_id: &str,
    expires_at: Option<u64>,
    now: SystemTime,
) -> Option<String> {
    let at = expires_at?;
    let now = unix(now);
    if now >= at {
        Some(format!(
            "signed by key {key_id}, which expired on {}: still served (the signature was made while the key was valid, and Terraform ignores key expiry); sign the next version with a valid key",
            date(at)
        ))
    } else if at - now <= EXPIRY_WARNING.as_secs() {
        Some(format!(
            "signed by key {key_id}, which expires on {}: this version stays served, but signatures the key makes after that are refused; extend it (gpg --quick-set-expire {key_id} 2y) and publish it again",
            date(at)
        ))
    } else {
        None
    }
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
                &String::from_utf8_lossy(include_bytes!("../../tests/fixtures/release.asc")),
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
