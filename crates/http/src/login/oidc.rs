//! The registry as an OpenID Connect client: the provider's metadata
//! (`/.well-known/openid-configuration`) and keys (JWKS), each cached for an hour (keys
//! read again, at most once a minute, when a token names a key not yet seen, as providers
//! rotate them), and redeeming a code at its token endpoint. Every call is bounded in time
//! and in size. Each issuer's metadata is fetched by one request at a time, and a failure is
//! kept for [`RETRY_FAILED_AFTER`]: however many sign-ins start while the provider is down
//! or stalls, the registry asks it at most once every few seconds. At most
//! [`MAX_REDEEMING`] codes are redeemed at the provider at once. (Only configured issuers
//! are ever asked: requests name none of their own.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use serde::Deserialize;
use tfreg_core::identity::config::Claims;
use tfreg_core::identity::jwt::{self, Refusal};
use tfreg_core::identity::SignInConfig;

const TIMEOUT: Duration = Duration::from_secs(10);
const MAX_ANSWER_BYTES: usize = 1024 * 1024;
const CACHE_FOR: Duration = Duration::from_secs(3600);
const REFRESH_AT_MOST_EVERY: Duration = Duration::from_secs(60);
/// How long a failure to read a provider's metadata is answered from memory.
pub const RETRY_FAILED_AFTER: Duration = Duration::from_secs(5);
/// The most codes redeemed at the provider at once; others wait their turn (at most as
/// long as a call may take).
pub const MAX_REDEEMING: usize = 16;

/// The identity provider could not be asked, or answered nonsense.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ProviderError(pub String);

/// Why an ID token was not accepted: the token's fault, or the provider's.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The token itself was refused (malformed, unsigned by the issuer's keys, expired, or
    /// not meant for the registry).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The provider's metadata or keys could not be read.
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// What the registry uses of a provider's metadata.
#[derive(Debug, Clone, Deserialize)]
pub struct ProviderMetadata {
    /// The issuer identifier, checked to be the one the metadata was read for.
    pub issuer: String,
    /// Where the person's browser is sent to sign in.
    pub authorization_endpoint: String,
    /// Where an authorization code is redeemed for an ID token.
    pub token_endpoint: String,
    /// Where the provider publishes the keys its ID tokens are signed with (JWKS).
    pub jwks_uri: String,
}

struct Cached<T> {
    value: T,
    at: Instant,
}

/// An OpenID Connect client for any number of issuers.
pub struct Oidc {
    http: reqwest::Client,
    metadata: Mutex<HashMap<String, Cached<Result<ProviderMetadata, String>>>>,
    /// Per issuer, held while its metadata is fetched: one fetch at a time, the others
    /// then read its answer (a stalled issuer holds up no other).
    fetching: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    redeeming: tokio::sync::Semaphore,
    keys: Mutex<HashMap<String, Cached<JwkSet>>>,
}

impl Default for Oidc {
    fn default() -> Self {
        Self::new()
    }
}

/// A URL the registry may call: `https://`, or `http://` on this machine (an emulator).
fn callable(url: &str) -> bool {
    url.starts_with("https://") || tfreg_core::identity::config::is_loopback_http(url)
}

impl Oidc {
    /// A client trusting the usual public roots, and those of `SSL_CERT_FILE` when it is
    /// set (an identity provider behind a company's own certificate authority).
    pub fn new() -> Self {
        let mut builder = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("tfreg/", env!("CARGO_PKG_VERSION")));
        if let Some(path) = std::env::var_os("SSL_CERT_FILE") {
            match std::fs::read(&path).map(|pem| reqwest::Certificate::from_pem_bundle(&pem)) {
                Ok(Ok(roots)) => {
                    for root in roots {
                        builder = builder.add_root_certificate(root);
                    }
                }
                _ => tracing::warn!(
                    path = %std::path::Path::new(&path).display(),
                    "SSL_CERT_FILE could not be read as PEM certificates; identity providers are trusted by the public roots only"
                ),
            }
        }
        let http = builder.build().unwrap_or_else(|_| reqwest::Client::new());
        Self {
            http,
            metadata: Mutex::new(HashMap::new()),
            fetching: Mutex::new(HashMap::new()),
            redeeming: tokio::sync::Semaphore::new(MAX_REDEEMING),
            keys: Mutex::new(HashMap::new()),
        }
    }

    async fn get_json<T: for<'de> Deserialize<'de>>(
        &self,
        url: &str,
        what: &str,
    ) -> Result<T, ProviderError> {
        if !callable(url) {
            return Err(ProviderError(format!(
                "the {what} URL {url:?} is not https://"
            )));
        }
        let response = self
            .http
            .get(url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| {
                ProviderError(format!(
                    "could not fetch the identity provider's {what} from {url}: {e}"
                ))
            })?;
        read_json(response, what, url).await
    }

    /// The provider's metadata, checked to name the issuer it was read for.
    pub async fn metadata(&self, issuer: &str) -> Result<ProviderMetadata, ProviderError> {
        if let Some(known) = self.known_metadata(issuer) {
            return known;
        }
        let lock = match self.fetching.lock() {
            Ok(mut locks) => Arc::clone(locks.entry(issuer.to_owned()).or_default()),
            Err(_) => Arc::default(),
        };
        let _one_at_a_time = lock.lock().await;
        // Fetched meanwhile by whoever held the lock?
        if let Some(known) = self.known_metadata(issuer) {
            return known;
        }
        let fetched = self.fetch_metadata(issuer).await;
        if let Ok(mut cache) = self.metadata.lock() {
            cache.insert(
                issuer.to_owned(),
                Cached {
                    value: fetched.clone().map_err(|e| e.0),
                    at: Instant::now(),
                },
            );
        }
        fetched
    }

    /// The metadata or failure kept for `issuer`, while it is fresh.
    fn known_metadata(&self, issuer: &str) -> Option<Result<ProviderMetadata, ProviderError>> {
        let cache = self.metadata.lock().ok()?;
        let cached = cache.get(issuer)?;
        let fresh_for = match cached.value {
            Ok(_) => CACHE_FOR,
            Err(_) => RETRY_FAILED_AFTER,
        };
        (cached.at.elapsed() < fresh_for).then(|| cached.value.clone().map_err(ProviderError))
    }

    async fn fetch_metadata(&self, issuer: &str) -> Result<ProviderMetadata, ProviderError> {
        let url = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        let metadata: ProviderMetadata = self.get_json(&url, "OpenID configuration").await?;
        if metadata.issuer != issuer {
            return Err(ProviderError(format!(
                "the identity provider at {url} says its issuer is {:?}, not {issuer:?}: configure the issuer exactly as its tokens name it",
                metadata.issuer
            )));
        }
        Ok(metadata)
    }

    /// The issuer's keys; `refresh` reads them again unless that was done a minute ago.
    async fn keys(&self, issuer: &str, refresh: bool) -> Result<JwkSet, ProviderError> {
        let cached = self.keys.lock().ok().and_then(|k| {
            k.get(issuer).and_then(|c| {
                let fresh = c.at.elapsed()
                    < if refresh {
                        REFRESH_AT_MOST_EVERY
                    } else {
                        CACHE_FOR
                    };
                fresh.then(|| c.value.clone())
            })
        });
        if let Some(keys) = cached {
            return Ok(keys);
        }
        let metadata = self.metadata(issuer).await?;
        let keys: JwkSet = self
            .get_json(&metadata.jwks_uri, "signing keys (JWKS)")
            .await?;
        if let Ok(mut cache) = self.keys.lock() {
            cache.insert(
                issuer.to_owned(),
                Cached {
                    value: keys.clone(),
                    at: Instant::now(),
                },
            );
        }
        Ok(keys)
    }

    /// Checks an ID token of `issuer` made for `audience` (with `nonce`, for a sign-in).
    pub async fn verify(
        &self,
        issuer: &str,
        token: &str,
        audience: &str,
        nonce: Option<&str>,
    ) -> Result<Claims, VerifyError> {
        let keys = self.keys(issuer, false).await?;
        match jwt::verify(token, &keys, issuer, audience, nonce) {
            Err(Refusal::UnknownKey(_)) => {
                let keys = self.keys(issuer, true).await?;
                Ok(jwt::verify(token, &keys, issuer, audience, nonce)?)
            }
            other => Ok(other?),
        }
    }

    /// Redeems a code at the provider's token endpoint (client secret by HTTP Basic, as
    /// OpenID Connect's default) and returns the ID token.
    pub async fn redeem(
        &self,
        config: &SignInConfig,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> Result<String, ProviderError> {
        let metadata = self.metadata(&config.issuer).await?;
        let _turn = tokio::time::timeout(TIMEOUT, self.redeeming.acquire())
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or_else(|| {
                ProviderError(
                    "too many sign-ins are being completed at once: try again in a moment".into(),
                )
            })?;
        if !callable(&metadata.token_endpoint) {
            return Err(ProviderError(format!(
                "the token endpoint {:?} is not https://",
                metadata.token_endpoint
            )));
        }
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ];
        let mut request = self
            .http
            .post(&metadata.token_endpoint)
            .header("accept", "application/json");
        match &config.client_secret {
            Some(secret) => {
                // RFC 6749 §2.3.1: both parts form-encoded, then Basic.
                let enc = |s: &str| {
                    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC)
                        .to_string()
                };
                request = request.basic_auth(enc(&config.client_id), Some(enc(secret)));
            }
            None => form.push(("client_id", &config.client_id)),
        }
        let response = request.form(&form).send().await.map_err(|e| {
            ProviderError(format!(
                "could not reach the identity provider's token endpoint: {e}"
            ))
        })?;
        #[derive(Deserialize)]
        struct Answer {
            id_token: Option<String>,
            error: Option<String>,
            error_description: Option<String>,
        }
        let status = response.status();
        let answer: Answer = read_json_any(response, "token answer").await?;
        if let Some(error) = answer.error {
            return Err(ProviderError(format!(
                "the identity provider refused the code ({status}): {error}{}",
                answer
                    .error_description
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            )));
        }
        answer
            .id_token
            .ok_or_else(|| ProviderError("the identity provider's token answer has no id_token: is the `openid` scope allowed for this client?".into()))
    }
}

async fn read_body(mut response: reqwest::Response, what: &str) -> Result<Vec<u8>, ProviderError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        ProviderError(format!(
            "reading the identity provider's {what} failed: {e}"
        ))
    })? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(ProviderError(format!(
                "the identity provider's {what} is larger than {MAX_ANSWER_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

async fn read_json<T: for<'de> Deserialize<'de>>(
    response: reqwest::Response,
    what: &str,
    url: &str,
) -> Result<T, ProviderError> {
    let status = response.status();
    if !status.is_success() {
        return Err(ProviderError(format!(
            "the identity provider answered {status} for its {what} at {url}"
        )));
    }
    read_json_any(response, what).await
}

async fn read_json_any<T: for<'de> Deserialize<'de>>(
    response: reqwest::Response,
    what: &str,
) -> Result<T, ProviderError> {
    let body = read_body(response, what).await?;
    serde_json::from_slice(&body).map_err(|e| {
        ProviderError(format!(
            "the identity provider's {what} is not what OpenID Connect describes: {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn a_failing_provider_is_asked_once_however_many_sign_ins_start() {
        // A provider that answers every request with a 500, counting them.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let asked = Arc::new(AtomicUsize::new(0));
        let counting = Arc::clone(&asked);
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            while let Ok((mut socket, _)) = listener.accept().await {
                counting.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut head = [0u8; 4096];
                    let _ = socket.read(&mut head).await;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    let _ = socket
                        .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                        .await;
                });
            }
        });
        let oidc = Arc::new(Oidc::new());
        let starts: Vec<_> = (0..50)
            .map(|_| {
                let (oidc, issuer) = (Arc::clone(&oidc), issuer.clone());
                tokio::spawn(async move { oidc.metadata(&issuer).await })
            })
            .collect();
        for start in starts {
            let error = start.await.unwrap().unwrap_err();
            assert!(error.0.contains("500"), "{error}");
        }
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        // Within a few seconds, the failure is answered from memory.
        assert!(oidc.metadata(&issuer).await.is_err());
        assert_eq!(asked.load(Ordering::SeqCst), 1);
    }
}
