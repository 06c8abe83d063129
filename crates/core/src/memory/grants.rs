//! One-time sign-in records held in memory, for tests.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::poisoned;
use crate::identity::grants::{GrantKind, GrantStore, Taken};
use crate::store::StoreError;

/// One-time records in memory, for tests.
#[derive(Debug, Default)]
pub struct MemoryGrantStore(Mutex<BTreeMap<(GrantKind, String), Taken>>);

#[async_trait]
impl GrantStore for MemoryGrantStore {
    async fn put(
        &self,
        kind: GrantKind,
        id: &str,
        doc: String,
        expires_at: u64,
    ) -> Result<(), StoreError> {
        let mut map = self.0.lock().map_err(|_| poisoned())?;
        map.insert((kind, id.to_owned()), Taken { doc, expires_at });
        Ok(())
    }

    async fn take(&self, kind: GrantKind, id: &str) -> Result<Option<Taken>, StoreError> {
        let mut map = self.0.lock().map_err(|_| poisoned())?;
        Ok(map.remove(&(kind, id.to_owned())))
    }
}
