//! A provider release's documentation (`docs.zip` beside the release, read by
//! [`crate::provider_docs`]): recorded when it is there and readable, forgotten when it is
//! deleted or refused. A refused `docs.zip` is a problem record for it; the release stays
//! served without docs.

use super::spool::{self, Verdict};
use super::Indexer;
use crate::names::ProviderAddress;
use crate::provider_docs::{self, ProviderDocs, ProviderDocsError, MAX_DOCS_ZIP_BYTES};
use crate::store::{ProviderDocsRecord, Record, RecordId, StoreError};
use crate::version::Version;

impl Indexer {
    /// Indexes a `docs.zip`. Returns the problem, if any.
    pub(super) async fn index_provider_docs(
        &self,
        key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::provider_docs(provider, version);
        let known = match self.metadata.get(&id).await? {
            Some(Record::ProviderDocs(known)) => Some(known),
            _ => None,
        };
        let Some(meta) = self.artifacts.head(key).await? else {
            self.forget_docs(&id, known.as_ref(), key).await?;
            return Ok(None);
        };
        if known
            .as_ref()
            .is_some_and(|k| k.key == key && k.revision == meta.revision)
        {
            return Ok(None); // read and recorded already
        }
        let too_large = |size| {
            format!("docs.zip is {size} bytes, more than the {MAX_DOCS_ZIP_BYTES} documentation may have")
        };
        let opened =
            match spool::open(self.artifacts.as_ref(), key, MAX_DOCS_ZIP_BYTES, too_large).await? {
                Ok(Some(opened)) => opened,
                Ok(None) => {
                    self.forget_docs(&id, known.as_ref(), key).await?;
                    return Ok(None);
                }
                Err(reason) => {
                    self.forget_docs(&id, known.as_ref(), key).await?;
                    return Ok(Some(reason));
                }
            };
        match read(&opened.file).await? {
            Ok(docs) => {
                let record = ProviderDocsRecord {
                    provider: provider.clone(),
                    version: version.clone(),
                    key: key.to_owned(),
                    revision: opened.meta.revision,
                    docs,
                };
                self.metadata.put(Record::ProviderDocs(record)).await?;
                Ok(None)
            }
            Err(reason) => {
                self.forget_docs(&id, known.as_ref(), key).await?;
                Ok(Some(reason))
            }
        }
    }

    /// Deletes the docs record when it was made from `key` (another spelling of the same
    /// folder keeps its own).
    async fn forget_docs(
        &self,
        id: &RecordId,
        known: Option<&ProviderDocsRecord>,
        key: &str,
    ) -> Result<(), StoreError> {
        match known {
            Some(known) if known.key == key => self.metadata.delete(id).await,
            _ => Ok(()),
        }
    }
}

/// Reads the pages on a blocking thread: a verdict, or a failure to read.
async fn read(file: &std::fs::File) -> Verdict<ProviderDocs> {
    let file = file
        .try_clone()
        .map_err(|e| StoreError::with_source("cannot reopen a docs.zip", e))?;
    let verdict = tokio::task::spawn_blocking(move || provider_docs::read(&file))
        .await
        .map_err(|e| StoreError::with_source("reading a docs.zip stopped", e))?;
    match verdict {
        Ok(docs) => Ok(Ok(docs)),
        Err(ProviderDocsError::Io(e)) => Err(StoreError::with_source("cannot read a docs.zip", e)),
        Err(refused) => Ok(Err(refused.to_string())),
    }
}
