//! The local shape's index: in memory, rebuilt from the data directory at every start,
//! except for pins ([`PinRecord`]), which remember what each published version's bytes are
//! and so must outlive the process. They are kept as one small JSON file each under
//! `DATA/.tfreg/pins/`, written atomically.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use tfreg_core::memory::MemoryMetadataStore;
use tfreg_core::store::{partition, Document, Expected, PinRecord, Record, RecordId};
use tfreg_core::{MetadataReader, MetadataStore, StoreError};

use crate::changes::{ChangeFeed, ChangeFeeds};
use crate::commits::Commits;
use crate::fs_store::STATE_DIR_NAME;

/// The folder, in the state folder, that holds the pins.
pub const PINS_DIR_NAME: &str = "pins";

/// A pin file is a few hundred bytes; anything larger is not one of ours.
const MAX_PIN_FILE: u64 = 64 * 1024;

/// The in-memory index, with pins persisted in the state folder.
pub struct LocalMetadataStore {
    memory: MemoryMetadataStore,
    dir: PathBuf,
    /// False for readers that must not change the state (`tfreg status`): pins are read at
    /// open, and new ones live in memory only.
    persist: bool,
    /// Where new pin files wait to be made durable a batch at a time; without it, each is
    /// synced as it is written.
    commits: Option<Arc<Commits>>,
    /// Who is told of each change ([`LocalMetadataStore::changes`]).
    feeds: ChangeFeeds,
}

impl LocalMetadataStore {
    /// New pins are staged in `commits` rather than synced one by one: whoever serves what
    /// this index holds commits them first ([`Commits`]).
    pub fn with_commits(mut self, commits: Arc<Commits>) -> Self {
        self.commits = Some(commits);
        self
    }

    /// Writes a pin's file, staged or synced.
    async fn write_pin(&self, pin: &PinRecord) -> Result<(), StoreError> {
        let (dir, pin, commits) = (self.dir.clone(), pin.clone(), self.commits.clone());
        tokio::task::spawn_blocking(move || write_pin(&dir, &pin, commits.as_deref()))
            .await
            .map_err(|e| StoreError::with_source("writing a pin stopped", e))?
    }

    /// A feed of the ids written or deleted from now on, for whoever keeps something
    /// derived from the index and redoes only what changed.
    pub fn changes(&self) -> ChangeFeed {
        self.feeds.subscribe()
    }

    /// Changes whenever the index does ([`MemoryMetadataStore::generation`]).
    pub fn generation(&self) -> u64 {
        self.memory.generation()
    }

    /// Puts back the records of a saved index ([`crate::snapshot`]); pins are not among
    /// them (their own files, loaded at open, are what counts).
    pub async fn restore(&self, records: Vec<Record>) -> Result<(), StoreError> {
        for record in records {
            if !matches!(record, Record::Pin(_)) {
                self.memory.put(record).await?;
            }
        }
        Ok(())
    }

    /// Puts back the documents of a saved index, made from the records it restored.
    pub async fn restore_documents(
        &self,
        documents: Vec<(RecordId, Vec<u8>)>,
    ) -> Result<(), StoreError> {
        for (id, body) in documents {
            self.memory
                .put_document(&id, Some(body), Expected::Anything)
                .await?;
        }
        Ok(())
    }

    /// Every document with its body, for saving the index.
    pub async fn documents(&self) -> Result<Vec<(RecordId, Vec<u8>)>, StoreError> {
        let mut documents = Vec::new();
        for id in self.memory.document_ids().await? {
            if let Some(document) = self.memory.get_document(&id).await? {
                documents.push((id, document.body));
            }
        }
        Ok(documents)
    }

    /// Opens the index of the data directory `data`, loading its pins. A pin file that
    /// cannot be read stops the start with its path: without it, the registry could serve
    /// different bytes for a published version.
    pub fn open(data: &Path, persist: bool) -> Result<Self, StoreError> {
        let dir = data.join(STATE_DIR_NAME).join(PINS_DIR_NAME);
        let memory = MemoryMetadataStore::new();
        let store = Self {
            memory,
            dir,
            persist,
            commits: None,
            feeds: ChangeFeeds::default(),
        };
        for pin in store.load()? {
            store.memory.insert(Record::Pin(pin))?;
        }
        Ok(store)
    }

    fn load(&self) -> Result<Vec<PinRecord>, StoreError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(StoreError::with_source(
                    format!("cannot read {}", self.dir.display()),
                    e,
                ))
            }
        };
        let mut pins = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| {
                StoreError::with_source(format!("cannot read {}", self.dir.display()), e)
            })?;
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue; // a temporary file of an interrupted write
            }
            pins.push(read_pin(&path)?);
        }
        Ok(pins)
    }
}

/// The file of a slot's pin.
fn path_of(dir: &Path, slot: &str) -> PathBuf {
    use sha2::Digest;
    let name = hex::encode(sha2::Sha256::digest(slot.as_bytes()));
    dir.join(format!("{name}.json"))
}

/// Writes a pin under a temporary name, syncs it, then renames it into place; or, with
/// group commits, stages it for the batch's commit to sync and rename. Blocking.
fn write_pin(dir: &Path, pin: &PinRecord, commits: Option<&Commits>) -> Result<(), StoreError> {
    let path = path_of(dir, &RecordId::pin(&pin.slot).sort);
    let failed =
        |e: std::io::Error| StoreError::with_source(format!("cannot write {}", path.display()), e);
    std::fs::create_dir_all(dir).map_err(failed)?;
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
    let json = serde_json::to_vec_pretty(pin)
        .map_err(|e| StoreError::with_source("cannot encode a pin", e))?;
    file.write_all(&json).map_err(failed)?;
    if let Some(commits) = commits {
        commits.stage(file.into_temp_path(), path);
        return Ok(());
    }
    file.as_file().sync_all().map_err(failed)?;
    file.persist(&path).map_err(|e| failed(e.error))?;
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

fn read_pin(path: &Path) -> Result<PinRecord, StoreError> {
    let corrupt = |reason: String| {
        StoreError::new(format!(
            "{} is not a readable pin ({reason}); restore it from a backup: it records the bytes a published version was served with",
            path.display()
        ))
    };
    let file = std::fs::File::open(path).map_err(|e| corrupt(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_PIN_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| corrupt(e.to_string()))?;
    if bytes.len() as u64 > MAX_PIN_FILE {
        return Err(corrupt("too large".into()));
    }
    serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))
}

#[async_trait]
impl MetadataReader for LocalMetadataStore {
    async fn get(&self, id: &RecordId) -> Result<Option<Record>, StoreError> {
        self.memory.get(id).await
    }

    async fn query(&self, partition: &str) -> Result<Vec<Record>, StoreError> {
        self.memory.query(partition).await
    }

    async fn query_prefix(&self, partition: &str, prefix: &str) -> Result<Vec<Record>, StoreError> {
        self.memory.query_prefix(partition, prefix).await
    }

    /// Documents live in memory only: they are rebuilt from the records at every start.
    async fn get_document(&self, id: &RecordId) -> Result<Option<Document>, StoreError> {
        self.memory.get_document(id).await
    }

    fn generation(&self) -> Option<u64> {
        Some(self.memory.generation())
    }
}

#[async_trait]
impl MetadataStore for LocalMetadataStore {
    async fn put(&self, record: Record) -> Result<(), StoreError> {
        if let (Record::Pin(pin), true) = (&record, self.persist) {
            self.write_pin(pin).await?;
        }
        let id = record.id();
        self.memory.put(record).await?;
        self.feeds.record(&id);
        Ok(())
    }

    /// The memory store decides who wins; only the winner writes the file.
    async fn put_new(&self, record: Record) -> Result<bool, StoreError> {
        if !self.memory.insert_new(record.clone())? {
            return Ok(false);
        }
        if let (Record::Pin(pin), true) = (&record, self.persist) {
            if let Err(e) = self.write_pin(pin).await {
                self.memory.delete(&record.id()).await?;
                return Err(e);
            }
        }
        self.feeds.record(&record.id());
        Ok(true)
    }

    async fn delete(&self, id: &RecordId) -> Result<(), StoreError> {
        if id.partition == partition::PINS && self.persist {
            let path = path_of(&self.dir, &id.sort);
            if let Some(commits) = &self.commits {
                commits.unstage(&path);
            }
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(StoreError::with_source(
                        format!("cannot delete {}", path.display()),
                        e,
                    ))
                }
            }
        }
        self.memory.delete(id).await?;
        self.feeds.record(id);
        Ok(())
    }

    async fn scan(&self) -> Result<Vec<Record>, StoreError> {
        self.memory.scan().await
    }

    async fn put_document(
        &self,
        id: &RecordId,
        body: Option<Vec<u8>>,
        expected: Expected<'_>,
    ) -> Result<bool, StoreError> {
        let written = self.memory.put_document(id, body, expected).await?;
        if written {
            self.feeds.document(id);
        }
        Ok(written)
    }

    async fn document_ids(&self) -> Result<Vec<RecordId>, StoreError> {
        self.memory.document_ids().await
    }

    async fn document_ids_in(&self, partition: &str) -> Result<Vec<RecordId>, StoreError> {
        self.memory.document_ids_in(partition).await
    }

    async fn document_revision(&self, id: &RecordId) -> Result<Option<String>, StoreError> {
        self.memory.document_revision(id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(slot: &str, sha: &str) -> PinRecord {
        PinRecord {
            slot: slot.into(),
            key: format!("{slot}.tar.gz"),
            sha256: sha.into(),
            size: 3,
            revision: "r1".into(),
            kept: true,
            published_at: 1,
            h1: None,
        }
    }

    #[tokio::test]
    async fn the_data_directory_index_keeps_the_storage_contract() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalMetadataStore::open(dir.path(), true).unwrap();
        tfreg_core::store::contract::metadata_store(&store).await;
    }

    #[tokio::test]
    async fn pins_outlive_the_process_and_other_records_do_not() {
        let data = tempfile::tempdir().unwrap();
        let store = LocalMetadataStore::open(data.path(), true).unwrap();
        store
            .put(Record::Pin(pin("module/a/b/c/1.0.0", "aa")))
            .await
            .unwrap();
        store
            .put(Record::Pin(pin("module/a/b/c/2.0.0", "bb")))
            .await
            .unwrap();
        store
            .put(Record::Problem(tfreg_core::store::ProblemRecord {
                key: "k".into(),
                problem: "p".into(),
            }))
            .await
            .unwrap();
        store
            .delete(&RecordId::pin("module/a/b/c/2.0.0"))
            .await
            .unwrap();

        let reopened = LocalMetadataStore::open(data.path(), true).unwrap();
        let records = reopened.scan().await.unwrap();
        assert_eq!(records, vec![Record::Pin(pin("module/a/b/c/1.0.0", "aa"))]);
    }

    #[tokio::test]
    async fn with_group_commits_a_pin_lasts_once_committed_and_an_uncommitted_one_leaves_no_trace()
    {
        let data = tempfile::tempdir().unwrap();
        let commits = Arc::new(Commits::new(data.path().to_path_buf()));
        let store = LocalMetadataStore::open(data.path(), true)
            .unwrap()
            .with_commits(commits.clone());
        let (a, b, c) = (
            pin("module/a/b/c/1.0.0", "aa"),
            pin("module/a/b/c/2.0.0", "bb"),
            pin("module/a/b/c/3.0.0", "cc"),
        );
        assert!(store.put_new(Record::Pin(a.clone())).await.unwrap());
        assert!(!store.put_new(Record::Pin(a.clone())).await.unwrap());
        store.put(Record::Pin(b.clone())).await.unwrap();
        store
            .delete(&RecordId::pin("module/a/b/c/2.0.0"))
            .await
            .unwrap();
        // Staged, not committed: what a crash now would leave is a start without them,
        // never a pin file that cannot be read (nothing was served from them yet).
        assert_eq!(commits.len(), 1);
        assert!(LocalMetadataStore::open(data.path(), true)
            .unwrap()
            .scan()
            .await
            .unwrap()
            .is_empty());

        assert_eq!(commits.commit().unwrap().files, 1);
        store.put(Record::Pin(c.clone())).await.unwrap();
        let reopened = LocalMetadataStore::open(data.path(), true).unwrap();
        assert_eq!(reopened.scan().await.unwrap(), vec![Record::Pin(a.clone())]);
        commits.commit().unwrap();
        let reopened = LocalMetadataStore::open(data.path(), true).unwrap();
        assert_eq!(
            reopened.scan().await.unwrap(),
            vec![Record::Pin(a), Record::Pin(c)]
        );
    }

    #[tokio::test]
    async fn a_reader_that_does_not_persist_writes_no_pins() {
        let data = tempfile::tempdir().unwrap();
        let store = LocalMetadataStore::open(data.path(), false).unwrap();
        store
            .put(Record::Pin(pin("module/a/b/c/1.0.0", "aa")))
            .await
            .unwrap();
        assert_eq!(store.scan().await.unwrap().len(), 1);
        let reopened = LocalMetadataStore::open(data.path(), true).unwrap();
        assert!(reopened.scan().await.unwrap().is_empty());
    }

    #[test]
    fn a_corrupt_pin_stops_the_start_and_names_the_file() {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join(STATE_DIR_NAME).join(PINS_DIR_NAME);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("x.json"), b"{not json").unwrap();
        let error = LocalMetadataStore::open(data.path(), true).err().unwrap();
        assert!(error.to_string().contains("x.json"), "{error}");
    }
}
