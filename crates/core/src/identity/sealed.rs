//! Sign-ins in progress that cost the registry nothing to keep: the `state` sent to the
//! identity provider *is* the sign-in, sealed (AES-256-GCM under a key derived from the
//! registry's secret), so starting a sign-in stores nothing, and no number of starts that
//! never come back from the provider can fill a store or lock anyone out.
//!
//! What the seal holds ([`PendingLogin`]: the PKCE verifier and nonce of the request to the
//! provider, the callback URL, and what the sign-in is for) is secret from the browser and
//! the provider, and cannot be changed or made up without the key. A sealed state lasts
//! [`LOGIN_LIFETIME`]. It is bound to who started it:
//! - `terraform login`: the registry's code is issued for Terraform's PKCE challenge, so
//!   only the Terraform that started the sign-in can redeem what the sign-in ends in;
//! - the web pages: the seal holds the SHA-256 of a random value set as a cookie in the
//!   browser that started it ([`Opened::bound_to`]); the callback takes it only with that
//!   cookie.
//!
//! A sealed state cannot be taken back once issued; a replayed callback fails at the
//! provider, which redeems each of its codes once, and the ID token must carry the
//! seal's nonce.

use std::time::{Duration, SystemTime};

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::tokens::unix;

use super::grants::{GrantError, PendingLogin};

/// How long a person has to sign in at the identity provider.
pub const LOGIN_LIFETIME: Duration = Duration::from_secs(600);
/// The longest sealed state opened: larger ones were not made here.
pub const MAX_SEALED_BYTES: usize = 8 * 1024;

const PREFIX: &str = "s1.";
/// Binds the ciphertext to its use: a seal made for anything else never opens as a state.
const CONTEXT: &[u8] = b"tfreg sign-in state v1";
const NONCE_BYTES: usize = 12;

/// Seals and opens sign-ins in progress. Never printed.
#[derive(Clone)]
pub struct StateSealer {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for StateSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateSealer(..)")
    }
}

/// What a seal holds.
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// Unix seconds.
    expires_at: u64,
    login: PendingLogin,
    /// SHA-256 (hex) of the browser's binding cookie, for the web pages' sign-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    binding: Option<String>,
}

/// A sealed state, opened.
#[derive(Debug)]
pub struct Opened {
    /// The sign-in the state was sealed for.
    pub login: PendingLogin,
    binding: Option<String>,
}

impl Opened {
    /// True when the sign-in was bound to `cookie` (the value set in the browser that
    /// started it), compared in constant time; false for a sign-in bound to none.
    pub fn bound_to(&self, cookie: &str) -> bool {
        self.binding
            .as_ref()
            .is_some_and(|binding| bool::from(binding.as_bytes().ct_eq(digest(cookie).as_bytes())))
    }
}

fn digest(value: &str) -> String {
    hex::encode(Sha256::digest(value.as_bytes()))
}

impl StateSealer {
    /// The label its key is derived for ([`crate::signing::derive_key`]).
    pub const LABEL: &'static str = "sign-in-state";

    /// A sealer with a 256-bit key (derive it from the registry's secret).
    pub fn new(key: [u8; 32]) -> Self {
        Self {
            cipher: Aes256Gcm::new(&key.into()),
        }
    }

    /// The `state` of a new sign-in; `binding` is the value of the cookie that binds it to
    /// a browser, if any.
    pub fn seal(&self, login: &PendingLogin, binding: Option<&str>, now: SystemTime) -> String {
        let sealed = Sealed {
            expires_at: unix(now) + LOGIN_LIFETIME.as_secs(),
            login: login.clone(),
            binding: binding.map(digest),
        };
        let plain = serde_json::to_vec(&sealed).expect("a sign-in always encodes");
        let mut nonce = [0u8; NONCE_BYTES];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let payload = Payload {
            msg: &plain,
            aad: CONTEXT,
        };
        let cipher = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), payload)
            .expect("AES-GCM encrypts any message of this size");
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&cipher);
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes))
    }

    /// The sign-in a `state` holds, if it was sealed with this key and has not expired.
    pub fn open(&self, state: &str, now: SystemTime) -> Result<Opened, GrantError> {
        const WHAT: &str = "sign-in";
        let unknown = || GrantError::Unknown(WHAT);
        if state.len() > MAX_SEALED_BYTES {
            return Err(unknown());
        }
        let encoded = state.strip_prefix(PREFIX).ok_or_else(unknown)?;
        let bytes = URL_SAFE_NO_PAD.decode(encoded).map_err(|_| unknown())?;
        if bytes.len() <= NONCE_BYTES {
            return Err(unknown());
        }
        let (nonce, cipher) = bytes.split_at(NONCE_BYTES);
        let payload = Payload {
            msg: cipher,
            aad: CONTEXT,
        };
        let plain = self
            .cipher
            .decrypt(Nonce::from_slice(nonce), payload)
            .map_err(|_| unknown())?;
        let sealed: Sealed = serde_json::from_slice(&plain).map_err(|_| unknown())?;
        if unix(now) >= sealed.expires_at {
            return Err(GrantError::Expired(WHAT));
        }
        Ok(Opened {
            login: sealed.login,
            binding: sealed.binding,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::grants::Purpose;
    use crate::identity::pkce;

    fn login() -> PendingLogin {
        PendingLogin {
            purpose: Purpose::Web {
                next: "/namespaces/network".into(),
            },
            verifier: pkce::random_value(),
            nonce: pkce::random_value(),
            callback: "https://registry.example.com/oauth/callback".into(),
        }
    }

    #[test]
    fn a_sealed_sign_in_opens_with_its_key_only_and_until_it_expires() {
        let sealer = StateSealer::new([7; 32]);
        let now = SystemTime::now();
        let pending = login();
        let state = sealer.seal(&pending, Some("cookie-value"), now);
        // Nothing secret shows: not the verifier, not the nonce.
        assert!(!state.contains(&pending.verifier) && !state.contains(&pending.nonce));
        let opened = sealer.open(&state, now).unwrap();
        assert_eq!(opened.login, pending);
        assert!(opened.bound_to("cookie-value"));
        assert!(!opened.bound_to("another-cookie"));

        // Another key, a changed byte, a late return, garbage: refused, in words.
        let other = StateSealer::new([8; 32]);
        assert!(matches!(
            other.open(&state, now),
            Err(GrantError::Unknown(_))
        ));
        let mut bytes = state.clone().into_bytes();
        let last = bytes.len() - 1;
        bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(bytes).unwrap();
        assert!(matches!(
            sealer.open(&changed, now),
            Err(GrantError::Unknown(_))
        ));
        let late = sealer.open(&state, now + LOGIN_LIFETIME).unwrap_err();
        assert_eq!(late.to_string(), "the sign-in has expired: start again");
        for garbage in ["", "s1.", "s1.AAAA", "unknown", &"s1.A".repeat(5000)] {
            assert!(
                matches!(sealer.open(garbage, now), Err(GrantError::Unknown(_))),
                "{garbage:?}"
            );
        }

        // Unbound (terraform login): bound to no cookie at all.
        let unbound = sealer.seal(&pending, None, now);
        assert!(!sealer.open(&unbound, now).unwrap().bound_to(""));
        // Each seal differs (a fresh nonce), though the sign-in is the same.
        assert_ne!(sealer.seal(&pending, None, now), unbound);
    }
}
