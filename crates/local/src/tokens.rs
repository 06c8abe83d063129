//! Tokens of the local shape, in `DATA/.tfreg/tokens.json` (owner-only). `tfreg token`
//! commands and a running server share the file: writers take an exclusive lock on
//! `tokens.lock` and replace the file atomically; the server re-reads it when it changes, so
//! a new or revoked token takes effect on the next request.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tfreg_core::tokens::{unix, TokenRecord, TokenStore};
use tfreg_core::StoreError;

/// How stale a token's recorded "last used" time may get before the file is rewritten.
const LAST_USED_GRANULARITY_SECS: u64 = 60;

#[derive(Serialize, Deserialize, Default)]
struct TokenFile {
    version: u32,
    tokens: Vec<TokenRecord>,
}

/// The file's identity, to notice changes by other processes.
type Stamp = Option<(SystemTime, u64)>;

#[derive(Default)]
struct Cache {
    stamp: Stamp,
    tokens: BTreeMap<String, TokenRecord>,
}

pub struct FileTokenStore {
    path: PathBuf,
    lock_path: PathBuf,
    cache: Mutex<Cache>,
}

fn err(
    action: &str,
    path: &Path,
    e: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> StoreError {
    StoreError::with_source(format!("cannot {action} {}", path.display()), e)
}

impl FileTokenStore {
    /// The token file of the state folder `state_dir` (`DATA/.tfreg`).
    pub fn new(state_dir: &Path) -> Self {
        Self {
            path: state_dir.join("tokens.json"),
            lock_path: state_dir.join("tokens.lock"),
            cache: Mutex::default(),
        }
    }

    fn stamp(&self) -> Result<Stamp, StoreError> {
        match fs::metadata(&self.path) {
            Ok(m) => Ok(Some((
                m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                m.len(),
            ))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(err("read", &self.path, e)),
        }
    }

    fn read_file(&self) -> Result<BTreeMap<String, TokenRecord>, StoreError> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(err("read", &self.path, e)),
        };
        let file: TokenFile =
            serde_json::from_str(&text).map_err(|e| err("parse", &self.path, e))?;
        Ok(file.tokens.into_iter().map(|t| (t.id.clone(), t)).collect())
    }

    /// The current tokens, re-read if the file changed.
    fn current(&self) -> Result<BTreeMap<String, TokenRecord>, StoreError> {
        let mut cache = self
            .cache
            .lock()
            .map_err(|_| StoreError::new("token cache poisoned"))?;
        let stamp = self.stamp()?;
        if stamp != cache.stamp || stamp.is_none() {
            cache.tokens = self.read_file()?;
            cache.stamp = stamp;
        }
        Ok(cache.tokens.clone())
    }

    /// Read-modify-write under the lock file; the new file replaces the old atomically.
    fn update(
        &self,
        change: impl FnOnce(&mut BTreeMap<String, TokenRecord>),
    ) -> Result<(), StoreError> {
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock_path)
            .map_err(|e| err("open", &self.lock_path, e))?;
        lock.lock().map_err(|e| err("lock", &self.lock_path, e))?;
        let mut tokens = self.read_file()?;
        change(&mut tokens);
        let file = TokenFile {
            version: 1,
            tokens: tokens.into_values().collect(),
        };
        let json = serde_json::to_vec_pretty(&file).map_err(|e| err("encode", &self.path, e))?;
        let tmp = self.path.with_extension("json.tmp");
        let mut options = fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut out = options.open(&tmp).map_err(|e| err("create", &tmp, e))?;
        out.write_all(&json).map_err(|e| err("write", &tmp, e))?;
        out.sync_all().map_err(|e| err("write", &tmp, e))?;
        fs::rename(&tmp, &self.path).map_err(|e| err("replace", &self.path, e))?;
        drop(lock); // releases the lock
        Ok(())
    }
}

#[async_trait]
impl TokenStore for FileTokenStore {
    async fn get(&self, id: &str) -> Result<Option<TokenRecord>, StoreError> {
        Ok(self.current()?.remove(id))
    }

    async fn put(&self, record: TokenRecord) -> Result<(), StoreError> {
        self.update(|tokens| {
            tokens.insert(record.id.clone(), record);
        })
    }

    async fn list(&self) -> Result<Vec<TokenRecord>, StoreError> {
        Ok(self.current()?.into_values().collect())
    }

    async fn record_use(&self, id: &str, at: SystemTime) -> Result<(), StoreError> {
        let now = unix(at);
        let stale = self.current()?.get(id).is_some_and(|t| {
            t.last_used_at
                .is_none_or(|u| now >= u + LAST_USED_GRANULARITY_SECS)
        });
        if stale {
            self.update(|tokens| {
                if let Some(token) = tokens.get_mut(id) {
                    token.last_used_at = Some(now);
                }
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use tfreg_core::tokens::{authenticate, generate, AuthError};

    #[tokio::test]
    async fn tokens_persist_and_changes_by_other_processes_are_seen() {
        let dir = tempfile::tempdir().unwrap();
        let server = FileTokenStore::new(dir.path());
        let cli = FileTokenStore::new(dir.path());
        let now = SystemTime::now();
        let new = generate(vec![], "ci".into(), None, now);
        let header = format!("Bearer {}", new.token);
        assert_eq!(
            authenticate(&server, Some(&header), now).await.unwrap(),
            Err(AuthError::Invalid)
        );

        cli.put(new.record.clone()).await.unwrap();
        assert!(authenticate(&server, Some(&header), now)
            .await
            .unwrap()
            .is_ok());
        let text = fs::read_to_string(dir.path().join("tokens.json")).unwrap();
        assert!(
            !text.contains(new.token.splitn(3, '_').nth(2).unwrap()),
            "the secret is never stored"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.path().join("tokens.json"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(cli
            .get(&new.record.id)
            .await
            .unwrap()
            .unwrap()
            .last_used_at
            .is_some());

        let mut revoked = new.record.clone();
        revoked.revoked_at = Some(unix(now));
        // Different mtime granularity must not hide the change: the size differs too.
        std::thread::sleep(Duration::from_millis(10));
        cli.put(revoked).await.unwrap();
        assert_eq!(
            authenticate(&server, Some(&header), now).await.unwrap(),
            Err(AuthError::Revoked)
        );
    }

    #[tokio::test]
    async fn a_corrupt_file_is_an_error_not_an_open_door() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("tokens.json"), "{not json").unwrap();
        let store = FileTokenStore::new(dir.path());
        let header = format!(
            "Bearer {}",
            generate(vec![], String::new(), None, SystemTime::now()).token
        );
        assert!(authenticate(&store, Some(&header), SystemTime::now())
            .await
            .is_err());
    }
}
