//! Making a detached binary OpenPGP signature with a publisher's secret key, as `tfreg
//! publish module --sign` does (docs/module-signing.md). What it makes is checked with the
//! registry's own rules ([`crate::gpg::check_detached`]) before it is handed back, so a
//! signature the registry would refuse never leaves the publisher's machine.

use std::time::SystemTime;

use pgp::composed::{Deserializable, DetachedSignature, SignedSecretKey};
use pgp::crypto::hash::HashAlgorithm;
use pgp::ser::Serialize;
use pgp::types::Password;

/// The largest secret key file read.
pub const MAX_SECRET_KEY_BYTES: u64 = 256 * 1024;

/// Why a signature could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SignError(pub String);

/// A binary detached signature of `content` by the armored secret key `armored_secret`
/// (unlocked with `passphrase`, empty for an unprotected key), made with its signing subkey
/// if it has one, else its primary key; and the key ID of the primary key. Any algorithm
/// Terraform verifies will do (RSA, DSA, EdDSA). Refused: a key the registry refuses (a
/// revoked one: [`crate::gpg::parse_public_key`]'s reasons), a wrong passphrase, and a
/// signature the registry would refuse ([`crate::gpg::check_detached`]: one made by an
/// expired key, for one).
pub fn sign_detached(
    armored_secret: &[u8],
    passphrase: &str,
    content: &[u8],
) -> Result<(Vec<u8>, String), SignError> {
    let text = std::str::from_utf8(armored_secret)
        .map_err(|_| SignError("the key file is not an ASCII-armored OpenPGP key".into()))?;
    if !text.contains("-----BEGIN PGP PRIVATE KEY BLOCK-----") {
        return Err(SignError(
            "the key file holds no secret key (-----BEGIN PGP PRIVATE KEY BLOCK-----): export it with `gpg --armor --export-secret-keys KEYID`".into(),
        ));
    }
    let (key, _) = SignedSecretKey::from_string(text)
        .map_err(|e| SignError(format!("the secret key cannot be read: {e}")))?;
    let public = key
        .to_public_key()
        .to_armored_string(Default::default())
        .map_err(|e| SignError(format!("the key's public part cannot be written: {e}")))?;
    let now = SystemTime::now();
    // The registry's reasons for refusing the key itself.
    let info = crate::gpg::parse_public_key(public.as_bytes(), now).map_err(SignError)?;
    let password = Password::from(passphrase);
    let unlocked = |e: pgp::errors::Error| {
        let locked = key.primary_key.secret_params().is_encrypted()
            || key
                .secret_subkeys
                .iter()
                .any(|s| s.key.secret_params().is_encrypted());
        match locked {
            true => SignError(format!(
                "cannot sign with the key (is the passphrase right? give it with --passphrase-env VAR): {e}"
            )),
            false => SignError(format!("cannot sign with the key: {e}")),
        }
    };
    let rng = rand::thread_rng();
    // A signing subkey, as `gpg --detach-sign` picks it; else the primary key.
    let subkey = key.secret_subkeys.iter().find(|sub| {
        sub.signatures
            .iter()
            .max_by_key(|s| s.created().map(|t| t.as_secs()).unwrap_or(0))
            .is_some_and(|s| s.key_flags().sign())
    });
    let signature = match subkey {
        Some(sub) => DetachedSignature::sign_binary_data(
            rng,
            &sub.key,
            &password,
            HashAlgorithm::Sha256,
            content,
        ),
        None => DetachedSignature::sign_binary_data(
            rng,
            &key.primary_key,
            &password,
            HashAlgorithm::Sha256,
            content,
        ),
    }
    .map_err(unlocked)?;
    let bytes = signature
        .to_bytes()
        .map_err(|e| SignError(format!("the signature cannot be written: {e}")))?;
    match crate::gpg::check_detached(&info.ascii_armor, &bytes, content, now) {
        Ok(_) => Ok((bytes, info.key_id)),
        Err(crate::gpg::NotVerified::NotByThisKey) => Err(SignError(
            "the signature made does not name a key that may sign (does the key have a signing key or subkey?)".into(),
        )),
        Err(crate::gpg::NotVerified::Refused(reason)) => Err(SignError(format!(
            "the signature made would be refused: {reason}"
        ))),
    }
}
