//! Signing keys kept briefly in memory by the functions that serve providers.
//!
//! Serving a provider release reads two partitions: the provider's own, and its namespace's
//! keys (a signature's verdict counts only while the key that verified it is still
//! published). The keys change rarely, so a function reads them at most once per
//! [`CachedKeys::new`]'s time to live; a removed key keeps vouching for its releases in a
//! function at most that long, the same delay as a revoked token's. Everything else passes
//! through untouched.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::store::{MetadataStore, Record, RecordId, StoreError};

/// At most this many namespaces' keys are kept.
const MAX_NAMESPACES: usize = 1024;

/// A [`MetadataStore`] that keeps the `keys/<namespace>` partitions it read for a while.
pub struct CachedKeys {
    inner: Arc<dyn MetadataStore>,
    ttl: Duration,
    clock: crate::token_cache::Clock,
    partitions: Mutex<HashMap<String, KeptKeys>>,
}

/// A namespace's keys partition, and when it was read.
struct KeptKeys {
    read_at: Instant,
    records: Vec<Record>,
}

impl CachedKeys {
    pub fn new(inner: Arc<dyn MetadataStore>, ttl: Duration) -> Self {
        Self::with_clock(inner, ttl, Arc::new(Instant::now))
    }

    pub fn with_clock(
        inner: Arc<dyn MetadataStore>,
        ttl: Duration,
        clock: crate::token_cache::Clock,
    ) -> Self {
        Self {
            inner,
            ttl,
            clock,
            partitions: Mutex::new(HashMap::new()),
        }
    }

    fn is_keys(partition: &str) -> bool {
        partition.starts_with("keys/")
    }
}

#[async_trait]
impl MetadataStore for CachedKeys {
    async fn put(&self, record: Record) -> Result<(), StoreError> {
        self.inner.put(record).await
    }

    async fn put_new(&self, record: Record) -> Result<bool, StoreError> {
        self.inner.put_new(record).await
    }

    async fn delete(&self, id: &RecordId) -> Result<(), StoreError> {
        self.inner.delete(id).await
    }

    async fn get(&self, id: &RecordId) -> Result<Option<Record>, StoreError> {
        self.inner.get(id).await
    }

    async fn query(&self, partition: &str) -> Result<Vec<Record>, StoreError> {
        if !Self::is_keys(partition) || self.ttl.is_zero() {
            return self.inner.query(partition).await;
        }
        let now = (self.clock)();
        if let Ok(partitions) = self.partitions.lock() {
            if let Some(kept) = partitions.get(partition) {
                if now.saturating_duration_since(kept.read_at) < self.ttl {
                    return Ok(kept.records.clone());
                }
            }
        }
        let records = self.inner.query(partition).await?;
        if let Ok(mut partitions) = self.partitions.lock() {
            if partitions.len() >= MAX_NAMESPACES && !partitions.contains_key(partition) {
                partitions.clear();
            }
            let kept = KeptKeys {
                read_at: now,
                records: records.clone(),
            };
            partitions.insert(partition.to_owned(), kept);
        }
        Ok(records)
    }

    async fn scan(&self) -> Result<Vec<Record>, StoreError> {
        self.inner.scan().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryMetadataStore;
    use crate::names::Namespace;
    use crate::store::KeyRecord;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn key(name: &str) -> Record {
        Record::Key(KeyRecord {
            namespace: Namespace::parse("acme").unwrap(),
            key: format!("keys/acme/{name}.asc"),
            revision: "1".into(),
            verdict: Err("not a key".into()),
        })
    }

    #[tokio::test]
    async fn keys_are_read_again_after_the_ttl_and_nothing_else_is_kept() {
        let store = Arc::new(MemoryMetadataStore::new());
        let seconds = Arc::new(AtomicU64::new(0));
        let base = Instant::now();
        let clock_seconds = Arc::clone(&seconds);
        let inner: Arc<dyn MetadataStore> = store.clone();
        let cache = CachedKeys::with_clock(
            inner,
            Duration::from_secs(60),
            Arc::new(move || base + Duration::from_secs(clock_seconds.load(Ordering::SeqCst))),
        );
        store.insert(key("a")).unwrap();
        assert_eq!(cache.query("keys/acme").await.unwrap().len(), 1);
        // Removed by the indexer: still seen for up to a minute, then gone.
        store.delete(&key("a").id()).await.unwrap();
        seconds.store(59, Ordering::SeqCst);
        assert_eq!(cache.query("keys/acme").await.unwrap().len(), 1);
        seconds.store(60, Ordering::SeqCst);
        assert!(cache.query("keys/acme").await.unwrap().is_empty());
        // Other partitions are never kept.
        store.insert(key("b")).unwrap();
        let id = key("b").id();
        assert!(cache.get(&id).await.unwrap().is_some());
        store.delete(&id).await.unwrap();
        assert!(cache.get(&id).await.unwrap().is_none());
    }
}
