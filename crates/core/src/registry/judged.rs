//! Answers derived once per change, not once per request, for stores that count their writes
//! ([`crate::store::MetadataStore::generation`]: the local shape's index): a provider's judged
//! releases, a module's served archives.
//!
//! Whether a release is served depends on its provider's records, its namespace's keys and
//! the time (a key or a signature that expires). A value is kept while the store's
//! generation stays the same and until the first moment at which time alone could change
//! it; any write anywhere in the store starts over.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::providers::{ReleaseReport, ServedRelease};
use crate::store::Record;
use crate::tokens::unix;

/// One version's judgement: why it is or is not served, and what is served of it.
pub type Judged = (ReleaseReport, Option<ServedRelease>);

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

/// The first Unix second after `now` at which a judgement of `records` may change by time
/// alone: a signing key's or a signature's expiry.
pub fn next_change(records: &[Record], now: SystemTime) -> Option<u64> {
    let now = unix(now);
    records
        .iter()
        .filter_map(|r| match r {
            Record::Signature(s) => s.verdict.as_ref().ok(),
            _ => None,
        })
        .flat_map(|by| {
            // A key is expired from its expiry on; a signature only after its expiry.
            [
                by.key_info.expires_at,
                by.signature_expires_at.map(|t| t.saturating_add(1)),
            ]
        })
        .flatten()
        .filter(|&t| t > now)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpg::PublicKeyInfo;
    use crate::names::ProviderAddress;
    use crate::store::{SignatureRecord, SignedBy};
    use crate::version::Version;
    use std::time::{Duration, UNIX_EPOCH};

    fn signature(key_expiry: Option<u64>, signature_expiry: Option<u64>) -> Record {
        let provider = ProviderAddress::parse("acme", "widget").unwrap();
        let key_info = PublicKeyInfo {
            key_id: "ABCD".into(),
            ascii_armor: String::new(),
            expires_at: key_expiry,
        };
        Record::Signature(SignatureRecord {
            provider,
            version: Version::parse("1.0.0").unwrap(),
            key: "k.sig".into(),
            revision: "1".into(),
            sums_key: "k".into(),
            sums_revision: Some("1".into()),
            verdict: Ok(SignedBy {
                key_id: "ABCD".into(),
                key: "keys/acme/k.asc".into(),
                key_revision: "1".into(),
                key_info,
                signature_expires_at: signature_expiry,
            }),
        })
    }

    #[test]
    fn the_next_change_is_the_first_expiry_still_ahead() {
        let now = UNIX_EPOCH + Duration::from_secs(1000);
        assert_eq!(next_change(&[signature(None, None)], now), None);
        assert_eq!(next_change(&[signature(Some(500), None)], now), None);
        assert_eq!(
            next_change(&[signature(Some(5000), Some(2000))], now),
            Some(2001)
        );
        assert_eq!(
            next_change(
                &[signature(Some(1500), None), signature(None, Some(3000))],
                now
            ),
            Some(1500)
        );
    }

    #[test]
    fn a_judgement_holds_for_its_generation_until_its_next_change() {
        let cache: Kept<ProviderAddress, Vec<Judged>> = Kept::default();
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
