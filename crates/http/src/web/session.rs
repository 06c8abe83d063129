//! Sessions of the web pages: a signed cookie that names a token, never holds it.
//!
//! Signing in with a token sets `__Host-tfreg_session` to `v1.<token id>.<expiry>.<mac>`,
//! where the MAC (HMAC-SHA256 under a key derived from the registry's secret) covers the
//! id, the expiry and the SHA-256 of the token's secret as stored. Every page view reads
//! the token's record again, so a session ends when its token is revoked, expires, or is
//! replaced, and at its own expiry, whichever comes first. The cookie is `HttpOnly`,
//! `Secure`, `SameSite=Strict` and `__Host-` (no `Domain`, path `/`).
//!
//! Forms are CSRF-safe twice over: the cookies are `SameSite=Strict`, and each form carries
//! a token the server checks. Sign-in compares its form field with a random cookie set with
//! the form; sign-out compares its field with a MAC of the session cookie.

use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use subtle::ConstantTimeEq;
use tfreg_core::tokens::{unix, Access, TokenRecord, TokenStore};
use tfreg_core::StoreError;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "__Host-tfreg_session";
/// The sign-in form's CSRF cookie.
pub const CSRF_COOKIE: &str = "__Host-tfreg_csrf";
/// How long a session lasts at most, unless configured otherwise.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// The key sessions are signed with. Never printed.
#[derive(Clone)]
pub struct SessionKey([u8; 32]);

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(..)")
    }
}

/// A signed-in viewer: what they may read, and their token's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The id of the token the session stands for.
    pub token_id: String,
    /// The namespaces that token may read.
    pub access: Access,
    /// The sign-out form's CSRF token.
    pub csrf: String,
}

impl SessionKey {
    /// The label sessions' keys are derived for ([`tfreg_core::signing::derive_key`]).
    pub const LABEL: &'static str = "web-session";

    /// A key that signs and checks session cookies.
    pub fn new(key: [u8; 32]) -> Self {
        Self(key)
    }

    /// The session key derived from a secret (`TFREG_SESSION_SECRET`).
    pub fn from_secret(secret: &[u8]) -> Self {
        Self(tfreg_core::signing::derive_key(secret, Self::LABEL))
    }

    /// The session key derived from the secret of the registry's download URLs.
    pub fn from_signer(signer: &tfreg_core::signing::UrlSigner) -> Self {
        Self(signer.derive_key(Self::LABEL))
    }

    /// A key for another purpose (`label`), derived from this one: what is sealed with
    /// it cannot pass for a session, nor a session for it.
    pub fn derive_key(&self, label: &str) -> [u8; 32] {
        tfreg_core::signing::derive_key(&self.0, label)
    }

    fn mac(&self, purpose: &[u8], parts: &[&str]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("any key length");
        mac.update(purpose);
        for part in parts {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part.as_bytes());
        }
        mac
    }

    /// The cookie value of a session for `record`, ending at `expires` (Unix seconds).
    pub fn issue(&self, record: &TokenRecord, expires: u64) -> String {
        let expires = expires.to_string();
        let mac = self
            .mac(
                b"session-v1",
                &[&record.id, &expires, &record.secret_sha256],
            )
            .finalize()
            .into_bytes();
        format!("v1.{}.{expires}.{}", record.id, URL_SAFE_NO_PAD.encode(mac))
    }

    /// When a session for `record` signed in at `now` ends: after `lifetime`, or when the
    /// token expires, whichever is first.
    pub fn expiry(record: &TokenRecord, now: SystemTime, lifetime: Duration) -> u64 {
        let end = unix(now).saturating_add(lifetime.as_secs());
        record.expires_at.map_or(end, |at| at.min(end))
    }

    /// The session a cookie value stands for, if it is valid now: signed by this key, not
    /// past its expiry, and its token still live and unchanged.
    pub async fn verify(
        &self,
        tokens: &dyn TokenStore,
        cookie: &str,
        now: SystemTime,
    ) -> Result<Option<Session>, StoreError> {
        let mut parts = cookie.split('.');
        let (Some("v1"), Some(id), Some(expires), Some(mac), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Ok(None);
        };
        let id_ok = id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit());
        let Ok(expires_at) = expires.parse::<u64>() else {
            return Ok(None);
        };
        let Ok(given) = URL_SAFE_NO_PAD.decode(mac) else {
            return Ok(None);
        };
        if !id_ok || expires_at <= unix(now) {
            return Ok(None);
        }
        let Some(record) = tokens.get(id).await? else {
            return Ok(None);
        };
        let ok = self
            .mac(b"session-v1", &[id, expires, &record.secret_sha256])
            .verify_slice(&given)
            .is_ok();
        if !ok || record.revoked_at.is_some() || record.is_expired(now) {
            return Ok(None);
        }
        Ok(Some(Session {
            token_id: record.id.clone(),
            access: record.access(),
            csrf: self.sign_out_token(cookie),
        }))
    }

    /// The sign-out form's CSRF token for a session cookie.
    pub fn sign_out_token(&self, cookie: &str) -> String {
        let mac = self.mac(b"sign-out-v1", &[cookie]).finalize().into_bytes();
        URL_SAFE_NO_PAD.encode(mac)
    }
}

/// A random value for the sign-in form's CSRF cookie and field.
pub fn new_csrf_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Compares two secrets in constant time (for equal lengths).
pub fn same_secret(a: &str, b: &str) -> bool {
    !a.is_empty() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// A `Set-Cookie` value with the attributes every cookie of the pages has.
pub fn set_cookie(name: &str, value: &str, max_age: u64) -> String {
    cookie_attributes(name, value, max_age, "Strict")
}

fn cookie_attributes(name: &str, value: &str, max_age: u64, same_site: &str) -> String {
    format!("{name}={value}; Max-Age={max_age}; Path=/; Secure; HttpOnly; SameSite={same_site}")
}

/// A `Set-Cookie` value as [`set_cookie`]'s, but `SameSite=Lax`: for the one cookie that
/// must come back on the identity provider's redirect (a cross-site navigation), the one
/// that binds a sign-in to the browser that started it.
pub fn set_lax_cookie(name: &str, value: &str, max_age: u64) -> String {
    cookie_attributes(name, value, max_age, "Lax")
}

/// Sets cookie `name` on `response` (see [`set_cookie`]; `max_age` 0 removes it).
pub fn append_cookie(
    response: &mut axum::response::Response,
    name: &str,
    value: &str,
    max_age: u64,
) {
    append_set_cookie(response, &set_cookie(name, value, max_age));
}

/// Adds a `Set-Cookie` header ([`set_cookie`], [`set_lax_cookie`]) to `response`.
pub fn append_set_cookie(response: &mut axum::response::Response, set_cookie: &str) {
    if let Ok(value) = set_cookie.parse() {
        response
            .headers_mut()
            .append(axum::http::header::SET_COOKIE, value);
    }
}

/// The value of cookie `name` that a request sent.
pub fn request_cookie<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(axum::http::header::COOKIE)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| cookie(h, name))
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        (key == name).then_some(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfreg_core::memory::MemoryTokenStore;
    use tfreg_core::tokens::generate;

    #[tokio::test]
    async fn a_session_holds_until_it_expires_or_its_token_ends() {
        let key = SessionKey::new([7; 32]);
        let store = MemoryTokenStore::default();
        let now = SystemTime::now();
        let token = generate(vec![], "ci".into(), None, now);
        store.put(token.record.clone()).await.unwrap();
        let cookie = key.issue(&token.record, unix(now) + 60);
        assert!(!cookie.contains(token.token.rsplit('_').next().unwrap()));

        let session = key.verify(&store, &cookie, now).await.unwrap().unwrap();
        assert_eq!(session.access, Access::All);
        assert_eq!(session.csrf, key.sign_out_token(&cookie));
        // Past its expiry, with a tampered expiry or MAC, or under another key: no session.
        let later = now + Duration::from_secs(61);
        assert!(key.verify(&store, &cookie, later).await.unwrap().is_none());
        let stretched = cookie.replacen(
            &format!(".{}.", unix(now) + 60),
            &format!(".{}.", unix(now) + 6000),
            1,
        );
        assert!(key.verify(&store, &stretched, now).await.unwrap().is_none());
        let other = SessionKey::new([8; 32]);
        assert!(other.verify(&store, &cookie, now).await.unwrap().is_none());
        for junk in ["", "v1", "v1.x.1.y", "v2.a.b.c", "v1.a.b.c.d"] {
            assert!(key.verify(&store, junk, now).await.unwrap().is_none());
        }
        // Revoking the token ends the session.
        let mut revoked = token.record.clone();
        revoked.revoked_at = Some(unix(now));
        store.put(revoked).await.unwrap();
        assert!(key.verify(&store, &cookie, now).await.unwrap().is_none());
    }

    #[test]
    fn a_session_never_outlives_its_token() {
        let now = SystemTime::now();
        let token = generate(vec![], String::new(), Some(Duration::from_secs(30)), now);
        let end = SessionKey::expiry(&token.record, now, DEFAULT_LIFETIME);
        assert_eq!(end, unix(now) + 30);
    }

    #[test]
    fn cookies_are_read_by_exact_name() {
        let header = "a=1; __Host-tfreg_session=v1.x; __Host-tfreg_csrf=abc";
        assert_eq!(cookie(header, SESSION_COOKIE), Some("v1.x"));
        assert_eq!(cookie(header, CSRF_COOKIE), Some("abc"));
        assert_eq!(cookie(header, "tfreg_session"), None);
        assert!(!same_secret("", ""));
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd"));
    }
}
