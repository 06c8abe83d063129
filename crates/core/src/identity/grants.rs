//! One-time records: authorization codes (between the registry's redirect back to
//! Terraform and Terraform redeeming it). Each is taken exactly once, and only until it
//! expires; the store keeps only the SHA-256 of its key, so what it holds cannot be
//! replayed by whoever reads the data directory or the table. A code is made only once a
//! person has come back from the identity provider with a verified ID token: nothing an
//! unauthenticated request does stores a record (sign-ins in progress are sealed into
//! their `state` instead, [`super::sealed`]).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::names::Namespace;
use crate::store::StoreError;
use crate::tokens::unix;

use super::pkce;

/// How long an authorization code can be redeemed.
pub const CODE_LIFETIME: Duration = Duration::from_secs(60);

/// The kinds of record, kept apart (each its own folder or partition).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GrantKind {
    /// An authorization code handed to Terraform.
    Code,
}

impl GrantKind {
    /// The name of its folder (data directory) or partition (table).
    pub fn name(self) -> &'static str {
        match self {
            GrantKind::Code => "code",
        }
    }
}

/// A record taken from the store: its document and when it expired or expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The record's JSON, as stored.
    pub doc: String,
    /// Unix seconds.
    pub expires_at: u64,
}

/// Where one-time records live: files in the data directory, or items of the table.
#[async_trait]
pub trait GrantStore: Send + Sync {
    /// Stores a record under `id` (a SHA-256, hex) until `expires_at` (Unix seconds).
    async fn put(
        &self,
        kind: GrantKind,
        id: &str,
        doc: String,
        expires_at: u64,
    ) -> Result<(), StoreError>;
    /// Removes the record and returns it; of concurrent takes, exactly one gets it.
    /// `None` when there is no such record (never was, taken already, or purged).
    async fn take(&self, kind: GrantKind, id: &str) -> Result<Option<Taken>, StoreError>;
}

/// Why a code or sign-in could not be taken, in words for the person or Terraform.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// No such record: never made, taken already, or purged (names what was sought).
    #[error("the {0} is unknown or has been used already")]
    Unknown(&'static str),
    /// The record was there but its lifetime had passed (names what was sought).
    #[error("the {0} has expired: start again")]
    Expired(&'static str),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a sign-in in progress is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "for", rename_all = "snake_case")]
pub enum Purpose {
    /// `terraform login`: the code goes back to Terraform's redirect URI.
    Terraform {
        /// The OAuth client id Terraform sent.
        client_id: String,
        /// Where Terraform waits for the code (a loopback URL).
        redirect_uri: String,
        /// Terraform's own `state`, returned to it untouched.
        state: String,
        /// Terraform's PKCE challenge (S256).
        code_challenge: String,
    },
    /// The web pages: a session, then on to `next`.
    Web {
        /// The path to go to once signed in.
        next: String,
    },
}

/// A sign-in in progress: what the callback needs, sealed into the `state`
/// ([`super::sealed`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingLogin {
    /// Where the sign-in goes once the identity provider answers.
    pub purpose: Purpose,
    /// The PKCE verifier of the request to the identity provider.
    pub verifier: String,
    /// The nonce its ID token must carry.
    pub nonce: String,
    /// The redirect URI given to the identity provider (it must be repeated exactly).
    pub callback: String,
}

/// What an authorization code stands for: who signed in and what their token may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedCode {
    /// The client id the code was issued to; redeeming it must repeat it.
    pub client_id: String,
    /// The redirect URI the code was sent to; redeeming it must repeat it.
    pub redirect_uri: String,
    /// Terraform's PKCE challenge (S256), which the redeeming verifier must match.
    pub code_challenge: String,
    /// Who signed in: the ID token's `sub`.
    pub subject: String,
    /// Who vouched for them: the ID token's `iss`.
    pub issuer: String,
    /// Empty: every namespace.
    pub namespaces: Vec<Namespace>,
}

/// The one-time records over a store.
#[derive(Clone)]
pub struct Grants {
    store: Arc<dyn GrantStore>,
}

fn id_of(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

impl Grants {
    /// One-time records kept in `store`.
    pub fn new(store: Arc<dyn GrantStore>) -> Self {
        Self { store }
    }

    async fn put<T: Serialize>(
        &self,
        kind: GrantKind,
        value: &T,
        lifetime: Duration,
        now: SystemTime,
    ) -> Result<String, StoreError> {
        let key = pkce::random_value();
        let doc = serde_json::to_string(value)
            .map_err(|e| StoreError::with_source("cannot encode a grant", e))?;
        self.store
            .put(kind, &id_of(&key), doc, unix(now) + lifetime.as_secs())
            .await?;
        Ok(key)
    }

    async fn take<T: for<'de> Deserialize<'de>>(
        &self,
        kind: GrantKind,
        key: &str,
        what: &'static str,
        now: SystemTime,
    ) -> Result<T, GrantError> {
        // Keys are ours: 43 base64url characters. Anything else is unknown without a lookup.
        if key.len() != 43
            || !key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(GrantError::Unknown(what));
        }
        let Some(taken) = self.store.take(kind, &id_of(key)).await? else {
            return Err(GrantError::Unknown(what));
        };
        if unix(now) >= taken.expires_at {
            return Err(GrantError::Expired(what));
        }
        serde_json::from_str(&taken.doc)
            .map_err(|e| StoreError::with_source(format!("a stored {what} is corrupt"), e).into())
    }

    /// Makes an authorization code.
    pub async fn issue_code(
        &self,
        code: &IssuedCode,
        now: SystemTime,
    ) -> Result<String, StoreError> {
        self.put(GrantKind::Code, code, CODE_LIFETIME, now).await
    }

    /// Redeems an authorization code: the first redemption gets it, any later one is refused.
    pub async fn redeem_code(&self, code: &str, now: SystemTime) -> Result<IssuedCode, GrantError> {
        self.take(GrantKind::Code, code, "authorization code", now)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryGrantStore;

    fn code() -> IssuedCode {
        IssuedCode {
            client_id: "terraform-cli".into(),
            redirect_uri: "http://localhost:10000/login".into(),
            code_challenge: pkce::challenge(&pkce::random_value()),
            subject: "alice@example.com".into(),
            issuer: "https://login.example.com".into(),
            namespaces: vec![],
        }
    }

    #[tokio::test]
    async fn codes_are_single_use_and_expire_after_a_minute() {
        let grants = Grants::new(Arc::new(MemoryGrantStore::default()));
        let now = SystemTime::now();
        let issued = code();
        let key = grants.issue_code(&issued, now).await.unwrap();
        assert_eq!(grants.redeem_code(&key, now).await.unwrap(), issued);
        assert!(matches!(
            grants.redeem_code(&key, now).await,
            Err(GrantError::Unknown(_))
        ));

        let late = grants.issue_code(&issued, now).await.unwrap();
        let error = grants
            .redeem_code(&late, now + CODE_LIFETIME)
            .await
            .unwrap_err();
        assert!(matches!(error, GrantError::Expired(_)), "{error}");
        assert_eq!(
            error.to_string(),
            "the authorization code has expired: start again"
        );
        // Expired and taken: gone for good.
        assert!(matches!(
            grants.redeem_code(&late, now).await,
            Err(GrantError::Unknown(_))
        ));
        assert!(matches!(
            grants.redeem_code("not-a-code", now).await,
            Err(GrantError::Unknown(_))
        ));
    }
}
