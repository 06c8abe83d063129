//! The indexer: turns "something happened under key K" into metadata. One routine for both
//! shapes: the local watcher and the S3-event Lambda feed it keys.
//!
//! Events arrive at least once, in any order, possibly while a file is still being written.
//! So an event is only a hint: the indexer reads the key's current state from the artifact
//! store and makes the metadata agree with it. Replaying any event, any number of times, in
//! any order, converges on the same index. Whether a provider version is *served* is decided
//! when it is read (see [`crate::providers`]), from these records, so no record ever has to be
//! updated because another file changed, except signature verdicts, which depend on keys,
//! and the unpacked hash of a package, computed once a signed SHA256SUMS vouches for it.
//!
//! Everything published is hostile until checked: small files are read only up to a cap,
//! packages within [`PackageLimits`], and a file that cannot be checked gets a verdict (a
//! problem record), never an error that stops other work. Errors are for the stores.
//!
//! - [`modules`](self::modules): module archives, and their docs;
//! - [`module_meta`](self::module_meta): the publisher's metadata sidecar of a module version;
//! - [`packages`](self::packages): provider packages, under `providers/` and `mirror/`;
//! - [`releases`](self::releases): SHA256SUMS, manifests and signature verdicts;
//! - [`keys`](self::keys): signing keys, and re-verification when they change;
//! - [`pins`](self::pins): immutable versions, the first bytes served pinned for good;
//! - [`listing`](self::listing): the listings of modules, for the read API;
//! - [`reindex`](self::reindex): the whole store at once, both ways.

mod keys;
mod listing;
mod module_meta;
mod modules;
mod packages;
pub mod pins;
mod reindex;
mod releases;
mod spool;

use std::sync::Arc;

use tokio::io::AsyncReadExt;

use crate::hash::PackageLimits;
use crate::layout::{classify, Artifact, Classified, ReleaseFile};
use crate::names::{Hostname, ModuleAddress, ProviderAddress};
use crate::store::{
    ArtifactStore, MetadataStore, ObjectMeta, ProblemRecord, Record, RecordId, StoreError,
};

pub use reindex::{Change, ChangeKind, ReindexReport};

/// What indexing one key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexOutcome {
    /// The key exists and is recorded.
    Published(Artifact),
    /// The key is gone and is forgotten.
    Unpublished(Artifact),
    /// The key can never be served; the reason is logged and kept for `tfreg status`.
    Rejected { key: String, reason: String },
    /// The key is not part of the publishing layout.
    Ignored,
}

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
    /// Modules whose listing waits for [`Indexer::flush_listings`], when the caller indexes
    /// in bulk; `None`: each archive's event lists its module at once.
    deferred_listings: Option<std::sync::Mutex<std::collections::BTreeSet<ModuleAddress>>>,
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
            deferred_listings: None,
        }
    }

    /// Lists modules only when [`Indexer::flush_listings`] is called, once per module
    /// whatever the number of its archives indexed meanwhile: for indexing in bulk (a start,
    /// a rescan, a reindex), where listing a module of N versions after each of them costs
    /// N² record reads. Listings lag until the next flush.
    pub fn with_deferred_listings(mut self) -> Self {
        self.deferred_listings = Some(Default::default());
        self
    }

    /// Lists every module whose archives were indexed since the last flush (with
    /// [`Indexer::with_deferred_listings`]; otherwise there is nothing to do). Returns how
    /// many were listed; those that failed wait for the next flush.
    pub async fn flush_listings(&self) -> Result<usize, StoreError> {
        let Some(deferred) = &self.deferred_listings else {
            return Ok(0);
        };
        let pending = std::mem::take(&mut *deferred.lock().map_err(|_| poisoned())?);
        let count = pending.len();
        let mut left = pending.into_iter();
        while let Some(address) = left.next() {
            if let Err(e) = self.list_module(&address).await {
                if let Ok(mut deferred) = deferred.lock() {
                    deferred.insert(address);
                    deferred.extend(left);
                }
                return Err(e);
            }
        }
        Ok(count)
    }

    /// Lists the module now, or notes it for the next flush.
    async fn list_or_defer(&self, address: &ModuleAddress) -> Result<(), StoreError> {
        match &self.deferred_listings {
            Some(deferred) => {
                deferred
                    .lock()
                    .map_err(|_| poisoned())?
                    .insert(address.clone());
                Ok(())
            }
            None => self.list_module(address).await,
        }
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
        if classify(key) == Classified::Ignored {
            return self.index_key_once(key).await;
        }
        for _ in 0..3 {
            let before = self.artifacts.head(key).await?.map(|m| m.revision);
            let outcome = self.index_key_once(key).await?;
            let after = self.artifacts.head(key).await?.map(|m| m.revision);
            if before == after {
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
        let refused = self.pin_refusal(key, &artifact).await?;
        let mut cleared_early = false;
        let problem = match &artifact {
            Artifact::ModuleArchive {
                address,
                version,
                format,
            } => self.index_module(key, address, version, *format).await?,
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
        };
        let (lost, served) = self.pin_served(key, &artifact).await?;
        if let Artifact::ModuleArchive { address, .. } = &artifact {
            self.list_or_defer(address).await?;
        }
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

/// SHA-256 (hex) of everything a reader yields, in fixed-size chunks.
async fn sha256_of(
    mut reader: impl tokio::io::AsyncRead + Unpin,
) -> std::io::Result<(String, u64)> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = reader.read(&mut buffer).await?;
        if n == 0 {
            return Ok((hex::encode(hasher.finalize()), total));
        }
        total += n as u64;
        hasher.update(&buffer[..n]);
    }
}

fn poisoned() -> StoreError {
    StoreError::new("the indexer's pending listings are unusable after a panic in another thread")
}
