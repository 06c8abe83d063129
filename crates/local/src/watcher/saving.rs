//! Saving the index as the watcher changes it ([`crate::snapshot`]): each save appends what
//! changed since the last one (the records and documents the index's change feed names,
//! the files the watcher indexed or dropped) to the journal, so its cost follows the change,
//! not the index. A new snapshot is written whole only at the first save of a start that
//! restored none, after a failed save, and when the journal has outgrown the snapshot.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use tfreg_core::store::{partition, ObjectMeta, Record};
use tfreg_core::{MetadataReader, MetadataStore, StoreError};

use crate::changes::ChangeFeed;
use crate::metadata::LocalMetadataStore;
use crate::snapshot::{Entry, JournalWriter, Snapshot};

pub(super) struct Saving {
    snapshot: Snapshot,
    metadata: Arc<LocalMetadataStore>,
    /// What changed in the index since the last save.
    feed: ChangeFeed,
    /// The journal to append to; none when the next save writes a snapshot.
    journal: Option<JournalWriter>,
    /// Files whose entry in the watcher's map changed since the last save.
    files: BTreeSet<String>,
    /// When the last save was.
    pub(super) saved_at: Instant,
}

impl Saving {
    pub(super) fn new(persistence: &super::Persistence) -> Self {
        let journal = persistence.journal.as_ref().and_then(|continuation| {
            persistence
                .snapshot
                .continue_journal(continuation)
                .inspect_err(|e| tracing::warn!(error = %e, "cannot append to the saved index's journal; saving it whole"))
                .ok()
        });
        Self {
            snapshot: persistence.snapshot.clone(),
            metadata: Arc::clone(&persistence.metadata),
            feed: persistence.metadata.changes(),
            journal,
            files: BTreeSet::new(),
            saved_at: Instant::now(),
        }
    }

    /// The watcher's entry for `key` changed.
    pub(super) fn file_changed(&mut self, key: &str) {
        self.files.insert(key.to_owned());
    }

    /// Saves what changed. `known` is what the watcher knows of each file; keys in `failed`
    /// are left out (indexed again at the next start).
    pub(super) async fn save(
        &mut self,
        known: &BTreeMap<String, ObjectMeta>,
        failed: &BTreeSet<String>,
    ) {
        self.saved_at = Instant::now();
        let changed = self.feed.take();
        let files = std::mem::take(&mut self.files);
        let result = match self.journal.take() {
            Some(journal) if !journal.wants_snapshot() => {
                self.append(journal, changed, files, known, failed).await
            }
            _ => self.save_whole(known, failed).await,
        };
        match result {
            Ok(journal) => {
                self.journal = Some(journal);
                tracing::debug!("saved the index");
            }
            // The next save writes everything, so nothing taken from the feed is lost.
            Err(e) => {
                tracing::warn!(error = %e, "could not save the index; the next start indexes what it lacks")
            }
        }
    }

    /// Appends the entries of what changed as one checkpoint.
    async fn append(
        &self,
        mut journal: JournalWriter,
        changed: crate::changes::Changed,
        files: BTreeSet<String>,
        known: &BTreeMap<String, ObjectMeta>,
        failed: &BTreeSet<String>,
    ) -> Result<JournalWriter, StoreError> {
        let mut entries = Vec::with_capacity(changed.records.len() + files.len());
        for id in changed.records {
            if id.partition == partition::PINS {
                continue; // pins have files of their own
            }
            entries.push(match self.metadata.get(&id).await? {
                Some(record) => Entry::Record(Box::new(record)),
                None => Entry::RecordGone {
                    partition: id.partition,
                    sort: id.sort,
                },
            });
        }
        for id in changed.documents {
            entries.push(match self.metadata.get_document(&id).await? {
                Some(document) => Entry::Document {
                    partition: id.partition,
                    sort: id.sort,
                    body: String::from_utf8(document.body)
                        .map_err(|e| StoreError::with_source("a document is not UTF-8 JSON", e))?,
                },
                None => Entry::DocumentGone {
                    partition: id.partition,
                    sort: id.sort,
                },
            });
        }
        for key in files {
            entries.push(match known.get(&key).filter(|_| !failed.contains(&key)) {
                Some(meta) => Entry::File {
                    key,
                    size: meta.size,
                    revision: meta.revision.clone(),
                },
                None => Entry::FileGone { key },
            });
        }
        if entries.is_empty() {
            return Ok(journal);
        }
        tokio::task::spawn_blocking(move || journal.append(&entries).map(|()| journal))
            .await
            .map_err(|e| StoreError::with_source("saving the index stopped", e))?
    }

    /// Writes a new snapshot of everything, with an empty journal.
    async fn save_whole(
        &self,
        known: &BTreeMap<String, ObjectMeta>,
        failed: &BTreeSet<String>,
    ) -> Result<JournalWriter, StoreError> {
        let records: Vec<Record> = self.metadata.scan().await?;
        let documents = self.metadata.documents().await?;
        let files: HashMap<String, ObjectMeta> = known
            .iter()
            .filter(|(k, _)| !failed.contains(*k))
            .map(|(k, m)| (k.clone(), m.clone()))
            .collect();
        let snapshot = self.snapshot.clone();
        tokio::task::spawn_blocking(move || snapshot.save(records, documents, &files))
            .await
            .map_err(|e| StoreError::with_source("saving the index stopped", e))?
    }
}
