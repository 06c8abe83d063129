//! Access tokens: what Terraform sends as `Authorization: Bearer <token>`.
//!
//! A token is `tfreg_<id>_<secret>`: a public 64-bit id, to find its record, and a 256-bit
//! secret from the operating system's secure random source. Only the secret's SHA-256 is
//! stored (a slow password hash buys nothing for 256 random bits), and it is compared in
//! constant time. A token reads every namespace, or only those it was created for.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::identity::audit::{self, Event};
use crate::names::Namespace;
use crate::store::StoreError;

const PREFIX: &str = "tfreg_";

/// What the registry keeps of a token. Never the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// Public identifier (16 hex digits), shown by `tfreg token list`.
    pub id: String,
    /// SHA-256 of the secret part, hex.
    pub secret_sha256: String,
    /// The namespaces it may read; empty: all of them.
    #[serde(default)]
    pub namespaces: Vec<Namespace>,
    /// Free text from its creator, shown by `tfreg token list`.
    #[serde(default)]
    pub description: String,
    /// Unix seconds.
    pub created_at: u64,
    /// Unix seconds from which it is refused; `None`: it does not expire.
    #[serde(default)]
    pub expires_at: Option<u64>,
    /// Unix seconds when it was revoked; `None`: not revoked.
    #[serde(default)]
    pub revoked_at: Option<u64>,
    /// Unix seconds of its last use, as its store noted it (possibly coarsened).
    #[serde(default)]
    pub last_used_at: Option<u64>,
    /// Who it was issued to: the person (`terraform login`, web sign-in) or the CI job
    /// (exchange), as their identity provider names them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// How it was issued ("terraform login via https://...", "CI exchange, rule ...");
    /// `None`: made by `tfreg token create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_via: Option<String>,
}

impl TokenRecord {
    /// True from its expiry on.
    pub fn is_expired(&self, now: SystemTime) -> bool {
        self.expires_at.is_some_and(|at| unix(now) >= at)
    }

    /// The namespaces it may read.
    pub fn access(&self) -> Access {
        if self.namespaces.is_empty() {
            Access::All
        } else {
            Access::Namespaces(self.namespaces.iter().cloned().collect())
        }
    }
}

/// A freshly created token: shown once, then only its record remains.
#[derive(Debug)]
pub struct NewToken {
    /// The whole `tfreg_<id>_<secret>`, to hand to its holder; nothing keeps it.
    pub token: String,
    /// What is stored of it.
    pub record: TokenRecord,
}

/// What a request may read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Access {
    /// Every namespace.
    All,
    /// Only these namespaces.
    Namespaces(BTreeSet<Namespace>),
}

impl Access {
    /// True when a module or provider in `namespace` may be read.
    pub fn allows(&self, namespace: &Namespace) -> bool {
        match self {
            Access::All => true,
            Access::Namespaces(allowed) => allowed.contains(namespace),
        }
    }
}

/// Why a request was refused. The messages are for the client and reveal nothing about
/// other tokens: "revoked" and "expired" are only said to someone holding the secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header on a registry that requires one.
    #[error("this registry requires a token: send `Authorization: Bearer <token>` (in Terraform, a `credentials` block for this host)")]
    Missing,
    /// An `Authorization` header that is not `Bearer <token>`.
    #[error("the Authorization header must be `Bearer <token>`")]
    Malformed,
    /// Not a token of this registry: unknown id, wrong secret, or not token-shaped.
    #[error("the token is not valid for this registry")]
    Invalid,
    /// The holder's token was revoked.
    #[error("the token has been revoked")]
    Revoked,
    /// The holder's token has expired.
    #[error("the token has expired")]
    Expired,
}

/// Where token records live: a file beside the data directory, or the DynamoDB table.
#[async_trait]
pub trait TokenStore: Send + Sync {
    /// The record with this id, if any.
    async fn get(&self, id: &str) -> Result<Option<TokenRecord>, StoreError>;
    /// Stores a record, replacing the one with the same id.
    async fn put(&self, record: TokenRecord) -> Result<(), StoreError>;
    /// Every record, revoked and expired ones included.
    async fn list(&self) -> Result<Vec<TokenRecord>, StoreError>;
    /// Notes that a token was used. Stores may coarsen this (it is informational).
    async fn record_use(&self, id: &str, at: SystemTime) -> Result<(), StoreError>;
}

/// How long a token stays listed (as "expired" or "revoked") after it ended, before its
/// record is purged: long enough for `tfreg token list` to explain a refusal, short enough
/// that token stores do not grow without bound.
pub const PURGE_AFTER_SECS: u64 = 7 * 24 * 3600;

/// When a token's record may be purged (Unix seconds): a while after it expired or was
/// revoked, whichever came first; `None` for a live token without an expiry.
pub fn purge_at(record: &TokenRecord) -> Option<u64> {
    let ended = match (record.expires_at, record.revoked_at) {
        (Some(e), Some(r)) => Some(e.min(r)),
        (e, r) => e.or(r),
    };
    ended.map(|at| at.saturating_add(PURGE_AFTER_SECS))
}

/// True when a token's record may be purged at `now`.
pub fn purge_due(record: &TokenRecord, now: SystemTime) -> bool {
    purge_at(record).is_some_and(|at| unix(now) >= at)
}

/// Seconds since the Unix epoch (0 for a time before it).
pub fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn secret_hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Makes a new token.
pub fn generate(
    namespaces: Vec<Namespace>,
    description: String,
    lifetime: Option<Duration>,
    now: SystemTime,
) -> NewToken {
    let mut id = [0u8; 8];
    let mut secret = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut id);
    rand::rngs::OsRng.fill_bytes(&mut secret);
    let id = hex::encode(id);
    let secret = URL_SAFE_NO_PAD.encode(secret);
    let mut namespaces = namespaces;
    namespaces.sort();
    namespaces.dedup();
    NewToken {
        token: format!("{PREFIX}{id}_{secret}"),
        record: TokenRecord {
            id,
            secret_sha256: secret_hash(&secret),
            namespaces,
            description,
            created_at: unix(now),
            expires_at: lifetime.map(|l| unix(now).saturating_add(l.as_secs())),
            revoked_at: None,
            last_used_at: None,
            subject: None,
            issued_via: None,
        },
    }
}

/// Splits `tfreg_<id>_<secret>`.
fn split(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.strip_prefix(PREFIX)?.split_once('_')?;
    let id_ok = id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit());
    let secret_ok = secret.len() == 43
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    (id_ok && secret_ok).then_some((id, secret))
}

/// Checks an `Authorization` header value and returns what it may read.
pub async fn authenticate(
    store: &dyn TokenStore,
    authorization: Option<&str>,
    now: SystemTime,
) -> Result<Result<Access, AuthError>, StoreError> {
    Ok(authenticate_record(store, authorization, now)
        .await?
        .map(|record| record.access()))
}

/// As [`authenticate`], returning the token's record (for who signs in with it).
pub async fn authenticate_record(
    store: &dyn TokenStore,
    authorization: Option<&str>,
    now: SystemTime,
) -> Result<Result<TokenRecord, AuthError>, StoreError> {
    let Some(header) = authorization else {
        return Ok(Err(AuthError::Missing));
    };
    let mut parts = header.trim().splitn(2, ' ');
    let (Some(scheme), Some(token)) = (parts.next(), parts.next()) else {
        return Ok(Err(AuthError::Malformed));
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Ok(Err(AuthError::Malformed));
    }
    let Some((id, secret)) = split(token.trim()) else {
        audit::record(Event::Refused, None, None, "not a token of this registry");
        return Ok(Err(AuthError::Invalid));
    };
    let Some(record) = store.get(id).await? else {
        audit::record(Event::Refused, Some(id), None, "no such token");
        return Ok(Err(AuthError::Invalid));
    };
    let given = secret_hash(secret);
    let subject = record.subject.as_deref();
    if !bool::from(given.as_bytes().ct_eq(record.secret_sha256.as_bytes())) {
        audit::record(Event::Refused, Some(id), subject, "wrong secret");
        return Ok(Err(AuthError::Invalid));
    }
    if record.revoked_at.is_some() {
        audit::record(Event::Refused, Some(id), subject, "revoked");
        return Ok(Err(AuthError::Revoked));
    }
    if record.is_expired(now) {
        audit::record(Event::Refused, Some(id), subject, "expired");
        return Ok(Err(AuthError::Expired));
    }
    if record.last_used_at.is_none() {
        let how = record.issued_via.as_deref().unwrap_or("tfreg token create");
        audit::record(Event::FirstUse, Some(id), subject, how);
    }
    // "Last used" is informational: failing to record it must not refuse a valid token.
    if let Err(e) = store.record_use(id, now).await {
        tracing::warn!(token_id = id, error = %e, "could not record a token's use");
    }
    Ok(Ok(record))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryTokenStore as Store;

    fn ns(s: &str) -> Namespace {
        Namespace::parse(s).unwrap()
    }

    #[tokio::test]
    async fn tokens_authenticate_until_revoked_or_expired() {
        let store = Store::default();
        let now = SystemTime::now();
        let all = generate(vec![], "ci".into(), None, now);
        let scoped = generate(
            vec![ns("acme"), ns("acme")],
            String::new(),
            Some(Duration::from_secs(60)),
            now,
        );
        assert!(all.token.starts_with("tfreg_") && all.token.len() == 6 + 16 + 1 + 43);
        assert!(!all
            .record
            .secret_sha256
            .contains(all.token.splitn(3, '_').nth(2).unwrap()));
        assert_eq!(scoped.record.namespaces, [ns("acme")]);
        store.put(all.record.clone()).await.unwrap();
        store.put(scoped.record.clone()).await.unwrap();

        let auth = |h: String, at: SystemTime| {
            let store = &store;
            async move { authenticate(store, Some(&h), at).await.unwrap() }
        };
        assert_eq!(
            auth(format!("Bearer {}", all.token), now).await,
            Ok(Access::All)
        );
        assert_eq!(
            auth(format!("bearer  {}", all.token), now).await,
            Ok(Access::All)
        );
        let acme = Access::Namespaces([ns("acme")].into());
        assert_eq!(
            auth(format!("Bearer {}", scoped.token), now).await,
            Ok(acme.clone())
        );
        assert!(acme.allows(&ns("acme")) && !acme.allows(&ns("globex")));
        assert!(store
            .get(&all.record.id)
            .await
            .unwrap()
            .unwrap()
            .last_used_at
            .is_some());

        let later = now + Duration::from_secs(61);
        assert_eq!(
            auth(format!("Bearer {}", scoped.token), later).await,
            Err(AuthError::Expired)
        );
        let mut revoked = all.record.clone();
        revoked.revoked_at = Some(unix(now));
        store.put(revoked).await.unwrap();
        assert_eq!(
            auth(format!("Bearer {}", all.token), now).await,
            Err(AuthError::Revoked)
        );
    }

    #[tokio::test]
    async fn bad_headers_are_refused_without_revealing_anything() {
        let store = Store::default();
        let now = SystemTime::now();
        let token = generate(vec![], String::new(), None, now);
        store.put(token.record.clone()).await.unwrap();
        assert_eq!(
            authenticate(&store, None, now).await.unwrap(),
            Err(AuthError::Missing)
        );
        for (header, error) in [
            ("Bearer", AuthError::Malformed),
            ("Basic dXNlcjpwYXNz", AuthError::Malformed),
            ("Bearer nonsense", AuthError::Invalid),
            (
                "Bearer tfreg_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                AuthError::Invalid,
            ),
        ] {
            assert_eq!(
                authenticate(&store, Some(header), now).await.unwrap(),
                Err(error),
                "{header}"
            );
        }
        // The right id with a wrong secret is just invalid, even for a revoked token.
        let wrong = format!("Bearer tfreg_{}_{}", token.record.id, "B".repeat(43));
        assert_eq!(
            authenticate(&store, Some(&wrong), now).await.unwrap(),
            Err(AuthError::Invalid)
        );
    }
}
