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

/// HTTP GETs to upstream registries and their download hosts, each on behalf of one
/// configured upstream registry (`up`): the adapter decides from it where a call may connect.
#[async_trait]
pub trait UpstreamClient: Send + Sync {
    /// Where `host`'s service discovery document is (`https://HOST/.well-known/terraform.json`
    /// unless configured otherwise). Its origin (scheme, host, port) is the upstream's own.
    fn discovery_url(&self, host: &Hostname) -> String;

    /// An API answer (discovery, a version list, a download answer): a 200 of at most
    /// `limit` bytes, within the call timeout. Only to `up`'s own origin, redirects included.
    async fn get(&self, up: &Hostname, url: &str, limit: u64) -> Result<Vec<u8>, CallError>;

    /// A small release file (SHA256SUMS, its signature) that a download answer names: a 200
    /// of at most `limit` bytes, within the call timeout. It may live on another host, but
    /// never at an address the registry may not reach (the adapter checks every hop).
    async fn get_file(&self, up: &Hostname, url: &str, limit: u64) -> Result<Vec<u8>, CallError>;

    /// A package, written to `to`: a 200 of at most `limit` bytes, abandoned when it arrives
    /// too slowly. Returns its size. Like [`UpstreamClient::get_file`], it may live on
    /// another host; the bytes are checked against SHA256SUMS afterwards.
    async fn download(
        &self,
        up: &Hostname,
        url: &str,
        limit: u64,
        to: &Path,
    ) -> Result<u64, CallError>;
}
