//! The one judgement of a detached signature against a published key, as Terraform makes it
//! at install (`openpgp.CheckDetachedSignature` of go-crypto v1.0.0, with Terraform 1.11.4's
//! rule that an expired key is no reason to refuse), plus the registry's two stricter rules
//! (see the module above). Every refusal says whose rule it is.

use std::io::BufReader;
use std::time::SystemTime;

use pgp::composed::SignedPublicKey;
use pgp::packet::{Packet, PacketParser, PacketTrait, Signature, SignatureType, SubpacketData};
use pgp::types::KeyDetails;

use super::key::{self, created, signature_expiry, signature_lapsed, Identity, Signer};
use super::{date, parse_armored, signature_file_problem, unix, HOW_TO_SIGN, NO_IDENTITY};

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
    /// Terraform, given this key, would fail on this file, or the registry's own rule
    /// refuses it: the reason, which says which.
    Refused(String),
}

/// Checks a signature file against one published key, as Terraform does at install (given
/// that key in `signing_keys`): the file is read packet by packet; every packet up to the
/// first signature by a part of the key that may sign must be a signature (anything else,
/// such as the literal data of `gpg --sign`, fails); that first signature is the one checked
/// (later packets are never read); it must be a signature of a document (binary or text),
/// verify, carry no critical notation, and be by a key that is not revoked; then, unless the
/// key has expired (which Terraform ignores), it and the key's self-signatures must be in
/// force now: not made in the future, not expired. The registry's own rules apply last.
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
    let identity = key::primary_identity(&key).ok_or_else(|| Refused(NO_IDENTITY.into()))?;
    let signers = key::signers(&key, &identity);
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
        let signature = Signed {
            key: &key,
            identity: &identity,
            signature: &found,
            key_id: hex::encode_upper(key.legacy_key_id().as_ref()),
        };
        return signature.judge(&by, content, unix(now)).map_err(Refused);
    }
    Err(NotByThisKey)
}

/// The one signature Terraform checks with a key, and that key.
struct Signed<'a> {
    key: &'a SignedPublicKey,
    identity: &'a Identity<'a>,
    signature: &'a Signature,
    key_id: String,
}

impl Signed<'_> {
    fn judge(&self, by: &[&Signer<'_>], content: &[u8], now: u64) -> Result<Verified, String> {
        let Self {
            key,
            identity,
            signature,
            ref key_id,
        } = *self;
        if !matches!(
            signature.typ(),
            Some(SignatureType::Binary | SignatureType::Text)
        ) {
            return Err(format!(
                "the signature by key {key_id} is a {:?} signature, not a signature of a document: Terraform refuses it (\"unsupported signature type\"); {HOW_TO_SIGN}",
                signature.typ()
            ));
        }
        let Some(signer) = by.iter().find(|s| s.verifies(signature, content)) else {
            return Err(format!(
                "the signature by key {key_id} does not match the signed file (Terraform fails with \"invalid signature\"): was the file changed after it was signed? Sign it again"
            ));
        };
        let supporting = key::supporting_signatures(identity, signer);
        let critical_notation = std::iter::once(signature)
            .chain(supporting.iter().copied())
            .any(|s| {
                s.config().is_some_and(|c| {
                    c.hashed_subpackets()
                        .any(|p| p.is_critical && matches!(p.data, SubpacketData::Notation(_)))
                })
            });
        if critical_notation {
            return Err(format!(
                "the signature by key {key_id} (or the key's own signature) carries a critical notation (gpg --sig-notation '!...'), and Terraform refuses it (\"unknown critical notation\"): sign again without it"
            ));
        }
        if key::revoked(key, identity, signer, now) {
            let part = match signer {
                Signer::Primary(_) => format!("key {key_id}"),
                Signer::Subkey(sub, _) => format!(
                    "subkey {} of key {key_id}",
                    hex::encode_upper(sub.key.legacy_key_id().as_ref())
                ),
            };
            return Err(format!(
                "the signature was made by {part}, which has been revoked (the key, the subkey or its user ID), and Terraform refuses it (\"signature made by revoked key\"): sign with a key that is not revoked"
            ));
        }
        let made = created(signature);
        let expires_at = signature_expiry(signature);
        if !key::expired(key, identity, signer, now) {
            // Terraform checks the signatures' own validity only while the key is valid.
            return match lapsed(signature, &supporting, now) {
                Some(why) => Err(why.message(key_id, made, expires_at, "Terraform refuses it")),
                None => Ok(Verified { expires_at }),
            };
        }
        // The key has expired, which Terraform ignores: the registry's own rules.
        if let Some(at) = key::expiry(key, identity, signer).filter(|&at| made > at) {
            return Err(format!(
                "the signature by key {key_id} was made on {}, after the key expired on {}: the registry's rule refuses a signature made by an expired key (Terraform 1.11 ignores key expiry); extend the key (gpg --quick-set-expire), publish it again and sign again",
                date(made),
                date(at)
            ));
        }
        match lapsed(signature, &supporting, now) {
            Some(why) => Err(why.message(
                key_id,
                made,
                expires_at,
                "the registry's rule refuses it (Terraform stops checking when the key has expired)",
            )),
            None => Ok(Verified { expires_at }),
        }
    }
}

/// Why a signature, or one the key's validity rests on, is not in force.
enum Lapsed {
    Future,
    Expired,
    SelfSignature,
}

fn lapsed(signature: &Signature, supporting: &[&Signature], now: u64) -> Option<Lapsed> {
    if created(signature) > now {
        Some(Lapsed::Future)
    } else if signature_lapsed(signature, now) {
        Some(Lapsed::Expired)
    } else if supporting.iter().any(|s| signature_lapsed(s, now)) {
        Some(Lapsed::SelfSignature)
    } else {
        None
    }
}

impl Lapsed {
    fn message(&self, key_id: &str, made: u64, expires_at: Option<u64>, rule: &str) -> String {
        match self {
            Lapsed::Future => format!(
                "the signature by key {key_id} was made in the future ({}, Unix time {made}): {rule} until then (\"signature expired\"); check the signing machine's clock and sign again",
                date(made)
            ),
            Lapsed::Expired => expired_message(key_id, expires_at.unwrap_or(0), rule),
            Lapsed::SelfSignature => format!(
                "a self-signature of key {key_id} (on its user ID or its signing subkey) has expired or was made in the future, and {rule} (\"signature expired\"): publish the key again with current self-signatures"
            ),
        }
    }
}

fn expired_message(key_id: &str, at: u64, rule: &str) -> String {
    format!(
        "the signature by key {key_id} expired at {} (Unix time {at}), and {rule} (\"signature expired\"): sign again without an expiry and publish the new .sig",
        date(at)
    )
}

/// Why a signature that expired is refused (when the serving time passes its expiry).
pub fn signature_expired(key_id: &str, at: u64) -> String {
    expired_message(key_id, at, "Terraform refuses expired signatures")
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
