//! The network mirror's answers for an upstream provider: its versions (the upstream's
//! list, and whatever is cached or uploaded for it) and one version's packages, each cached
//! one at the registry's own URL with `h1:` and `zh:`, the others at a URL that fetches them
//! (or, passing through, the upstream's own URL) with the `zh:` of the verified SHA256SUMS.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use super::{FetchMode, Freshness, UpstreamCache, UpstreamError, UpstreamProvider};
use crate::names::Platform;
use crate::protocol::{Empty, MirrorArchive, MirrorIndex, MirrorVersion};
use crate::signing::UrlSigner;
use crate::tokens::Access;
use crate::version::Version;
use crate::{Origin, Registry};

fn not_found(up: &UpstreamProvider) -> UpstreamError {
    UpstreamError::NotFound(format!("the mirror has no provider {up}"))
}

/// `index.json`: the upstream's versions, with those cached or uploaded. When the upstream
/// cannot be asked and nothing is known of it, the failure is the answer.
pub async fn index(
    cache: &UpstreamCache,
    registry: &Registry,
    access: &Access,
    up: &UpstreamProvider,
) -> Result<MirrorIndex, UpstreamError> {
    if !access.allows(&up.provider.namespace) {
        return Err(not_found(up));
    }
    let uploaded = registry
        .mirror_uploaded_versions(&up.host, &up.provider)
        .await?;
    let mut versions: Vec<Version> = match cache.versions(up, Freshness::Revalidate).await {
        Ok(listing) => listing.list.versions.into_keys().collect(),
        Err(e) if uploaded.is_empty() => return Err(e),
        Err(e) => {
            tracing::warn!(provider = %up, error = %e, "serving only the cached versions");
            vec![]
        }
    };
    versions.extend(uploaded);
    Ok(MirrorIndex {
        versions: versions
            .into_iter()
            .map(|v| (v.to_string(), Empty {}))
            .collect(),
    })
}

/// The URL of this registry that fetches, verifies and serves one package (wait mode).
pub fn package_url(
    signer: &UrlSigner,
    origin: &Origin,
    up: &UpstreamProvider,
    version: &Version,
    platform: &Platform,
) -> String {
    let query = signer.signed_query(&up.package_key(version, platform), SystemTime::now());
    format!(
        "{}/v1/mirror/{}/{}/{version}/{platform}.zip?{query}",
        origin.as_str(),
        up.host,
        up.provider
    )
}

/// `<version>.json`: every platform of the verified release.
pub async fn version(
    cache: &Arc<UpstreamCache>,
    registry: &Registry,
    access: &Access,
    up: &UpstreamProvider,
    version: &Version,
    origin: &Origin,
    signer: Option<&UrlSigner>,
) -> Result<MirrorVersion, UpstreamError> {
    if !access.allows(&up.provider.namespace) {
        return Err(not_found(up));
    }
    let packages = cache.packages(up, version).await?;
    let stored = registry
        .mirror_uploads(&up.host, &up.provider, version)
        .await?;
    let mut archives = BTreeMap::new();
    for package in packages {
        let zh = package.package.zh();
        let indexed = stored
            .get(&package.platform)
            .filter(|p| p.hashes.sha256 == package.package.sha256);
        let mode = cache.settings().fetch;
        // The platforms teams use are fetched as soon as a release is asked for (so lock
        // files get their h1:); passing through, they are the only ones fetched at all,
        // since which one the asker installs is not known here.
        if indexed.is_none() && cache.settings().eager_platforms.contains(&package.platform) {
            cache
                .prefetch(up.clone(), version.clone(), package.platform.clone())
                .await;
        }
        let archive = match (indexed, signer, mode) {
            // Cached and indexed: served like any mirror package.
            (Some(p), _, _) => MirrorArchive {
                url: {
                    let downloads = registry.downloads();
                    let window = downloads.window(std::time::SystemTime::now());
                    downloads
                        .url(&p.key, Some(&p.revision), origin, window)
                        .await?
                },
                hashes: p.hashes.h1.iter().cloned().chain([zh]).collect(),
            },
            (None, Some(signer), FetchMode::Wait) => MirrorArchive {
                url: package_url(signer, origin, up, version, &package.platform),
                hashes: vec![zh],
            },
            (None, _, _) => MirrorArchive {
                url: package.package.download_url.clone(),
                hashes: vec![zh],
            },
        };
        archives.insert(package.platform.to_string(), archive);
    }
    Ok(MirrorVersion { archives })
}
