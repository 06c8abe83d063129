//! Immutable versions: the first bytes served for a version's file are what is served for it
//! from then on; different bytes are refused with the reason, identical bytes change nothing,
//! deleting yanks and re-uploading the same bytes un-yanks.

mod world;

use std::io::Write;

use tfreg_core::store::{partition, Record};
use tfreg_core::tokens::Access;
use tfreg_core::{ArtifactStore, MetadataReader, ModuleAddress, Origin, Platform, Version};
use tokio::io::AsyncReadExt;
use world::*;

const MODULE: &str = "modules/acme/network/aws/1.2.0.zip";

fn module_zip(main_tf: &str) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    writer
        .start_file("main.tf", zip::write::SimpleFileOptions::default())
        .unwrap();
    writer.write_all(main_tf.as_bytes()).unwrap();
    writer.finish().unwrap().into_inner()
}

fn network() -> ModuleAddress {
    ModuleAddress::parse("acme", "network", "aws").unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

async fn problem_of(world: &World, key: &str) -> Option<String> {
    let problems = world.registry.problems().await.unwrap();
    problems
        .into_iter()
        .find(|p| p.key == key)
        .map(|p| p.problem)
}

/// What a download URL handed out by the registry serves: the revision it names.
async fn fetch(world: &World, url: &str) -> Vec<u8> {
    let (path, query) = url.split_once('?').unwrap();
    let key = path.split_once("/v1/artifacts/").unwrap().1;
    let revision = query
        .split('&')
        .find_map(|p| p.strip_prefix("revision="))
        .expect("a URL pinned to a revision");
    let body = world
        .artifacts
        .open_revision(key, revision)
        .await
        .unwrap()
        .expect("the revision the URL names is still readable");
    let mut bytes = Vec::new();
    body.reader
        .take(1 << 30)
        .read_to_end(&mut bytes)
        .await
        .unwrap();
    bytes
}

async fn module_download(world: &World) -> Option<Vec<u8>> {
    let origin = Origin::https("registry.example.test").unwrap();
    let version = Version::parse("1.2.0").unwrap();
    let url = world
        .registry
        .module_download_url(&Access::All, &network(), &version, &origin)
        .await
        .ok()?;
    Some(fetch(world, &url).await)
}

async fn pins(world: &World) -> Vec<String> {
    world
        .metadata
        .query(partition::PINS)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Record::Pin(p) => Some(format!("{} {}", p.slot, p.key)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn different_bytes_under_a_published_module_version_are_refused_and_never_served() {
    let world = World::new();
    let original = module_zip("# the original\n");
    world.put(MODULE, original.clone()).await;
    assert_eq!(module_download(&world).await, Some(original.clone()));
    assert_eq!(
        pins(&world).await,
        ["module/acme/network/aws/1.2.0 modules/acme/network/aws/1.2.0.zip"]
    );

    // Different bytes under the same key: refused with the reason, the original still served.
    let changed = module_zip("# changed\n");
    world.put(MODULE, changed.clone()).await;
    let problem = problem_of(&world, MODULE).await.expect("refused");
    assert!(
        problem.contains(&format!(
            "version 1.2.0 of module acme/network/aws was published with sha256 {}",
            sha256(&original)
        )) && problem.contains(&sha256(&changed))
            && problem.contains("publish a new version"),
        "{problem}"
    );
    assert_eq!(module_download(&world).await, Some(original.clone()));
    // Replaying the event, or a full reindex, changes nothing.
    world.indexer.index_key(MODULE).await.unwrap();
    let report = world.indexer.reindex_all(|_, _| {}).await.unwrap();
    assert!(report.changes.is_empty(), "{:?}", report.changes);
    assert_eq!(module_download(&world).await, Some(original.clone()));

    // The original bytes again: the refusal ends, nothing else changes.
    let before = world
        .registry
        .module_archive(&Access::All, &network(), &Version::parse("1.2.0").unwrap())
        .await
        .unwrap();
    world.put(MODULE, original.clone()).await;
    assert_eq!(problem_of(&world, MODULE).await, None);
    let after = world
        .registry
        .module_archive(&Access::All, &network(), &Version::parse("1.2.0").unwrap())
        .await
        .unwrap();
    assert_eq!(before, after, "identical bytes change nothing");
}

#[tokio::test]
async fn another_format_or_spelling_of_a_published_version_is_refused() {
    let world = World::new();
    let original = module_zip("# zip\n");
    world.put(MODULE, original.clone()).await;
    // A .tar.gz is preferred over a .zip when both are new; once one is served, it stays.
    let other = "modules/acme/network/aws/1.2.0.tar.gz";
    world.put(other, b"anything".to_vec()).await;
    let problem = problem_of(&world, other).await.expect("refused");
    assert!(
        problem.contains("was published as modules/acme/network/aws/1.2.0.zip"),
        "{problem}"
    );
    let spelled = "modules/ACME/network/aws/1.2.0.zip";
    world.put(spelled, module_zip("# other\n")).await;
    assert!(problem_of(&world, spelled).await.is_some());
    assert_eq!(module_download(&world).await, Some(original));
}

#[tokio::test]
async fn deleting_yanks_and_the_same_bytes_again_unyank() {
    let world = World::new();
    let original = module_zip("# v\n");
    world.put(MODULE, original.clone()).await;
    world.delete(MODULE).await;
    assert_eq!(
        module_download(&world).await,
        None,
        "yanked: no longer offered"
    );

    // Different bytes after a yank are refused too: the version is what it was.
    world.put(MODULE, module_zip("# other\n")).await;
    assert!(problem_of(&world, MODULE).await.is_some());
    assert_eq!(
        module_download(&world).await,
        Some(original.clone()),
        "the original bytes are kept and served again once a file is there"
    );

    world.put(MODULE, original.clone()).await;
    assert_eq!(problem_of(&world, MODULE).await, None);
    assert_eq!(module_download(&world).await, Some(original));
}

#[tokio::test]
async fn a_served_provider_release_keeps_its_files_whatever_is_uploaded_over_them() {
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    assert_eq!(world.served().await, ["1.0.0: darwin_arm64 linux_amd64"]);
    let pinned = pins(&world).await;
    assert_eq!(
        pinned.len(),
        4,
        "SHA256SUMS, its signature and two packages: {pinned:?}"
    );

    // A different package for a served platform: refused, the platform keeps its package.
    let linux = format!("{DIR}/{LINUX}");
    world.put(&linux, fixture(DARWIN)).await;
    let problem = problem_of(&world, &linux).await.expect("refused");
    assert!(problem.contains("was published with sha256"), "{problem}");
    assert_eq!(world.served().await, ["1.0.0: darwin_arm64 linux_amd64"]);
    let origin = Origin::https("registry.example.test").unwrap();
    let platform = Platform::parse("linux", "amd64").unwrap();
    let download = world
        .registry
        .provider_download(&Access::All, &widget(), &v1(), &platform, &origin)
        .await
        .unwrap();
    assert_eq!(download.shasum, sha256(&fixture(LINUX)));
    assert_eq!(fetch(&world, &download.download_url).await, fixture(LINUX));

    // A different SHA256SUMS and signature: refused, the release is served as it was.
    let sums = format!("{DIR}/{SUMS}");
    world.put(&sums, b"0000  other.zip\n".to_vec()).await;
    world
        .put(
            &format!("{sums}.sig"),
            fixture(&format!("{SUMS}.other.sig")),
        )
        .await;
    assert!(problem_of(&world, &sums).await.is_some());
    assert!(problem_of(&world, &format!("{sums}.sig")).await.is_some());
    assert_eq!(world.served().await, ["1.0.0: darwin_arm64 linux_amd64"]);
    assert_eq!(fetch(&world, &download.shasums_url).await, fixture(SUMS));
    // The key's removal still unpublishes it: pins keep bytes, not trust.
    world.delete("keys/acme/release.asc").await;
    assert!(world.served().await.is_empty());
}

#[tokio::test]
async fn a_mirrored_package_keeps_its_first_bytes() {
    let world = World::new();
    let key = "mirror/registry.terraform.io/hashicorp/widget/terraform-provider-widget_1.0.0_linux_amd64.zip";
    world.put(key, fixture(LINUX)).await;
    world.put(key, fixture(DARWIN)).await;
    assert!(problem_of(&world, key).await.is_some());
    let records = world
        .metadata
        .query("mirror/registry.terraform.io/hashicorp/widget")
        .await
        .unwrap();
    let Some(Record::Package(package)) = records.first() else {
        panic!("the package is still recorded: {records:?}")
    };
    assert_eq!(package.hashes.sha256, sha256(&fixture(LINUX)));
}
