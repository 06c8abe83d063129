//! What changed in the local index since a reader last looked: the ids of records and
//! documents written or deleted. Whoever keeps something derived from the index (the saved
//! index's journal, the status a running server keeps for `tfreg publish`) takes the ids
//! that changed and redoes only what they touch, so keeping it costs what changed, never
//! the whole index.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tfreg_core::store::RecordId;

/// The ids written or deleted since the last [`ChangeFeed::take`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Changed {
    /// Records (pins included).
    pub records: BTreeSet<RecordId>,
    /// Documents.
    pub documents: BTreeSet<RecordId>,
}

impl Changed {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty() && self.documents.is_empty()
    }
}

/// One reader's view of the changes. Dropped, it stops collecting.
#[derive(Debug)]
pub struct ChangeFeed(Arc<Mutex<Changed>>);

impl ChangeFeed {
    /// The ids that changed since the last call (or since the feed was made).
    pub fn take(&self) -> Changed {
        std::mem::take(&mut *lock(&self.0))
    }

    /// Puts ids back, for a reader that could not act on them (they are taken again next).
    pub fn put_back(&self, changed: Changed) {
        let mut mine = lock(&self.0);
        mine.records.extend(changed.records);
        mine.documents.extend(changed.documents);
    }
}

/// Every reader's feed, told of each change by the store.
#[derive(Debug, Default)]
pub(crate) struct ChangeFeeds {
    feeds: Mutex<Vec<Weak<Mutex<Changed>>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every change under these locks is one call: a panic leaves the sets whole.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl ChangeFeeds {
    /// A new feed, empty: it collects what changes from now on.
    pub(crate) fn subscribe(&self) -> ChangeFeed {
        let feed = Arc::new(Mutex::new(Changed::default()));
        lock(&self.feeds).push(Arc::downgrade(&feed));
        ChangeFeed(feed)
    }

    pub(crate) fn record(&self, id: &RecordId) {
        self.each(|changed| {
            changed.records.insert(id.clone());
        });
    }

    pub(crate) fn document(&self, id: &RecordId) {
        self.each(|changed| {
            changed.documents.insert(id.clone());
        });
    }

    fn each(&self, mut note: impl FnMut(&mut Changed)) {
        let mut feeds = lock(&self.feeds);
        if feeds.is_empty() {
            return;
        }
        feeds.retain(|feed| match feed.upgrade() {
            Some(feed) => {
                note(&mut lock(&feed));
                true
            }
            None => false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_feed_takes_what_changed_since_it_last_took_and_a_dropped_one_stops() {
        let feeds = ChangeFeeds::default();
        let id = |sort: &str| RecordId {
            partition: "p".into(),
            sort: sort.into(),
        };
        feeds.record(&id("before"));
        let (a, b) = (feeds.subscribe(), feeds.subscribe());
        feeds.record(&id("r"));
        feeds.document(&id("d"));
        let taken = a.take();
        assert_eq!(taken.records, BTreeSet::from([id("r")]));
        assert_eq!(taken.documents, BTreeSet::from([id("d")]));
        assert!(a.take().is_empty());
        a.put_back(taken.clone());
        assert_eq!(a.take(), taken);
        drop(b);
        feeds.record(&id("later"));
        assert_eq!(lock(&feeds.feeds).len(), 1);
        assert_eq!(a.take().records, BTreeSet::from([id("later")]));
    }
}
