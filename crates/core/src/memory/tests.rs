//! The indexer and the registry over the in-memory stores.

use std::time::Duration;

use std::sync::Arc;

use super::{MemoryArtifactStore, MemoryMetadataStore};
use crate::downloads::Downloads;
use crate::index::{IndexOutcome, Indexer};
use crate::names::ModuleAddress;
use crate::origin::Origin;
use crate::registry::{Registry, RegistryError};
use crate::signing::UrlSigner;
use crate::tokens::Access;
use crate::version::Version;

struct World {
    artifacts: Arc<MemoryArtifactStore>,
    indexer: Indexer,
    registry: Registry,
}

fn world() -> World {
    let signer = Arc::new(UrlSigner::new(vec![1; 32], Duration::from_secs(60)));
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let metadata = Arc::new(MemoryMetadataStore::new());
    World {
        indexer: Indexer::new(metadata.clone(), artifacts.clone()),
        registry: Registry::new(metadata, Downloads::served(signer, artifacts.clone())),
        artifacts,
    }
}

fn addr(s: &str) -> ModuleAddress {
    let p: Vec<&str> = s.split('/').collect();
    ModuleAddress::parse(p[0], p[1], p[2]).unwrap()
}

/// A module archive that passes the checks, in `key`'s format.
fn module(key: &str) -> Vec<u8> {
    let (_, format) = crate::layout::ArchiveFormat::split(key).unwrap();
    crate::module_archive::archive_of(format, &[("main.tf", b"")])
}

async fn versions(w: &World, a: &str) -> Vec<String> {
    match w.registry.module_versions(&Access::All, &addr(a)).await {
        Ok(v) => v.modules[0]
            .versions
            .iter()
            .map(|v| v.version.to_string())
            .collect(),
        Err(RegistryError::NotFound(_)) => vec![],
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn events_in_any_order_and_repeated_converge_on_the_store() {
    let w = world();
    let keys = [
        "modules/acme/network/aws/1.0.0.tar.gz",
        "modules/acme/network/aws/2.0.0-beta.1.tar.gz",
        "modules/Acme/Network/AWS/1.1.0.zip",
    ];
    // Given an event that arrives before its object (S3 delivers out of order) ...
    w.indexer.index_key(keys[0]).await.unwrap();
    assert!(versions(&w, "acme/network/aws").await.is_empty());
    // ... when the objects exist and every event is replayed twice, in reverse,
    for key in keys {
        w.artifacts.put(key, module(key));
    }
    for key in keys.iter().rev().chain(keys.iter()) {
        w.indexer.index_key(key).await.unwrap();
    }
    // then each version is served once, in semver order, whatever the key's case.
    assert_eq!(
        versions(&w, "ACME/network/aws").await,
        ["1.0.0", "1.1.0", "2.0.0-beta.1"]
    );

    // Each archive's checksum is recorded at publish.
    let v1 = Version::parse("1.0.0").unwrap();
    let archive = w
        .registry
        .module_archive(&Access::All, &addr("acme/network/aws"), &v1)
        .await
        .unwrap();
    use sha2::Digest;
    assert_eq!(
        archive.sha256,
        hex::encode(sha2::Sha256::digest(module(keys[0])))
    );

    // A stale "created" event for a deleted object unpublishes it.
    w.artifacts.delete(keys[1]);
    let outcome = w.indexer.index_key(keys[1]).await.unwrap();
    assert!(
        matches!(outcome, IndexOutcome::Unpublished(_)),
        "{outcome:?}"
    );
    assert_eq!(versions(&w, "acme/network/aws").await, ["1.0.0", "1.1.0"]);
}

#[tokio::test]
async fn a_version_in_a_second_format_never_replaces_the_first_served() {
    let w = world();
    let origin = Origin::https("reg.example:443").unwrap();
    let v = Version::parse("1.0.0").unwrap();
    for key in ["modules/a/b/c/1.0.0.zip", "modules/a/b/c/1.0.0.tar.gz"] {
        w.artifacts.put(key, module(key));
        w.indexer.index_key(key).await.unwrap();
    }
    let url = w
        .registry
        .module_download_url(&Access::All, &addr("a/b/c"), &v, &origin)
        .await
        .unwrap();
    assert!(url.contains("/1.0.0.zip?"), "{url}");
    // Deleting the served one yanks the version: the other format does not take over.
    w.artifacts.delete("modules/a/b/c/1.0.0.zip");
    w.indexer
        .index_key("modules/a/b/c/1.0.0.zip")
        .await
        .unwrap();
    w.indexer
        .index_key("modules/a/b/c/1.0.0.tar.gz")
        .await
        .unwrap();
    let answer = w
        .registry
        .module_download_url(&Access::All, &addr("a/b/c"), &v, &origin)
        .await;
    assert!(
        matches!(answer, Err(RegistryError::NotFound(_))),
        "{answer:?}"
    );
}

#[tokio::test]
async fn invalid_keys_are_rejected_and_never_served() {
    let w = world();
    w.artifacts
        .put("modules/a/b/c/latest.tar.gz", b"x".to_vec());
    let outcome = w
        .indexer
        .index_key("modules/a/b/c/latest.tar.gz")
        .await
        .unwrap();
    assert!(
        matches!(outcome, IndexOutcome::Rejected { .. }),
        "{outcome:?}"
    );
    assert!(versions(&w, "a/b/c").await.is_empty());
    let summary = w.indexer.reindex_all(|_, _| {}).await.unwrap();
    assert_eq!(summary.rejected, 1);
    assert_eq!(summary.published, 0);
}

#[tokio::test]
async fn deferred_documents_are_made_once_per_module_at_the_flush() {
    let signer = Arc::new(UrlSigner::new(vec![1; 32], Duration::from_secs(60)));
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let metadata = Arc::new(MemoryMetadataStore::new());
    let indexer = Indexer::new(metadata.clone(), artifacts.clone()).with_deferred_documents();
    let registry = Registry::new(metadata, Downloads::served(signer, artifacts.clone()));
    let listed = || async {
        registry
            .list_modules(
                &Access::All,
                &crate::registry::modules::ModuleFilter::default(),
                crate::registry::page::Page::default(),
                "/v1/modules",
                &[],
            )
            .await
            .unwrap()
            .modules
            .iter()
            .map(|m| m.id.clone())
            .collect::<Vec<_>>()
    };
    for key in ["modules/a/b/c/1.0.0.tgz", "modules/a/b/c/1.1.0.tgz"] {
        artifacts.put(key, module(key));
        indexer.index_key(key).await.unwrap();
    }
    // Answered and listed once the batch is flushed, made once for both versions.
    let versions = || async {
        registry
            .module_versions(&Access::All, &addr("a/b/c"))
            .await
            .map(|v| v.modules[0].versions.len())
            .unwrap_or(0)
    };
    assert_eq!(versions().await, 0);
    assert!(listed().await.is_empty());
    assert_eq!(indexer.flush_documents().await.unwrap(), 1);
    assert_eq!(versions().await, 2);
    assert_eq!(listed().await, ["a/b/c/1.1.0"]);
    assert_eq!(indexer.flush_documents().await.unwrap(), 0);
    // A deletion is listed at the next flush too.
    for key in ["modules/a/b/c/1.0.0.tgz", "modules/a/b/c/1.1.0.tgz"] {
        artifacts.delete(key);
        indexer.index_key(key).await.unwrap();
    }
    assert_eq!(listed().await, ["a/b/c/1.1.0"]);
    indexer.flush_documents().await.unwrap();
    assert!(listed().await.is_empty());
}

#[tokio::test]
async fn unknown_modules_and_versions_are_not_found() {
    let w = world();
    let key = "modules/a/b/c/1.0.0.tgz";
    w.artifacts.put(key, module(key));
    w.indexer.reindex_all(|_, _| {}).await.unwrap();
    let missing = Version::parse("9.9.9").unwrap();
    let err = w
        .registry
        .module_archive(&Access::All, &addr("a/b/c"), &missing)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "module a/b/c has no version 9.9.9");
    let err = w
        .registry
        .module_versions(&Access::All, &addr("a/b/d"))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "module a/b/d is not published here");
}

#[tokio::test]
async fn the_memory_stores_keep_the_storage_contract() {
    crate::store::contract::metadata_store(&MemoryMetadataStore::new()).await;
    let artifacts = MemoryArtifactStore::new();
    crate::store::contract::artifact_store(&artifacts, &artifacts).await;
}

#[tokio::test]
async fn kept_answers_follow_every_change_of_what_they_are_made_of() {
    let w = world();
    let key = "modules/a/b/c/1.0.0.tgz";
    w.artifacts.put(key, module(key));
    w.indexer.reindex_all(|_, _| {}).await.unwrap();
    let abc = addr("a/b/c");
    let answer = || w.registry.module_versions_answer(&Access::All, &abc);
    let first = answer().await.unwrap();
    assert!(
        Arc::ptr_eq(&first, &answer().await.unwrap()),
        "kept, not made again"
    );
    // The bytes are the typed answer's.
    let typed = w
        .registry
        .module_versions(&Access::All, &addr("a/b/c"))
        .await
        .unwrap();
    let sent: serde_json::Value = first.value().unwrap();
    assert_eq!(sent, serde_json::to_value(&typed).unwrap());
    // A new version is in the next answer.
    let key = "modules/a/b/c/1.1.0.tgz";
    w.artifacts.put(key, module(key));
    w.indexer.index_key(key).await.unwrap();
    w.indexer.flush_documents().await.unwrap();
    let second: serde_json::Value = answer().await.unwrap().value().unwrap();
    assert_eq!(second["modules"][0]["versions"][1]["version"], "1.1.0");
    // Out of scope is absent, kept answer or not.
    let scoped = Access::Namespaces([crate::names::Namespace::parse("other").unwrap()].into());
    assert!(w
        .registry
        .module_versions_answer(&scoped, &addr("a/b/c"))
        .await
        .is_err());
    // A download URL is the same all through its window, and gone with its file.
    let origin = Origin::https("registry.example.com").unwrap();
    let v = Version::parse("1.1.0").unwrap();
    let url = || {
        w.registry
            .module_download_url(&Access::All, &abc, &v, &origin)
    };
    let made = url().await.unwrap();
    let window = w.registry.downloads().window(std::time::SystemTime::now());
    if made.contains(&format!("expires={}&", window.start + 60)) {
        assert_eq!(url().await.unwrap(), made);
    }
    assert!(w
        .registry
        .module_download_url(&scoped, &addr("a/b/c"), &v, &origin)
        .await
        .is_err());
    w.artifacts.delete(key);
    w.indexer.index_key(key).await.unwrap();
    w.indexer.flush_documents().await.unwrap();
    assert!(url().await.is_err());
}

#[tokio::test]
async fn kept_catalogue_pages_follow_every_change_of_the_listing() {
    let w = world();
    let key = "modules/a/b/c/1.0.0.tgz";
    w.artifacts.put(key, module(key));
    w.indexer.reindex_all(|_, _| {}).await.unwrap();
    let all = crate::registry::modules::ModuleFilter::default();
    let page = crate::registry::page::Page::default();
    let registry = &w.registry;
    let all = &all;
    let list = |access: Access| async move {
        registry
            .list_modules(&access, all, page, "/v1/modules", &[])
            .await
            .unwrap()
    };
    let ids = |list: &Arc<crate::protocol::details::ModuleList>| -> Vec<String> {
        list.modules.iter().map(|m| m.id.clone()).collect()
    };
    let first = list(Access::All).await;
    assert_eq!(ids(&first), ["a/b/c/1.0.0"]);
    assert!(
        Arc::ptr_eq(&first, &list(Access::All).await),
        "kept, not made again"
    );
    // A page kept for one scope is never another scope's.
    let scoped = Access::Namespaces([crate::names::Namespace::parse("x").unwrap()].into());
    assert!(list(scoped.clone()).await.modules.is_empty());
    // A new module, and a module whose only version is gone, show on the next page.
    let key = "modules/x/y/z/2.0.0.tgz";
    w.artifacts.put(key, module(key));
    w.indexer.index_key(key).await.unwrap();
    assert_eq!(
        ids(&list(Access::All).await),
        ["a/b/c/1.0.0", "x/y/z/2.0.0"]
    );
    assert_eq!(ids(&list(scoped).await), ["x/y/z/2.0.0"]);
    let key = "modules/a/b/c/1.0.0.tgz";
    w.artifacts.delete(key);
    w.indexer.index_key(key).await.unwrap();
    assert_eq!(ids(&list(Access::All).await), ["x/y/z/2.0.0"]);
}
