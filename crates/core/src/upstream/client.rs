//! The port to upstream registries: a few bounded HTTP GETs. The adapter (`tfreg-upstream`)
//! owns TLS, time limits and redirects; the core decides what to ask and checks every answer.

use std::path::Path;

use async_trait::async_trait;

use crate::names::Hostname;

/// Why an upstream call failed, as text safe to show (it names the URL's host, never a
/// secret: upstream calls carry none).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The upstream answered 404: it has no such thing.
    #[error("{0}")]
    NotFound(String),
    /// Anything else: unreachable, slow, too large, another status.
    #[error("{0}")]
    Failed(String),
}

/// HTTP GETs to upstream registries and their download hosts.
#[async_trait]
pub trait UpstreamClient: Send + Sync {
    /// Where `host`'s service discovery document is (`https://HOST/.well-known/terraform.json`
    /// unless configured otherwise).
    fn discovery_url(&self, host: &Hostname) -> String;

    /// A small answer (JSON, SHA256SUMS, a signature): a 200 of at most `limit` bytes, within
    /// the call timeout. Redirects are followed only within the same host.
    async fn get(&self, url: &str, limit: u64) -> Result<Vec<u8>, CallError>;

    /// A package, written to `to`: a 200 of at most `limit` bytes, within the download
    /// timeout. Returns its size. Redirects to other hosts are followed (release files often
    /// live elsewhere); the bytes are checked against SHA256SUMS afterwards.
    async fn download(&self, url: &str, limit: u64, to: &Path) -> Result<u64, CallError>;
}
