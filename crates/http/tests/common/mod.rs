//! What the router tests share: the core's fixtures, a small indexed registry, and tokens.

#![allow(dead_code)] // each test file uses part of it

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tfreg_core::memory::{MemoryArtifactStore, MemoryMetadataStore, MemoryTokenStore};
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::{self, TokenStore};
use tfreg_core::{Downloads, Indexer, Namespace, Registry};

/// A registry holding `modules` (keys of module archives, each documenting a variable) and
/// the fixtures' signed acme/widget 1.0.0, indexed; how its files are downloaded, and the
/// signer of its download URLs.
pub async fn indexed_registry(modules: &[String]) -> (Registry, Downloads, Arc<UrlSigner>) {
    let signer = Arc::new(UrlSigner::new(vec![42; 32], Duration::from_secs(300)));
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let metadata = Arc::new(MemoryMetadataStore::new());
    for key in modules {
        let format = tfreg_core::layout::ArchiveFormat::split(key).unwrap().1;
        let main = format!("variable \"name\" {{ description = \"{key}\" }}\n");
        artifacts.put(
            key,
            tfreg_core::module_archive::archive_of(format, &[("main.tf", main.as_bytes())]),
        );
    }
    let dir = "providers/acme/widget/1.0.0";
    for name in [
        "terraform-provider-widget_1.0.0_SHA256SUMS",
        "terraform-provider-widget_1.0.0_SHA256SUMS.sig",
        "terraform-provider-widget_1.0.0_linux_amd64.zip",
    ] {
        artifacts.put(&format!("{dir}/{name}"), fixture(name));
    }
    artifacts.put("keys/acme/release.asc", fixture("release.asc"));
    let indexer = Indexer::new(metadata.clone(), artifacts.clone());
    indexer.reindex_all(|_, _| {}).await.unwrap();
    let downloads = Downloads::served(signer.clone(), artifacts);
    (
        Registry::new(metadata, downloads.clone()),
        downloads,
        signer,
    )
}

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
