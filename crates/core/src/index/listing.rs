//! The listings of modules: one summary per module among all modules and among its
//! namespace's ([`crate::store::ModuleSummary`]), so listings and search read one partition.
//! Recomputed from the module's own partition whenever one of its archives is indexed, and
//! removed when it has no version left.

use super::Indexer;
use crate::names::ModuleAddress;
use crate::registry::modules::summary_of;
use crate::store::{partition, Record, RecordId, StoreError};

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
        }
        Ok(())
    }

    async fn module_summary(
        &self,
        address: &ModuleAddress,
    ) -> Result<Option<crate::store::ModuleSummary>, StoreError> {
        let archives = self
            .metadata
            .query(&partition::module(address))
            .await?
            .into_iter()
            .filter_map(|r| match r {
                Record::ModuleArchive(a) => Some(a),
                _ => None,
            })
            .collect();
        Ok(summary_of(archives))
    }

    /// Recomputes the listing of every module listed in `records` (a reindex's snapshot):
    /// modules whose files are all gone leave the listings.
    pub(super) async fn relist_modules(&self, records: &[Record]) -> Result<(), StoreError> {
        let listed: std::collections::BTreeSet<&ModuleAddress> = records
            .iter()
            .filter_map(|r| match r {
                Record::ListedModule(s) | Record::NamespaceModule(s) => Some(&s.address),
                _ => None,
            })
            .collect();
        for address in listed {
            self.list_module(address).await?;
        }
        Ok(())
    }
}
