//! The pull-through cache of upstream providers: for a provider the operator allows
//! ([`rules`]), the network mirror answers from its origin registry, fetched through that
//! registry's own protocol ([`fetch`], over the [`client`] port), verified as Terraform
//! would verify it, and kept for good ([`record`]: release records; packages under
//! `mirror/`, which the indexer hashes and serves like any mirror upload). Version lists are
//! asked again after a bounded time and at once for a version they do not hold ([`cache`]).

pub mod cache;
pub mod client;
pub mod clients;
pub mod fetch;
pub mod mirror;
pub mod protocol;
pub mod record;
pub mod report;
pub mod rules;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub use cache::Listing;
pub use cache::{MirrorPackage, PackageFile, UpstreamCache};
pub use client::{CallError, UpstreamClient};
pub use record::{ReleaseRecord, UpstreamProvider, VersionList, UPSTREAM_PREFIX};
pub use rules::Rules;

use crate::version::Version;

/// How a package not cached yet reaches Terraform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FetchMode {
    /// At a URL of this registry, which fetches it, verifies it, stores it and then serves
    /// it: clients never reach the upstream (the local shape's default).
    #[default]
    Wait,
    /// At the upstream's own URL with its `zh:` hash, which Terraform checks; the cache
    /// fetches it meanwhile (the AWS shape, where no request may wait for a large download).
    PassThrough,
}

impl std::str::FromStr for FetchMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "wait" => Ok(FetchMode::Wait),
            "pass-through" => Ok(FetchMode::PassThrough),
            other => Err(format!("{other:?} is not wait or pass-through")),
        }
    }
}

/// The cache's settings.
#[derive(Debug, Clone)]
pub struct UpstreamSettings {
    /// Which providers may be fetched.
    pub rules: Rules,
    /// The longest a version list is served before the upstream is asked again.
    pub refresh: Duration,
    /// How uncached packages reach clients.
    pub fetch: FetchMode,
    /// Largest package fetched.
    pub max_package_bytes: u64,
    /// Most upstream fetches of releases and packages at once, across all clients.
    pub max_fetches: usize,
    /// Most of them one client may have at once.
    pub max_fetches_per_client: usize,
    /// How long a request may wait for a free fetch before it is told to come back.
    pub queue_wait: Duration,
    /// The most time all the upstream calls for one list or one release may take together
    /// (within API Gateway's 30 seconds on AWS).
    pub deadline: Duration,
    /// Where background fetches of packages run (pass-through mode).
    pub background: Background,
    /// Platforms whose packages are fetched as soon as a release is asked for, whatever
    /// platform the asker installs: lock files then get each one's `h1:` from the mirror.
    pub eager_platforms: Vec<crate::names::Platform>,
}

/// Where a package wanted in pass-through mode is fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Background {
    /// In this process (a long-running server).
    #[default]
    Here,
    /// By whoever watches the store: a request object is written under
    /// `upstream/.../fetch/` and the fetcher function, fed by the bucket's events, fetches
    /// it (the AWS shape, where a function is frozen once it has answered).
    Requested,
}

impl Default for UpstreamSettings {
    fn default() -> Self {
        Self {
            rules: Rules::default(),
            refresh: Duration::from_secs(300),
            fetch: FetchMode::Wait,
            max_package_bytes: crate::hash::PackageLimits::default().max_package_bytes,
            max_fetches: 4,
            max_fetches_per_client: 2,
            queue_wait: Duration::from_secs(20),
            deadline: Duration::from_secs(25),
            background: Background::Here,
            eager_platforms: vec![],
        }
    }
}

/// Why the cache could not answer. Every message names the upstream.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    /// Not allowed, not at the upstream, or not for this platform.
    #[error("{0}")]
    NotFound(String),
    /// The upstream did not answer usably (down, slow, too large, malformed).
    #[error("{0}")]
    Unreachable(String),
    /// The upstream answered with what Terraform would refuse.
    #[error("{0}")]
    Refused(String),
    /// Too many fetches at once: try again shortly.
    #[error("{0}")]
    Busy(String),
    /// The registry's own storage failed.
    #[error("{0}")]
    Internal(String),
}

impl UpstreamError {
    fn unreachable(up: &UpstreamProvider, reason: impl std::fmt::Display) -> Self {
        UpstreamError::Unreachable(format!(
            "the upstream registry {} did not answer usably for {}: {reason}",
            up.host, up
        ))
    }

    fn refused(up: &UpstreamProvider, version: &Version, reason: &str) -> Self {
        UpstreamError::Refused(format!(
            "{up} {version} from the upstream is refused: {reason}"
        ))
    }
}

impl From<crate::StoreError> for UpstreamError {
    fn from(e: crate::StoreError) -> Self {
        UpstreamError::Internal(crate::store::ErrorChain(&e).to_string())
    }
}
