//! The world the core's integration tests run in: in-memory stores, the indexer and the
//! registry, with the GnuPG-made fixtures of `fixtures/make-fixtures.sh`.

#![allow(dead_code)] // each test file uses part of it

use std::sync::Arc;
use std::time::Duration;

use tfreg_core::hash::PackageLimits;
use tfreg_core::memory::{MemoryArtifactStore, MemoryMetadataStore};
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::Access;
use tfreg_core::{Downloads, Hostname, Indexer, ProviderAddress, Registry, RegistryError, Version};

pub const DIR: &str = "providers/acme/widget/1.0.0";
pub const SUMS: &str = "terraform-provider-widget_1.0.0_SHA256SUMS";
pub const LINUX: &str = "terraform-provider-widget_1.0.0_linux_amd64.zip";
pub const DARWIN: &str = "terraform-provider-widget_1.0.0_darwin_arm64.zip";
pub const HOSTNAME: &str = "registry.example.test";

pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub struct World {
    pub artifacts: Arc<MemoryArtifactStore>,
    pub metadata: Arc<MemoryMetadataStore>,
    /// The registry's own signed URLs, served from `artifacts`.
    pub downloads: Downloads,
    pub indexer: Indexer,
    pub registry: Registry,
}

impl World {
    pub fn new() -> World {
        World::with_limits(PackageLimits::default())
    }

    /// A world whose indexer unpacks packages within `limits`.
    pub fn with_limits(limits: PackageLimits) -> World {
        let signer = Arc::new(UrlSigner::new(vec![3; 32], Duration::from_secs(60)));
        let artifacts = Arc::new(MemoryArtifactStore::new());
        let downloads = Downloads::served(signer, artifacts.clone());
        let metadata = Arc::new(MemoryMetadataStore::new());
        let hostname = Hostname::parse(HOSTNAME).unwrap();
        World {
            indexer: Indexer::new(metadata.clone(), artifacts.clone())
                .with_hostname(Some(hostname.clone()))
                .with_limits(limits),
            registry: Registry::new(metadata.clone(), downloads.clone()).with_hostname(hostname),
            downloads,
            artifacts,
            metadata,
        }
    }

    /// Uploads `content` under `key` and delivers its event.
    pub async fn put(&self, key: &str, content: Vec<u8>) {
        self.artifacts.put(key, content);
        self.indexer.index_key(key).await.unwrap();
    }

    pub async fn delete(&self, key: &str) {
        self.artifacts.delete(key);
        self.indexer.index_key(key).await.unwrap();
    }

    /// Served versions with their platforms: `["1.0.0: darwin_arm64 linux_amd64"]`.
    pub async fn served(&self) -> Vec<String> {
        match self
            .registry
            .provider_versions(&Access::All, &widget())
            .await
        {
            Ok(doc) => doc
                .versions
                .iter()
                .map(|v| {
                    let platforms: Vec<String> = v
                        .platforms
                        .iter()
                        .map(|p| format!("{}_{}", p.os, p.arch))
                        .collect();
                    format!("{}: {}", v.version, platforms.join(" "))
                })
                .collect(),
            Err(RegistryError::NotFound(_)) => vec![],
            Err(e) => panic!("{e}"),
        }
    }

    /// Why version 1.0.0 is not served.
    pub async fn problems(&self) -> String {
        World::report(&self.registry).await
    }

    pub async fn report(registry: &Registry) -> String {
        let reports = registry.provider_report(&widget()).await.unwrap();
        format!("{reports:?}")
    }

    pub async fn publish_release(&self, signature: &str, key: &str) {
        self.put(&format!("{DIR}/{LINUX}"), fixture(LINUX)).await;
        self.put(&format!("{DIR}/{DARWIN}"), fixture(DARWIN)).await;
        self.put(&format!("{DIR}/{SUMS}"), fixture(SUMS)).await;
        self.put(&format!("{DIR}/{SUMS}.sig"), fixture(signature))
            .await;
        self.put(&format!("keys/acme/{key}"), fixture(key)).await;
    }
}

pub fn widget() -> ProviderAddress {
    ProviderAddress::parse("acme", "widget").unwrap()
}

pub fn v1() -> Version {
    Version::parse("1.0.0").unwrap()
}
