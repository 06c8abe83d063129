//! Provider details beyond the protocol: `{providers.v1}NS/TYPE` (the latest release) and
//! `{providers.v1}NS/TYPE/VERSION`, with platforms, protocols, every served version, and
//! the publish time: when the release's SHA256SUMS was first served (its pin).

use super::modules::latest_release;
use super::{provider_not_found, Registry, RegistryError};
use crate::layout::{Artifact, ReleaseFile};
use crate::names::ProviderAddress;
use crate::protocol::details::{rfc3339, ProviderDetails};
use crate::protocol::ProviderPlatform;
use crate::store::{Record, RecordId, StoreError};
use crate::tokens::Access;
use crate::version::Version;

impl Registry {
    /// A served provider version's details; the latest release's when `version` is `None`
    /// (a 404 that says so when every served version is a prerelease).
    pub async fn provider_details(
        &self,
        access: &Access,
        provider: &ProviderAddress,
        version: Option<&Version>,
    ) -> Result<ProviderDetails, RegistryError> {
        let mut releases = self.served_releases(access, provider).await?;
        if releases.is_empty() {
            return Err(provider_not_found(provider));
        }
        releases.sort_by(|a, b| a.version.cmp(&b.version));
        let versions: Vec<Version> = releases.iter().map(|r| r.version.clone()).collect();
        let version = match version {
            Some(version) => version.clone(),
            None => latest_release(&versions).cloned().ok_or_else(|| {
                RegistryError::NotFound(format!(
                    "provider {provider} has only prereleases, so no latest version: ask for one by its version"
                ))
            })?,
        };
        let release = releases
            .into_iter()
            .find(|r| r.version == version)
            .ok_or_else(|| {
                RegistryError::NotFound(format!("provider {provider} has no version {version}"))
            })?;
        let published_at = self.first_served(provider, &version).await?;
        Ok(ProviderDetails {
            id: format!("{provider}/{version}"),
            owner: String::new(),
            namespace: provider.namespace.to_string(),
            name: provider.type_.to_string(),
            version,
            description: String::new(),
            source: None,
            published_at: published_at.and_then(rfc3339),
            downloads: 0,
            protocols: release.protocols,
            platforms: release
                .packages
                .keys()
                .map(|p| ProviderPlatform {
                    os: p.os.to_string(),
                    arch: p.arch.to_string(),
                })
                .collect(),
            versions,
        })
    }

    /// When a release was first served: the pin of its SHA256SUMS (one read of one item).
    async fn first_served(
        &self,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<u64>, StoreError> {
        let Some(slot) = crate::layout::pin_slot(&Artifact::ProviderReleaseFile {
            provider: provider.clone(),
            version: version.clone(),
            file: ReleaseFile::Sums,
        }) else {
            return Ok(None);
        };
        Ok(match self.metadata.get(&RecordId::pin(&slot)).await? {
            Some(Record::Pin(pin)) => Some(pin.published_at),
            _ => None,
        })
    }
}
