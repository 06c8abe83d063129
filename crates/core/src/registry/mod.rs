//! The read side of the registry: answers the protocol questions from the metadata store.
//! The HTTP layer only translates requests and responses. The read API beyond the protocols
//! (details, `latest`, listings, search) is in [`modules`] and [`providers`].

mod judged;
pub mod modules;
pub mod page;
pub mod providers;

pub use modules::{latest_release, ModuleFilter};
pub use page::Page;
pub use providers::{ProviderFilter, ProviderSummary};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use crate::names::{Hostname, ModuleAddress, Platform, ProviderAddress};
use crate::protocol::{
    Empty, GpgPublicKey, MirrorArchive, MirrorIndex, MirrorVersion, ModuleVersion,
    ModuleVersionList, ModuleVersions, ProviderDownload, ProviderPlatform, ProviderVersion,
    ProviderVersions, SigningKeys,
};
use crate::providers::{evaluate, CurrentKeys, ReleaseReport, ServedRelease};
use crate::store::{
    partition, ArtifactStore, MetadataStore, ModuleArchive, Origin, PackageRecord, ProblemRecord,
    Record, StoreError,
};
use crate::tokens::Access;
use crate::version::Version;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The thing asked for is not published. The message is safe to show.
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How many modules and providers a registry lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub modules: usize,
    pub providers: usize,
}

#[derive(Clone)]
pub struct Registry {
    metadata: Arc<dyn MetadataStore>,
    artifacts: Arc<dyn ArtifactStore>,
    /// The registry's own hostname: the mirror serves its providers under it.
    hostname: Option<Hostname>,
    /// Providers' releases as last judged, for stores that count their writes.
    judged: Arc<judged::Kept<ProviderAddress, Vec<judged::Judged>>>,
    /// Modules' served archives by version, likewise.
    served_modules: Arc<judged::Kept<ModuleAddress, ServedArchives>>,
}

/// A module's served archive of each version.
type ServedArchives = BTreeMap<Version, ModuleArchive>;

impl Registry {
    pub fn new(metadata: Arc<dyn MetadataStore>, artifacts: Arc<dyn ArtifactStore>) -> Self {
        Self {
            metadata,
            artifacts,
            hostname: None,
            judged: Arc::default(),
            served_modules: Arc::default(),
        }
    }

    /// Serves the registry's own providers through the mirror under `hostname`.
    pub fn with_hostname(mut self, hostname: Hostname) -> Self {
        self.hostname = Some(hostname);
        self
    }

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

    pub fn artifacts(&self) -> &Arc<dyn ArtifactStore> {
        &self.artifacts
    }

    /// A module's served archive of each version (one per version, see
    /// [`modules::served_archives`]): one query, or none while the store has not changed.
    async fn served_archives(
        &self,
        address: &ModuleAddress,
    ) -> Result<Arc<ServedArchives>, StoreError> {
        let generation = self.metadata.generation();
        let now = SystemTime::now();
        if let Some(kept) = generation.and_then(|g| self.served_modules.get(address, g, now)) {
            return Ok(kept);
        }
        let records = self.metadata.query(&partition::module(address)).await?;
        let archives = records
            .into_iter()
            .filter_map(|r| match r {
                Record::ModuleArchive(a) => Some(a),
                _ => None,
            })
            .collect();
        let served = Arc::new(modules::served_archives(archives));
        if let Some(generation) = generation {
            self.served_modules
                .put(address, generation, None, Arc::clone(&served));
        }
        Ok(served)
    }

    /// Every published version of a module, oldest first, pre-releases included (Terraform
    /// applies the user's constraints and its own pre-release rules), each with its
    /// repository where the publisher gave one.
    pub async fn module_versions(
        &self,
        access: &Access,
        address: &ModuleAddress,
    ) -> Result<ModuleVersions, RegistryError> {
        if !access.allows(&address.namespace) {
            return Err(module_not_found(address));
        }
        let served = self.served_archives(address).await?;
        if served.is_empty() {
            return Err(module_not_found(address));
        }
        let with_source = || served.iter().filter(|(_, a)| a.source.is_some());
        let source = with_source()
            .rfind(|(v, _)| !v.is_prerelease())
            .or_else(|| with_source().next_back())
            .and_then(|(_, a)| a.source.clone());
        Ok(ModuleVersions {
            modules: [ModuleVersionList {
                source,
                versions: served
                    .iter()
                    .map(|(version, archive)| ModuleVersion {
                        version: version.clone(),
                        source: archive.source.clone(),
                    })
                    .collect(),
            }],
        })
    }

    /// The archive served for one module version. When a version was published in several
    /// formats, the choice is deterministic: `.tar.gz`, then `.tgz`, then `.zip`.
    pub async fn module_archive(
        &self,
        access: &Access,
        address: &ModuleAddress,
        version: &Version,
    ) -> Result<ModuleArchive, RegistryError> {
        if !access.allows(&address.namespace) {
            return Err(module_not_found(address));
        }
        let served = self.served_archives(address).await?;
        if served.is_empty() {
            return Err(module_not_found(address));
        }
        served.get(version).cloned().ok_or_else(|| {
            RegistryError::NotFound(format!("module {address} has no version {version}"))
        })
    }

    /// The URL Terraform downloads a module version from (`X-Terraform-Get`).
    pub async fn module_download_url(
        &self,
        access: &Access,
        address: &ModuleAddress,
        version: &Version,
        origin: &Origin,
    ) -> Result<String, RegistryError> {
        let archive = self.module_archive(access, address, version).await?;
        let revision = Some(archive.revision.as_str()).filter(|r| !r.is_empty());
        Ok(self
            .artifacts
            .download_url(&archive.key, revision, origin)
            .await?)
    }

    /// Judges every version of a provider: two queries at once, of the provider's partition
    /// and of its namespace's keys (a verdict counts only while its key is still there).
    ///
    /// Stores that count their writes get each judgement made once per change: it is kept
    /// until the store changes or time alone could change it ([`judged`]).
    async fn provider_releases(
        &self,
        provider: &ProviderAddress,
    ) -> Result<Arc<Vec<judged::Judged>>, StoreError> {
        let now = SystemTime::now();
        // Read before the records: a write meanwhile makes the next request judge again.
        let generation = self.metadata.generation();
        if let Some(kept) = generation.and_then(|g| self.judged.get(provider, g, now)) {
            return Ok(kept);
        }
        let (releases, keys) = (
            partition::provider(provider),
            partition::keys(&provider.namespace),
        );
        let (records, keys) =
            tokio::join!(self.metadata.query(&releases), self.metadata.query(&keys));
        let (records, keys) = (records?, CurrentKeys::from_records(&keys?));
        let judged = Arc::new(evaluate(&records, &keys, now));
        if let Some(generation) = generation {
            let until = judged::next_change(&records, now);
            self.judged
                .put(provider, generation, until, Arc::clone(&judged));
        }
        Ok(judged)
    }

    /// The served releases a request may see: none outside its token's namespaces, exactly
    /// as if the provider did not exist.
    async fn served_releases(
        &self,
        access: &Access,
        provider: &ProviderAddress,
    ) -> Result<Vec<ServedRelease>, StoreError> {
        if !access.allows(&provider.namespace) {
            return Ok(vec![]);
        }
        Ok(self
            .provider_releases(provider)
            .await?
            .iter()
            .filter_map(|(_, served)| served.clone())
            .collect())
    }

    /// Why each version of a provider is or is not served.
    pub async fn provider_report(
        &self,
        provider: &ProviderAddress,
    ) -> Result<Vec<ReleaseReport>, StoreError> {
        Ok(self
            .provider_releases(provider)
            .await?
            .iter()
            .map(|(report, _)| report.clone())
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

    /// The provider registry protocol's version list: served versions only.
    pub async fn provider_versions(
        &self,
        access: &Access,
        provider: &ProviderAddress,
    ) -> Result<ProviderVersions, RegistryError> {
        let releases = self.served_releases(access, provider).await?;
        if releases.is_empty() {
            return Err(provider_not_found(provider));
        }
        Ok(ProviderVersions {
            versions: releases
                .into_iter()
                .map(|r| ProviderVersion {
                    version: r.version,
                    protocols: r.protocols,
                    platforms: r
                        .packages
                        .keys()
                        .map(|p| ProviderPlatform {
                            os: p.os.to_string(),
                            arch: p.arch.to_string(),
                        })
                        .collect(),
                })
                .collect(),
        })
    }

    /// The provider registry protocol's download answer for one platform.
    pub async fn provider_download(
        &self,
        access: &Access,
        provider: &ProviderAddress,
        version: &Version,
        platform: &Platform,
        origin: &Origin,
    ) -> Result<ProviderDownload, RegistryError> {
        if !access.allows(&provider.namespace) {
            return Err(provider_not_found(provider));
        }
        // The one release asked for, read in place: no copy of the others.
        let judged = self.provider_releases(provider).await?;
        if judged.iter().all(|(_, served)| served.is_none()) {
            return Err(provider_not_found(provider));
        }
        let release = find_served(&judged, version).ok_or_else(|| {
            RegistryError::NotFound(format!("provider {provider} has no version {version}"))
        })?;
        let package = release.packages.get(platform).ok_or_else(|| {
            RegistryError::NotFound(format!(
                "provider {provider} {version} has no package for {platform}"
            ))
        })?;
        let artifacts = &self.artifacts;
        Ok(ProviderDownload {
            protocols: release.protocols.clone(),
            os: platform.os.to_string(),
            arch: platform.arch.to_string(),
            filename: package.filename().to_owned(),
            download_url: artifacts
                .download_url(&package.key, Some(&package.revision), origin)
                .await?,
            shasums_url: artifacts
                .download_url(&release.sums.key, Some(&release.sums.revision), origin)
                .await?,
            shasums_signature_url: artifacts
                .download_url(
                    &release.signature_key,
                    Some(&release.signature_revision),
                    origin,
                )
                .await?,
            shasum: package.hashes.sha256.clone(),
            signing_keys: SigningKeys {
                gpg_public_keys: vec![GpgPublicKey {
                    key_id: release.signer.key_id.clone(),
                    ascii_armor: release.signer.ascii_armor.clone(),
                    trust_signature: String::new(),
                    source: String::new(),
                    source_url: None,
                }],
            },
        })
    }

    /// Every version the mirror offers for `hostname/provider`, with the packages of
    /// `packages_of` (the index needs none; a version's answer its own): what was uploaded
    /// under `mirror/<hostname>/`; for the registry's own hostname, its served (signed)
    /// providers only, never an upload: an unsigned zip must not pass for one of the
    /// registry's own providers.
    async fn mirror_packages(
        &self,
        access: &Access,
        hostname: &Hostname,
        provider: &ProviderAddress,
        origin: &Origin,
        packages_of: Option<&Version>,
    ) -> Result<BTreeMap<Version, BTreeMap<Platform, PackageRecord>>, StoreError> {
        if !access.allows(&provider.namespace) {
            return Ok(BTreeMap::new());
        }
        let mut packages: BTreeMap<Version, BTreeMap<Platform, PackageRecord>> = BTreeMap::new();
        if self.is_own(hostname, origin) {
            let judged = self.provider_releases(provider).await?;
            for release in judged.iter().filter_map(|(_, s)| s.as_ref()) {
                // Every version is listed; only the one asked for has its packages copied.
                let entry = packages.entry(release.version.clone()).or_default();
                if packages_of == Some(&release.version) {
                    entry.extend(release.packages.clone());
                }
            }
            return Ok(packages);
        }
        let mut uploaded: Vec<PackageRecord> = self
            .metadata
            .query(&partition::mirror(hostname, provider))
            .await?
            .into_iter()
            .filter_map(|r| match r {
                Record::Package(p) => Some(p),
                _ => None,
            })
            .collect();
        // Several spellings of one file: the first key wins, deterministically.
        uploaded.sort_by(|a, b| b.key.cmp(&a.key));
        for package in uploaded {
            let entry = packages.entry(package.version.clone()).or_default();
            if packages_of == Some(&package.version) {
                entry.insert(package.platform.clone(), package);
            }
        }
        Ok(packages)
    }

    /// True when `hostname` is the registry's own: its configured hostname, or the host the
    /// client reached it at (a stack without a custom domain knows no other name for itself).
    fn is_own(&self, hostname: &Hostname, origin: &Origin) -> bool {
        self.hostname.as_ref() == Some(hostname)
            || Hostname::parse(origin.authority()).is_ok_and(|h| &h == hostname)
    }

    /// The network mirror protocol's version list.
    pub async fn mirror_index(
        &self,
        access: &Access,
        hostname: &Hostname,
        provider: &ProviderAddress,
        origin: &Origin,
    ) -> Result<MirrorIndex, RegistryError> {
        let packages = self
            .mirror_packages(access, hostname, provider, origin, None)
            .await?;
        if packages.is_empty() {
            return Err(mirror_not_found(hostname, provider));
        }
        Ok(MirrorIndex {
            versions: packages
                .into_keys()
                .map(|v| (v.to_string(), Empty {}))
                .collect(),
        })
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
        let mut packages = self
            .mirror_packages(access, hostname, provider, origin, Some(version))
            .await?;
        if packages.is_empty() {
            return Err(mirror_not_found(hostname, provider));
        }
        let platforms = packages.remove(version).ok_or_else(|| {
            RegistryError::NotFound(format!(
                "the mirror has no version {version} of {hostname}/{provider}"
            ))
        })?;
        let mut archives = BTreeMap::new();
        for (platform, package) in platforms {
            let url = self
                .artifacts
                .download_url(&package.key, Some(&package.revision), origin)
                .await?;
            // Every package offered here was unpacked when it was indexed (a served
            // release's packages, or an upload), so its `h1:` is known.
            let hashes = package
                .hashes
                .h1
                .iter()
                .cloned()
                .chain([package.hashes.zh()])
                .collect();
            archives.insert(platform.to_string(), MirrorArchive { url, hashes });
        }
        Ok(MirrorVersion { archives })
    }
}

/// The served release of `version` among judged releases, in place.
fn find_served<'a>(judged: &'a [judged::Judged], version: &Version) -> Option<&'a ServedRelease> {
    judged
        .iter()
        .filter_map(|(_, served)| served.as_ref())
        .find(|release| &release.version == version)
}

fn module_not_found(address: &ModuleAddress) -> RegistryError {
    RegistryError::NotFound(format!("module {address} is not published here"))
}

fn provider_not_found(provider: &ProviderAddress) -> RegistryError {
    RegistryError::NotFound(format!("provider {provider} is not published here"))
}

fn mirror_not_found(hostname: &Hostname, provider: &ProviderAddress) -> RegistryError {
    RegistryError::NotFound(format!("the mirror has no provider {hostname}/{provider}"))
}
