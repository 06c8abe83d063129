//! The listings of modules: one summary per module among all modules and among its
//! namespace's ([`crate::store::ModuleSummary`]), so listings and search read one partition.
//! Recomputed from the module's versions document and its latest version's records whenever
//! that document is made again, and removed when it has no version left.

use super::Indexer;
use crate::documents::{decode, ModuleVersionsDoc};
use crate::names::ModuleAddress;
use crate::registry::modules::{latest_release, summary_of, version_archives};
use crate::store::{Record, RecordId, StoreError};

/// How often a summary is recomputed when other versions' writes land meanwhile.
const ATTEMPTS: usize = 3;

impl Indexer {
    /// Makes the module's listing entries agree with its published versions. Another
    /// invocation may be recording another version of the same module at once, so after
    /// writing, the versions are read again, and the summary rewritten if it changed.
    pub(super) async fn list_module(&self, address: &ModuleAddress) -> Result<(), StoreError> {
        let mut written = None;
        for _ in 0..ATTEMPTS {
            let summary = self.module_summary(address).await?;
            if written.as_ref() == Some(&summary) {
                return Ok(());
            }
            match &summary {
                Some(summary) => {
                    self.metadata
                        .put(Record::ListedModule(summary.clone()))
                        .await?;
                    self.metadata
                        .put(Record::NamespaceModule(summary.clone()))
                        .await?;
                }
                None => {
                    self.metadata
                        .delete(&RecordId::listed_module(address))
                        .await?;
                    self.metadata
                        .delete(&RecordId::namespace_module(address))
                        .await?;
                }
            }
            written = Some(summary);
            // Whoever keeps the catalogue makes it again.
            self.metadata
                .put_document(
                    &RecordId::module_listing(),
                    Some(b"{}".to_vec()),
                    crate::store::Expected::Anything,
                )
                .await?;
        }
        Ok(())
    }

    async fn module_summary(
        &self,
        address: &ModuleAddress,
    ) -> Result<Option<crate::store::ModuleSummary>, StoreError> {
        let id = RecordId::module_versions(address);
        let Some(stored) = self.metadata.get_document(&id).await? else {
            return Ok(None);
        };
        let doc: ModuleVersionsDoc = decode(&id, &stored.body)?;
        let Some(version) = latest_release(doc.versions.keys()).or(doc.versions.keys().next_back())
        else {
            return Ok(None);
        };
        let archives = version_archives(self.metadata.as_ref(), address, version).await?;
        let deprecation = doc
            .versions
            .get(version)
            .and_then(|e| e.deprecation.clone());
        Ok(
            summary_of(archives).map(|summary| crate::store::ModuleSummary {
                deprecation,
                ..summary
            }),
        )
    }
}
