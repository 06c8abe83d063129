//! Deprecation and yank records as the indexer keeps them and the read API shows them:
//! whatever order their files arrive in, a bad one refused with its reason, a deleted one
//! without effect, and `reindex` making the same answers from the files alone.

mod world;

use std::sync::Arc;

use tfreg_core::memory::MemoryMetadataStore;
use tfreg_core::module_archive::{archive_of, ArchiveFormat};
use tfreg_core::protocol::details::ModuleDetails;
use tfreg_core::tokens::Access;
use tfreg_core::{Indexer, ModuleAddress, Registry, Version};
use world::{widget, World, DIR, SUMS};

const DIRM: &str = "modules/acme/network/aws";

fn address() -> ModuleAddress {
    ModuleAddress::parse("acme", "network", "aws").unwrap()
}

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

fn archive(n: u8) -> Vec<u8> {
    let main = format!("output \"n\" {{\n  value = {n}\n}}\n");
    archive_of(ArchiveFormat::TarGz, &[("main.tf", main.as_bytes())])
}

async fn details(registry: &Registry, version: &str) -> ModuleDetails {
    registry
        .module_details(&Access::All, &address(), Some(&v(version)))
        .await
        .unwrap()
}

async fn problem(world: &World, key: &str) -> Option<String> {
    let problems = world.registry.problems().await.unwrap();
    problems
        .into_iter()
        .find(|p| p.key == key)
        .map(|p| p.problem)
}

const DEPRECATION: &[u8] =
    br#"{"reason": "CVE-2026-1 <b>in</b> the NAT rules", "replacement": "1.1.0",
    "retire_on": "2027-03-31", "by": "alice", "at": "2026-11-28T09:00:00Z"}"#;
const YANK: &[u8] = br#"{"reason": "leaked a key", "by": "bob", "at": "2026-11-28T10:00:00Z"}"#;

#[tokio::test]
async fn a_deprecation_written_before_or_after_the_archive_marks_the_served_version() {
    for notice_first in [true, false] {
        let world = World::new();
        let notice = format!("{DIRM}/1.0.0_deprecation.json");
        // Given a deprecation and the archive it is about, in either order,
        if notice_first {
            world.put(&notice, DEPRECATION.to_vec()).await;
        }
        world.put(&format!("{DIRM}/1.0.0.tar.gz"), archive(0)).await;
        world.put(&format!("{DIRM}/1.1.0.tar.gz"), archive(1)).await;
        if !notice_first {
            world.put(&notice, DEPRECATION.to_vec()).await;
        }

        // then the version is still served, and its details say it is deprecated;
        let shown = details(&world.registry, "1.0.0").await;
        let deprecation = shown.entry.deprecation.expect("deprecated");
        assert_eq!(deprecation.reason, "CVE-2026-1 <b>in</b> the NAT rules");
        assert_eq!(deprecation.replacement, Some(v("1.1.0")));
        assert_eq!(deprecation.retire_on.as_deref(), Some("2027-03-31"));
        assert_eq!(deprecation.by.as_deref(), Some("alice"));
        let json = serde_json::to_value(details(&world.registry, "1.1.0").await).unwrap();
        assert!(json.get("deprecation").is_none(), "{json}");
        assert_eq!(
            json["deprecated_versions"]["1.0.0"]["replacement"], "1.1.0",
            "{json}"
        );
        // Terraform's own answer is unchanged.
        let versions = world
            .registry
            .module_versions(&Access::All, &address())
            .await
            .unwrap();
        let text = serde_json::to_string(&versions).unwrap();
        assert!(!text.contains("deprecat"), "{text}");

        // The listings show the latest version's deprecation: 1.1.0 has none.
        let listed = world
            .registry
            .list_modules(
                &Access::All,
                &Default::default(),
                Default::default(),
                "/v1/modules",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(listed.modules[0].version, v("1.1.0"));
        assert_eq!(listed.modules[0].deprecation, None);

        // When the deprecation is deleted, the version is no longer marked.
        world.delete(&notice).await;
        let shown = details(&world.registry, "1.0.0").await;
        assert_eq!(shown.entry.deprecation, None);
        assert!(shown.deprecated_versions.is_empty());
    }
}

#[tokio::test]
async fn a_yank_record_is_shown_while_its_version_is_not_served() {
    let world = World::new();
    let yank = format!("{DIRM}/1.0.0_yank.json");
    let old = format!("{DIRM}/1.0.0.tar.gz");
    world.put(&old, archive(0)).await;
    world.put(&format!("{DIRM}/1.1.0.tar.gz"), archive(1)).await;

    // Given a yank record beside a served version, it is not a withdrawal;
    world.put(&yank, YANK.to_vec()).await;
    assert!(details(&world.registry, "1.1.0").await.withdrawn.is_empty());

    // when the version's archive is deleted, it is withdrawn, with who, when and why;
    world.delete(&old).await;
    let shown = details(&world.registry, "1.1.0").await;
    assert_eq!(shown.versions, vec![v("1.1.0")]);
    assert_eq!(shown.withdrawn.len(), 1, "{:?}", shown.withdrawn);
    let withdrawn = &shown.withdrawn[0];
    assert_eq!(withdrawn.version, v("1.0.0"));
    assert_eq!(withdrawn.reason, "leaked a key");
    assert_eq!(withdrawn.by.as_deref(), Some("bob"));
    assert_eq!(withdrawn.at.as_deref(), Some("2026-11-28T10:00:00Z"));

    // served again (its pinned bytes), it is no longer shown as withdrawn;
    world.put(&old, archive(0)).await;
    assert!(details(&world.registry, "1.1.0").await.withdrawn.is_empty());

    // and a record deleted while the version is withdrawn takes the withdrawal away.
    world.delete(&old).await;
    assert_eq!(details(&world.registry, "1.1.0").await.withdrawn.len(), 1);
    world.delete(&yank).await;
    assert!(details(&world.registry, "1.1.0").await.withdrawn.is_empty());
}

#[tokio::test]
async fn a_bad_notice_is_refused_with_its_reason_and_has_no_effect() {
    let world = World::new();
    let notice = format!("{DIRM}/1.0.0_deprecation.json");
    world.put(&format!("{DIRM}/1.0.0.tar.gz"), archive(0)).await;
    world.put(&notice, DEPRECATION.to_vec()).await;
    assert!(details(&world.registry, "1.0.0")
        .await
        .entry
        .deprecation
        .is_some());

    // A notice replaced by a bad one is refused with the parse reason, and the old one's
    // effect goes;
    world
        .put(&notice, br#"{"reason": "x", "retire_on": "soon"}"#.to_vec())
        .await;
    let reason = problem(&world, &notice).await.expect("refused");
    assert!(reason.contains("not a day"), "{reason}");
    assert_eq!(
        details(&world.registry, "1.0.0").await.entry.deprecation,
        None
    );

    // a file too large is refused by its size, unread;
    let large = format!(r#"{{"reason": "{}"}}"#, "x".repeat(5000));
    world.put(&notice, large.into_bytes()).await;
    let reason = problem(&world, &notice).await.expect("refused");
    assert!(reason.contains("more than the 4096"), "{reason}");

    // a yank record with a retire_on is refused too;
    let yank = format!("{DIRM}/1.0.0_yank.json");
    world
        .put(
            &yank,
            br#"{"reason": "x", "retire_on": "2027-01-01"}"#.to_vec(),
        )
        .await;
    assert!(problem(&world, &yank)
        .await
        .unwrap()
        .contains("no retire_on"));

    // and deleting the files ends their problems; the archive was never refused.
    world.delete(&notice).await;
    world.delete(&yank).await;
    assert_eq!(problem(&world, &notice).await, None);
    assert_eq!(problem(&world, &yank).await, None);
    assert_eq!(problem(&world, &format!("{DIRM}/1.0.0.tar.gz")).await, None);
}

#[tokio::test]
async fn a_providers_deprecation_marks_its_release_and_its_yank_record_stays_unshown_while_served()
{
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    world
        .put(&format!("{DIR}/deprecation.json"), DEPRECATION.to_vec())
        .await;
    world.put(&format!("{DIR}/yank.json"), YANK.to_vec()).await;

    let shown = world
        .registry
        .provider_details(&Access::All, &widget(), None)
        .await
        .unwrap();
    let deprecation = shown.deprecation.expect("deprecated");
    assert_eq!(deprecation.reason, "CVE-2026-1 <b>in</b> the NAT rules");
    assert!(shown.deprecated_versions.contains_key(&v("1.0.0")));
    assert!(shown.withdrawn.is_empty());
    // Terraform's versions list carries a warning it prints on `init`.
    let versions = world
        .registry
        .provider_versions(&Access::All, &widget())
        .await
        .unwrap();
    assert_eq!(
        versions.warnings,
        ["1.0.0 is deprecated: CVE-2026-1 <b>in</b> the NAT rules; use 1.1.0 instead; to be withdrawn on 2027-03-31"]
    );

    world.delete(&format!("{DIR}/deprecation.json")).await;
    let shown = world
        .registry
        .provider_details(&Access::All, &widget(), None)
        .await
        .unwrap();
    assert_eq!(shown.deprecation, None);
    let versions = world
        .registry
        .provider_versions(&Access::All, &widget())
        .await
        .unwrap();
    let text = serde_json::to_string(&versions).unwrap();
    assert!(!text.contains("warnings"), "{text}");
}

#[tokio::test]
async fn a_reindex_makes_the_same_notices_from_the_files_alone() {
    let world = World::new();
    world.put(&format!("{DIRM}/1.0.0.tar.gz"), archive(0)).await;
    world.put(&format!("{DIRM}/1.1.0.tar.gz"), archive(1)).await;
    world.put(&format!("{DIRM}/1.2.0.tar.gz"), archive(2)).await;
    world
        .put(
            &format!("{DIRM}/1.1.0_deprecation.json"),
            DEPRECATION.to_vec(),
        )
        .await;
    world
        .put(&format!("{DIRM}/1.0.0_yank.json"), YANK.to_vec())
        .await;
    world.delete(&format!("{DIRM}/1.0.0.tar.gz")).await;
    // 1.2.0, the latest, is not deprecated; deprecate it and the listing says so.
    world
        .put(
            &format!("{DIRM}/1.2.0_deprecation.json"),
            DEPRECATION.to_vec(),
        )
        .await;
    let listed = world
        .registry
        .list_modules(
            &Access::All,
            &Default::default(),
            Default::default(),
            "/v1/modules",
            &[],
        )
        .await
        .unwrap();
    let deprecation = listed.modules[0].deprecation.as_ref().expect("listed");
    assert_eq!(deprecation.by.as_deref(), Some("alice"));
    let before = details(&world.registry, "1.1.0").await;
    assert!(before.entry.deprecation.is_some() && before.withdrawn.len() == 1);

    // Given a fresh index of the same files (the 1.0.0 archive deleted),
    let metadata = Arc::new(MemoryMetadataStore::new());
    let indexer = Indexer::new(metadata.clone(), world.artifacts.clone());
    let registry = Registry::new(metadata, world.downloads.clone());
    // when reindexing, then the answers are the same.
    indexer.reindex_all(|_, _| {}).await.unwrap();
    let after = details(&registry, "1.1.0").await;
    assert_eq!(after.entry.deprecation, before.entry.deprecation);
    assert_eq!(after.deprecated_versions, before.deprecated_versions);
    assert_eq!(after.withdrawn, before.withdrawn);
    assert_eq!(
        details(&registry, "1.2.0").await.entry.deprecation,
        details(&world.registry, "1.2.0").await.entry.deprecation
    );
}

#[tokio::test]
async fn a_module_whose_every_version_is_yanked_is_absent_but_keeps_its_withdrawals() {
    let world = World::new();
    let only = format!("{DIRM}/1.0.0.tar.gz");
    world.put(&only, archive(0)).await;
    world
        .put(&format!("{DIRM}/1.0.0_yank.json"), YANK.to_vec())
        .await;
    world.delete(&only).await;

    // The module is absent from every answer,
    let absent = world
        .registry
        .module_details(&Access::All, &address(), None)
        .await;
    assert!(absent.is_err(), "{absent:?}");
    assert!(world
        .registry
        .module_versions(&Access::All, &address())
        .await
        .is_err());
    let listed = world
        .registry
        .list_modules(
            &Access::All,
            &Default::default(),
            Default::default(),
            "/v1/modules",
            &[],
        )
        .await
        .unwrap();
    assert!(listed.modules.is_empty(), "{listed:?}");
    // but its withdrawal is still told, to a token that reads its namespace only.
    let withdrawn = world
        .registry
        .module_withdrawn(&Access::All, &address())
        .await
        .unwrap();
    assert_eq!(withdrawn.len(), 1);
    assert_eq!(withdrawn[0].reason, "leaked a key");
    let other = Access::Namespaces(
        [tfreg_core::Namespace::parse("other").unwrap()]
            .into_iter()
            .collect(),
    );
    assert!(world
        .registry
        .module_withdrawn(&other, &address())
        .await
        .unwrap()
        .is_empty());

    // Deleting the record leaves nothing, as before.
    world.delete(&format!("{DIRM}/1.0.0_yank.json")).await;
    assert!(world
        .registry
        .module_withdrawn(&Access::All, &address())
        .await
        .unwrap()
        .is_empty());
}
