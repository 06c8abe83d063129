//! The read side of the registry: answers the protocol questions from the metadata store.
//! The HTTP layer only translates requests and responses.

use std::sync::Arc;

use crate::names::ModuleAddress;
use crate::protocol::{ModuleVersion, ModuleVersionList, ModuleVersions};
use crate::store::{ArtifactStore, MetadataStore, ModuleArchive, Origin, StoreError};
use crate::version::Version;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The thing asked for is not published. The message is safe to show.
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Clone)]
pub struct Registry {
    metadata: Arc<dyn MetadataStore>,
    artifacts: Arc<dyn ArtifactStore>,
}

impl Registry {
    pub fn new(metadata: Arc<dyn MetadataStore>, artifacts: Arc<dyn ArtifactStore>) -> Self {
        Self {
            metadata,
            artifacts,
        }
    }

    pub fn artifacts(&self) -> &Arc<dyn ArtifactStore> {
        &self.artifacts
    }

    /// Every published version of a module, oldest first, pre-releases included (Terraform
    /// applies the user's constraints and its own pre-release rules).
    pub async fn module_versions(
        &self,
        address: &ModuleAddress,
    ) -> Result<ModuleVersions, RegistryError> {
        let mut versions: Vec<Version> = self
            .metadata
            .module_archives(address)
            .await?
            .into_iter()
            .map(|a| a.version)
            .collect();
        if versions.is_empty() {
            return Err(module_not_found(address));
        }
        versions.sort();
        versions.dedup();
        Ok(ModuleVersions {
            modules: [ModuleVersionList {
                versions: versions
                    .into_iter()
                    .map(|version| ModuleVersion { version })
                    .collect(),
            }],
        })
    }

    /// The archive served for one module version. When a version was published in several
    /// formats, the choice is deterministic: `.tar.gz`, then `.tgz`, then `.zip`.
    pub async fn module_archive(
        &self,
        address: &ModuleAddress,
        version: &Version,
    ) -> Result<ModuleArchive, RegistryError> {
        let archives = self.metadata.module_archives(address).await?;
        if archives.is_empty() {
            return Err(module_not_found(address));
        }
        archives
            .into_iter()
            .filter(|a| &a.version == version)
            .min_by(|a, b| (a.format, &a.key).cmp(&(b.format, &b.key)))
            .ok_or_else(|| {
                RegistryError::NotFound(format!("module {address} has no version {version}"))
            })
    }

    /// The URL Terraform downloads a module version from (`X-Terraform-Get`).
    pub async fn module_download_url(
        &self,
        address: &ModuleAddress,
        version: &Version,
        origin: &Origin,
    ) -> Result<String, RegistryError> {
        let archive = self.module_archive(address, version).await?;
        Ok(self.artifacts.download_url(&archive.key, origin).await?)
    }
}

fn module_not_found(address: &ModuleAddress) -> RegistryError {
    RegistryError::NotFound(format!("module {address} is not published here"))
}
