//! In-memory stores. The metadata store is the local shape's index (rebuilt from the data
//! directory at start); the artifact and token stores are fakes for tests (feature
//! `test-support`), out of production builds.

#[cfg(any(test, feature = "test-support"))]
mod artifacts;
mod metadata;
#[cfg(test)]
mod tests;
#[cfg(any(test, feature = "test-support"))]
mod tokens;

#[cfg(any(test, feature = "test-support"))]
pub use artifacts::MemoryArtifactStore;
pub use metadata::MemoryMetadataStore;
#[cfg(any(test, feature = "test-support"))]
pub use tokens::MemoryTokenStore;

use crate::store::StoreError;

fn poisoned() -> StoreError {
    StoreError::new("in-memory store is unusable after a panic in another thread")
}
