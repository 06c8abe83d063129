//! Fetch slots with a share per upstream host: at most `size` fetches at once, of which one
//! host may hold only half (rounded up), so a slow or stalling host cannot keep another's
//! fetches from starting. Releases (metadata) and packages each have a pool of their own, so
//! a metadata fetch never waits behind package downloads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::names::Hostname;

/// One kind of fetch's slots.
pub(super) struct Pool {
    all: Arc<Semaphore>,
    size: usize,
    per_host: usize,
    hosts: Mutex<HashMap<Hostname, Arc<Semaphore>>>,
}

/// A fetch's slot: its host's share and one of all the slots, given back when dropped.
pub(crate) struct Slot {
    _host: OwnedSemaphorePermit,
    _all: OwnedSemaphorePermit,
}

impl Pool {
    /// `size` slots, half of them (rounded up) for one host at most.
    pub(super) fn new(size: usize) -> Pool {
        let size = size.max(1);
        Pool {
            all: Arc::new(Semaphore::new(size)),
            size,
            per_host: size.div_ceil(2),
            hosts: Mutex::new(HashMap::new()),
        }
    }

    /// How many slots there are in all.
    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// How many one host may hold.
    pub(super) fn per_host(&self) -> usize {
        self.per_host
    }

    fn host(&self, host: &Hostname) -> Arc<Semaphore> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        // Hosts come from the allow-list, which names each one: the map stays small.
        Arc::clone(
            hosts
                .entry(host.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_host))),
        )
    }

    /// A slot for `host`, waiting at most `wait` for its share and for a free slot.
    pub(super) async fn acquire(&self, host: &Hostname, wait: Duration) -> Option<Slot> {
        let share = self.host(host);
        let all = Arc::clone(&self.all);
        let both = async move {
            let host = share.acquire_owned().await.ok()?;
            let all = all.acquire_owned().await.ok()?;
            Some(Slot {
                _host: host,
                _all: all,
            })
        };
        tokio::time::timeout(wait, both).await.ok().flatten()
    }

    /// A slot for `host` if one is free now.
    pub(super) fn try_acquire(&self, host: &Hostname) -> Option<Slot> {
        let host = self.host(host).try_acquire_owned().ok()?;
        let all = Arc::clone(&self.all).try_acquire_owned().ok()?;
        Some(Slot {
            _host: host,
            _all: all,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_host_holds_half_the_slots_and_another_gets_the_rest() {
        let pool = Pool::new(4);
        let slow = Hostname::parse("slow.test").unwrap();
        let other = Hostname::parse("other.test").unwrap();
        let a = pool.try_acquire(&slow).unwrap();
        let _b = pool.acquire(&slow, Duration::from_secs(1)).await.unwrap();
        assert!(
            pool.try_acquire(&slow).is_none(),
            "a third slot for one host"
        );
        assert!(
            pool.acquire(&slow, Duration::from_millis(50))
                .await
                .is_none(),
            "a third slot for one host after waiting"
        );
        let _c = pool.try_acquire(&other).unwrap();
        let _d = pool.try_acquire(&other).unwrap();
        assert!(pool.try_acquire(&other).is_none());
        drop(a);
        assert!(pool.try_acquire(&slow).is_some(), "a slot given back");
        assert_eq!((Pool::new(1).per_host(), Pool::new(5).per_host()), (1, 3));
    }
}
