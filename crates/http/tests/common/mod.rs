//! What the router tests share: the core's fixtures and tokens.

#![allow(dead_code)] // each test file uses part of it

use std::time::SystemTime;

use tfreg_core::memory::MemoryTokenStore;
use tfreg_core::tokens::{self, TokenStore};
use tfreg_core::Namespace;

/// A fixture of the core's tests (`crates/core/tests/fixtures/`).
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../core/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A new token in `store` reading `namespaces` (all when empty).
pub async fn token(store: &MemoryTokenStore, namespaces: &[&str]) -> String {
    let namespaces = namespaces
        .iter()
        .map(|n| Namespace::parse(n).unwrap())
        .collect();
    let new = tokens::generate(namespaces, String::new(), None, SystemTime::now());
    store.put(new.record).await.unwrap();
    new.token
}
