//! Objects held in memory, for tests: every revision ever written stays readable, as in a
//! versioned bucket.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;

use super::poisoned;
use crate::store::{ArtifactStore, Kept, ObjectBody, ObjectMeta, StoreError};

/// An object's content, shared with readers.
type Content = Arc<Vec<u8>>;

/// An object's revision number and content.
type StoredObject = (u64, Content);

/// Objects held in memory. Every revision ever written stays readable, as in a versioned
/// bucket.
#[derive(Debug, Default)]
pub struct MemoryArtifactStore {
    objects: RwLock<BTreeMap<String, StoredObject>>,
    /// Every revision written, by key and revision.
    history: RwLock<BTreeMap<(String, String), Content>>,
    /// How many objects were opened, at any revision.
    reads: AtomicUsize,
}

impl MemoryArtifactStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
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

    /// How many objects were opened so far, at any revision: what tests of "read once"
    /// count.
    pub fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    /// Removes an object, as an S3 delete does: its past revisions stay readable.
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
        self.reads.fetch_add(1, Ordering::SeqCst);
        Ok(self
            .get(key)?
            .map(|(meta, data)| ObjectBody::new(meta, std::io::Cursor::new(data.as_ref().clone()))))
    }

    async fn open_revision(
        &self,
        key: &str,
        revision: &str,
    ) -> Result<Option<ObjectBody>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let history = self.history.read().map_err(|_| poisoned())?;
        let found = history.get(&(key.to_owned(), revision.to_owned()));
        Ok(found.map(|data| {
            let meta = ObjectMeta {
                size: data.len() as u64,
                revision: revision.to_owned(),
            };
            ObjectBody::new(meta, std::io::Cursor::new(data.as_ref().clone()))
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

    /// Nothing in memory is ever unreadable.
    async fn refusal(&self, _key: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
}

#[async_trait]
impl crate::store::contract::Uploads for MemoryArtifactStore {
    async fn upload(&self, key: &str, bytes: &[u8]) {
        self.put(key, bytes);
    }

    async fn remove(&self, key: &str) {
        self.delete(key);
    }
}

/// URLs of a bucket that is not there, like S3's presigned ones in shape: for tests of the
/// presigned and redirect modes.
#[async_trait]
impl crate::downloads::Presigner for MemoryArtifactStore {
    async fn presign(
        &self,
        key: &str,
        revision: Option<&str>,
        head: bool,
        start: std::time::SystemTime,
    ) -> Result<String, StoreError> {
        let method = if head { "HEAD" } else { "GET" };
        let revision = revision.unwrap_or_default();
        let start = crate::tokens::unix(start);
        Ok(format!(
            "https://memory.invalid/{key}?method={method}&revision={revision}&start={start}"
        ))
    }

    fn lifetime(&self) -> std::time::Duration {
        std::time::Duration::from_secs(300)
    }
}

#[async_trait]
impl crate::store::ArtifactWriter for MemoryArtifactStore {
    async fn put_file(&self, key: &str, path: &std::path::Path) -> Result<(), StoreError> {
        let bytes = std::fs::read(path)
            .map_err(|e| StoreError::with_source(format!("cannot read {}", path.display()), e))?;
        self.put(key, bytes);
        Ok(())
    }

    async fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        self.put(key, bytes);
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        MemoryArtifactStore::delete(self, key);
        Ok(())
    }
}
