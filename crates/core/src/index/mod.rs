//! The indexer: turns "something happened under key K" into metadata. One routine for both
//! shapes: the local watcher and the S3-event Lambda feed it keys.
//!
//! Events arrive at least once, in any order, possibly while a file is still being written.
//! So an event is only a hint: the indexer reads the key's current state from the artifact
//! store and makes the metadata agree with it. Replaying any event, any number of times, in
//! any order, converges on the same index. No record ever has to be updated because another
//! file changed, except signature verdicts, which depend on keys, and the unpacked hash of a
//! package, computed once a signed SHA256SUMS vouches for it. What requests read is derived
//! from the records afterwards, per subject and version: the documents (module `documents`),
//! made again from the records after every file's event, converging the same way.
//!
//! Everything published is hostile until checked: small files are read only up to a cap,
//! packages within [`PackageLimits`], and a file that cannot be checked gets a verdict (a
//! problem record), never an error that stops other work. Errors are for the stores.
//!
//! - `modules`: module archives, and their docs;
//! - `module_meta`: the publisher's metadata sidecar of a module version;
//! - `notices`: deprecation and yank records of module and provider versions;
//! - `attachments`: SBOMs and provenance statements of module and provider versions;
//! - `packages`: provider packages, under `providers/` and `mirror/`;
//! - `releases`: SHA256SUMS, manifests and signature verdicts;
//! - `provider_docs`: a provider release's documentation (`docs.zip`);
//! - `keys`: signing keys, and re-verification when they change;
//! - [`pins`]: immutable versions, the first bytes served pinned for good;
//! - `listing`: the listings of modules, for the read API;
//! - `documents`: the precomputed answers requests read;
//! - `uploads`: who uploaded each version's file (AWS), judged against the namespace policy;
//! - `reindex`: the whole store at once, both ways.

mod attachments;
mod documents;
mod keys;
mod listing;
mod module_meta;
mod module_signatures;
mod modules;
mod notices;
mod packages;
pub mod pins;
mod policy;
mod provider_docs;
mod reindex;
mod releases;
mod spool;
mod uploads;

use std::sync::Arc;

use tokio::io::AsyncReadExt;

use crate::hash::PackageLimits;
use crate::layout::{classify, Artifact, Classified, ReleaseFile};
use crate::names::{Hostname, ProviderAddress};
use crate::store::{
    ArtifactStore, MetadataStore, ObjectMeta, ProblemRecord, Record, RecordId, StoreError,
};

pub use documents::{DocumentStats, Scope, Subject};
pub use reindex::{Change, ChangeKind, ReindexReport};
pub use uploads::Upload;

/// What indexing one key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexOutcome {
    /// The key exists and is recorded.
    Published(Artifact),
    /// The key is gone and is forgotten.
    Unpublished(Artifact),
    /// The key can never be served; the reason is logged and kept for `tfreg status`.
    Rejected {
        /// The object key.
        key: String,
        /// Why, in words (what its problem record says).
        reason: String,
    },
    /// The key is not part of the publishing layout.
    Ignored,
}

/// Makes the metadata store agree with the artifact store, one key at a time (or all
/// of them, [`Indexer::reindex_all`]).
pub struct Indexer {
    metadata: Arc<dyn MetadataStore>,
    /// The store as the registry sees it: pinned keys read as their pinned bytes.
    artifacts: Arc<dyn ArtifactStore>,
    /// The store as it is, for what was uploaded since.
    store: Arc<dyn ArtifactStore>,
    /// False for readers that must not change the registry (`tfreg status`): pins are
    /// honoured, never made.
    pins_written: bool,
    /// The registry's own hostname: uploads under `mirror/<it>/` are refused, since the
    /// mirror serves it from signed releases only.
    hostname: Option<Hostname>,
    limits: PackageLimits,
    module_limits: crate::module_archive::ModuleLimits,
    /// Documents (and module listings) that wait for [`Indexer::flush_documents`], when the caller
    /// indexes in bulk; `None`: each file's event makes them again at once.
    deferred: Option<std::sync::Mutex<std::collections::BTreeMap<Subject, Scope>>>,
    /// What making documents cost so far.
    counters: documents::DocumentCounters,
}

/// The result of reading a small file.
enum Small {
    Missing,
    Bytes(Vec<u8>, ObjectMeta),
    /// It exists but cannot be read as this kind of file (too large): a verdict, with the
    /// revision it holds for.
    Unreadable(String, ObjectMeta),
}

impl Small {
    /// The revision read, if the file exists.
    fn revision(&self) -> Option<String> {
        match self {
            Small::Missing => None,
            Small::Bytes(_, meta) | Small::Unreadable(_, meta) => Some(meta.revision.clone()),
        }
    }
}

impl Indexer {
    /// An indexer over `metadata` and `artifacts` that pins what it publishes, with the
    /// default limits and no hostname of its own.
    pub fn new(metadata: Arc<dyn MetadataStore>, artifacts: Arc<dyn ArtifactStore>) -> Self {
        let pinned = pins::PinnedArtifacts::new(Arc::clone(&metadata), Arc::clone(&artifacts));
        Self {
            metadata,
            artifacts: Arc::new(pinned),
            store: artifacts,
            pins_written: true,
            hostname: None,
            limits: PackageLimits::default(),
            module_limits: crate::module_archive::ModuleLimits::default(),
            deferred: None,
            counters: Default::default(),
        }
    }

    /// Makes documents and module listings only when [`Indexer::flush_documents`] is called, once per
    /// subject whatever the number of its files indexed meanwhile: for indexing in bulk (a
    /// start, a rescan, a reindex), where remaking a module's documents after each of its
    /// N versions costs N² record reads. Answers lag until the next flush.
    pub fn with_deferred_documents(mut self) -> Self {
        self.deferred = Some(Default::default());
        self
    }

    /// Makes the documents (and listings) of every subject whose files were indexed since
    /// the last flush (with [`Indexer::with_deferred_documents`]; otherwise there is nothing
    /// to do). Returns how many subjects were made again; those that failed wait for the
    /// next flush.
    pub async fn flush_documents(&self) -> Result<usize, StoreError> {
        let Some(deferred) = &self.deferred else {
            return Ok(0);
        };
        let pending = std::mem::take(&mut *deferred.lock().map_err(|_| poisoned())?);
        let count = pending.len();
        let mut left = pending.into_iter();
        while let Some((subject, scope)) = left.next() {
            if let Err(e) = self.refresh_now(&subject, &scope).await {
                if let Ok(mut deferred) = deferred.lock() {
                    for (subject, scope) in std::iter::once((subject, scope)).chain(left) {
                        deferred
                            .entry(subject)
                            .and_modify(|s: &mut Scope| s.merge(scope.clone()))
                            .or_insert(scope);
                    }
                }
                return Err(e);
            }
        }
        Ok(count)
    }

    /// How many versions documents this indexer wrote so far, and how many of its attempts
    /// lost to another writer and started over.
    pub fn document_stats(&self) -> DocumentStats {
        self.counters.stats()
    }

    /// Makes every document again from the records now in the store (and forgets documents
    /// of nothing): for a store whose records were restored rather than indexed.
    pub async fn rebuild_all_documents(&self) -> Result<(), StoreError> {
        let records = self.metadata.scan().await?;
        self.rebuild_documents(&records).await
    }

    /// The registry's own hostname, so uploads under `mirror/<hostname>/` are refused.
    pub fn with_hostname(mut self, hostname: Option<Hostname>) -> Self {
        self.hostname = hostname;
        self
    }

    /// Honours existing pins but makes none, and keeps no bytes: for reports that must not
    /// change the registry.
    pub fn without_pinning(mut self) -> Self {
        self.pins_written = false;
        self
    }

    /// Limits on what one module archive may hold, and the time checking it may take.
    pub fn with_module_limits(mut self, limits: crate::module_archive::ModuleLimits) -> Self {
        self.module_limits = limits;
        self
    }

    /// Limits on the work one provider package may cost.
    pub fn with_limits(mut self, limits: PackageLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Brings the index in line with the current state of `key`. Idempotent.
    ///
    /// Another invocation may handle an event of the same key at the same time (S3 delivers
    /// a put and a delete to separate invocations), and its write may land before ours,
    /// which was decided on older state. So after writing, the key's state is compared with
    /// the state before: if it changed, the key is indexed again. Whoever writes last thus
    /// leaves the index agreeing with the object.
    pub async fn index_key(&self, key: &str) -> Result<IndexOutcome, StoreError> {
        let Classified::Artifact(artifact) = classify(key) else {
            return self.index_key_once(key).await;
        };
        for _ in 0..3 {
            let before = self.artifacts.head(key).await?.map(|m| m.revision);
            let outcome = self.index_key_once(key).await?;
            let after = self.artifacts.head(key).await?.map(|m| m.revision);
            if before == after {
                // A version's files changed: its attachments' subjects are matched again.
                self.judge_attachments_of(key, &artifact).await?;
                // The answers made from these records, whatever the outcome: a refused file
                // may have taken a version away.
                match (Subject::of(&artifact), &artifact) {
                    (Some((subject, version)), _) => {
                        self.refresh(subject, Scope::one(version)).await?
                    }
                    (None, Artifact::SigningKey { namespace }) => {
                        self.refresh_namespace(namespace).await?
                    }
                    (None, _) => {}
                }
                // A policy's allowed_publishers judge the namespace's files again (uploads).
                if let Artifact::NamespacePolicy { namespace } = &artifact {
                    self.rejudge_publishers(namespace).await?;
                }
                return Ok(outcome);
            }
        }
        Err(StoreError::new(format!(
            "{key} kept changing while being indexed; its next event or a reindex indexes it again"
        )))
    }

    async fn index_key_once(&self, key: &str) -> Result<IndexOutcome, StoreError> {
        let artifact = match classify(key) {
            Classified::Ignored => {
                tracing::debug!(key, "ignored: not part of the publishing layout");
                return Ok(IndexOutcome::Ignored);
            }
            Classified::Invalid(error) => {
                // A link or FIFO is refused as such, whatever its name.
                let refused = self.artifacts.refusal(key).await?;
                let exists = refused.is_some() || self.artifacts.head(key).await?.is_some();
                let reason = refused.unwrap_or_else(|| error.to_string());
                return self.outcome_for_invalid(key, exists, reason).await;
            }
            Classified::Artifact(artifact) => artifact,
        };
        // Different bytes under a published version are refused; the version keeps its own.
        // A file its namespace's policy does not let its uploader publish (uploads).
        if let Some(reason) = self.publisher_refusal(key, &artifact).await? {
            return self.refuse_publisher(key, &artifact, reason).await;
        }
        let refused = self.pin_refusal(key, &artifact).await?;
        let mut cleared_early = false;
        let problem = match &artifact {
            Artifact::ModuleArchive {
                address,
                version,
                format,
            } => {
                let problem = self.index_module(key, address, version, *format).await?;
                // Its signature and the namespace's policy may refuse it still.
                let judged = self.judge_module_signature(address, version, key).await?;
                problem.or(judged.archive_problem)
            }
            Artifact::ModuleSignature {
                address, version, ..
            } => {
                let archive_key = key
                    .strip_suffix(crate::layout::MODULE_SIGNATURE_SUFFIX)
                    .unwrap_or(key);
                let judged = self
                    .judge_module_signature(address, version, archive_key)
                    .await?;
                // Without an archive nothing was judged: the `.sig`'s problem is left to the
                // archive's event, which may be setting it meanwhile.
                cleared_early = !judged.archive_recorded;
                judged.signature_problem
            }
            Artifact::NamespacePolicy { namespace } => self.index_policy(key, namespace).await?,
            Artifact::ModuleMetadata { address, version } => {
                self.index_module_metadata(key, address, version).await?
            }
            Artifact::ProviderPackage {
                provider,
                version,
                platform,
            } => {
                self.note_provider(provider).await?;
                // A signature verified meanwhile may unpack this package and record why it
                // was refused. Any older problem is cleared now, before this event looks for
                // the signature, and an outcome without a problem writes nothing at the end:
                // so a refusal recorded by the verifier is never cleared by this event.
                self.set_problem(key, None).await?;
                cleared_early = true;
                self.index_package(key, None, provider, version, platform)
                    .await?
            }
            Artifact::MirrorPackage {
                hostname,
                provider,
                version,
                platform,
            } => {
                self.index_package(key, Some(hostname), provider, version, platform)
                    .await?
            }
            Artifact::ProviderReleaseFile {
                provider,
                version,
                file,
            } => {
                self.note_provider(provider).await?;
                match file {
                    ReleaseFile::Sums => self.index_sums(key, provider, version).await?,
                    ReleaseFile::Signature => {
                        let sums_key = key.strip_suffix(".sig").unwrap_or(key);
                        self.verify_signature(key, sums_key, provider, version)
                            .await?
                    }
                    ReleaseFile::Manifest => self.index_manifest(key, provider, version).await?,
                }
            }
            Artifact::SigningKey { namespace } => self.index_signing_key(key, namespace).await?,
            Artifact::Attachment {
                target,
                version,
                file,
            } => {
                // Noted before it is judged, so a change of the namespace's keys finds it
                // (see `index_attachment`): a module's listing is made only with its
                // documents, which may come later.
                match target {
                    crate::layout::NoticeTarget::Provider { provider } => {
                        self.note_provider(provider).await?
                    }
                    crate::layout::NoticeTarget::Module { address } => {
                        self.note_module(address).await?
                    }
                }
                self.index_attachment(key, target, version, *file).await?
            }
            Artifact::ProviderDocs { provider, version } => {
                self.index_provider_docs(key, provider, version).await?
            }
            Artifact::Notice {
                target,
                version,
                kind,
            } => {
                if let crate::layout::NoticeTarget::Provider { provider } = target {
                    self.note_provider(provider).await?;
                }
                self.index_notice(key, target, version, *kind).await?
            }
        };
        let (lost, served) = self.pin_served(key, &artifact).await?;
        let exists = self.artifacts.head(key).await?.is_some();
        // Something that is there but never read (a link, a FIFO) is refused, with the
        // reason, rather than silently absent.
        let unreadable = match exists || refused.is_some() {
            true => None,
            false => self.artifacts.refusal(key).await?,
        };
        let problem = refused
            .or(lost)
            .or(problem.filter(|_| exists))
            .or(unreadable);
        if problem.is_some() || !cleared_early {
            self.set_problem(key, problem.clone()).await?;
        }
        Ok(match (exists, problem) {
            (_, Some(reason)) => {
                tracing::warn!(key, reason, "refused: this file is never served");
                IndexOutcome::Rejected {
                    key: key.to_owned(),
                    reason,
                }
            }
            (false, None) => {
                tracing::debug!(key, "unpublished {artifact}");
                IndexOutcome::Unpublished(artifact)
            }
            (true, None) => {
                match served {
                    pins::Served::Yes => tracing::debug!(key, "published {artifact}"),
                    pins::Served::No => tracing::debug!(
                        key,
                        "recorded {artifact}; not served yet (tfreg status says what it waits for)"
                    ),
                }
                IndexOutcome::Published(artifact)
            }
        })
    }

    async fn outcome_for_invalid(
        &self,
        key: &str,
        exists: bool,
        reason: String,
    ) -> Result<IndexOutcome, StoreError> {
        self.set_problem(key, exists.then(|| reason.clone()))
            .await?;
        if exists {
            tracing::warn!(key, reason, "rejected: this file is never served");
        }
        Ok(IndexOutcome::Rejected {
            key: key.to_owned(),
            reason,
        })
    }

    async fn put_or_delete(&self, id: RecordId, record: Option<Record>) -> Result<(), StoreError> {
        match record {
            Some(record) => {
                debug_assert_eq!(record.id(), id);
                self.metadata.put(record).await
            }
            None => self.metadata.delete(&id).await,
        }
    }

    async fn set_problem(&self, key: &str, problem: Option<String>) -> Result<(), StoreError> {
        let id = RecordId::problem(key);
        let record = problem.map(|problem| {
            Record::Problem(ProblemRecord {
                key: key.to_owned(),
                problem,
            })
        });
        self.put_or_delete(id, record).await
    }

    /// Lists the provider under its namespace, for re-verification when keys change, and
    /// among all providers, for the catalogue. A provider stays listed once a file of it
    /// was seen; readers show only providers with a served release.
    async fn note_provider(&self, provider: &ProviderAddress) -> Result<(), StoreError> {
        self.metadata
            .put(Record::NamespaceProvider(provider.clone()))
            .await?;
        self.metadata
            .put(Record::ListedProvider(provider.clone()))
            .await
    }

    /// Reads a small file whole, refusing anything over `max` bytes.
    async fn read_small(&self, key: &str, max: u64) -> Result<Small, StoreError> {
        let Some(body) = self.artifacts.open(key).await? else {
            return Ok(Small::Missing);
        };
        if body.meta.size > max {
            return Ok(Small::Unreadable(
                format!(
                    "{} is {} bytes, more than the {max} this kind of file may have",
                    crate::store::file_name(key),
                    body.meta.size
                ),
                body.meta,
            ));
        }
        let mut bytes = Vec::with_capacity(body.meta.size as usize);
        let mut reader = body.reader.take(max + 1);
        if let Err(e) = reader.read_to_end(&mut bytes).await {
            return Err(StoreError::with_source(format!("cannot read {key}"), e));
        }
        if bytes.len() as u64 > max {
            return Ok(Small::Unreadable(
                format!(
                    "{} holds more than the {max} bytes this kind of file may have",
                    crate::store::file_name(key)
                ),
                body.meta,
            ));
        }
        Ok(Small::Bytes(bytes, body.meta))
    }
}

fn poisoned() -> StoreError {
    StoreError::new("the indexer's pending documents are unusable after a panic in another thread")
}
