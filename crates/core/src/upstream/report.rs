//! What the upstream cache holds, read back from its records for `tfreg status` (and the
//! web pages): per upstream provider, where it comes from, when its list was last
//! refreshed (and whether it is stale), each cached release with its platforms, and each
//! refusal with its reason.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;

use super::record::{Refusal, ReleaseRecord, UpstreamProvider, VersionList};
use crate::layout::{classify, Artifact, Classified};
use crate::store::ArtifactStore;
use crate::version::Version;

/// Largest record read.
const MAX_RECORD: u64 = 16 * 1024 * 1024;

/// One upstream provider in the cache.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamReport {
    /// `host/namespace/type`
    pub provider: String,
    /// The version list's URL at the upstream.
    pub source: Option<String>,
    /// When the list was last refreshed (Unix seconds).
    pub refreshed_at: Option<u64>,
    /// How many versions the list holds.
    pub listed: usize,
    /// Why the list is stale: the last refresh failed (and when).
    pub stale: Option<String>,
    /// When the last refresh failed (Unix seconds).
    pub stale_since: Option<u64>,
    /// The releases fetched and verified, oldest first.
    pub cached: Vec<CachedRelease>,
    /// What was refused, and why.
    pub refused: Vec<RefusedRelease>,
}

/// A release kept for good.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedRelease {
    /// The version.
    pub version: String,
    /// When it was fetched (Unix seconds).
    pub fetched_at: u64,
    /// The key ID whose signature verified its SHA256SUMS.
    pub signed_by: String,
    /// The platforms whose packages are stored.
    pub stored: Vec<String>,
    /// The platforms the release has.
    pub platforms: Vec<String>,
}

/// A release (or one of its packages) refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedRelease {
    /// The version.
    pub version: String,
    /// When (Unix seconds).
    pub at: u64,
    /// Why, as shown to users.
    pub reason: String,
}

async fn read<T: serde::de::DeserializeOwned>(files: &dyn ArtifactStore, key: &str) -> Option<T> {
    let body = files.open(key).await.ok()??;
    let mut bytes = Vec::new();
    body.reader
        .take(MAX_RECORD)
        .read_to_end(&mut bytes)
        .await
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The cache's providers, from the store's `keys` (one listing, as `tfreg status` has).
pub async fn read_all(files: &dyn ArtifactStore, keys: &[String]) -> Vec<UpstreamReport> {
    let mut by_provider: BTreeMap<UpstreamProvider, Vec<&str>> = BTreeMap::new();
    let mut stored: BTreeSet<(String, String, String)> = BTreeSet::new();
    for key in keys {
        if let Some((up, file)) = UpstreamProvider::from_key(key) {
            by_provider.entry(up).or_default().push(file);
        } else if let Classified::Artifact(Artifact::MirrorPackage {
            hostname,
            provider,
            version,
            platform,
        }) = classify(key)
        {
            stored.insert((
                format!("{hostname}/{provider}"),
                version.to_string(),
                platform.to_string(),
            ));
        }
    }
    let mut reports = Vec::new();
    for (up, files_of) in by_provider {
        let mut report = UpstreamReport {
            provider: up.to_string(),
            ..UpstreamReport::default()
        };
        if let Some(list) = read::<VersionList>(files, &up.list_key()).await {
            report.source = Some(list.source.clone());
            report.refreshed_at = Some(list.fetched_at);
            report.listed = list.versions.len();
            if let Some(failure) = list.last_failure {
                report.stale = Some(failure.reason);
                report.stale_since = Some(failure.at);
            }
        }
        let mut versions: BTreeSet<Version> = BTreeSet::new();
        let mut refused: BTreeSet<Version> = BTreeSet::new();
        for file in files_of {
            if let Some(stem) = file.strip_suffix(".refused.json") {
                refused.extend(Version::parse(stem).ok());
            } else if let Some(stem) = file.strip_suffix(".json") {
                versions.extend(Version::parse(stem).ok());
            }
        }
        for version in &versions {
            let Some(record) = read::<ReleaseRecord>(files, &up.release_key(version)).await else {
                continue;
            };
            let name = up.to_string();
            report.cached.push(CachedRelease {
                version: version.to_string(),
                fetched_at: record.fetched_at,
                signed_by: record.signed_by.clone(),
                stored: record
                    .platforms
                    .keys()
                    .filter(|p| stored.contains(&(name.clone(), version.to_string(), (*p).clone())))
                    .cloned()
                    .collect(),
                platforms: record.platforms.keys().cloned().collect(),
            });
        }
        for version in &refused {
            if let Some(refusal) = read::<Refusal>(files, &up.refusal_key(version)).await {
                report.refused.push(RefusedRelease {
                    version: version.to_string(),
                    at: refusal.at,
                    reason: refusal.reason,
                });
            }
        }
        reports.push(report);
    }
    reports
}
