//! The per-client share of upstream fetches: however many fetches run across all clients
//! (`max_fetches`), one client (an address) may have only a few of them at once, so one
//! client asking for many uncached releases cannot keep everyone else's from starting. The
//! caller names the client for the work it starts ([`for_client`]); cached answers cost
//! nothing and are never limited.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

tokio::task_local! {
    static CLIENT: IpAddr;
}

/// Runs `work` on behalf of `client`: the upstream fetches it starts count against that
/// client's share.
pub async fn for_client<F: Future>(client: Option<IpAddr>, work: F) -> F::Output {
    match client {
        Some(client) => CLIENT.scope(client, work).await,
        None => work.await,
    }
}

/// Fetches in flight per client.
#[derive(Default)]
pub(super) struct ClientShares {
    active: Mutex<HashMap<IpAddr, usize>>,
}

/// One fetch of one client: its share is given back when dropped.
pub(super) struct Share {
    shares: Arc<ClientShares>,
    client: IpAddr,
}

impl ClientShares {
    /// A share for the current client, if it has fewer than `max` fetches in flight; `Ok(None)`
    /// when no client is named (background fetches, `tfreg sync`).
    pub(super) fn take(self: &Arc<Self>, max: usize) -> Result<Option<Share>, usize> {
        let Ok(client) = CLIENT.try_with(|c| *c) else {
            return Ok(None);
        };
        let mut active = self.active.lock().unwrap_or_else(|e| e.into_inner());
        let count = active.entry(client).or_default();
        if *count >= max {
            return Err(*count);
        }
        *count += 1;
        Ok(Some(Share {
            shares: Arc::clone(self),
            client,
        }))
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut active = self.shares.active.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = active.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                active.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_client_gets_its_share_and_gives_it_back() {
        let shares = Arc::new(ClientShares::default());
        assert!(
            shares.take(1).unwrap().is_none(),
            "no client named: not counted"
        );
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        for_client(Some(a), async {
            let first = shares.take(1).unwrap().unwrap();
            assert_eq!(shares.take(1).err(), Some(1));
            for_client(Some(b), async {
                assert!(shares.take(1).unwrap().is_some())
            })
            .await;
            drop(first);
            assert!(shares.take(1).unwrap().is_some());
        })
        .await;
        assert!(shares.active.lock().unwrap().is_empty());
    }
}
