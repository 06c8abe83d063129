//! The indexer: turns "something happened under key K" into metadata. One routine for both
//! shapes: the local watcher and the S3-event Lambda feed it keys.
//!
//! Events arrive at least once, in any order, possibly while a file is still being written.
//! So an event is only a hint: the indexer reads the key's current state from the artifact
//! store and makes the metadata agree with it. Replaying any event, any number of times, in
//! any order, converges on the same index.

use std::sync::Arc;

use crate::layout::{classify, Artifact, Classified, KeyError};
use crate::store::{ArtifactStore, MetadataStore, ModuleArchive, StoreError};

/// What indexing one key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexOutcome {
    /// The key exists and is now served.
    Published(Artifact),
    /// The key is gone and is no longer served.
    Unpublished(Artifact),
    /// The key breaks the publishing layout and is never served.
    Rejected { key: String, error: KeyError },
    /// The key is not part of the publishing layout.
    Ignored,
}

pub struct Indexer {
    metadata: Arc<dyn MetadataStore>,
    artifacts: Arc<dyn ArtifactStore>,
}

impl Indexer {
    pub fn new(metadata: Arc<dyn MetadataStore>, artifacts: Arc<dyn ArtifactStore>) -> Self {
        Self {
            metadata,
            artifacts,
        }
    }

    /// Brings the index in line with the current state of `key`. Idempotent.
    pub async fn index_key(&self, key: &str) -> Result<IndexOutcome, StoreError> {
        let artifact = match classify(key) {
            Classified::Ignored => {
                tracing::debug!(key, "ignored: not part of the publishing layout");
                return Ok(IndexOutcome::Ignored);
            }
            Classified::Invalid(error) => {
                tracing::warn!(key, reason = %error, "rejected: this file is never served");
                return Ok(IndexOutcome::Rejected {
                    key: key.to_owned(),
                    error,
                });
            }
            Classified::Artifact(artifact) => artifact,
        };
        let head = self.artifacts.head(key).await?;
        match (&artifact, head) {
            (
                Artifact::ModuleArchive {
                    address,
                    version,
                    format,
                },
                Some(meta),
            ) => {
                self.metadata
                    .put_module_archive(ModuleArchive {
                        address: address.clone(),
                        version: version.clone(),
                        key: key.to_owned(),
                        format: *format,
                        size: meta.size,
                    })
                    .await?;
                tracing::info!(key, "published {artifact}");
                Ok(IndexOutcome::Published(artifact))
            }
            (
                Artifact::ModuleArchive {
                    address, version, ..
                },
                None,
            ) => {
                self.metadata
                    .remove_module_archive(address, version, key)
                    .await?;
                tracing::info!(key, "unpublished {artifact}");
                Ok(IndexOutcome::Unpublished(artifact))
            }
        }
    }

    /// Indexes every key in the artifact store, reporting progress through `progress` after
    /// each key (done, total). Failures of single keys are logged and counted, not fatal.
    pub async fn reindex_all(
        &self,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<ReindexSummary, StoreError> {
        let keys = self.artifacts.list().await?;
        let mut summary = ReindexSummary::default();
        for (done, key) in keys.iter().enumerate() {
            match self.index_key(key).await {
                Ok(IndexOutcome::Published(_)) => summary.published += 1,
                Ok(IndexOutcome::Unpublished(_)) | Ok(IndexOutcome::Ignored) => {}
                Ok(IndexOutcome::Rejected { .. }) => summary.rejected += 1,
                Err(e) => {
                    tracing::error!(key, error = %e, "could not index");
                    summary.failed += 1;
                }
            }
            progress(done + 1, keys.len());
        }
        Ok(summary)
    }
}

/// Counts from a full reindex.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReindexSummary {
    pub published: usize,
    pub rejected: usize,
    pub failed: usize,
}
