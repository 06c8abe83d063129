//! What the indexer records of a provider release's `docs.zip`, whatever the order it
//! arrives in, and what it refuses: a broken `docs.zip` is a problem of its own, and the
//! release stays served without docs; deleting it forgets the pages and the problem.

mod world;

use tfreg_core::module_archive::{archive_of, ArchiveFormat};
use tfreg_core::provider_docs::PageKind;
use tfreg_core::tokens::Access;
use tfreg_core::Namespace;
use world::{v1, widget, World, DIR, SUMS};

fn docs_key() -> String {
    format!("{DIR}/docs.zip")
}

fn docs_zip(resource: &str) -> Vec<u8> {
    let path = format!("docs/resources/{resource}.md");
    let page = b"---\npage_title: Thing\n---\nBody";
    archive_of(
        ArchiveFormat::Zip,
        &[
            ("docs/index.md", b"# Widget".as_slice()),
            (path.as_str(), page.as_slice()),
        ],
    )
}

async fn problem(world: &World) -> Option<String> {
    let problems = world.registry.problems().await.unwrap();
    problems
        .into_iter()
        .find(|p| p.key == docs_key())
        .map(|p| p.problem)
}

#[tokio::test]
async fn docs_are_recorded_replaced_refused_and_forgotten() {
    let world = World::new();
    // Given docs published before the release they document, they are not shown yet;
    world.put(&docs_key(), docs_zip("thing")).await;
    assert!(world
        .registry
        .provider_docs(&Access::All, &widget(), &v1())
        .await
        .is_err());
    // once the release is served, its pages are,
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    let docs = world
        .registry
        .provider_docs(&Access::All, &widget(), &v1())
        .await
        .unwrap()
        .unwrap();
    let page = docs.page(PageKind::Resource, "thing").unwrap();
    assert_eq!(page.title.as_deref(), Some("Thing"));
    assert_eq!(page.markdown, "Body");
    assert!(docs.page(PageKind::Index, "index").is_some());
    // but not outside the token's namespaces;
    let other = Access::Namespaces([Namespace::parse("other").unwrap()].into());
    assert!(world
        .registry
        .provider_docs(&other, &widget(), &v1())
        .await
        .is_err());
    // docs may be replaced (they are not pinned);
    world.put(&docs_key(), docs_zip("gadget")).await;
    let docs = world
        .registry
        .provider_docs(&Access::All, &widget(), &v1())
        .await
        .unwrap()
        .unwrap();
    assert!(docs.page(PageKind::Resource, "gadget").is_some());
    assert!(docs.page(PageKind::Resource, "thing").is_none());
    assert_eq!(problem(&world).await, None);
    // a broken docs.zip is refused with its reason, and the release stays served;
    world.put(&docs_key(), b"not a zip".to_vec()).await;
    let reason = problem(&world).await.unwrap();
    assert!(reason.contains("not a zip"), "{reason}");
    assert_eq!(
        world
            .registry
            .provider_docs(&Access::All, &widget(), &v1())
            .await
            .unwrap(),
        None
    );
    assert_eq!(world.served().await.len(), 1);
    // deleting it ends the problem.
    world.delete(&docs_key()).await;
    assert_eq!(problem(&world).await, None);
    world.put(&docs_key(), docs_zip("thing")).await;
    world.delete(&docs_key()).await;
    assert_eq!(
        world
            .registry
            .provider_docs(&Access::All, &widget(), &v1())
            .await
            .unwrap(),
        None
    );
}
