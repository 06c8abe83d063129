//! A served provider release's documentation, from its `docs.zip` record: one record read,
//! after the same access and served-release checks as the release's details (made once for
//! both on the provider page).

use super::{provider_version_not_found, Registry, RegistryError};
use crate::names::ProviderAddress;
use crate::protocol::details::ProviderDetails;
use crate::provider_docs::ProviderDocs;
use crate::store::{Record, RecordId, StoreError};
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
        Ok(self.docs_record(provider, version).await?)
    }

    /// A provider version's details ([`Registry::provider_details`]) and its documentation,
    /// the access and served-release checks made once.
    pub async fn provider_details_and_docs(
        &self,
        access: &Access,
        provider: &ProviderAddress,
        version: Option<&Version>,
    ) -> Result<(ProviderDetails, Option<ProviderDocs>), RegistryError> {
        let details = self.provider_details(access, provider, version).await?;
        let docs = self.docs_record(provider, &details.version).await?;
        Ok((details, docs))
    }

    /// The documentation record, unchecked: callers check access and that the release is
    /// served.
    async fn docs_record(
        &self,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<ProviderDocs>, StoreError> {
        let id = RecordId::provider_docs(provider, version);
        Ok(match self.metadata.get(&id).await? {
            Some(Record::ProviderDocs(record)) => Some(record.docs),
            _ => None,
        })
    }
}
