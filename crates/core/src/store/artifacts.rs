//! The artifact port: where published files live (the S3 bucket or the data directory), as
//! the indexer reads them and the registry streams them when it serves its own downloads.
//! How a file reaches the client is not the store's business: see [`crate::downloads`].

use std::fmt;
use std::pin::Pin;

use async_trait::async_trait;
use tokio::io::AsyncRead;

use super::error::StoreError;

/// What a store knows of an object without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    /// The object's length in bytes.
    pub size: u64,
    /// Changes whenever the object's content may have changed: an S3 version id or ETag, or a
    /// file's modification time and size.
    pub revision: String,
}

/// An object opened for reading.
pub struct ObjectBody {
    /// The state of the object as opened: what `reader` yields the bytes of.
    pub meta: ObjectMeta,
    /// The object's bytes.
    pub reader: Pin<Box<dyn AsyncRead + Send>>,
    /// The object's own local file, when the store keeps it in one: checks that seek read
    /// it in place instead of spooling a copy.
    file: Option<std::fs::File>,
}

impl ObjectBody {
    /// An object read as a stream.
    pub fn new(meta: ObjectMeta, reader: impl AsyncRead + Send + 'static) -> Self {
        Self {
            meta,
            reader: Box::pin(reader),
            file: None,
        }
    }

    /// An object kept in a local file: streamed up to `meta.size` (the length announced is
    /// the length sent, even if the file grows meanwhile), or read in place through
    /// [`ObjectBody::into_file`].
    pub fn from_file(meta: ObjectMeta, file: std::fs::File) -> std::io::Result<Self> {
        use tokio::io::AsyncReadExt;
        let reader = tokio::fs::File::from_std(file.try_clone()?).take(meta.size);
        Ok(Self {
            meta,
            reader: Box::pin(reader),
            file: Some(file),
        })
    }

    /// The object's local file, unread, when the store keeps it in one.
    pub fn into_file(self) -> Result<(std::fs::File, ObjectMeta), Self> {
        match self.file {
            Some(file) => Ok((file, self.meta)),
            None => Err(self),
        }
    }
}

impl fmt::Debug for ObjectBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectBody")
            .field("meta", &self.meta)
            .field("local", &self.file.is_some())
            .finish_non_exhaustive()
    }
}

/// Where published files live. Every adapter answers every method for itself: the contract
/// they all keep is `store::contract` (feature `test-support`).
#[async_trait]
pub trait ArtifactStore: Send + Sync {
    /// The object's current state, or `None` if there is no such object.
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError>;

    /// Every key in the store, for a full (re)index.
    async fn list(&self) -> Result<Vec<String>, StoreError>;

    /// Opens an object for streaming, or `None` if there is no such object.
    async fn open(&self, key: &str) -> Result<Option<ObjectBody>, StoreError>;

    /// Opens `key` as it was at `revision`: the object itself while it is still at that
    /// revision, else the bytes [`ArtifactStore::keep`] kept, if any. What download URLs
    /// and re-verification read, so a published version keeps its bytes whatever is uploaded
    /// over it later.
    async fn open_revision(
        &self,
        key: &str,
        revision: &str,
    ) -> Result<Option<ObjectBody>, StoreError>;

    /// Keeps the bytes of `key` at `revision` (whose SHA-256 is `sha256`) readable through
    /// [`ArtifactStore::open_revision`] for good, whatever is later uploaded under `key`:
    /// a versioned bucket keeps object versions anyway, the data directory copies the file
    /// into its state folder. Idempotent.
    async fn keep(&self, key: &str, revision: &str, sha256: &str) -> Result<Kept, StoreError>;

    /// Why something that exists at `key` is never read (a symbolic link or a FIFO in the
    /// data directory); `None` when nothing there is refused (always, in a bucket). Such a
    /// key is absent for [`ArtifactStore::head`] and [`ArtifactStore::open`].
    async fn refusal(&self, key: &str) -> Result<Option<String>, StoreError>;
}

/// What [`ArtifactStore::keep`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// The bytes stay readable at that revision.
    Yes,
    /// The store cannot keep them, and why (an S3 bucket without versioning): a later
    /// upload under the same key can only be refused, not undone.
    No(String),
    /// The object is no longer at that revision, or its bytes are not those of `sha256`:
    /// it changed meanwhile, and its next event settles it.
    Changed,
}
