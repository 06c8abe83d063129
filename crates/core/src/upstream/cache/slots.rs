//! One lock per item (a provider's list, a release, a package), so one fetch serves every
//! request for it; entries not in use are dropped past a bound.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use super::MAX_SLOTS;

/// One lock per item, so one fetch serves every request for it.
pub(super) struct Slots<K, V> {
    map: Mutex<HashMap<K, Arc<tokio::sync::Mutex<V>>>>,
}

impl<K: Eq + Hash + Clone, V: Default> Slots<K, V> {
    pub(super) fn new() -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn get(&self, key: &K) -> Arc<tokio::sync::Mutex<V>> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_SLOTS && !map.contains_key(key) {
            map.retain(|_, slot| Arc::strong_count(slot) > 1);
        }
        map.entry(key.clone()).or_default().clone()
    }
}
