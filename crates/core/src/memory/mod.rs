//! In-memory stores. The metadata store is the local shape's index (rebuilt from the data
//! directory at start); the artifact, token and sign-in record stores are fakes for tests (feature
//! `test-support`), out of production builds.

#[cfg(any(test, feature = "test-support"))]
mod artifacts;
#[cfg(any(test, feature = "test-support"))]
mod grants;
mod metadata;
#[cfg(test)]
mod tests;
#[cfg(any(test, feature = "test-support"))]
mod tokens;

#[cfg(any(test, feature = "test-support"))]
pub use artifacts::MemoryArtifactStore;
#[cfg(any(test, feature = "test-support"))]
pub use grants::MemoryGrantStore;
pub use metadata::MemoryMetadataStore;
#[cfg(any(test, feature = "test-support"))]
pub use tokens::MemoryTokenStore;

use crate::store::StoreError;

fn poisoned() -> StoreError {
    StoreError::new("in-memory store is unusable after a panic in another thread")
}
