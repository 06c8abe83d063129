//! Tokens held in memory, for tests.

use std::collections::BTreeMap;
use std::sync::RwLock;
use std::time::SystemTime;

use async_trait::async_trait;

use super::poisoned;
use crate::store::StoreError;
use crate::tokens::{TokenRecord, TokenStore};

/// Tokens held in memory, for tests.
#[derive(Debug, Default)]
pub struct MemoryTokenStore(RwLock<BTreeMap<String, TokenRecord>>);

#[async_trait]
impl TokenStore for MemoryTokenStore {
    async fn get(&self, id: &str) -> Result<Option<TokenRecord>, StoreError> {
        Ok(self.0.read().map_err(|_| poisoned())?.get(id).cloned())
    }

    async fn put(&self, record: TokenRecord) -> Result<(), StoreError> {
        let mut tokens = self.0.write().map_err(|_| poisoned())?;
        tokens.insert(record.id.clone(), record);
        Ok(())
    }

    async fn list(&self) -> Result<Vec<TokenRecord>, StoreError> {
        Ok(self
            .0
            .read()
            .map_err(|_| poisoned())?
            .values()
            .cloned()
            .collect())
    }

    async fn record_use(&self, id: &str, at: SystemTime) -> Result<(), StoreError> {
        let mut tokens = self.0.write().map_err(|_| poisoned())?;
        if let Some(record) = tokens.get_mut(id) {
            record.last_used_at = Some(crate::tokens::unix(at));
        }
        Ok(())
    }
}
