//! What the upstream cache holds, read back from its records for `tfreg status` (and the
//! web pages): per upstream provider, where it comes from, when its list was last
//! refreshed (and whether it is stale), each cached release with its platforms, and each
//! refusal with its reason.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::record::{read, ReleaseRecord, UpstreamProvider, VersionList};
use crate::store::ArtifactStore;

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
    /// The fingerprint of the key whose signature verified its SHA256SUMS.
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

/// What the cache holds of one provider, from its records: the list, then each cached
/// release and whether each of its packages is stored. Costs reads in proportion to what
/// it reports, nothing more.
pub async fn read_one(files: &dyn ArtifactStore, up: &UpstreamProvider) -> UpstreamReport {
    let mut report = UpstreamReport {
        provider: up.to_string(),
        ..UpstreamReport::default()
    };
    let Some(list) = read::<VersionList>(files, &up.list_key())
        .await
        .ok()
        .flatten()
    else {
        return report;
    };
    report.source = Some(list.source.clone());
    report.refreshed_at = Some(list.fetched_at);
    report.listed = list.versions.len();
    if let Some(failure) = &list.last_failure {
        report.stale = Some(failure.reason.clone());
        report.stale_since = Some(failure.at);
    }
    for version in &list.cached {
        let Some(record) = read::<ReleaseRecord>(files, &up.release_key(version))
            .await
            .ok()
            .flatten()
        else {
            continue;
        };
        let mut stored = Vec::new();
        for (platform, _) in record.packages() {
            let key = up.package_key(version, &platform);
            if matches!(files.head(&key).await, Ok(Some(_))) {
                stored.push(platform.to_string());
            }
        }
        report.cached.push(CachedRelease {
            version: version.to_string(),
            fetched_at: record.fetched_at,
            signed_by: record.signed_by.clone(),
            stored,
            platforms: record.platforms.keys().cloned().collect(),
        });
    }
    for (version, refusal) in &list.refused {
        report.refused.push(RefusedRelease {
            version: version.to_string(),
            at: refusal.at,
            reason: refusal.reason.clone(),
        });
    }
    report
}

/// Every provider the store's `keys` hold records of (`tfreg status` lists the keys once).
pub async fn read_all(files: &dyn ArtifactStore, keys: &[String]) -> Vec<UpstreamReport> {
    let providers: BTreeSet<UpstreamProvider> = keys
        .iter()
        .filter_map(|key| UpstreamProvider::from_key(key).map(|(up, _)| up))
        .collect();
    let mut reports = Vec::new();
    for up in &providers {
        reports.push(read_one(files, up).await);
    }
    reports
}
