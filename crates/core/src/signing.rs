//! Self-authorising download URLs, the registry's own ([`crate::downloads::Downloads`]: the
//! local shape, and S3's redirect mode): the local twin of an S3 presigned URL. Terraform sends no credentials when it downloads an
//! archive, so the URL itself carries an expiring HMAC-SHA256 signature bound to one key.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS, NON_ALPHANUMERIC};
use rand::RngCore;
use sha2::Sha256;

use crate::origin::Origin;

/// The path under which a self-serving store's files are downloaded.
pub const ARTIFACTS_PATH: &str = "/v1/artifacts/";

/// Bytes of a freshly generated signing secret.
pub const SECRET_LEN: usize = 32;

/// Characters escaped in a key's path segments: everything but unreserved characters and the
/// few sub-delimiters that keys may legitimately contain.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'/')
    .add(b'\\')
    .add(b'^')
    .add(b'|')
    .add(b'&')
    .add(b'=');

/// Query values are escaped but for unreserved characters: a revision such as an S3
/// version id may hold `+`, which a query decoder would read as a space.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Why a download URL was refused. The client sees one message for all of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// Its expiry time has passed.
    #[error("the download URL has expired")]
    Expired,
    /// Not signed with this server's secret, or altered since.
    #[error("the download URL's signature does not match")]
    BadSignature,
    /// Its expiry is further away than the signer's lifetime (plus clock slack) allows.
    #[error("the download URL expires later than this registry's URLs ever do")]
    TooLong,
}

/// Clock difference tolerated between the server that issued a URL and the one checking it.
const CLOCK_SLACK_SECS: u64 = 60;

/// Signs and verifies download URLs with a server secret.
#[derive(Clone)]
pub struct UrlSigner {
    secret: Vec<u8>,
    ttl: Duration,
}

impl std::fmt::Debug for UrlSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret.
        f.debug_struct("UrlSigner")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// A key for a purpose (`label`), derived from `secret`: what holds the one cannot forge
/// the other, and no second secret has to be kept.
pub fn derive_key(secret: &[u8], label: &str) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts keys of any length");
    mac.update(b"tfreg-derived-key-v1\n");
    mac.update(label.as_bytes());
    mac.finalize().into_bytes().into()
}

impl UrlSigner {
    /// A signer whose URLs are valid for `ttl` from when they are made.
    pub fn new(secret: Vec<u8>, ttl: Duration) -> Self {
        Self { secret, ttl }
    }

    /// A new secret from the operating system's secure random source.
    pub fn generate_secret() -> [u8; SECRET_LEN] {
        let mut secret = [0u8; SECRET_LEN];
        rand::rngs::OsRng.fill_bytes(&mut secret);
        secret
    }

    /// How long a signed URL stays valid.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// A key for another purpose (`label`), derived from the secret (see [`derive_key`]).
    pub fn derive_key(&self, label: &str) -> [u8; 32] {
        derive_key(&self.secret, label)
    }

    fn mac(&self, key: &str, revision: Option<&str>, expires: u64) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC accepts keys of any length");
        // Length-prefix the key so no (key, expires) pair can collide with another.
        mac.update(b"tfreg-download-v1\n");
        mac.update(&(key.len() as u64).to_be_bytes());
        mac.update(key.as_bytes());
        let revision = revision.unwrap_or("");
        mac.update(&(revision.len() as u64).to_be_bytes());
        mac.update(revision.as_bytes());
        mac.update(&expires.to_be_bytes());
        mac
    }

    /// The absolute download URL for `key`, valid until `now + ttl`.
    pub fn url(&self, origin: &Origin, key: &str, now: SystemTime) -> String {
        self.url_for_revision(origin, key, None, now)
    }

    /// The download URL for one revision of `key` (bound into the signature).
    pub fn url_for_revision(
        &self,
        origin: &Origin,
        key: &str,
        revision: Option<&str>,
        now: SystemTime,
    ) -> String {
        let expires = unix_seconds(now).saturating_add(self.ttl.as_secs().max(1));
        let mac = self.mac(key, revision, expires);
        let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        let path: Vec<String> = key
            .split('/')
            .map(|s| utf8_percent_encode(s, SEGMENT).to_string())
            .collect();
        let revision = revision.map_or(String::new(), |r| {
            format!("&revision={}", utf8_percent_encode(r, QUERY_VALUE))
        });
        format!(
            "{}{}{}?expires={expires}&signature={signature}{revision}",
            origin.as_str(),
            ARTIFACTS_PATH,
            path.join("/")
        )
    }

    /// `expires=...&signature=...` authorising `key` until `now + ttl`, for a URL of this
    /// server at another path than [`ARTIFACTS_PATH`] (the upstream cache's package URLs);
    /// [`UrlSigner::verify`] checks it.
    pub fn signed_query(&self, key: &str, now: SystemTime) -> String {
        let expires = unix_seconds(now).saturating_add(self.ttl.as_secs().max(1));
        let signature =
            URL_SAFE_NO_PAD.encode(self.mac(key, None, expires).finalize().into_bytes());
        format!("expires={expires}&signature={signature}")
    }

    /// Checks a URL's `expires` and `signature` for `key` (the decoded path after
    /// [`ARTIFACTS_PATH`]). The comparison is constant-time.
    pub fn verify(
        &self,
        key: &str,
        revision: Option<&str>,
        expires: u64,
        signature: &str,
        now: SystemTime,
    ) -> Result<(), SignatureError> {
        let given = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| SignatureError::BadSignature)?;
        self.mac(key, revision, expires)
            .verify_slice(&given)
            .map_err(|_| SignatureError::BadSignature)?;
        // Checked after the signature, so an expiry can't be probed without a valid signature.
        let now = unix_seconds(now);
        if now > expires {
            return Err(SignatureError::Expired);
        }
        // No URL this server issues lives longer than its lifetime: one that does was not
        // made with the current settings (a forgery with a leaked secret, or a URL from
        // before the lifetime was shortened), and is refused.
        let longest = now
            .saturating_add(self.ttl.as_secs().max(1))
            .saturating_add(CLOCK_SLACK_SECS);
        if expires > longest {
            return Err(SignatureError::TooLong);
        }
        Ok(())
    }
}

fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> UrlSigner {
        UrlSigner::new(
            b"0123456789abcdef0123456789abcdef".to_vec(),
            Duration::from_secs(300),
        )
    }

    fn parts(url: &str) -> (String, u64, String) {
        let (path, query) = url.split_once('?').unwrap();
        let key = path.split_once(ARTIFACTS_PATH).unwrap().1.to_owned();
        let mut expires = 0;
        let mut sig = String::new();
        for pair in query.split('&') {
            match pair.split_once('=').unwrap() {
                ("expires", v) => expires = v.parse().unwrap(),
                ("signature", v) => sig = v.to_owned(),
                _ => {}
            }
        }
        (key, expires, sig)
    }

    #[test]
    fn a_signed_url_verifies_until_it_expires() {
        let origin = Origin::https("127.0.0.1:8443").unwrap();
        let now = SystemTime::now();
        let url = signer().url(&origin, "modules/acme/net/aws/1.0.0+b.1.tar.gz", now);
        assert!(url.starts_with(
            "https://127.0.0.1:8443/v1/artifacts/modules/acme/net/aws/1.0.0+b.1.tar.gz?expires="
        ));
        let (key, expires, sig) = parts(&url);
        assert_eq!(signer().verify(&key, None, expires, &sig, now), Ok(()));
        assert_eq!(
            signer().verify(&key, None, expires, &sig, now + Duration::from_secs(301)),
            Err(SignatureError::Expired)
        );
    }

    #[test]
    fn any_change_breaks_the_signature() {
        let origin = Origin::https("localhost:1").unwrap();
        let now = SystemTime::now();
        let (key, expires, sig) = parts(&signer().url(&origin, "modules/a/b/c/1.0.0.zip", now));
        let bad = SignatureError::BadSignature;
        assert_eq!(
            signer().verify("modules/a/b/c/1.0.1.zip", None, expires, &sig, now),
            Err(bad.clone())
        );
        assert_eq!(
            signer().verify(&key, None, expires + 1, &sig, now),
            Err(bad.clone())
        );
        assert_eq!(
            signer().verify(&key, None, expires, "", now),
            Err(bad.clone())
        );
        assert_eq!(
            signer().verify(&key, None, expires, "!!", now),
            Err(bad.clone())
        );
        let mut flipped = sig.into_bytes();
        flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert_eq!(
            signer().verify(&key, None, expires, &flipped, now),
            Err(bad.clone())
        );
        let other = UrlSigner::new(vec![7; 32], Duration::from_secs(300));
        let (_, e2, s2) = parts(&other.url(&origin, &key, now));
        // A signature for one revision is not valid for another, or for none.
        let pinned = signer().url_for_revision(&origin, &key, Some("v:1+a/b="), now);
        let (_, e3, s3) = parts(&pinned);
        assert!(pinned.ends_with("&revision=v%3A1%2Ba%2Fb%3D"), "{pinned}");
        assert_eq!(
            signer().verify(&key, Some("v:1+a/b="), e3, &s3, now),
            Ok(())
        );
        assert_eq!(
            signer().verify(&key, Some("v:2"), e3, &s3, now),
            Err(bad.clone())
        );
        assert_eq!(signer().verify(&key, None, e3, &s3, now), Err(bad.clone()));
        assert_eq!(signer().verify(&key, None, e2, &s2, now), Err(bad));
    }

    #[test]
    fn a_url_valid_for_longer_than_the_lifetime_is_refused() {
        // A URL signed with the right secret but an expiry a year away (as one forged with a
        // leaked secret would be) is refused: no URL this server issues lives that long.
        let origin = Origin::https("127.0.0.1:1").unwrap();
        let now = SystemTime::now();
        let long = UrlSigner::new(signer().secret.clone(), Duration::from_secs(365 * 86400));
        let (key, expires, sig) = parts(&long.url(&origin, "modules/a/b/c/1.0.0.zip", now));
        assert_eq!(long.verify(&key, None, expires, &sig, now), Ok(()));
        assert_eq!(
            signer().verify(&key, None, expires, &sig, now),
            Err(SignatureError::TooLong)
        );
        let (key, expires, sig) = parts(&signer().url(&origin, "modules/a/b/c/1.0.0.zip", now));
        assert_eq!(signer().verify(&key, None, expires, &sig, now), Ok(()));
    }

    #[test]
    fn origins_refuse_forged_hosts() {
        assert!(Origin::https("evil.com/path").is_none());
        assert!(Origin::https("user@evil.com").is_none());
        assert!(Origin::https("").is_none());
        assert_eq!(
            Origin::https("[::1]:8443").unwrap().as_str(),
            "https://[::1]:8443"
        );
    }
}
