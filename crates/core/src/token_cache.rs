//! Token records kept briefly in memory, so a busy function reads a token from its store
//! once per interval instead of once per request, and records its use at most once per
//! interval instead of writing on the request path.
//!
//! The price is a delay: a token revoked (or changed) in the store is still accepted by a
//! process that read it less than [`CacheSettings::ttl`] ago. Expiry is exact, as the
//! cached record carries its expiry time. Tokens the store does not know are never cached,
//! so a token works as soon as it is created.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;

use crate::store::StoreError;
use crate::tokens::{TokenRecord, TokenStore};

/// How long records are kept and how often uses are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSettings {
    /// How long a token's record is used without reading it again: the longest a revoked
    /// token is still accepted. Zero reads the store on every request.
    pub ttl: Duration,
    /// A token's use is recorded at most once per this interval by one process.
    pub last_used_interval: Duration,
}

impl CacheSettings {
    /// One minute of revocation delay; "last used" to the hour.
    pub const DEFAULT: CacheSettings = CacheSettings {
        ttl: Duration::from_secs(60),
        last_used_interval: Duration::from_secs(3600),
    };
}

/// At most this many tokens are kept; when more are in use, the oldest reads are dropped.
const MAX_ENTRIES: usize = 4096;

/// The clock the cache reads (a test moves its own).
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

struct Entry {
    record: TokenRecord,
    read_at: Instant,
    /// When this process last recorded the token's use.
    use_recorded_at: Option<Instant>,
}

/// A [`TokenStore`] in front of another, keeping what it read for a while.
pub struct CachedTokens {
    inner: Arc<dyn TokenStore>,
    settings: CacheSettings,
    clock: Clock,
    entries: Mutex<HashMap<String, Entry>>,
}

impl CachedTokens {
    /// A cache in front of `inner`, reading the system clock.
    pub fn new(inner: Arc<dyn TokenStore>, settings: CacheSettings) -> Self {
        Self::with_clock(inner, settings, Arc::new(Instant::now))
    }

    /// A cache in front of `inner`, reading `clock` (tests move their own).
    pub fn with_clock(inner: Arc<dyn TokenStore>, settings: CacheSettings, clock: Clock) -> Self {
        Self {
            inner,
            settings,
            clock,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn fresh(&self, id: &str, now: Instant) -> Option<TokenRecord> {
        let entries = self.entries.lock().ok()?;
        let entry = entries.get(id)?;
        (now.saturating_duration_since(entry.read_at) < self.settings.ttl)
            .then(|| entry.record.clone())
    }

    fn keep(&self, record: &TokenRecord, now: Instant) {
        if self.settings.ttl.is_zero() {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(&record.id) {
            let ttl = self.settings.ttl;
            entries.retain(|_, e| now.saturating_duration_since(e.read_at) < ttl);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        let use_recorded_at = entries.get(&record.id).and_then(|e| e.use_recorded_at);
        entries.insert(
            record.id.clone(),
            Entry {
                record: record.clone(),
                read_at: now,
                use_recorded_at,
            },
        );
    }
}

#[async_trait]
impl TokenStore for CachedTokens {
    async fn get(&self, id: &str) -> Result<Option<TokenRecord>, StoreError> {
        let now = (self.clock)();
        if let Some(record) = self.fresh(id, now) {
            return Ok(Some(record));
        }
        let record = self.inner.get(id).await?;
        match &record {
            Some(record) => self.keep(record, now),
            None => {
                if let Ok(mut entries) = self.entries.lock() {
                    entries.remove(id);
                }
            }
        }
        Ok(record)
    }

    async fn put(&self, record: TokenRecord) -> Result<(), StoreError> {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(&record.id);
        }
        self.inner.put(record).await
    }

    async fn list(&self) -> Result<Vec<TokenRecord>, StoreError> {
        self.inner.list().await
    }

    /// Passes a use on when this process has not recorded one for the token within the
    /// interval, and the record it read does not show one within it either.
    async fn record_use(&self, id: &str, at: SystemTime) -> Result<(), StoreError> {
        let now = (self.clock)();
        let interval = self.settings.last_used_interval;
        let due = match self.entries.lock() {
            Ok(mut entries) => match entries.get_mut(id) {
                Some(entry) => {
                    let recorded_here = entry
                        .use_recorded_at
                        .is_some_and(|t| now.saturating_duration_since(t) < interval);
                    let stored = entry.record.last_used_at.is_some_and(|t| {
                        crate::tokens::unix(at) < t.saturating_add(interval.as_secs())
                    });
                    let due = !recorded_here && !stored;
                    if due {
                        entry.use_recorded_at = Some(now);
                        // A first use is a first use once: later reads of this entry
                        // are used tokens.
                        entry
                            .record
                            .last_used_at
                            .get_or_insert(crate::tokens::unix(at));
                    }
                    due
                }
                // Not cached (a zero time to live): every use goes to the store, which
                // coarsens them itself.
                None => true,
            },
            Err(_) => true,
        };
        if due {
            self.inner.record_use(id, at).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryTokenStore;
    use crate::tokens::{authenticate, generate, AuthError};
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    /// Counts what reaches the store.
    #[derive(Default)]
    struct Counting {
        store: MemoryTokenStore,
        gets: AtomicUsize,
        uses: AtomicUsize,
    }

    #[async_trait]
    impl TokenStore for Counting {
        async fn get(&self, id: &str) -> Result<Option<TokenRecord>, StoreError> {
            self.gets.fetch_add(1, Ordering::SeqCst);
            self.store.get(id).await
        }
        async fn put(&self, record: TokenRecord) -> Result<(), StoreError> {
            self.store.put(record).await
        }
        async fn list(&self) -> Result<Vec<TokenRecord>, StoreError> {
            self.store.list().await
        }
        async fn record_use(&self, id: &str, at: SystemTime) -> Result<(), StoreError> {
            self.uses.fetch_add(1, Ordering::SeqCst);
            self.store.record_use(id, at).await
        }
    }

    struct Fixture {
        store: Arc<Counting>,
        cache: CachedTokens,
        seconds: Arc<AtomicU64>,
    }

    impl Fixture {
        /// A token stored behind the cache, and its `Authorization` header.
        async fn stored_token(&self, now: SystemTime) -> (crate::tokens::NewToken, String) {
            let token = generate(vec![], String::new(), None, now);
            self.store.put(token.record.clone()).await.unwrap();
            let header = format!("Bearer {}", token.token);
            (token, header)
        }
    }

    fn fixture() -> Fixture {
        let store = Arc::new(Counting::default());
        let seconds = Arc::new(AtomicU64::new(0));
        let base = Instant::now();
        let clock_seconds = Arc::clone(&seconds);
        let clock: Clock =
            Arc::new(move || base + Duration::from_secs(clock_seconds.load(Ordering::SeqCst)));
        let inner: Arc<dyn TokenStore> = store.clone();
        let cache = CachedTokens::with_clock(inner, CacheSettings::DEFAULT, clock);
        Fixture {
            store,
            cache,
            seconds,
        }
    }

    #[tokio::test]
    async fn a_busy_token_is_read_once_per_minute_and_its_use_recorded_once_per_hour() {
        let f = fixture();
        let now = SystemTime::now();
        let (_, header) = f.stored_token(now).await;
        for second in 0..7200 {
            f.seconds.store(second, Ordering::SeqCst);
            let at = now + Duration::from_secs(second);
            let verdict = authenticate(&f.cache, Some(&header), at).await.unwrap();
            assert!(verdict.is_ok());
        }
        assert_eq!(
            f.store.gets.load(Ordering::SeqCst),
            120,
            "one read a minute"
        );
        assert_eq!(f.store.uses.load(Ordering::SeqCst), 2, "one use an hour");
    }

    #[tokio::test]
    async fn a_revoked_token_is_refused_once_its_record_is_older_than_the_ttl() {
        let f = fixture();
        let now = SystemTime::now();
        let (token, header) = f.stored_token(now).await;
        assert!(authenticate(&f.cache, Some(&header), now)
            .await
            .unwrap()
            .is_ok());
        // Revoked by another process (the command line), straight in the store.
        let mut revoked = token.record.clone();
        revoked.revoked_at = Some(crate::tokens::unix(now));
        f.store.put(revoked).await.unwrap();
        f.seconds.store(59, Ordering::SeqCst);
        assert!(authenticate(&f.cache, Some(&header), now)
            .await
            .unwrap()
            .is_ok());
        f.seconds.store(60, Ordering::SeqCst);
        assert_eq!(
            authenticate(&f.cache, Some(&header), now).await.unwrap(),
            Err(AuthError::Revoked)
        );
    }

    #[tokio::test]
    async fn expiry_is_exact_and_unknown_tokens_are_never_cached() {
        let f = fixture();
        let now = SystemTime::now();
        let token = generate(vec![], String::new(), Some(Duration::from_secs(30)), now);
        let header = format!("Bearer {}", token.token);
        // Unknown at first: the next request reads the store again and finds it.
        assert_eq!(
            authenticate(&f.cache, Some(&header), now).await.unwrap(),
            Err(AuthError::Invalid)
        );
        f.store.put(token.record.clone()).await.unwrap();
        assert!(authenticate(&f.cache, Some(&header), now)
            .await
            .unwrap()
            .is_ok());
        assert_eq!(
            authenticate(&f.cache, Some(&header), now + Duration::from_secs(30))
                .await
                .unwrap(),
            Err(AuthError::Expired)
        );
    }

    #[tokio::test]
    async fn a_zero_ttl_reads_the_store_every_time() {
        let store = Arc::new(Counting::default());
        let inner: Arc<dyn TokenStore> = store.clone();
        let settings = CacheSettings {
            ttl: Duration::ZERO,
            ..CacheSettings::DEFAULT
        };
        let cache = CachedTokens::new(inner, settings);
        let now = SystemTime::now();
        let token = generate(vec![], String::new(), None, now);
        store.put(token.record.clone()).await.unwrap();
        for _ in 0..3 {
            assert!(cache.get(&token.record.id).await.unwrap().is_some());
        }
        assert_eq!(store.gets.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn the_cache_stays_bounded() {
        let f = fixture();
        let now = SystemTime::now();
        for _ in 0..(MAX_ENTRIES + 10) {
            let token = generate(vec![], String::new(), None, now);
            f.store.put(token.record.clone()).await.unwrap();
            f.cache.get(&token.record.id).await.unwrap();
        }
        assert!(f.cache.entries.lock().unwrap().len() <= MAX_ENTRIES);
    }
}
