//! The indexer: turns "something happened under key K" into metadata. One routine for both
//! shapes: the local watcher and the S3-event Lambda feed it keys.
//!
//! Events arrive at least once, in any order, possibly while a file is still being written.
//! So an event is only a hint: the indexer reads the key's current state from the artifact
//! store and makes the metadata agree with it. Replaying any event, any number of times, in
//! any order, converges on the same index. Whether a provider version is *served* is decided
//! when it is read (see [`crate::providers`]), from these records, so no record ever has to be
//! updated because another file changed, except signature verdicts, which depend on keys.

use std::sync::Arc;
use std::time::SystemTime;

use tokio::io::AsyncReadExt;

use crate::gpg;
use crate::hash::{self, PackageHashes};
use crate::layout::{classify, Artifact, Classified, ReleaseFile};
use crate::names::{Namespace, ProviderAddress};
use crate::release;
use crate::store::{
    partition, ArtifactStore, KeyRecord, ManifestRecord, MetadataStore, ModuleArchive, ObjectMeta,
    PackageRecord, ProblemRecord, Record, RecordId, SignatureRecord, SignedBy, StoreError,
    SumsRecord,
};
use crate::version::Version;

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
    artifacts: Arc<dyn ArtifactStore>,
}

/// The result of reading a small file.
enum Small {
    Missing,
    Bytes(Vec<u8>, ObjectMeta),
    Unreadable(String),
}

impl Indexer {
    pub fn new(metadata: Arc<dyn MetadataStore>, artifacts: Arc<dyn ArtifactStore>) -> Self {
        Self {
            metadata,
            artifacts,
        }
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
                let exists = self.artifacts.head(key).await?.is_some();
                return self
                    .outcome_for_invalid(key, exists, error.to_string())
                    .await;
            }
            Classified::Artifact(artifact) => artifact,
        };
        let problem = match &artifact {
            Artifact::ModuleArchive {
                address,
                version,
                format,
            } => {
                let id = RecordId::module_archive(address, version, key);
                let record = match self.artifacts.open(key).await? {
                    None => None,
                    Some(body) => {
                        // A checksum of what was published, read once per revision.
                        let known = match self.metadata.get(&id).await? {
                            Some(Record::ModuleArchive(a)) if a.revision == body.meta.revision => {
                                Some(a.sha256)
                            }
                            _ => None,
                        };
                        let meta = body.meta.clone();
                        let sha256 = match known {
                            Some(sha256) => sha256,
                            None => sha256_of(body.reader).await.map_err(|e| {
                                StoreError::with_source(format!("cannot read {key}"), e)
                            })?,
                        };
                        Some(Record::ModuleArchive(ModuleArchive {
                            address: address.clone(),
                            version: version.clone(),
                            key: key.to_owned(),
                            format: *format,
                            size: meta.size,
                            revision: meta.revision,
                            sha256,
                        }))
                    }
                };
                self.put_or_delete(id, record).await?;
                None
            }
            Artifact::ProviderPackage {
                provider,
                version,
                platform,
            } => {
                self.note_provider(provider).await?;
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
                    ReleaseFile::Sums => {
                        let problem = self.index_sums(key, provider, version).await?;
                        let sig_key = format!("{key}.sig");
                        let sig_problem = self
                            .verify_signature(&sig_key, key, provider, version)
                            .await?;
                        let sig_exists = self.artifacts.head(&sig_key).await?.is_some();
                        self.set_problem(&sig_key, sig_problem.filter(|_| sig_exists))
                            .await?;
                        problem
                    }
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
        let exists = self.artifacts.head(key).await?.is_some();
        self.set_problem(key, problem.clone().filter(|_| exists))
            .await?;
        Ok(match (exists, problem) {
            (false, _) => {
                tracing::info!(key, "unpublished {artifact}");
                IndexOutcome::Unpublished(artifact)
            }
            (true, Some(reason)) => {
                tracing::warn!(key, reason, "rejected: this file is never served");
                IndexOutcome::Rejected {
                    key: key.to_owned(),
                    reason,
                }
            }
            (true, None) => {
                tracing::info!(key, "published {artifact}");
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

    /// Lists the provider under its namespace, for re-verification when keys change.
    async fn note_provider(&self, provider: &ProviderAddress) -> Result<(), StoreError> {
        self.metadata
            .put(Record::NamespaceProvider(provider.clone()))
            .await
    }

    /// Reads a small file whole, refusing anything over `max` bytes.
    async fn read_small(&self, key: &str, max: u64) -> Result<Small, StoreError> {
        let Some(body) = self.artifacts.open(key).await? else {
            return Ok(Small::Missing);
        };
        if body.meta.size > max {
            return Ok(Small::Unreadable(format!(
                "the file is {} bytes, more than the {max} this kind of file may have",
                body.meta.size
            )));
        }
        let mut bytes = Vec::with_capacity(body.meta.size as usize);
        let mut reader = body.reader.take(max + 1);
        if let Err(e) = reader.read_to_end(&mut bytes).await {
            return Err(StoreError::with_source(format!("cannot read {key}"), e));
        }
        Ok(Small::Bytes(bytes, body.meta))
    }

    /// Hashes a provider package (once per revision) and records it.
    async fn index_package(
        &self,
        key: &str,
        mirror_hostname: Option<&crate::names::Hostname>,
        provider: &ProviderAddress,
        version: &Version,
        platform: &crate::names::Platform,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::package(mirror_hostname, provider, version, key);
        let Some(meta) = self.artifacts.head(key).await? else {
            self.metadata.delete(&id).await?;
            return Ok(None);
        };
        if let Some(Record::Package(existing)) = self.metadata.get(&id).await? {
            if existing.revision == meta.revision {
                return Ok(None); // already hashed: replays cost nothing
            }
        }
        match self.hash_package(key).await? {
            Ok(hashes) => {
                // A file that changed while it was hashed is being written: its next event
                // (or the next rescan) hashes the final content.
                if self.artifacts.head(key).await?.as_ref() != Some(&meta) {
                    return Ok(Some("the file changed while it was being read".into()));
                }
                self.metadata
                    .put(Record::Package(PackageRecord {
                        mirror_hostname: mirror_hostname.cloned(),
                        provider: provider.clone(),
                        version: version.clone(),
                        platform: platform.clone(),
                        key: key.to_owned(),
                        revision: meta.revision,
                        size: meta.size,
                        hashes,
                    }))
                    .await?;
                Ok(None)
            }
            Err(reason) => {
                self.metadata.delete(&id).await?;
                Ok(Some(reason))
            }
        }
    }

    /// Hashes a package: in place when the store has a local file, else from a spooled copy.
    async fn hash_package(&self, key: &str) -> Result<Result<PackageHashes, String>, StoreError> {
        let failed = |e: tokio::task::JoinError| StoreError::with_source("hashing stopped", e);
        if let Some(path) = self.artifacts.local_path(key) {
            let hashed = tokio::task::spawn_blocking(move || hash::hash_zip_file(&path))
                .await
                .map_err(failed)?;
            return Ok(hashed.map_err(|e| e.to_string()));
        }
        let Some(mut body) = self.artifacts.open(key).await? else {
            return Ok(Err("the file disappeared while it was being read".into()));
        };
        let spool = tempfile::NamedTempFile::new()
            .map_err(|e| StoreError::with_source("cannot create a temporary file", e))?;
        let mut file = tokio::fs::File::from_std(
            spool
                .reopen()
                .map_err(|e| StoreError::with_source("cannot open a temporary file", e))?,
        );
        tokio::io::copy(&mut body.reader, &mut file)
            .await
            .map_err(|e| StoreError::with_source(format!("cannot read {key}"), e))?;
        let hashed = tokio::task::spawn_blocking(move || hash::hash_zip_file(spool.path()))
            .await
            .map_err(failed)?;
        Ok(hashed.map_err(|e| e.to_string()))
    }

    async fn index_sums(
        &self,
        key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::sums(provider, version, key);
        let (record, problem) = match self
            .read_small(key, release::MAX_RELEASE_FILE_BYTES)
            .await?
        {
            Small::Missing => (None, None),
            Small::Unreadable(reason) => (None, Some(reason)),
            Small::Bytes(bytes, meta) => match release::parse_sums(&bytes) {
                Ok(entries) => (
                    Some(Record::Sums(SumsRecord {
                        provider: provider.clone(),
                        version: version.clone(),
                        key: key.to_owned(),
                        revision: meta.revision,
                        entries,
                    })),
                    None,
                ),
                Err(reason) => (None, Some(reason)),
            },
        };
        self.put_or_delete(id, record).await?;
        Ok(problem)
    }

    async fn index_manifest(
        &self,
        key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::manifest(provider, version, key);
        let protocols = match self
            .read_small(key, release::MAX_RELEASE_FILE_BYTES)
            .await?
        {
            Small::Missing => return self.metadata.delete(&id).await.map(|_| None),
            Small::Unreadable(reason) => Err(reason),
            Small::Bytes(bytes, _) => release::parse_manifest(&bytes),
        };
        let problem = protocols.as_ref().err().cloned();
        self.metadata
            .put(Record::Manifest(ManifestRecord {
                provider: provider.clone(),
                version: version.clone(),
                key: key.to_owned(),
                protocols,
            }))
            .await?;
        Ok(problem)
    }

    async fn index_signing_key(
        &self,
        key: &str,
        namespace: &Namespace,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::signing_key(namespace, key);
        let (record, problem) = match self.read_small(key, gpg::MAX_KEY_BYTES).await? {
            Small::Missing => (None, None),
            Small::Unreadable(reason) => (None, Some(reason)),
            Small::Bytes(bytes, meta) => {
                let verdict = gpg::parse_public_key(&bytes, SystemTime::now());
                let problem = verdict.as_ref().err().cloned();
                let record = Record::Key(KeyRecord {
                    namespace: namespace.clone(),
                    key: key.to_owned(),
                    revision: meta.revision,
                    verdict,
                });
                (Some(record), problem)
            }
        };
        self.put_or_delete(id, record).await?;
        // Every release of the namespace may now verify differently.
        for record in self
            .metadata
            .query(&partition::namespace(namespace))
            .await?
        {
            let Record::NamespaceProvider(provider) = record else {
                continue;
            };
            for record in self.metadata.query(&partition::provider(&provider)).await? {
                if let Record::Signature(sig) = record {
                    let problem = self
                        .verify_signature(&sig.key, &sig.sums_key, &provider, &sig.version)
                        .await?;
                    // `tfreg status` shows the signature's new verdict, not the old one.
                    let exists = self.artifacts.head(&sig.key).await?.is_some();
                    self.set_problem(&sig.key, problem.filter(|_| exists))
                        .await?;
                }
            }
        }
        Ok(problem)
    }

    /// Verifies a release's SHA256SUMS signature against the namespace's current keys and
    /// records the verdict for the current revisions of both files.
    async fn verify_signature(
        &self,
        sig_key: &str,
        sums_key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<String>, StoreError> {
        // Concurrent invocations (one per file event) may each verify and write; the last
        // write may come from the one that read older files or keys. So after writing, the
        // verdict's inputs are compared with the current ones (the two files' revisions and
        // the namespace's key records), and a stale verdict is computed again: whoever
        // writes last leaves a verdict for the current files and keys.
        for _ in 0..3 {
            let keys_before = self.keys_fingerprint(&provider.namespace).await?;
            let (problem, used) = self
                .verify_signature_once(sig_key, sums_key, provider, version)
                .await?;
            let current = (
                self.artifacts.head(sig_key).await?.map(|m| m.revision),
                self.artifacts.head(sums_key).await?.map(|m| m.revision),
            );
            let keys_after = self.keys_fingerprint(&provider.namespace).await?;
            if used == current && keys_before == keys_after {
                return Ok(problem);
            }
        }
        Err(StoreError::new(format!(
            "{sig_key} or {sums_key} kept changing while being verified; the next event or reindex verifies it again"
        )))
    }

    /// One verification; returns the problem and the (signature, SHA256SUMS) revisions read.
    async fn verify_signature_once(
        &self,
        sig_key: &str,
        sums_key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<(Option<String>, (Option<String>, Option<String>)), StoreError> {
        let id = RecordId::signature(provider, version, sig_key);
        let sums_now = || async {
            Ok::<_, StoreError>(self.artifacts.head(sums_key).await?.map(|m| m.revision))
        };
        let (signature, sig_meta) = match self.read_small(sig_key, gpg::MAX_KEY_BYTES).await? {
            Small::Missing => {
                self.metadata.delete(&id).await?;
                return Ok((None, (None, sums_now().await?)));
            }
            Small::Unreadable(reason) => {
                self.metadata.delete(&id).await?;
                let sig_now = self.artifacts.head(sig_key).await?.map(|m| m.revision);
                return Ok((Some(reason), (sig_now, sums_now().await?)));
            }
            Small::Bytes(bytes, meta) => (bytes, meta),
        };
        let (sums_revision, verdict) = match self
            .read_small(sums_key, release::MAX_RELEASE_FILE_BYTES)
            .await?
        {
            Small::Missing => (None, Err(format!("{sums_key} has not been published"))),
            Small::Unreadable(reason) => (None, Err(reason)),
            Small::Bytes(sums, meta) => {
                let verdict = self
                    .find_signer(&provider.namespace, &signature, &sums)
                    .await?;
                (Some(meta.revision), verdict)
            }
        };
        // A missing SHA256SUMS is only waited for, not a problem of the signature file.
        let problem = match (&sums_revision, &verdict) {
            (Some(_), Err(reason)) => Some(reason.clone()),
            _ => None,
        };
        let used = (Some(sig_meta.revision.clone()), sums_revision.clone());
        self.metadata
            .put(Record::Signature(SignatureRecord {
                provider: provider.clone(),
                version: version.clone(),
                key: sig_key.to_owned(),
                revision: sig_meta.revision,
                sums_key: sums_key.to_owned(),
                sums_revision,
                verdict,
            }))
            .await?;
        Ok((problem, used))
    }

    /// The namespace's key records, by object and revision: what a verdict depended on.
    async fn keys_fingerprint(
        &self,
        namespace: &Namespace,
    ) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self
            .metadata
            .query(&partition::keys(namespace))
            .await?
            .into_iter()
            .filter_map(|r| match r {
                Record::Key(k) => Some((k.key, k.revision)),
                _ => None,
            })
            .collect())
    }

    async fn find_signer(
        &self,
        namespace: &Namespace,
        signature: &[u8],
        sums: &[u8],
    ) -> Result<Result<SignedBy, String>, StoreError> {
        let now = SystemTime::now();
        let mut usable = 0;
        for record in self.metadata.query(&partition::keys(namespace)).await? {
            let Record::Key(KeyRecord {
                key,
                revision,
                verdict: Ok(info),
                ..
            }) = record
            else {
                continue;
            };
            if info.is_expired(now) {
                continue;
            }
            usable += 1;
            if gpg::verify_detached(&info.ascii_armor, signature, sums, now).is_ok() {
                return Ok(Ok(SignedBy {
                    key_id: info.key_id.clone(),
                    key,
                    key_revision: revision,
                    key_info: info,
                }));
            }
        }
        Ok(Err(if usable == 0 {
            format!("no usable signing key is published under keys/{namespace}/")
        } else {
            format!("the signature does not verify with any of the {usable} usable key(s) under keys/{namespace}/")
        }))
    }

    /// Indexes every key in the artifact store, reporting progress through `progress` after
    /// each key (done, total). Failures of single keys are logged and counted, not fatal.
    /// Keys go first, so releases verify on the first pass.
    pub async fn reindex_all(
        &self,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<ReindexSummary, StoreError> {
        let mut keys = self.artifacts.list().await?;
        keys.sort_by_key(|k| !k.starts_with("keys/"));
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

/// SHA-256 (hex) of everything a reader yields, in fixed-size chunks.
async fn sha256_of(
    mut reader: std::pin::Pin<Box<dyn tokio::io::AsyncRead + Send>>,
) -> std::io::Result<String> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = reader.read(&mut buffer).await?;
        if n == 0 {
            return Ok(hex::encode(hasher.finalize()));
        }
        hasher.update(&buffer[..n]);
    }
}

/// Counts from a full reindex.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReindexSummary {
    pub published: usize,
    pub rejected: usize,
    pub failed: usize,
}
