//! Tokens of the local shape, in `DATA/.tfreg/tokens.json` (owner-only). `tfreg token`
//! commands and a running server share the file: writers take an exclusive lock on
//! `tokens.lock` and replace the file atomically; the server re-reads it when it changes, so
//! a new or revoked token takes effect on the next request.
//!
//! A request looks its token up by id in a shared, read-mostly map: the cost does not grow
//! with the number of tokens, and floods of invalid tokens never wait on a lock held by a
//! reload. Tokens expired or revoked more than a week ago
//! ([`tfreg_core::tokens::PURGE_AFTER_SECS`]) are dropped from
//! the file whenever it is written.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tfreg_core::store::ErrorChain;
use tfreg_core::tokens::{purge_due, unix, TokenRecord, TokenStore};
use tfreg_core::StoreError;

/// How stale a token's recorded "last used" time may get before the file is rewritten.
const LAST_USED_GRANULARITY_SECS: u64 = 60;

#[derive(Serialize, Deserialize, Default)]
struct TokenFile {
    version: u32,
    tokens: Vec<TokenRecord>,
}

/// The file's identity, to notice changes by other processes: modification time, size and
/// inode (every rewrite replaces the file, so its inode changes even within one tick of a
/// coarse clock).
type Stamp = Option<(SystemTime, u64, u64)>;

#[derive(Default)]
struct Cache {
    stamp: Stamp,
    tokens: Arc<HashMap<String, TokenRecord>>,
}

/// The local [`TokenStore`]: `DATA/.tfreg/tokens.json`, re-read when it changes.
pub struct FileTokenStore {
    path: PathBuf,
    lock_path: PathBuf,
    cache: RwLock<Cache>,
    /// Uses not yet written ("last used", by token id).
    pending_uses: Mutex<HashMap<String, u64>>,
    /// When uses were last written.
    last_flush: Mutex<Option<std::time::Instant>>,
    /// The last write failure logged, so a failing disk is reported once, not per request.
    write_problem: Mutex<Option<String>>,
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
            cache: RwLock::default(),
            pending_uses: Mutex::default(),
            last_flush: Mutex::default(),
            write_problem: Mutex::default(),
        }
    }

    fn stamp(&self) -> Result<Stamp, StoreError> {
        match fs::metadata(&self.path) {
            Ok(m) => {
                use std::os::unix::fs::MetadataExt;
                Ok(Some((
                    m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                    m.len(),
                    m.ino(),
                )))
            }
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

    /// The current tokens (shared, not copied), re-read if the file changed.
    fn current(&self) -> Result<Arc<HashMap<String, TokenRecord>>, StoreError> {
        let stamp = self.stamp()?;
        {
            let cache = self
                .cache
                .read()
                .map_err(|_| StoreError::new("token cache poisoned"))?;
            if stamp == cache.stamp && stamp.is_some() {
                return Ok(Arc::clone(&cache.tokens));
            }
        }
        let tokens: Arc<HashMap<String, TokenRecord>> =
            Arc::new(self.read_file()?.into_iter().collect());
        let mut cache = self
            .cache
            .write()
            .map_err(|_| StoreError::new("token cache poisoned"))?;
        cache.stamp = stamp;
        cache.tokens = Arc::clone(&tokens);
        Ok(tokens)
    }

    /// Read-modify-write under the lock file; the new file replaces the old atomically.
    /// Tokens long expired or revoked are purged on the way.
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
        let now = SystemTime::now();
        tokens.retain(|_, t| !purge_due(t, now));
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
        // What was just written is what the cache holds: no re-read of our own write.
        if let (Ok(stamp), Ok(mut cache)) = (self.stamp(), self.cache.write()) {
            cache.stamp = stamp;
            cache.tokens = Arc::new(file.tokens.into_iter().map(|t| (t.id.clone(), t)).collect());
        }
        drop(lock); // releases the lock
        Ok(())
    }
}

#[async_trait]
impl TokenStore for FileTokenStore {
    async fn get(&self, id: &str) -> Result<Option<TokenRecord>, StoreError> {
        let mut record = self.current()?.get(id).cloned();
        // A use not yet written is a use all the same (a first use is audited once).
        if let Some(record) = record.as_mut().filter(|r| r.last_used_at.is_none()) {
            record.last_used_at = self
                .pending_uses
                .lock()
                .ok()
                .and_then(|u| u.get(id).copied());
        }
        Ok(record)
    }

    async fn put(&self, record: TokenRecord) -> Result<(), StoreError> {
        self.update(|tokens| {
            tokens.insert(record.id.clone(), record);
        })
    }

    async fn list(&self) -> Result<Vec<TokenRecord>, StoreError> {
        let mut tokens: Vec<TokenRecord> = self.current()?.values().cloned().collect();
        tokens.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(tokens)
    }

    /// "Last used" is informational, so uses are gathered in memory and written together,
    /// at most once a minute whatever the number of tokens in use (the server also flushes
    /// them periodically). When the disk refuses the write (full, read-only), they stay in
    /// memory, the failure is logged once (and its end too), and tokens keep working.
    async fn record_use(&self, id: &str, at: SystemTime) -> Result<(), StoreError> {
        let now = unix(at);
        let pending = self
            .pending_uses
            .lock()
            .ok()
            .and_then(|u| u.get(id).copied());
        // The tokens as `get` just read them: no second look at the file.
        let known = match self.cache.read() {
            Ok(cache) if cache.stamp.is_some() => Arc::clone(&cache.tokens),
            _ => self.current()?,
        };
        let stale = known.get(id).is_some_and(|t| {
            t.last_used_at
                .max(pending)
                .is_none_or(|u| now >= u + LAST_USED_GRANULARITY_SECS)
        });
        if !stale {
            return Ok(());
        }
        if let Ok(mut pending) = self.pending_uses.lock() {
            pending.insert(id.to_owned(), now);
        }
        let due = self
            .last_flush
            .lock()
            .map(|last| last.is_none_or(|at| at.elapsed().as_secs() >= LAST_USED_GRANULARITY_SECS))
            .unwrap_or(true);
        if due {
            self.flush_uses();
        }
        Ok(())
    }
}

impl FileTokenStore {
    /// Writes the gathered uses ("last used") in one rewrite of the file.
    pub fn flush_uses(&self) {
        let uses: HashMap<String, u64> = match self.pending_uses.lock() {
            Ok(pending) if !pending.is_empty() => pending.clone(),
            _ => return,
        };
        if let Ok(mut last) = self.last_flush.lock() {
            *last = Some(std::time::Instant::now());
        }
        let written = self.update(|tokens| {
            for (id, at) in &uses {
                if let Some(token) = tokens.get_mut(id) {
                    token.last_used_at = token.last_used_at.max(Some(*at));
                }
            }
        });
        let mut problem = self.write_problem.lock().unwrap_or_else(|p| p.into_inner());
        match written {
            Ok(()) => {
                if problem.take().is_some() {
                    tracing::info!("recording token use in {} works again", self.path.display());
                }
                if let Ok(mut pending) = self.pending_uses.lock() {
                    pending.retain(|id, at| uses.get(id) != Some(at));
                }
            }
            Err(e) => {
                let message = format!("{}", ErrorChain(&e));
                if problem.as_deref() != Some(message.as_str()) {
                    tracing::warn!(
                        error = message,
                        "cannot record when tokens are used (they keep working); reported again only if the error changes"
                    );
                    *problem = Some(message);
                }
            }
        }
    }

    /// Drops tokens expired or revoked more than [`tfreg_core::tokens::PURGE_AFTER_SECS`]
    /// ago now, rather than
    /// at the next write (the server calls it at start).
    pub fn purge(&self) -> Result<(), StoreError> {
        let now = SystemTime::now();
        if self.current()?.values().any(|t| purge_due(t, now)) {
            self.update(|_| {})?;
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
    async fn tokens_long_expired_or_revoked_are_purged_on_the_next_write() {
        use tfreg_core::tokens::PURGE_AFTER_SECS;
        let dir = tempfile::tempdir().unwrap();
        let store = FileTokenStore::new(dir.path());
        let long_ago = SystemTime::now() - Duration::from_secs(PURGE_AFTER_SECS + 3600);
        let recently = SystemTime::now() - Duration::from_secs(60);
        let expired = generate(vec![], "old".into(), Some(Duration::from_secs(1)), long_ago);
        let just_expired = generate(vec![], "new".into(), Some(Duration::from_secs(1)), recently);
        let mut revoked = generate(vec![], "revoked".into(), None, long_ago).record;
        revoked.revoked_at = Some(unix(long_ago));
        let live = generate(vec![], "live".into(), None, long_ago);
        for record in [
            &expired.record,
            &just_expired.record,
            &revoked,
            &live.record,
        ] {
            store.put(record.clone()).await.unwrap();
        }
        // The last put purged what ended long ago; what ended recently stays listed.
        let ids: Vec<String> = store
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert!(!ids.contains(&expired.record.id) && !ids.contains(&revoked.id));
        assert!(ids.contains(&just_expired.record.id) && ids.contains(&live.record.id));
    }

    #[tokio::test]
    async fn a_disk_that_refuses_writes_is_reported_once_and_tokens_keep_working() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Captured(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Captured {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);

        let dir = tempfile::tempdir().unwrap();
        let store = FileTokenStore::new(dir.path());
        let now = SystemTime::now();
        let tokens: Vec<_> = (0..5)
            .map(|_| generate(vec![], String::new(), None, now))
            .collect();
        for t in &tokens {
            store.put(t.record.clone()).await.unwrap();
        }
        // Given a disk that refuses every write (the temporary file's name is taken by a
        // folder, which even root cannot overwrite with a file),
        fs::create_dir(dir.path().join("tokens.json.tmp")).unwrap();
        // when many requests are authenticated, over several minutes of "last used",
        for minute in 0..3 {
            let at = now + Duration::from_secs(minute * 120);
            for _ in 0..20 {
                for t in &tokens {
                    let header = format!("Bearer {}", t.token);
                    let access = authenticate(&store, Some(&header), at).await.unwrap();
                    assert!(access.is_ok(), "tokens keep working");
                }
            }
        }
        // then the failure is logged once, not per request.
        let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            log.matches("cannot record when tokens are used").count(),
            1,
            "{log}"
        );
        // When the disk works again, that is said once too.
        fs::remove_dir(dir.path().join("tokens.json.tmp")).unwrap();
        let header = format!("Bearer {}", tokens[0].token);
        let later = now + Duration::from_secs(3600);
        assert!(authenticate(&store, Some(&header), later)
            .await
            .unwrap()
            .is_ok());
        store.flush_uses(); // as the server does periodically
        let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert_eq!(log.matches("works again").count(), 1, "{log}");
        let recorded = store.get(&tokens[0].record.id).await.unwrap().unwrap();
        assert_eq!(
            recorded.last_used_at,
            Some(unix(later)),
            "uses kept are written"
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
