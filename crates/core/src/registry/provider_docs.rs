//! A served provider release's documentation, from its `docs.zip` record: one record read,
//! after the same access and served-release checks as the release's details.

use super::{provider_version_not_found, Registry, RegistryError};
use crate::names::ProviderAddress;
use crate::provider_docs::ProviderDocs;
use crate::store::{Record, RecordId};
use crate::tokens::Access;
use crate::version::Version;

impl Registry {
    /// The documentation of a served provider version: `None` when it has none (or its
    /// `docs.zip` was refused); not found, as for its details, outside `access` or when the
    /// version is not served.
    pub async fn provider_docs(
        &self,
        access: &Access,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<ProviderDocs>, RegistryError> {
        if self
            .served_release(access, provider, version)
            .await?
            .is_none()
        {
            return Err(provider_version_not_found(provider, version));
        }
        let id = RecordId::provider_docs(provider, version);
        Ok(match self.metadata.get(&id).await? {
            Some(Record::ProviderDocs(record)) => Some(record.docs),
            _ => None,
        })
    }
}
