//! In-memory stores. The metadata store is the local shape's index (rebuilt from the data
//! directory at start); the artifact store is a fake for unit tests of the core and the API.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use async_trait::async_trait;

use crate::signing::UrlSigner;
use crate::store::{
    ArtifactStore, Document, Expected, Kept, MetadataStore, ObjectBody, ObjectMeta, Origin, Record,
    RecordId, StoreError,
};
use crate::tokens::{TokenRecord, TokenStore};

/// Records by partition, then sort key.
#[derive(Debug, Default)]
pub struct MemoryMetadataStore {
    partitions: RwLock<BTreeMap<String, BTreeMap<String, Record>>>,
    documents: RwLock<BTreeMap<RecordId, Document>>,
    /// Counts the writes: whoever keeps something derived from the whole store compares
    /// this instead of the records.
    generation: AtomicU64,
}

impl MemoryMetadataStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Changes whenever a record is written that differs from the one it replaces, or one
    /// is deleted (and only then).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Stores a record only if none has its id (what `put_new` does, for callers without a
    /// runtime); `false` when one was there.
    pub fn insert_new(&self, record: Record) -> Result<bool, StoreError> {
        let RecordId { partition, sort } = record.id();
        let mut partitions = self.partitions.write().map_err(|_| poisoned())?;
        let records = partitions.entry(partition).or_default();
        if records.contains_key(&sort) {
            return Ok(false);
        }
        records.insert(sort, record);
        self.changed();
        Ok(true)
    }

    /// Stores a record, replacing the one with the same id (what `put` does, for callers
    /// without a runtime).
    pub fn insert(&self, record: Record) -> Result<(), StoreError> {
        let RecordId { partition, sort } = record.id();
        let mut partitions = self.partitions.write().map_err(|_| poisoned())?;
        let records = partitions.entry(partition).or_default();
        // Writing what is there already (a replayed event) changes nothing.
        if records.get(&sort) != Some(&record) {
            records.insert(sort, record);
            self.changed();
        }
        Ok(())
    }
}

fn poisoned() -> StoreError {
    StoreError::new("in-memory index is unusable after a panic in another thread")
}

#[async_trait]
impl MetadataStore for MemoryMetadataStore {
    async fn put(&self, record: Record) -> Result<(), StoreError> {
        self.insert(record)
    }

    async fn put_new(&self, record: Record) -> Result<bool, StoreError> {
        self.insert_new(record)
    }

    async fn delete(&self, id: &RecordId) -> Result<(), StoreError> {
        let mut partitions = self.partitions.write().map_err(|_| poisoned())?;
        if let Some(records) = partitions.get_mut(&id.partition) {
            if records.remove(&id.sort).is_some() {
                self.changed();
            }
            if records.is_empty() {
                partitions.remove(&id.partition);
            }
        }
        Ok(())
    }

    async fn get(&self, id: &RecordId) -> Result<Option<Record>, StoreError> {
        let partitions = self.partitions.read().map_err(|_| poisoned())?;
        Ok(partitions
            .get(&id.partition)
            .and_then(|records| records.get(&id.sort))
            .cloned())
    }

    async fn query(&self, partition: &str) -> Result<Vec<Record>, StoreError> {
        let partitions = self.partitions.read().map_err(|_| poisoned())?;
        Ok(partitions
            .get(partition)
            .map(|records| records.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn query_prefix(&self, partition: &str, prefix: &str) -> Result<Vec<Record>, StoreError> {
        let partitions = self.partitions.read().map_err(|_| poisoned())?;
        Ok(partitions
            .get(partition)
            .map(|records| {
                records
                    .range(prefix.to_owned()..)
                    .take_while(|(sort, _)| sort.starts_with(prefix))
                    .map(|(_, record)| record.clone())
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn scan(&self) -> Result<Vec<Record>, StoreError> {
        let partitions = self.partitions.read().map_err(|_| poisoned())?;
        Ok(partitions
            .values()
            .flat_map(|records| records.values().cloned())
            .collect())
    }

    async fn get_document(&self, id: &RecordId) -> Result<Option<Document>, StoreError> {
        let documents = self.documents.read().map_err(|_| poisoned())?;
        Ok(documents.get(id).cloned())
    }

    async fn put_document(
        &self,
        id: &RecordId,
        body: Option<Vec<u8>>,
        expected: Expected<'_>,
    ) -> Result<bool, StoreError> {
        let mut documents = self.documents.write().map_err(|_| poisoned())?;
        let current = documents.get(id).map(|d| d.revision.as_str());
        let matches = match expected {
            Expected::Anything => true,
            Expected::Nothing => current.is_none(),
            Expected::Revision(revision) => current == Some(revision),
        };
        if !matches {
            return Ok(false);
        }
        match body {
            Some(body) => {
                let unchanged = documents.get(id).is_some_and(|d| d.body == body);
                documents.insert(
                    id.clone(),
                    Document {
                        body,
                        revision: Document::new_revision(),
                    },
                );
                if !unchanged {
                    self.changed();
                }
            }
            None => {
                if documents.remove(id).is_some() {
                    self.changed();
                }
            }
        }
        Ok(true)
    }

    async fn document_ids(&self) -> Result<Vec<RecordId>, StoreError> {
        let documents = self.documents.read().map_err(|_| poisoned())?;
        Ok(documents.keys().cloned().collect())
    }

    async fn document_ids_in(&self, partition: &str) -> Result<Vec<RecordId>, StoreError> {
        let documents = self.documents.read().map_err(|_| poisoned())?;
        Ok(documents
            .keys()
            .filter(|id| id.partition == partition)
            .cloned()
            .collect())
    }

    async fn document_revision(&self, id: &RecordId) -> Result<Option<String>, StoreError> {
        let documents = self.documents.read().map_err(|_| poisoned())?;
        Ok(documents.get(id).map(|d| d.revision.clone()))
    }

    fn generation(&self) -> Option<u64> {
        Some(MemoryMetadataStore::generation(self))
    }
}

/// Tokens held in memory, for tests.
#[derive(Debug, Default)]
pub struct MemoryTokenStore(RwLock<BTreeMap<String, TokenRecord>>);

#[async_trait]
impl TokenStore for MemoryTokenStore {
    async fn get(&self, id: &str) -> Result<Option<TokenRecord>, StoreError> {
        Ok(self.0.read().map_err(|_| poisoned())?.get(id).cloned())
    }

    async fn put(&self, record: TokenRecord) -> Result<(), StoreError> {
        let mut tokens = self.0.write().map_err(|_| poisoned())?;
        tokens.insert(record.id.clone(), record);
        Ok(())
    }

    async fn list(&self) -> Result<Vec<TokenRecord>, StoreError> {
        Ok(self
            .0
            .read()
            .map_err(|_| poisoned())?
            .values()
            .cloned()
            .collect())
    }

    async fn record_use(&self, id: &str, at: SystemTime) -> Result<(), StoreError> {
        let mut tokens = self.0.write().map_err(|_| poisoned())?;
        if let Some(record) = tokens.get_mut(id) {
            record.last_used_at = Some(crate::tokens::unix(at));
        }
        Ok(())
    }
}

/// An object's content, shared with readers.
type Content = Arc<Vec<u8>>;

/// An object's revision number and content.
type StoredObject = (u64, Content);

/// Objects held in memory, with download URLs signed like the local shape's. Every revision
/// ever written stays readable, as in a versioned bucket.
#[derive(Debug)]
pub struct MemoryArtifactStore {
    objects: RwLock<BTreeMap<String, StoredObject>>,
    /// Every revision written, by key and revision.
    history: RwLock<BTreeMap<(String, String), Content>>,
    signer: Arc<UrlSigner>,
}

impl MemoryArtifactStore {
    pub fn new(signer: Arc<UrlSigner>) -> Self {
        Self {
            objects: RwLock::default(),
            history: RwLock::default(),
            signer,
        }
    }

    /// Stores (or replaces) an object; each write gets a new revision.
    pub fn put(&self, key: &str, content: impl Into<Vec<u8>>) {
        let mut objects = self.objects.write().expect("not poisoned");
        // Revisions are never reused, not even after a delete, as with S3 version ids.
        let mut history = self.history.write().expect("not poisoned");
        let revision = history.len() as u64 + 1;
        let content = Arc::new(content.into());
        history.insert((key.to_owned(), revision.to_string()), Arc::clone(&content));
        objects.insert(key.to_owned(), (revision, content));
    }

    pub fn delete(&self, key: &str) {
        self.objects.write().expect("not poisoned").remove(key);
    }

    fn get(&self, key: &str) -> Result<Option<(ObjectMeta, Content)>, StoreError> {
        let objects = self.objects.read().map_err(|_| poisoned())?;
        Ok(objects.get(key).map(|(revision, data)| {
            let meta = ObjectMeta {
                size: data.len() as u64,
                revision: revision.to_string(),
            };
            (meta, Arc::clone(data))
        }))
    }
}

#[async_trait]
impl ArtifactStore for MemoryArtifactStore {
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        Ok(self.get(key)?.map(|(meta, _)| meta))
    }

    async fn list(&self) -> Result<Vec<String>, StoreError> {
        let objects = self.objects.read().map_err(|_| poisoned())?;
        Ok(objects.keys().cloned().collect())
    }

    async fn open(&self, key: &str) -> Result<Option<ObjectBody>, StoreError> {
        Ok(self.get(key)?.map(|(meta, data)| ObjectBody {
            meta,
            reader: Box::pin(std::io::Cursor::new(data.as_ref().clone())),
        }))
    }

    async fn download_url(
        &self,
        key: &str,
        revision: Option<&str>,
        origin: &Origin,
    ) -> Result<String, StoreError> {
        Ok(self
            .signer
            .url_for_revision(origin, key, revision, SystemTime::now()))
    }

    async fn open_revision(
        &self,
        key: &str,
        revision: &str,
    ) -> Result<Option<ObjectBody>, StoreError> {
        let history = self.history.read().map_err(|_| poisoned())?;
        let found = history.get(&(key.to_owned(), revision.to_owned()));
        Ok(found.map(|data| ObjectBody {
            meta: ObjectMeta {
                size: data.len() as u64,
                revision: revision.to_owned(),
            },
            reader: Box::pin(std::io::Cursor::new(data.as_ref().clone())),
        }))
    }

    async fn keep(&self, key: &str, revision: &str, sha256: &str) -> Result<Kept, StoreError> {
        use sha2::Digest;
        let history = self.history.read().map_err(|_| poisoned())?;
        Ok(match history.get(&(key.to_owned(), revision.to_owned())) {
            Some(data) if hex::encode(sha2::Sha256::digest(data.as_slice())) == sha256 => Kept::Yes,
            _ => Kept::Changed,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::index::{IndexOutcome, Indexer};
    use crate::names::ModuleAddress;
    use crate::registry::{Registry, RegistryError};
    use crate::tokens::Access;
    use crate::version::Version;

    struct World {
        artifacts: Arc<MemoryArtifactStore>,
        indexer: Indexer,
        registry: Registry,
    }

    fn world() -> World {
        let signer = Arc::new(UrlSigner::new(vec![1; 32], Duration::from_secs(60)));
        let artifacts = Arc::new(MemoryArtifactStore::new(signer));
        let metadata = Arc::new(MemoryMetadataStore::new());
        World {
            indexer: Indexer::new(metadata.clone(), artifacts.clone()),
            registry: Registry::new(metadata, artifacts.clone()),
            artifacts,
        }
    }

    fn addr(s: &str) -> ModuleAddress {
        let p: Vec<&str> = s.split('/').collect();
        ModuleAddress::parse(p[0], p[1], p[2]).unwrap()
    }

    /// A module archive that passes the checks, in `key`'s format.
    fn module(key: &str) -> Vec<u8> {
        let (_, format) = crate::layout::ArchiveFormat::split(key).unwrap();
        crate::module_archive::archive_of(format, &[("main.tf", b"")])
    }

    async fn versions(w: &World, a: &str) -> Vec<String> {
        match w.registry.module_versions(&Access::All, &addr(a)).await {
            Ok(v) => v.modules[0]
                .versions
                .iter()
                .map(|v| v.version.to_string())
                .collect(),
            Err(RegistryError::NotFound(_)) => vec![],
            Err(e) => panic!("{e}"),
        }
    }

    #[tokio::test]
    async fn events_in_any_order_and_repeated_converge_on_the_store() {
        let w = world();
        let keys = [
            "modules/acme/network/aws/1.0.0.tar.gz",
            "modules/acme/network/aws/2.0.0-beta.1.tar.gz",
            "modules/Acme/Network/AWS/1.1.0.zip",
        ];
        // Given an event that arrives before its object (S3 delivers out of order) ...
        w.indexer.index_key(keys[0]).await.unwrap();
        assert!(versions(&w, "acme/network/aws").await.is_empty());
        // ... when the objects exist and every event is replayed twice, in reverse,
        for key in keys {
            w.artifacts.put(key, module(key));
        }
        for key in keys.iter().rev().chain(keys.iter()) {
            w.indexer.index_key(key).await.unwrap();
        }
        // then each version is served once, in semver order, whatever the key's case.
        assert_eq!(
            versions(&w, "ACME/network/aws").await,
            ["1.0.0", "1.1.0", "2.0.0-beta.1"]
        );

        // Each archive's checksum is recorded at publish.
        let v1 = Version::parse("1.0.0").unwrap();
        let archive = w
            .registry
            .module_archive(&Access::All, &addr("acme/network/aws"), &v1)
            .await
            .unwrap();
        use sha2::Digest;
        assert_eq!(
            archive.sha256,
            hex::encode(sha2::Sha256::digest(module(keys[0])))
        );

        // A stale "created" event for a deleted object unpublishes it.
        w.artifacts.delete(keys[1]);
        let outcome = w.indexer.index_key(keys[1]).await.unwrap();
        assert!(
            matches!(outcome, IndexOutcome::Unpublished(_)),
            "{outcome:?}"
        );
        assert_eq!(versions(&w, "acme/network/aws").await, ["1.0.0", "1.1.0"]);
    }

    #[tokio::test]
    async fn a_version_in_a_second_format_never_replaces_the_first_served() {
        let w = world();
        let origin = Origin::https("reg.example:443").unwrap();
        let v = Version::parse("1.0.0").unwrap();
        for key in ["modules/a/b/c/1.0.0.zip", "modules/a/b/c/1.0.0.tar.gz"] {
            w.artifacts.put(key, module(key));
            w.indexer.index_key(key).await.unwrap();
        }
        let url = w
            .registry
            .module_download_url(&Access::All, &addr("a/b/c"), &v, &origin)
            .await
            .unwrap();
        assert!(url.contains("/1.0.0.zip?"), "{url}");
        // Deleting the served one yanks the version: the other format does not take over.
        w.artifacts.delete("modules/a/b/c/1.0.0.zip");
        w.indexer
            .index_key("modules/a/b/c/1.0.0.zip")
            .await
            .unwrap();
        w.indexer
            .index_key("modules/a/b/c/1.0.0.tar.gz")
            .await
            .unwrap();
        let answer = w
            .registry
            .module_download_url(&Access::All, &addr("a/b/c"), &v, &origin)
            .await;
        assert!(
            matches!(answer, Err(RegistryError::NotFound(_))),
            "{answer:?}"
        );
    }

    #[tokio::test]
    async fn invalid_keys_are_rejected_and_never_served() {
        let w = world();
        w.artifacts
            .put("modules/a/b/c/latest.tar.gz", b"x".to_vec());
        let outcome = w
            .indexer
            .index_key("modules/a/b/c/latest.tar.gz")
            .await
            .unwrap();
        assert!(
            matches!(outcome, IndexOutcome::Rejected { .. }),
            "{outcome:?}"
        );
        assert!(versions(&w, "a/b/c").await.is_empty());
        let summary = w.indexer.reindex_all(|_, _| {}).await.unwrap();
        assert_eq!(summary.rejected, 1);
        assert_eq!(summary.published, 0);
    }

    #[tokio::test]
    async fn deferred_documents_are_made_once_per_module_at_the_flush() {
        let signer = Arc::new(UrlSigner::new(vec![1; 32], Duration::from_secs(60)));
        let artifacts = Arc::new(MemoryArtifactStore::new(signer));
        let metadata = Arc::new(MemoryMetadataStore::new());
        let indexer = Indexer::new(metadata.clone(), artifacts.clone()).with_deferred_documents();
        let registry = Registry::new(metadata, artifacts.clone());
        let listed = || async {
            registry
                .list_modules(
                    &Access::All,
                    &crate::registry::modules::ModuleFilter::default(),
                    crate::registry::page::Page::default(),
                    "/v1/modules",
                    &[],
                )
                .await
                .unwrap()
                .modules
                .into_iter()
                .map(|m| m.id)
                .collect::<Vec<_>>()
        };
        for key in ["modules/a/b/c/1.0.0.tgz", "modules/a/b/c/1.1.0.tgz"] {
            artifacts.put(key, module(key));
            indexer.index_key(key).await.unwrap();
        }
        // Answered and listed once the batch is flushed, made once for both versions.
        let versions = || async {
            registry
                .module_versions(&Access::All, &addr("a/b/c"))
                .await
                .map(|v| v.modules[0].versions.len())
                .unwrap_or(0)
        };
        assert_eq!(versions().await, 0);
        assert!(listed().await.is_empty());
        assert_eq!(indexer.flush_documents().await.unwrap(), 1);
        assert_eq!(versions().await, 2);
        assert_eq!(listed().await, ["a/b/c/1.1.0"]);
        assert_eq!(indexer.flush_documents().await.unwrap(), 0);
        // A deletion is listed at the next flush too.
        for key in ["modules/a/b/c/1.0.0.tgz", "modules/a/b/c/1.1.0.tgz"] {
            artifacts.delete(key);
            indexer.index_key(key).await.unwrap();
        }
        assert_eq!(listed().await, ["a/b/c/1.1.0"]);
        indexer.flush_documents().await.unwrap();
        assert!(listed().await.is_empty());
    }

    #[tokio::test]
    async fn unknown_modules_and_versions_are_not_found() {
        let w = world();
        let key = "modules/a/b/c/1.0.0.tgz";
        w.artifacts.put(key, module(key));
        w.indexer.reindex_all(|_, _| {}).await.unwrap();
        let missing = Version::parse("9.9.9").unwrap();
        let err = w
            .registry
            .module_archive(&Access::All, &addr("a/b/c"), &missing)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "module a/b/c has no version 9.9.9");
        let err = w
            .registry
            .module_versions(&Access::All, &addr("a/b/d"))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "module a/b/d is not published here");
    }
}
