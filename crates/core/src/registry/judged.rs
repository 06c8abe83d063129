//! Answers derived once per change, not once per request, for stores that count their writes
//! ([`crate::store::MetadataReader::generation`]: the local shape's index): modules' and
//! providers' versions documents, parsed.
//!
//! A value is kept while the store's generation stays the same and, when it has one, until
//! the first moment at which time alone could change it; any write anywhere in the store
//! starts over.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::tokens::unix;

/// At most this many answers are kept.
const MAX_ENTRIES: usize = 4096;

struct Entry<V> {
    generation: u64,
    /// The first Unix second at which the value may change by time alone.
    until: Option<u64>,
    value: Arc<V>,
}

/// Values derived from the records of one generation of the store, by key (a provider's
/// judged releases, a module's served archives); shared by the clones of a registry.
pub struct Kept<K, V> {
    entries: Mutex<HashMap<K, Entry<V>>>,
}

impl<K, V> Default for Kept<K, V> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone, V> Kept<K, V> {
    /// The kept value of `key`, if it still holds.
    pub fn get(&self, key: &K, generation: u64, now: SystemTime) -> Option<Arc<V>> {
        let entries = self.entries.lock().ok()?;
        let entry = entries.get(key)?;
        let current = entry.generation == generation && entry.until.is_none_or(|t| unix(now) < t);
        current.then(|| Arc::clone(&entry.value))
    }

    /// Keeps a value made from records read at `generation` (read before the records).
    pub fn put(&self, key: &K, generation: u64, until: Option<u64>, value: Arc<V>) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(key) {
            entries.clear();
        }
        entries.insert(
            key.clone(),
            Entry {
                generation,
                until,
                value,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::ProviderAddress;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn a_judgement_holds_for_its_generation_until_its_next_change() {
        let cache: Kept<ProviderAddress, Vec<u8>> = Kept::default();
        let provider = ProviderAddress::parse("acme", "widget").unwrap();
        let at = |s| UNIX_EPOCH + Duration::from_secs(s);
        cache.put(&provider, 7, Some(2000), Arc::new(vec![]));
        assert!(cache.get(&provider, 7, at(1999)).is_some());
        assert!(cache.get(&provider, 7, at(2000)).is_none());
        assert!(cache.get(&provider, 8, at(1000)).is_none());
        cache.put(&provider, 8, None, Arc::new(vec![]));
        assert!(cache.get(&provider, 8, at(u32::MAX as u64)).is_some());
    }
}
