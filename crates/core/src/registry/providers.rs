//! Provider details beyond the protocol: `{providers.v1}NS/TYPE` (the latest release) and
//! `{providers.v1}NS/TYPE/VERSION`, with platforms, protocols, every served version, and
//! the publish time: when the release's SHA256SUMS was first served (its pin).

use super::modules::latest_release;
use super::{provider_not_found, provider_version_not_found, Registry, RegistryError};
use crate::layout::{Artifact, ReleaseFile};
use crate::names::Namespace;
use crate::names::ProviderAddress;
use crate::protocol::details::{rfc3339, Deprecation, ProviderDetails, Withdrawn};
use crate::protocol::ProviderPlatform;
use crate::store::{partition, Record, RecordId, StoreError};
use crate::tokens::Access;
use crate::version::Version;
use std::sync::Arc;
use std::time::SystemTime;

/// How many providers the catalogue reads at a time.
pub const CONCURRENT_READS: usize = 8;

/// One provider of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderSummary {
    /// The provider: its namespace and type.
    pub address: ProviderAddress,
    /// The latest release, or the newest prerelease when there are only prereleases.
    pub latest: Version,
    /// How many versions are served.
    pub versions: usize,
}

/// Which providers the catalogue shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderFilter {
    /// Only this namespace's providers.
    pub namespace: Option<Namespace>,
    /// Only providers of this type (a module's system names the provider it is for).
    pub type_: Option<String>,
    /// Only providers whose address holds every word of this text, in any case.
    pub query: Option<String>,
}

impl ProviderFilter {
    fn matches(&self, provider: &ProviderAddress) -> bool {
        if self
            .namespace
            .as_ref()
            .is_some_and(|n| *n != provider.namespace)
        {
            return false;
        }
        let type_ = provider.type_.as_str();
        if self
            .type_
            .as_ref()
            .is_some_and(|t| !t.eq_ignore_ascii_case(type_))
        {
            return false;
        }
        let text = provider.to_string().to_lowercase();
        self.query.as_ref().is_none_or(|q| {
            q.to_lowercase()
                .split_whitespace()
                .all(|word| text.contains(word))
        })
    }
}

impl Registry {
    /// A served provider version's details; the latest release's when `version` is `None`
    /// (a 404 that says so when every served version is a prerelease).
    pub async fn provider_details(
        &self,
        access: &Access,
        provider: &ProviderAddress,
        version: Option<&Version>,
    ) -> Result<ProviderDetails, RegistryError> {
        if !access.allows(&provider.namespace) {
            return Err(provider_not_found(provider));
        }
        let doc = self.provider_doc(provider).await?;
        let versions: Vec<Version> = doc
            .served(SystemTime::now())
            .map(|(v, _)| v.clone())
            .collect();
        if versions.is_empty() {
            return Err(provider_not_found(provider));
        }
        let version = match version {
            Some(version) => version.clone(),
            None => latest_release(&versions).cloned().ok_or_else(|| {
                RegistryError::NotFound(format!(
                    "provider {provider} has only prereleases, so no latest version: ask for one by its version"
                ))
            })?,
        };
        let release = self
            .served_release(access, provider, &version)
            .await?
            .ok_or_else(|| provider_version_not_found(provider, &version))?;
        let published_at = self.first_served(provider, &version).await?;
        let deprecated_versions: std::collections::BTreeMap<Version, Deprecation> = doc
            .served(SystemTime::now())
            .filter_map(|(v, entry)| Some((v.clone(), entry.deprecation.as_ref()?.into())))
            .collect();
        let deprecation = deprecated_versions.get(&version).cloned();
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
            key_id: release.signer.key_id,
            key_expires_at: release.signer.expires_at,
            deprecation,
            deprecated_versions,
            withdrawn: Withdrawn::all(&doc.withdrawn),
            // The route adds them: their URLs name the origin the request reached.
            attachments: Vec::new(),
        })
    }

    /// The providers `filter` selects that `access` may read and that have a served
    /// release, in address order. One query for the listing, then one document per listed
    /// provider
    /// (at most [`CONCURRENT_READS`] at a time): a registry holds tens of providers, not
    /// thousands of them.
    pub async fn list_providers(
        &self,
        access: &Access,
        filter: &ProviderFilter,
    ) -> Result<Vec<ProviderSummary>, RegistryError> {
        use futures_util::stream::{self, StreamExt, TryStreamExt};
        let listed: Vec<ProviderAddress> = self
            .metadata
            .query(partition::PROVIDERS)
            .await?
            .into_iter()
            .filter_map(|r| match r {
                Record::ListedProvider(p) => Some(p),
                _ => None,
            })
            .filter(|p| access.allows(&p.namespace) && filter.matches(p))
            .collect();
        let summaries: Vec<Option<ProviderSummary>> = stream::iter(listed)
            .map(|provider| self.provider_summary(provider))
            .buffered(CONCURRENT_READS)
            .try_collect()
            .await?;
        Ok(summaries.into_iter().flatten().collect())
    }

    /// A provider's line in the catalogue (`None` when no version is served): made once per
    /// change of its versions document, on stores that count their writes, and kept until
    /// a version's time runs out; a provider with many versions then costs what one with
    /// few does.
    async fn provider_summary(
        &self,
        provider: ProviderAddress,
    ) -> Result<Option<ProviderSummary>, StoreError> {
        let generation = self.metadata.generation();
        let now = SystemTime::now();
        let id = RecordId::provider_versions(&provider);
        if let Some(kept) = generation.and_then(|g| self.provider_summaries.get(&id, g, now)) {
            return Ok((*kept).clone());
        }
        let doc = self.provider_doc(&provider).await?;
        let versions: Vec<&Version> = doc.served(now).map(|(v, _)| v).collect();
        let latest = latest_release(versions.iter().copied())
            .or(versions.last().copied())
            .cloned();
        let summary = latest.map(|latest| ProviderSummary {
            address: provider,
            latest,
            versions: versions.len(),
        });
        if let Some(generation) = generation {
            let until = super::answered::next_expiry(&doc, now);
            let kept = Arc::new(summary.clone());
            self.provider_summaries.put(&id, generation, until, kept);
        }
        Ok(summary)
    }

    /// The versions of a provider withdrawn with a yank record, oldest first (empty outside
    /// `access`): what the provider's page shows, even when no version is served.
    pub async fn provider_withdrawn(
        &self,
        access: &Access,
        provider: &ProviderAddress,
    ) -> Result<Vec<Withdrawn>, StoreError> {
        if !access.allows(&provider.namespace) {
            return Ok(vec![]);
        }
        Ok(Withdrawn::all(
            &self.provider_doc(provider).await?.withdrawn,
        ))
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
