//! One-time sign-in records of the local shape, one file each under `DATA/.tfreg/grants/`
//! (owner-only): `code/<id>.json` for authorization codes (sign-ins in progress store
//! nothing: they are sealed into their `state`). Taking a record renames it first, so of two concurrent takes
//! (even from two processes) exactly one gets it. Expired records are swept when new ones
//! are written (at most once a minute), and new ones are refused past [`MAX_RECORDS`] live
//! ones, so requests nobody finishes cannot fill the disk.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    /// Per kind: when its folder was last swept, and how many live records it holds since
    /// (counted up by writes and down by takes between sweeps).
    swept: Mutex<HashMap<GrantKind, (Instant, usize)>>,
}

/// How often a folder is swept of expired records at most.
const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// Leftovers of an interrupted write or take older than this are swept too.
const LEFTOVER_AGE: Duration = Duration::from_secs(3600);

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
        // Sign-ins in progress were kept here before they were sealed into their `state`:
        // whatever an older version left is of no use (and may be many files).
        let _ = fs::remove_dir_all(state_dir.join("grants").join("login"));
        Self {
            inner: Arc::new(Inner {
                dir: state_dir.join("grants"),
                swept: Mutex::new(HashMap::new()),
            }),
        }
    }
}

impl Inner {
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
            // Only records: a write or a take in progress (`.<id>.tmp`, `.<id>.taken.*`) is
            // another request's, and never swept from under it.
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || !name.ends_with(".json") {
                let stale = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > LEFTOVER_AGE);
                if stale {
                    let _ = fs::remove_file(&path);
                }
                continue;
            }
            let expired = fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<GrantFile>(&b).ok())
                .is_none_or(|f| f.expires_at <= now);
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
        let live = {
            let mut swept = self.swept.lock().map_err(|_| StoreError::new("poisoned"))?;
            let entry = match swept.get(&kind) {
                Some((at, live)) if at.elapsed() < SWEEP_EVERY => (*at, *live),
                _ => (
                    Instant::now(),
                    Self::sweep(&dir, unix(std::time::SystemTime::now())),
                ),
            };
            swept.insert(kind, (entry.0, entry.1 + 1));
            entry.1
        };
        if live >= MAX_RECORDS {
            if let Ok(mut swept) = self.swept.lock() {
                swept.remove(&kind);
            }
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
        if let Ok(mut swept) = self.swept.lock() {
            if let Some((_, live)) = swept.get_mut(&kind) {
                *live = live.saturating_sub(1);
            }
        }
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
        let (inner, id) = (Arc::clone(&self.inner), id.to_owned());
        tokio::task::spawn_blocking(move || inner.put_sync(kind, &id, doc, expires_at))
            .await
            .map_err(|e| StoreError::with_source("a grant write stopped", e))?
    }

    async fn take(&self, kind: GrantKind, id: &str) -> Result<Option<Taken>, StoreError> {
        let (inner, id) = (Arc::clone(&self.inner), id.to_owned());
        tokio::task::spawn_blocking(move || inner.take_sync(kind, &id))
            .await
            .map_err(|e| StoreError::with_source("a grant read stopped", e))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Bad ids never touch the disk.
        assert!(store.take(GrantKind::Code, &id).await.unwrap().is_none());
        assert!(store
            .take(GrantKind::Code, "../../etc/passwd")
            .await
            .unwrap()
            .is_none());
        assert!(store
            .put(GrantKind::Code, "../x", "{}".into(), far)
            .await
            .is_err());
    }

    #[tokio::test]
    async fn expired_records_are_swept_when_new_ones_arrive() {
        let dir = tempfile::tempdir().unwrap();
        let earlier = FileGrantStore::new(dir.path());
        let (expired, live) = ("b".repeat(64), "c".repeat(64));
        earlier
            .put(GrantKind::Code, &expired, "{}".into(), 1)
            .await
            .unwrap();
        // A write in progress is never swept.
        let other = "d".repeat(64);
        let writing = dir.path().join(format!("grants/code/.{other}.tmp"));
        fs::write(&writing, "{").unwrap();
        // (a store sweeps when it first writes, then at most once a minute)
        let store = FileGrantStore::new(dir.path());
        store
            .put(GrantKind::Code, &live, "{}".into(), u64::MAX)
            .await
            .unwrap();
        let mut left: Vec<String> = fs::read_dir(dir.path().join("grants/code"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [format!(".{other}.tmp"), format!("{live}.json")]);
        assert!(store
            .take(GrantKind::Code, &expired)
            .await
            .unwrap()
            .is_none());
    }
}
