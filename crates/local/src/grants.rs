//! One-time sign-in records of the local shape, one file each under `DATA/.tfreg/grants/`
//! (owner-only): `login/<id>.json` for sign-ins in progress, `code/<id>.json` for
//! authorization codes. Taking a record renames it first, so of two concurrent takes
//! (even from two processes) exactly one gets it. Expired records are swept when new ones
//! are written, and new ones are refused past [`MAX_RECORDS`] live ones, so requests
//! nobody finishes cannot fill the disk.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tfreg_core::identity::grants::{GrantKind, GrantStore, Taken};
use tfreg_core::tokens::unix;
use tfreg_core::StoreError;

/// At most this many records of one kind are kept.
pub const MAX_RECORDS: usize = 10_000;

#[derive(Serialize, Deserialize)]
struct GrantFile {
    expires_at: u64,
    doc: String,
}

/// The grants folder of a data directory's state folder.
pub struct FileGrantStore {
    dir: PathBuf,
}

fn err(action: &str, path: &Path, e: io::Error) -> StoreError {
    StoreError::with_source(format!("cannot {action} {}", path.display()), e)
}

/// Ids are SHA-256 hex digests: nothing else becomes a file name.
fn valid_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

impl FileGrantStore {
    /// The grants of the state folder `state_dir` (`DATA/.tfreg`).
    pub fn new(state_dir: &Path) -> Self {
        Self {
            dir: state_dir.join("grants"),
        }
    }

    fn kind_dir(&self, kind: GrantKind) -> PathBuf {
        self.dir.join(kind.name())
    }

    /// Removes expired records of a folder; returns how many live ones remain.
    fn sweep(dir: &Path, now: u64) -> usize {
        let Ok(entries) = fs::read_dir(dir) else {
            return 0;
        };
        let mut live = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            let expired = fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<GrantFile>(&b).ok())
                .is_none_or(|f| f.expires_at <= now);
            // A leftover of an interrupted take or write is swept too.
            if expired && entry.metadata().is_ok_and(|m| m.is_file()) {
                let _ = fs::remove_file(&path);
            } else {
                live += 1;
            }
        }
        live
    }

    fn put_sync(
        &self,
        kind: GrantKind,
        id: &str,
        doc: String,
        expires_at: u64,
    ) -> Result<(), StoreError> {
        if !valid_id(id) {
            return Err(StoreError::new(format!("not a grant id: {id:?}")));
        }
        let dir = self.kind_dir(kind);
        create_private_dir(&dir).map_err(|e| err("create", &dir, e))?;
        if Self::sweep(&dir, unix(std::time::SystemTime::now())) >= MAX_RECORDS {
            return Err(StoreError::new(format!(
                "more than {MAX_RECORDS} sign-ins are in progress; new ones are refused until they expire"
            )));
        }
        let path = dir.join(format!("{id}.json"));
        let tmp = dir.join(format!(".{id}.tmp"));
        let body = serde_json::to_vec(&GrantFile { expires_at, doc })
            .map_err(|e| StoreError::with_source("cannot encode a grant", e))?;
        write_private(&tmp, &body).map_err(|e| err("write", &tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| err("rename", &path, e))?;
        Ok(())
    }

    fn take_sync(&self, kind: GrantKind, id: &str) -> Result<Option<Taken>, StoreError> {
        if !valid_id(id) {
            return Ok(None);
        }
        let dir = self.kind_dir(kind);
        let path = dir.join(format!("{id}.json"));
        let taken = dir.join(format!(
            ".{id}.taken.{}",
            tfreg_core::identity::pkce::random_value()
        ));
        match fs::rename(&path, &taken) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(err("take", &path, e)),
        }
        let read = fs::read(&taken);
        let _ = fs::remove_file(&taken);
        let bytes = read.map_err(|e| err("read", &taken, e))?;
        let file: GrantFile = serde_json::from_slice(&bytes)
            .map_err(|e| StoreError::with_source(format!("{} is corrupt", path.display()), e))?;
        Ok(Some(Taken {
            doc: file.doc,
            expires_at: file.expires_at,
        }))
    }
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

fn write_private(path: &Path, body: &[u8]) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(body)?;
    file.sync_all()
}

#[async_trait]
impl GrantStore for FileGrantStore {
    async fn put(
        &self,
        kind: GrantKind,
        id: &str,
        doc: String,
        expires_at: u64,
    ) -> Result<(), StoreError> {
        let (dir, id) = (self.dir.clone(), id.to_owned());
        tokio::task::spawn_blocking(move || {
            FileGrantStore { dir }.put_sync(kind, &id, doc, expires_at)
        })
        .await
        .map_err(|e| StoreError::with_source("a grant write stopped", e))?
    }

    async fn take(&self, kind: GrantKind, id: &str) -> Result<Option<Taken>, StoreError> {
        let (dir, id) = (self.dir.clone(), id.to_owned());
        tokio::task::spawn_blocking(move || FileGrantStore { dir }.take_sync(kind, &id))
            .await
            .map_err(|e| StoreError::with_source("a grant read stopped", e))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_record_is_taken_once_even_by_racing_takers() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(FileGrantStore::new(dir.path()));
        let id = "a".repeat(64);
        let far = unix(std::time::SystemTime::now()) + 60;
        store
            .put(GrantKind::Code, &id, "{}".into(), far)
            .await
            .unwrap();
        let takers: Vec<_> = (0..8)
            .map(|_| {
                let (store, id) = (Arc::clone(&store), id.clone());
                tokio::spawn(async move { store.take(GrantKind::Code, &id).await.unwrap() })
            })
            .collect();
        let mut got = 0;
        for taker in takers {
            got += usize::from(taker.await.unwrap().is_some());
        }
        assert_eq!(got, 1);
        // Kinds are apart; bad ids never touch the disk.
        store
            .put(GrantKind::Login, &id, "{}".into(), far)
            .await
            .unwrap();
        assert!(store.take(GrantKind::Code, &id).await.unwrap().is_none());
        assert!(store
            .take(GrantKind::Login, "../../etc/passwd")
            .await
            .unwrap()
            .is_none());
        assert!(store
            .put(GrantKind::Login, "../x", "{}".into(), far)
            .await
            .is_err());
    }

    #[tokio::test]
    async fn expired_records_are_swept_when_new_ones_arrive() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileGrantStore::new(dir.path());
        store
            .put(GrantKind::Login, &"b".repeat(64), "{}".into(), 1)
            .await
            .unwrap();
        store
            .put(GrantKind::Login, &"c".repeat(64), "{}".into(), u64::MAX)
            .await
            .unwrap();
        let left: Vec<_> = fs::read_dir(dir.path().join("grants/login"))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(left.len(), 1);
    }
}
