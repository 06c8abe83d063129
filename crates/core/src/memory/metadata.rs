//! The local shape's index: records and documents in memory, with a count of the writes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use async_trait::async_trait;

use super::poisoned;
use crate::store::{
    Document, Expected, MetadataReader, MetadataStore, Record, RecordId, StoreError,
};

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
    /// An empty index, at generation 0.
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

#[async_trait]
impl MetadataReader for MemoryMetadataStore {
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

    async fn get_document(&self, id: &RecordId) -> Result<Option<Document>, StoreError> {
        let documents = self.documents.read().map_err(|_| poisoned())?;
        Ok(documents.get(id).cloned())
    }

    fn generation(&self) -> Option<u64> {
        Some(MemoryMetadataStore::generation(self))
    }
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

    async fn scan(&self) -> Result<Vec<Record>, StoreError> {
        let partitions = self.partitions.read().map_err(|_| poisoned())?;
        Ok(partitions
            .values()
            .flat_map(|records| records.values().cloned())
            .collect())
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
        // Ids order by partition first: the partition's documents are one range.
        let first = RecordId {
            partition: partition.to_owned(),
            sort: String::new(),
        };
        Ok(documents
            .range(first..)
            .map(|(id, _)| id)
            .take_while(|id| id.partition == partition)
            .cloned()
            .collect())
    }

    async fn document_revision(&self, id: &RecordId) -> Result<Option<String>, StoreError> {
        let documents = self.documents.read().map_err(|_| poisoned())?;
        Ok(documents.get(id).map(|d| d.revision.clone()))
    }
}
