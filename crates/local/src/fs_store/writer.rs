//! The registry's own writes into the data directory (the upstream cache): each file is
//! written under a hidden temporary name in its folder, synced, then renamed into place, so
//! the watcher and readers see it whole or not at all. Folders are created as needed; a
//! symbolic link on the way is refused, as for every read.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use tfreg_core::store::ArtifactWriter;
use tfreg_core::StoreError;

use super::FsArtifactStore;

impl FsArtifactStore {
    /// The folder `key`'s file goes in, created as needed, never through a link.
    fn folder_for(&self, key: &str) -> io::Result<PathBuf> {
        let refused = || {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a key of the data directory",
            )
        };
        let path = self.path_for(key).ok_or_else(refused)?;
        let parent = path.parent().ok_or_else(refused)?.to_path_buf();
        let mut at = self.root().to_path_buf();
        let relative = parent.strip_prefix(self.root()).map_err(|_| refused())?;
        for part in relative.components() {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("{} is not a folder", at.display()),
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    std::fs::create_dir(&at).or_else(|e| {
                        if e.kind() == io::ErrorKind::AlreadyExists {
                            Ok(())
                        } else {
                            Err(e)
                        }
                    })?
                }
                Err(e) => return Err(e),
            }
        }
        Ok(parent)
    }

    fn write_with(
        &self,
        key: &str,
        fill: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
    ) -> io::Result<()> {
        let folder = self.folder_for(key)?;
        let mut temp = tempfile::Builder::new()
            .prefix(".tfreg-upstream-")
            .suffix(".tmp")
            .tempfile_in(&folder)?;
        fill(temp.as_file_mut())?;
        temp.as_file_mut().flush()?;
        temp.as_file().sync_all()?;
        let path = self.path_for(key).expect("checked by folder_for");
        temp.persist(&path).map_err(|e| e.error)?;
        Ok(())
    }
}

fn failed(key: &str, e: io::Error) -> StoreError {
    StoreError::with_source(format!("cannot write {key} into the data directory"), e)
}

#[async_trait]
impl ArtifactWriter for FsArtifactStore {
    async fn put_file(&self, key: &str, path: &Path) -> Result<(), StoreError> {
        let (store, owned, source) = (self.clone(), key.to_owned(), path.to_owned());
        tokio::task::spawn_blocking(move || {
            store.write_with(&owned, |out| {
                let mut from = std::fs::File::open(&source)?;
                io::copy(&mut from, out).map(|_| ())
            })
        })
        .await
        .map_err(|e| StoreError::with_source("a data directory write stopped", e))?
        .map_err(|e| failed(key, e))
    }

    async fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        let (store, owned) = (self.clone(), key.to_owned());
        tokio::task::spawn_blocking(move || store.write_with(&owned, |out| out.write_all(&bytes)))
            .await
            .map_err(|e| StoreError::with_source("a data directory write stopped", e))?
            .map_err(|e| failed(key, e))
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        let (store, owned) = (self.clone(), key.to_owned());
        tokio::task::spawn_blocking(move || store.remove(&owned))
            .await
            .map_err(|e| StoreError::with_source("a data directory delete stopped", e))?
            .map_err(|e| StoreError::with_source(format!("cannot delete {key}"), e))
    }
}

impl FsArtifactStore {
    /// Removes `key`'s file: never through a link (each folder on the way must be a real
    /// folder), never a folder; a missing file is not an error. Creates nothing.
    fn remove(&self, key: &str) -> io::Result<()> {
        let refused = || {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a key of the data directory",
            )
        };
        let path = self.path_for(key).ok_or_else(refused)?;
        let relative = path.strip_prefix(self.root()).map_err(|_| refused())?;
        let mut at = self.root().to_path_buf();
        let mut parts = relative.components().peekable();
        while let Some(part) = parts.next() {
            at.push(part);
            let meta = match std::fs::symlink_metadata(&at) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            };
            let last = parts.peek().is_none();
            if (last && !meta.is_file()) || (!last && !meta.is_dir()) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} is not a plain {}",
                        at.display(),
                        if last { "file" } else { "folder" }
                    ),
                ));
            }
        }
        std::fs::remove_file(&path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_land_whole_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let store = FsArtifactStore::new(root.clone());
        store
            .put_bytes("upstream/h.test/acme/widget/1.0.0.json", b"{}".to_vec())
            .await
            .unwrap();
        assert_eq!(
            std::fs::read(root.join("upstream/h.test/acme/widget/1.0.0.json")).unwrap(),
            b"{}"
        );
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("mirror")).unwrap();
        let e = store
            .put_bytes("mirror/h.test/acme/widget/x.zip", b"zip".to_vec())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("cannot write"), "{e}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        assert!(store.put_bytes("../escape.json", vec![]).await.is_err());
    }

    #[tokio::test]
    async fn deletes_remove_plain_files_only_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let store = FsArtifactStore::new(root.clone());
        let key = "modules/acme/net/aws/1.0.0.tar.gz";
        store.put_bytes(key, b"x".to_vec()).await.unwrap();
        store.delete(key).await.unwrap();
        assert!(!root.join(key).exists());
        store.delete(key).await.unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("1.0.0.tar.gz"), b"keep").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("modules/acme/other")).unwrap();
        assert!(store
            .delete("modules/acme/other/1.0.0.tar.gz")
            .await
            .is_err());
        assert!(outside.path().join("1.0.0.tar.gz").exists());
        assert!(store.delete("../escape.json").await.is_err());
    }
}
