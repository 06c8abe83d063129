//! `ArtifactWriter`: the one way the registry itself changes files in the store: the upstream
//! cache's verified packages and its records, and the CLI's own writes for a publisher
//! (`tfreg restore` putting pinned bytes back; `tfreg deprecate` and `tfreg yank` writing a
//! version's notice and deleting its files). Publishers otherwise write with their own tools.

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

    /// Deletes `key`'s file; nothing to delete is not an error. Kept bytes stay: in a
    /// versioned bucket the object's versions remain, and pinned copies are never touched.
    async fn delete(&self, key: &str) -> Result<(), StoreError>;
}
