//! The checks before the first byte leaves: the files to publish, with the destination's
//! signing keys, are staged in a store of their own and indexed by the registry's own
//! [`Indexer`]; the [`Registry`] read model then says whether the version would be served.
//! Whatever the registry checks (now and in later versions) is checked here, by the same
//! code. The staging store reads the files where they lie, so memory stays bounded
//! whatever their size.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use tfreg_core::memory::MemoryMetadataStore;
use tfreg_core::store::{Kept, ObjectBody, ObjectMeta};
use tfreg_core::{ArtifactStore, Downloads, Indexer, MetadataStore, Registry, StoreError};

use super::judge::{judge, Judgement, Observation};
use super::{Plan, Upload};
use crate::report::{self, Problem};

/// Files by key, each read from its path; a file's revision is its SHA-256, so the checks'
/// verdicts can be matched to the files that were checked.
struct StagedStore {
    files: BTreeMap<String, Upload>,
}

impl StagedStore {
    fn meta(&self, key: &str) -> Option<(PathBuf, ObjectMeta)> {
        self.files.get(key).map(|f| {
            let meta = ObjectMeta {
                size: f.size,
                revision: f.sha256.clone(),
            };
            (f.path.clone(), meta)
        })
    }
}

#[async_trait]
impl ArtifactStore for StagedStore {
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        Ok(self.meta(key).map(|(_, meta)| meta))
    }

    async fn list(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.files.keys().cloned().collect())
    }

    /// The file where it lies: the checks read it in place.
    async fn open(&self, key: &str) -> Result<Option<ObjectBody>, StoreError> {
        let Some((path, meta)) = self.meta(key) else {
            return Ok(None);
        };
        let failed = |e| StoreError::with_source(format!("cannot read {}", path.display()), e);
        let file = std::fs::File::open(&path).map_err(failed)?;
        ObjectBody::from_file(meta, file).map(Some).map_err(failed)
    }

    /// A file's revision is its SHA-256: the file itself, while it has those bytes.
    async fn open_revision(
        &self,
        key: &str,
        revision: &str,
    ) -> Result<Option<ObjectBody>, StoreError> {
        Ok(self
            .open(key)
            .await?
            .filter(|body| body.meta.revision == revision))
    }

    /// The staging area keeps nothing: its verdicts are the checks, never pins.
    async fn keep(&self, _key: &str, _revision: &str, _sha256: &str) -> Result<Kept, StoreError> {
        Ok(Kept::No("the staging area keeps nothing".into()))
    }

    /// Staged files are regular files the publisher named.
    async fn refusal(&self, _key: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
}

/// Indexes `plan`'s files together with `context` (the destination's signing keys) and
/// judges the version as the registry would serve it.
pub async fn check(plan: &Plan, context: Vec<Upload>) -> anyhow::Result<Judgement> {
    let mut files: BTreeMap<String, Upload> =
        context.into_iter().map(|f| (f.key.clone(), f)).collect();
    for file in &plan.files {
        files.insert(file.key.clone(), file.clone());
    }
    let artifacts = Arc::new(StagedStore { files });
    let metadata = Arc::new(MemoryMetadataStore::new());
    // The staging area keeps nothing: its verdicts are the checks, never pins.
    let indexer = Indexer::new(metadata.clone(), artifacts.clone())
        .without_pinning()
        .with_deferred_documents();
    let summary = indexer.reindex_all(|_, _| {}).await?;
    if summary.failed > 0 {
        anyhow::bail!("{} files could not be read for the checks", summary.failed);
    }
    // Nothing is downloaded from the staging area; the read model may still make URLs.
    let registry = Registry::new(
        metadata.clone(),
        Downloads::served(crate::backend::throwaway_signer(), artifacts),
    );
    let metadata: &dyn MetadataStore = metadata.as_ref();
    let observation = Observation {
        module: match plan.subject.module() {
            Some((address, _)) => Some(report::module_status(&registry, address).await?),
            None => None,
        },
        provider: match plan.subject.provider() {
            Some((address, _)) => Some(report::provider_status(metadata, address).await?),
            None => None,
        },
        problems: registry
            .problems()
            .await?
            .into_iter()
            .map(Problem::from_record)
            .collect(),
    };
    // In the staging area nothing is on its way: what is not served now never would be.
    Ok(match judge(plan, &observation) {
        Judgement::Pending(reasons) => Judgement::Refused(reasons),
        other => other,
    })
}
