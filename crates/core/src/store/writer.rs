//! `ArtifactWriter`: the one way the registry itself adds files to the store: the upstream
//! cache's verified packages and its records. Publishers write with their own tools; the
//! registry writes only what it fetched and checked, under `mirror/` and `upstream/`.

use std::path::Path;

use async_trait::async_trait;

use super::error::StoreError;

/// Adds files to the artifact store. Each write replaces the key whole or not at all: a
/// reader sees the old object, the new one or none, never part of one.
#[async_trait]
pub trait ArtifactWriter: Send + Sync {
    /// Stores the file at `path` under `key`.
    async fn put_file(&self, key: &str, path: &Path) -> Result<(), StoreError>;

    /// Stores `bytes` under `key`.
    async fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> Result<(), StoreError>;
}
