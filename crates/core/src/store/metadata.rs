//! The metadata ports, split by who uses them: the request path reads documents and one
//! version's records ([`MetadataReader`]); the indexer writes, and a full reindex scans
//! ([`MetadataStore`]).

use async_trait::async_trait;

use super::error::StoreError;
use super::keys::RecordId;
use super::records::Record;

/// A precomputed answer as stored (see [`crate::documents`]): its bytes (JSON) and its
/// revision, which every write changes, so a writer replaces it only if nobody else did
/// since it read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The answer, as JSON.
    pub body: Vec<u8>,
    /// Changes with every write: what [`Expected::Revision`] is compared with.
    pub revision: String,
}

impl Document {
    /// A fresh revision: random, so a document deleted and written again never repeats one
    /// a writer may still expect.
    pub fn new_revision() -> String {
        use rand::RngCore;
        let mut bytes = [0u8; 16];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        hex::encode(bytes)
    }
}

/// What [`MetadataStore::put_document`] requires of the stored document before it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected<'a> {
    /// Whatever is there (or nothing).
    Anything,
    /// No document.
    Nothing,
    /// The document at this revision.
    Revision(&'a str),
}

/// What the request path reads: a document (a precomputed answer), or the records of one
/// partition, or of one version in it. Every read of a request is one of these.
#[async_trait]
pub trait MetadataReader: Send + Sync {
    /// A document, if there is one.
    async fn get_document(&self, id: &RecordId) -> Result<Option<Document>, StoreError>;

    /// One record, if present.
    async fn get(&self, id: &RecordId) -> Result<Option<Record>, StoreError>;

    /// Every record of a partition, in sort-key order.
    async fn query(&self, partition: &str) -> Result<Vec<Record>, StoreError>;

    /// The records of a partition whose sort keys start with `prefix` (one version's
    /// records: `1.2.0/`), in sort-key order: a key condition, never the whole partition.
    async fn query_prefix(&self, partition: &str, prefix: &str) -> Result<Vec<Record>, StoreError>;

    /// A number that changes whenever any record or document does, when the store can tell
    /// at no cost (an index in memory): what is derived from what was read at one
    /// generation holds while it lasts. `None`: the store cannot tell (a shared table).
    fn generation(&self) -> Option<u64>;
}

/// Where the indexer records what is published, on top of what requests read. Every
/// operation is idempotent.
#[async_trait]
pub trait MetadataStore: MetadataReader {
    /// Stores a record, replacing the one with the same id.
    async fn put(&self, record: Record) -> Result<(), StoreError>;

    /// Stores a record only if none has its id; `false` when one was there. Atomic: of two
    /// writers racing for a pin, exactly one wins.
    async fn put_new(&self, record: Record) -> Result<bool, StoreError>;

    /// Deletes a record if present.
    async fn delete(&self, id: &RecordId) -> Result<(), StoreError>;

    /// Writes a document (`None`: deletes it) if the stored one is as `expected`, with a new
    /// revision; `false` (and nothing written) when it is not.
    async fn put_document(
        &self,
        id: &RecordId,
        body: Option<Vec<u8>>,
        expected: Expected<'_>,
    ) -> Result<bool, StoreError>;

    /// A document's revision alone, when the document itself cannot be read (so the
    /// indexer can replace a corrupt one).
    async fn document_revision(&self, id: &RecordId) -> Result<Option<String>, StoreError>;

    /// The id of every document of one partition (a provider's release documents): keys
    /// only, for the indexer.
    async fn document_ids_in(&self, partition: &str) -> Result<Vec<RecordId>, StoreError>;

    /// The id of every document, for a full reindex (which also forgets documents nothing
    /// is published for). Expensive: never on the request path.
    async fn document_ids(&self) -> Result<Vec<RecordId>, StoreError>;

    /// Every record in the store (documents are not records), for a full reindex (which
    /// must also forget what is no longer published). Expensive: never on the request path.
    async fn scan(&self) -> Result<Vec<Record>, StoreError>;
}
