//! The storage ports. The core reads and writes only through these traits; the local data
//! directory, S3 and DynamoDB are adapters behind them.

use std::error::Error as StdError;
use std::fmt;
use std::pin::Pin;

use async_trait::async_trait;
use tokio::io::AsyncRead;

use crate::layout::ArchiveFormat;
use crate::names::ModuleAddress;
use crate::version::Version;

/// A storage failure: the backend could not answer. Never a "not found", which is `Ok(None)`.
#[derive(Debug, thiserror::Error)]
#[error("{context}")]
pub struct StoreError {
    context: String,
    #[source]
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl StoreError {
    pub fn new(context: impl Into<String>) -> Self {
        Self {
            context: context.into(),
            source: None,
        }
    }

    pub fn with_source(
        context: impl Into<String>,
        source: impl Into<Box<dyn StdError + Send + Sync>>,
    ) -> Self {
        Self {
            context: context.into(),
            source: Some(source.into()),
        }
    }
}

/// What a store knows of an object without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    pub size: u64,
    /// Changes whenever the object's content may have changed: an S3 version id or ETag, or a
    /// file's modification time and size.
    pub revision: String,
}

/// An object opened for reading.
pub struct ObjectBody {
    pub meta: ObjectMeta,
    pub reader: Pin<Box<dyn AsyncRead + Send>>,
}

impl fmt::Debug for ObjectBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectBody")
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

/// `https://host[:port]`: where the client reached this registry. Stores that serve their own
/// downloads build absolute URLs from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin(String);

impl Origin {
    /// Builds the HTTPS origin for an authority (`host[:port]`). Refuses anything that is not a
    /// plain authority, so a forged `Host` header cannot inject a path or credentials into URLs.
    pub fn https(authority: &str) -> Option<Self> {
        let ok = !authority.is_empty()
            && authority.len() <= 255
            && authority
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
        ok.then(|| Self(format!("https://{}", authority.to_ascii_lowercase())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where published files live: the S3 bucket or the data directory.
#[async_trait]
pub trait ArtifactStore: Send + Sync {
    /// The object's current state, or `None` if there is no such object.
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError>;

    /// Every key in the store, for a full (re)index.
    async fn list(&self) -> Result<Vec<String>, StoreError>;

    /// Opens an object for streaming, or `None` if there is no such object.
    async fn open(&self, key: &str) -> Result<Option<ObjectBody>, StoreError>;

    /// An absolute `https://` URL from which a client without credentials can fetch `key` for a
    /// short time, and whose path ends with the key's own suffix.
    async fn download_url(&self, key: &str, origin: &Origin) -> Result<String, StoreError>;
}

/// One published module archive, as the indexer records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleArchive {
    pub address: ModuleAddress,
    pub version: Version,
    /// The object key as published (its case preserved).
    pub key: String,
    pub format: ArchiveFormat,
    pub size: u64,
}

/// Where the indexer records what is published; what the API reads on the request path.
#[async_trait]
pub trait MetadataStore: Send + Sync {
    /// Records an archive; replaces the record of the same key. Idempotent.
    async fn put_module_archive(&self, archive: ModuleArchive) -> Result<(), StoreError>;

    /// Forgets the archive under `key`, if recorded. Idempotent.
    async fn remove_module_archive(
        &self,
        address: &ModuleAddress,
        version: &Version,
        key: &str,
    ) -> Result<(), StoreError>;

    /// Every recorded archive of a module, in no particular order.
    async fn module_archives(
        &self,
        address: &ModuleAddress,
    ) -> Result<Vec<ModuleArchive>, StoreError>;
}
