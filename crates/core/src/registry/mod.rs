//! The read side of the registry: answers the protocol questions from the metadata store.
//! The HTTP layer only translates requests and responses. The read API beyond the protocols
//! (details, `latest`, listings, search) is in [`modules`] and [`providers`].

mod answered;
pub mod answers;
mod attachments;
pub mod catalogue;
mod judged;
pub mod modules;
pub mod page;
mod provider_docs;
pub mod providers;
mod uploads;

pub use modules::{latest_release, ModuleFilter};
pub use page::Page;
pub use providers::{ProviderFilter, ProviderSummary};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use crate::documents::{
    self, MirrorVersionsDoc, ModuleVersionsDoc, ProviderVersionsDoc, ReleaseDoc,
};
use crate::downloads::Downloads;
use answered::{mirror_index_of, module_versions_of, provider_versions_of};

use crate::names::{Hostname, ModuleAddress, Platform, ProviderAddress};
use crate::origin::Origin;
use crate::protocol::{
    MirrorIndex, MirrorVersion, ModuleVersions, ProviderDownload, ProviderVersions,
};
use crate::providers::{evaluate, CurrentKeys, ReleaseReport, ServedRelease};
use crate::store::{
    partition, MetadataReader, ModuleArchive, PackageRecord, ProblemRecord, Record, RecordId,
    StoreError,
};
use crate::tokens::Access;
use crate::version::Version;

/// Why the registry gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The thing asked for is not published. The message is safe to show.
    #[error("{0}")]
    NotFound(String),
    /// Reading the metadata store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How many modules and providers a registry lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Modules in the listing.
    pub modules: usize,
    /// Providers in the listing.
    pub providers: usize,
}

/// The read side of the registry, over the indexer's documents and records: cheap to clone
/// (the caches it keeps are shared).
#[derive(Clone)]
pub struct Registry {
    metadata: Arc<dyn MetadataReader>,
    /// How the files of the answers reach the client.
    downloads: Downloads,
    /// The registry's own hostname: the mirror serves its providers under it.
    hostname: Option<Hostname>,
    /// Modules' versions documents as last read, for stores that count their writes.
    module_docs: Arc<judged::Kept<RecordId, ModuleVersionsDoc>>,
    /// Providers' versions documents, likewise.
    provider_docs: Arc<judged::Kept<RecordId, ProviderVersionsDoc>>,
    /// Providers' lines in the catalogue, likewise.
    provider_summaries: Arc<judged::Kept<RecordId, Option<providers::ProviderSummary>>>,
    /// The hot answers as the bytes sent, per document revision.
    answers: Arc<answers::Answers<answered::AnswerKey>>,
    /// The modules' catalogue, as last made.
    catalogue: Arc<std::sync::Mutex<modules::KeptCatalogue>>,
}

impl Registry {
    /// The registry over what the indexer keeps in `metadata`, handing out URLs from
    /// `downloads`.
    pub fn new(metadata: Arc<dyn MetadataReader>, downloads: Downloads) -> Self {
        Self {
            metadata,
            downloads,
            hostname: None,
            module_docs: Arc::default(),
            provider_docs: Arc::default(),
            provider_summaries: Arc::default(),
            answers: Arc::default(),
            catalogue: Arc::default(),
        }
    }

    /// Serves the registry's own providers through the mirror under `hostname`.
    pub fn with_hostname(mut self, hostname: Hostname) -> Self {
        self.hostname = Some(hostname);
        self
    }

    /// The registry's own hostname, if it was given one ([`Registry::with_hostname`]).
    pub fn hostname(&self) -> Option<&Hostname> {
        self.hostname.as_ref()
    }

    /// How many modules and providers are listed: what a restart's summary line says.
    pub async fn counts(&self) -> Result<Counts, StoreError> {
        let modules = self
            .metadata
            .query(partition::MODULES)
            .await?
            .iter()
            .filter(|r| matches!(r, Record::ListedModule(_)))
            .count();
        let providers = self
            .metadata
            .query(partition::PROVIDERS)
            .await?
            .iter()
            .filter(|r| matches!(r, Record::ListedProvider(_)))
            .count();
        Ok(Counts { modules, providers })
    }

    /// A document, parsed; kept while the store has not changed, for stores that count
    /// their writes (one read otherwise: the document is what a request costs).
    async fn document<T>(
        &self,
        kept: &judged::Kept<RecordId, T>,
        id: RecordId,
    ) -> Result<Arc<T>, StoreError>
    where
        T: serde::de::DeserializeOwned + Default,
    {
        let generation = self.metadata.generation();
        let now = SystemTime::now();
        if let Some(kept) = generation.and_then(|g| kept.get(&id, g, now)) {
            return Ok(kept);
        }
        let document = match self.metadata.get_document(&id).await? {
            Some(stored) => Arc::new(documents::decode(&id, &stored.body)?),
            None => Arc::new(T::default()),
        };
        if let Some(generation) = generation {
            kept.put(&id, generation, None, Arc::clone(&document));
        }
        Ok(document)
    }

    /// A module's versions document (empty when nothing is published).
    pub(crate) async fn module_doc(
        &self,
        address: &ModuleAddress,
    ) -> Result<Arc<ModuleVersionsDoc>, StoreError> {
        self.document(&self.module_docs, RecordId::module_versions(address))
            .await
    }

    /// A provider's versions document (empty when nothing is served).
    pub(crate) async fn provider_doc(
        &self,
        provider: &ProviderAddress,
    ) -> Result<Arc<ProviderVersionsDoc>, StoreError> {
        self.document(&self.provider_docs, RecordId::provider_versions(provider))
            .await
    }

    /// Every published version of a module, oldest first, pre-releases included (Terraform
    /// applies the user's constraints and its own pre-release rules), each with its
    /// repository where the publisher gave one: the module's versions document.
    pub async fn module_versions(
        &self,
        access: &Access,
        address: &ModuleAddress,
    ) -> Result<ModuleVersions, RegistryError> {
        if !access.allows(&address.namespace) {
            return Err(module_not_found(address));
        }
        let doc = self.module_doc(address).await?;
        module_versions_of(&doc).ok_or_else(|| module_not_found(address))
    }

    /// The archive served for one module version, read alone (a key condition on the
    /// version). When a version was published in several formats, the choice is
    /// deterministic: `.tar.gz`, then `.tgz`, then `.zip`.
    pub async fn module_archive(
        &self,
        access: &Access,
        address: &ModuleAddress,
        version: &Version,
    ) -> Result<ModuleArchive, RegistryError> {
        // Out of the token's scope looks exactly like absent.
        let absent = || module_version_not_found(address, version);
        if !access.allows(&address.namespace) {
            return Err(absent());
        }
        let archives = modules::version_archives(self.metadata.as_ref(), address, version).await?;
        modules::served_archives(archives)
            .remove(version)
            .ok_or_else(absent)
    }

    /// Judges every version of a provider from its records and its namespace's keys: two
    /// queries of whole partitions, for reports (`tfreg status`), never for requests.
    async fn provider_releases(
        &self,
        provider: &ProviderAddress,
    ) -> Result<Vec<(ReleaseReport, Option<ServedRelease>)>, StoreError> {
        let (releases, keys) = (
            partition::provider(provider),
            partition::keys(&provider.namespace),
        );
        let (records, keys) =
            tokio::join!(self.metadata.query(&releases), self.metadata.query(&keys));
        let (records, keys) = (records?, CurrentKeys::from_records(&keys?));
        Ok(evaluate(&records, &keys, SystemTime::now()))
    }

    /// One served release, read alone (its release document), if the request may see it.
    async fn served_release(
        &self,
        access: &Access,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<ServedRelease>, StoreError> {
        if !access.allows(&provider.namespace) {
            return Ok(None);
        }
        let id = RecordId::provider_release(provider, version);
        let Some(stored) = self.metadata.get_document(&id).await? else {
            return Ok(None);
        };
        let release: ReleaseDoc = documents::decode(&id, &stored.body)?;
        Ok(release.served(SystemTime::now()))
    }

    /// Why each version of a provider is or is not served.
    pub async fn provider_report(
        &self,
        provider: &ProviderAddress,
    ) -> Result<Vec<ReleaseReport>, StoreError> {
        Ok(self
            .provider_releases(provider)
            .await?
            .into_iter()
            .map(|(report, _)| report)
            .collect())
    }

    /// Published files that can never be served, and why.
    pub async fn problems(&self) -> Result<Vec<ProblemRecord>, StoreError> {
        Ok(self
            .metadata
            .query(partition::PROBLEMS)
            .await?
            .into_iter()
            .filter_map(|r| match r {
                Record::Problem(p) => Some(p),
                _ => None,
            })
            .collect())
    }

    /// The provider registry protocol's version list: served versions only, from the
    /// provider's versions document.
    pub async fn provider_versions(
        &self,
        access: &Access,
        provider: &ProviderAddress,
    ) -> Result<ProviderVersions, RegistryError> {
        if !access.allows(&provider.namespace) {
            return Err(provider_not_found(provider));
        }
        let doc = self.provider_doc(provider).await?;
        provider_versions_of(&doc, SystemTime::now()).ok_or_else(|| provider_not_found(provider))
    }

    /// The provider registry protocol's download answer for one platform: the version's
    /// release document alone.
    pub async fn provider_download(
        &self,
        access: &Access,
        provider: &ProviderAddress,
        version: &Version,
        platform: &Platform,
        origin: &Origin,
    ) -> Result<ProviderDownload, RegistryError> {
        let release = self
            .served_release(access, provider, version)
            .await?
            .ok_or_else(|| provider_version_not_found(provider, version))?;
        let window = self.downloads.window(SystemTime::now());
        self.download_of(&release, provider, version, platform, origin, window)
            .await
    }

    /// True when `hostname` is the registry's own: its configured hostname, or the host the
    /// client reached it at (a stack without a custom domain knows no other name for itself).
    /// True when `hostname` is the registry's own (its `--hostname`, or the host the client
    /// reached it at).
    pub fn is_own(&self, hostname: &Hostname, origin: &Origin) -> bool {
        self.hostname.as_ref() == Some(hostname)
            || Hostname::parse(origin.authority()).is_ok_and(|h| &h == hostname)
    }

    /// The network mirror protocol's version list: for the registry's own hostname, its
    /// served (signed) providers' versions document, never an upload (an unsigned zip must
    /// not pass for one of the registry's own providers); else what was uploaded under
    /// `mirror/<hostname>/`.
    pub async fn mirror_index(
        &self,
        access: &Access,
        hostname: &Hostname,
        provider: &ProviderAddress,
        origin: &Origin,
    ) -> Result<MirrorIndex, RegistryError> {
        if !access.allows(&provider.namespace) {
            return Err(mirror_not_found(hostname, provider));
        }
        let versions: Vec<Version> = if self.is_own(hostname, origin) {
            let doc = self.provider_doc(provider).await?;
            doc.served(SystemTime::now())
                .map(|(v, _)| v.clone())
                .collect()
        } else {
            self.mirror_uploaded_versions(hostname, provider).await?
        };
        mirror_index_of(versions).ok_or_else(|| mirror_not_found(hostname, provider))
    }

    /// The versions uploaded (or cached from an upstream) under `mirror/<hostname>/`.
    pub async fn mirror_uploaded_versions(
        &self,
        hostname: &Hostname,
        provider: &ProviderAddress,
    ) -> Result<Vec<Version>, StoreError> {
        let id = RecordId::mirror_versions(hostname, provider);
        Ok(match self.metadata.get_document(&id).await? {
            Some(stored) => documents::decode::<MirrorVersionsDoc>(&id, &stored.body)?
                .versions
                .into_keys()
                .collect(),
            None => vec![],
        })
    }

    /// How files reach clients.
    pub fn downloads(&self) -> &Downloads {
        &self.downloads
    }

    /// The packages of one version the mirror offers, read alone: the release document for
    /// the registry's own hostname, else that version's uploads (a key condition on it).
    async fn mirror_packages(
        &self,
        access: &Access,
        hostname: &Hostname,
        provider: &ProviderAddress,
        version: &Version,
        origin: &Origin,
    ) -> Result<BTreeMap<Platform, PackageRecord>, StoreError> {
        if !access.allows(&provider.namespace) {
            return Ok(BTreeMap::new());
        }
        if self.is_own(hostname, origin) {
            return Ok(self
                .served_release(access, provider, version)
                .await?
                .map(|release| release.packages)
                .unwrap_or_default());
        }
        self.mirror_uploads(hostname, provider, version).await
    }

    /// The packages uploaded (or cached from an upstream) under `mirror/<hostname>/` for one
    /// version, by platform: a key condition on that version.
    pub async fn mirror_uploads(
        &self,
        hostname: &Hostname,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<BTreeMap<Platform, PackageRecord>, StoreError> {
        let mut uploaded: Vec<PackageRecord> = self
            .metadata
            .query_prefix(
                &partition::mirror(hostname, provider),
                &format!("package/{version}/"),
            )
            .await?
            .into_iter()
            .filter_map(|r| match r {
                Record::Package(p) if &p.version == version => Some(p),
                _ => None,
            })
            .collect();
        // Several spellings of one file: the first key wins, deterministically.
        uploaded.sort_by(|a, b| b.key.cmp(&a.key));
        Ok(uploaded
            .into_iter()
            .map(|p| (p.platform.clone(), p))
            .collect())
    }

    /// The network mirror protocol's packages of one version, with `h1:` and `zh:` hashes.
    pub async fn mirror_version(
        &self,
        access: &Access,
        hostname: &Hostname,
        provider: &ProviderAddress,
        version: &Version,
        origin: &Origin,
    ) -> Result<MirrorVersion, RegistryError> {
        let platforms = self
            .mirror_packages(access, hostname, provider, version, origin)
            .await?;
        if platforms.is_empty() {
            return Err(mirror_version_not_found(hostname, provider, version));
        }
        let window = self.downloads.window(SystemTime::now());
        Ok(self.mirror_version_of(platforms, origin, window).await?)
    }
}

fn mirror_version_not_found(
    hostname: &Hostname,
    provider: &ProviderAddress,
    version: &Version,
) -> RegistryError {
    RegistryError::NotFound(format!(
        "the mirror has no version {version} of {hostname}/{provider}"
    ))
}

fn module_not_found(address: &ModuleAddress) -> RegistryError {
    RegistryError::NotFound(format!("module {address} is not published here"))
}

fn provider_not_found(provider: &ProviderAddress) -> RegistryError {
    RegistryError::NotFound(format!("provider {provider} is not published here"))
}

fn module_version_not_found(address: &ModuleAddress, version: &Version) -> RegistryError {
    RegistryError::NotFound(format!("module {address} has no version {version}"))
}

fn provider_version_not_found(provider: &ProviderAddress, version: &Version) -> RegistryError {
    RegistryError::NotFound(format!("provider {provider} has no version {version}"))
}

fn mirror_not_found(hostname: &Hostname, provider: &ProviderAddress) -> RegistryError {
    RegistryError::NotFound(format!("the mirror has no provider {hostname}/{provider}"))
}
