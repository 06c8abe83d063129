//! A published key as Terraform reads it. Terraform 1.11.4 is built with ProtonMail's
//! go-crypto v1.0.0 (its binary names the module), whose `openpgp` package decides which of a
//! key's parts may sign, whether the key is revoked and when it expires; this module makes
//! the same decisions with rpgp's packets:
//!
//! - the **primary identity** speaks for the primary key: of the user IDs the key itself
//!   signed, the one with the fewest revocations, then the one marked primary, then the one
//!   with the newest self-signature; its newest self-signature gives the primary key's flags
//!   and expiry (go-crypto `Entity.PrimaryIdentity`);
//! - a key may sign when that self-signature (for a subkey: its newest binding signature)
//!   carries key flags that include signing (`KeysByIdUsage`);
//! - a revocation counts from its creation on, or always when its reason is "key
//!   compromised" (`revoked`);
//! - a key is expired before its creation and after its creation plus the lifetime its
//!   self-signature gives (`PublicKey.KeyExpired`).
//!
//! e2e `signatures` holds each rule against the real Terraform.

use pgp::composed::{SignedPublicKey, SignedPublicSubKey};
use pgp::packet::{PublicKey, RevocationCode, Signature, SignatureType};
use pgp::types::{KeyDetails, Timestamp};

/// Seconds since the Unix epoch that a signature was made (0 when it says nothing).
pub(super) fn created(signature: &Signature) -> u64 {
    signature.created().map_or(0, |t| u64::from(t.as_secs()))
}

/// True when a signature is not in force at `now`: made later, or expired by then.
pub(super) fn signature_lapsed(signature: &Signature, now: u64) -> bool {
    let made = created(signature);
    if made > now {
        return true;
    }
    signature_expiry(signature).is_some_and(|at| now > at)
}

/// When a signature expires (Unix seconds), if it does.
pub(super) fn signature_expiry(signature: &Signature) -> Option<u64> {
    let lifetime = signature.signature_expiration_time()?.as_secs();
    (lifetime != 0).then(|| created(signature) + u64::from(lifetime))
}

/// When a key created at `key_created` expires by its self-signature, if it does.
fn key_expiry(key_created: Timestamp, self_signature: &Signature) -> Option<u64> {
    let lifetime = self_signature.key_expiration_time()?.as_secs();
    (lifetime != 0).then(|| u64::from(key_created.as_secs()) + u64::from(lifetime))
}

/// True from the revocation's creation on, or always for a compromised key.
fn revocation_in_force(revocation: &Signature, now: u64) -> bool {
    revocation.revocation_reason_code() == Some(&RevocationCode::KeyCompromised)
        || !signature_lapsed(revocation, now)
}

/// A user ID the key signed: its newest self-signature and its revocations.
pub(super) struct Identity<'a> {
    pub self_signature: &'a Signature,
    revocations: Vec<&'a Signature>,
}

impl<'a> Identity<'a> {
    /// Whether `self` is preferred to `existing` as the primary identity.
    fn preferred_to(&self, existing: &Identity<'a>) -> bool {
        if existing.revocations.len() != self.revocations.len() {
            return self.revocations.len() < existing.revocations.len();
        }
        match (
            existing.self_signature.is_primary(),
            self.self_signature.is_primary(),
        ) {
            (true, false) => false,
            (false, true) => true,
            _ => created(self.self_signature) > created(existing.self_signature),
        }
    }
}

/// The primary identity of a key whose user signatures are its own (see
/// [`super::parse_armored`]); `None` when it has no self-signed user ID.
pub(super) fn primary_identity(key: &SignedPublicKey) -> Option<Identity<'_>> {
    let mut best: Option<Identity<'_>> = None;
    for user in &key.details.users {
        let revoked = |s: &&Signature| s.typ() == Some(SignatureType::CertRevocation);
        let Some(self_signature) = user
            .signatures
            .iter()
            .filter(|s| s.is_certification() && !revoked(s))
            .max_by_key(|s| created(s))
        else {
            continue;
        };
        let identity = Identity {
            self_signature,
            revocations: user.signatures.iter().filter(revoked).collect(),
        };
        if best.as_ref().is_none_or(|b| identity.preferred_to(b)) {
            best = Some(identity);
        }
    }
    best
}

/// A part of a key that may sign: the primary key, or a subkey with its binding signature.
pub(super) enum Signer<'a> {
    Primary(&'a PublicKey),
    Subkey(&'a SignedPublicSubKey, &'a Signature),
}

impl Signer<'_> {
    /// Whether the signature names this key as its issuer (by key ID or fingerprint).
    pub fn issued(&self, signature: &Signature) -> bool {
        let (id, fingerprint) = match self {
            Signer::Primary(key) => (key.legacy_key_id(), key.fingerprint()),
            Signer::Subkey(sub, _) => (sub.key.legacy_key_id(), sub.key.fingerprint()),
        };
        signature.issuer_key_id().iter().any(|i| **i == id)
            || signature
                .issuer_fingerprint()
                .iter()
                .any(|f| **f == fingerprint)
    }

    /// Whether the signature over `content` verifies with this key.
    pub fn verifies(&self, signature: &Signature, content: &[u8]) -> bool {
        match self {
            Signer::Primary(key) => signature.verify(*key, content).is_ok(),
            Signer::Subkey(sub, _) => signature.verify(&sub.key, content).is_ok(),
        }
    }
}

/// The parts of `key` that may sign, as Terraform picks them: the primary key when its
/// primary identity's self-signature allows signing, and each subkey whose newest binding
/// signature does. A certify-only primary key with a signing subkey is the usual shape of a
/// release key.
pub(super) fn signers<'a>(key: &'a SignedPublicKey, identity: &Identity<'a>) -> Vec<Signer<'a>> {
    let mut signers = Vec::new();
    if identity.self_signature.key_flags().sign() {
        signers.push(Signer::Primary(&key.primary_key));
    }
    for sub in &key.public_subkeys {
        let binding = sub
            .signatures
            .iter()
            .filter(|s| s.typ() == Some(SignatureType::SubkeyBinding))
            .max_by_key(|s| created(s));
        if let Some(binding) = binding.filter(|b| b.key_flags().sign()) {
            signers.push(Signer::Subkey(sub, binding));
        }
    }
    signers
}

/// Whether the key, or the part of it that signed, is revoked at `now`: the key itself, its
/// primary identity, or the signing subkey.
pub(super) fn revoked(
    key: &SignedPublicKey,
    identity: &Identity<'_>,
    signer: &Signer<'_>,
    now: u64,
) -> bool {
    let subkey_revocations: Vec<&Signature> = match signer {
        Signer::Primary(_) => Vec::new(),
        Signer::Subkey(sub, _) => sub
            .signatures
            .iter()
            .filter(|s| s.typ() == Some(SignatureType::SubkeyRevocation))
            .collect(),
    };
    key_revoked(key, now)
        || identity
            .revocations
            .iter()
            .copied()
            .chain(subkey_revocations)
            .any(|r| revocation_in_force(r, now))
}

/// Whether the primary key itself is revoked at `now`: then no signature by any of its parts
/// is accepted.
pub(super) fn key_revoked(key: &SignedPublicKey, now: u64) -> bool {
    key.details
        .revocation_signatures
        .iter()
        .any(|r| revocation_in_force(r, now))
}

/// When the part of the key that signed stops being valid (Unix seconds), if it does: the
/// earlier of the primary key's expiry and, for a subkey, the subkey's.
pub(super) fn expiry(
    key: &SignedPublicKey,
    identity: &Identity<'_>,
    signer: &Signer<'_>,
) -> Option<u64> {
    let primary = primary_expiry(key, identity);
    let subkey = match signer {
        Signer::Primary(_) => None,
        Signer::Subkey(sub, binding) => key_expiry(sub.key.created_at(), binding),
    };
    [primary, subkey].into_iter().flatten().min()
}

/// When the primary key expires (Unix seconds), if it does.
pub(super) fn primary_expiry(key: &SignedPublicKey, identity: &Identity<'_>) -> Option<u64> {
    key_expiry(key.primary_key.created_at(), identity.self_signature)
}

/// Whether the part of the key that signed is expired at `now`, as Terraform decides it:
/// created later, or past its expiry.
pub(super) fn expired(
    key: &SignedPublicKey,
    identity: &Identity<'_>,
    signer: &Signer<'_>,
    now: u64,
) -> bool {
    let created_later = u64::from(key.primary_key.created_at().as_secs()) > now
        || matches!(signer, Signer::Subkey(sub, _) if u64::from(sub.key.created_at().as_secs()) > now);
    created_later || expiry(key, identity, signer).is_some_and(|at| now > at)
}

/// The signatures whose own validity Terraform checks besides the signature itself: the
/// primary identity's self-signature and, for a subkey, its binding signature and the
/// subkey's back-signature embedded in it.
pub(super) fn supporting_signatures<'a>(
    identity: &Identity<'a>,
    signer: &Signer<'a>,
) -> Vec<&'a Signature> {
    let mut all = vec![identity.self_signature];
    if let Signer::Subkey(_, binding) = signer {
        let binding: &'a Signature = binding;
        all.push(binding);
        all.extend(binding.embedded_signature());
    }
    all
}
