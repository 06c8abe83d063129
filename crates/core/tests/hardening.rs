//! Regressions of the hardening review, through the core: each test failed before its fix.

mod world;

use std::io::Write;

use tfreg_core::hash::PackageLimits;
use tfreg_core::index::{Change, ChangeKind};
use tfreg_core::module_archive::{archive_of, ArchiveFormat};
use tfreg_core::store::{partition, Record, RecordId};
use tfreg_core::tokens::Access;
use tfreg_core::{
    Hostname, MetadataReader, MetadataStore, ModuleAddress, Namespace, Origin, ProviderAddress,
    Version,
};
use world::*;

const BOTH: &str = "1.0.0: darwin_arm64 linux_amd64";

fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, content) in files {
        writer
            .start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.write_all(content).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

/// The overlapping-entries bomb, in miniature.
fn overlapping_bomb() -> Vec<u8> {
    let zip = zip_of(&[("terraform-provider-null_v3.2.1", &[0u8; 4096])]);
    tfreg_core::hash::overlapping_entries(&zip, 2)
}

async fn problem_of(world: &World, key: &str) -> Option<String> {
    world
        .registry
        .problems()
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.key == key)
        .map(|p| p.problem)
}

#[tokio::test]
async fn a_release_is_unpublished_when_its_key_goes_even_beside_an_oversized_sums() {
    // Given a served release, and in the same namespace a release whose SHA256SUMS is over
    // the size cap (so it can never be verified),
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    assert_eq!(world.served().await, [BOTH]);
    let dir2 = "providers/acme/widget/2.0.0";
    let huge = "a".repeat(300 * 1024);
    world
        .put(
            &format!("{dir2}/terraform-provider-widget_2.0.0_SHA256SUMS"),
            huge.into_bytes(),
        )
        .await;
    world
        .put(
            &format!("{dir2}/terraform-provider-widget_2.0.0_SHA256SUMS.sig"),
            fixture(&format!("{SUMS}.sig")),
        )
        .await;
    let sig_problem = problem_of(
        &world,
        &format!("{dir2}/terraform-provider-widget_2.0.0_SHA256SUMS.sig"),
    )
    .await
    .unwrap();
    assert!(sig_problem.contains("more than the"), "{sig_problem}");

    // when the key is removed, its event is indexed without error (World::delete unwraps)
    world.delete("keys/acme/release.asc").await;

    // and the release it signed is no longer served; a reindex finds nothing failing.
    assert!(world.served().await.is_empty());
    let report = world.indexer.reindex_all(|_, _| {}).await.unwrap();
    assert_eq!(report.failed, 0, "{report:?}");
}

#[tokio::test]
async fn a_verdict_counts_only_while_its_key_is_still_published() {
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    assert_eq!(world.served().await, [BOTH]);
    // Given the key's record gone while the verdict it made still stands (its removal seen,
    // the re-verification not yet done),
    let acme = Namespace::parse("acme").unwrap();
    world
        .metadata
        .delete(&RecordId::signing_key(&acme, "keys/acme/release.asc"))
        .await
        .unwrap();
    // then the report says why at once; what requests read is made again by the key's
    // event, which judges against the keys there are then, whatever re-verification is
    // still to do.
    assert!(
        world.problems().await.contains("removed or replaced"),
        "{}",
        world.problems().await
    );
    world.delete("keys/acme/release.asc").await;
    assert!(world.served().await.is_empty());
}

#[tokio::test]
async fn uploads_under_the_registrys_own_hostname_are_never_installed() {
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    // Given unsigned uploads under mirror/<the registry's own hostname>/: a new version, and
    // an extra platform of the signed version,
    let new_version =
        format!("mirror/{HOSTNAME}/acme/widget/terraform-provider-widget_2.0.0_linux_amd64.zip");
    let extra_platform =
        format!("mirror/{HOSTNAME}/acme/widget/terraform-provider-widget_1.0.0_windows_amd64.zip");
    world.put(&new_version, fixture(LINUX)).await;
    world.put(&extra_platform, fixture(LINUX)).await;

    // then the mirror offers the signed release only, exactly as signed,
    let host = Hostname::parse(HOSTNAME).unwrap();
    let origin = Origin::https("127.0.0.1:8443").unwrap();
    let index = world
        .registry
        .mirror_index(&Access::All, &host, &widget(), &origin)
        .await
        .unwrap();
    assert_eq!(index.versions.keys().collect::<Vec<_>>(), ["1.0.0"]);
    let doc = world
        .registry
        .mirror_version(&Access::All, &host, &widget(), &v1(), &origin)
        .await
        .unwrap();
    assert_eq!(
        doc.archives.keys().collect::<Vec<_>>(),
        ["darwin_arm64", "linux_amd64"]
    );
    // and the publisher is told why the uploads are ignored.
    for key in [&new_version, &extra_platform] {
        let problem = problem_of(&world, key).await.unwrap();
        assert!(problem.contains("own hostname"), "{problem}");
    }
}

#[tokio::test]
async fn without_a_configured_hostname_the_host_reached_is_the_registrys_own() {
    // A stack without a custom domain knows itself only by the host clients reach.
    let world = World::new();
    let registry = tfreg_core::Registry::new(world.metadata.clone(), world.downloads.clone());
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    let api = "abc123.execute-api.us-east-1.amazonaws.com";
    let upload =
        format!("mirror/{api}/acme/widget/terraform-provider-widget_2.0.0_linux_amd64.zip");
    world.put(&upload, fixture(LINUX)).await;
    let host = Hostname::parse(api).unwrap();
    let reached = Origin::https(api).unwrap();
    let index = registry
        .mirror_index(&Access::All, &host, &widget(), &reached)
        .await
        .unwrap();
    assert_eq!(index.versions.keys().collect::<Vec<_>>(), ["1.0.0"]);
    // `host:443` is `host`, as Terraform has it.
    assert_eq!(Hostname::parse(&format!("{api}:443")).unwrap(), host);
}

#[tokio::test]
async fn packages_are_unpacked_only_once_a_signed_sums_vouches_for_them() {
    let world = World::new();
    // An unsigned package gets its SHA-256 only: nothing is unpacked.
    world.put(&format!("{DIR}/{LINUX}"), fixture(LINUX)).await;
    world.put(&format!("{DIR}/{SUMS}"), fixture(SUMS)).await;
    let h1_of_linux = |records: Vec<Record>| {
        records.into_iter().find_map(|r| match r {
            Record::Package(p) if p.key.ends_with(LINUX) => Some(p.hashes.h1),
            _ => None,
        })
    };
    let records = || async {
        world
            .metadata
            .query(&partition::provider(&widget()))
            .await
            .unwrap()
    };
    assert_eq!(h1_of_linux(records().await), Some(None));
    assert!(world.served().await.is_empty());
    // Once the signature verifies, the listed package is unpacked and served.
    world
        .put(
            &format!("{DIR}/{SUMS}.sig"),
            fixture(&format!("{SUMS}.sig")),
        )
        .await;
    world
        .put("keys/acme/release.asc", fixture("release.asc"))
        .await;
    assert!(matches!(h1_of_linux(records().await), Some(Some(_))));
    assert_eq!(world.served().await, ["1.0.0: linux_amd64"]);
}

#[tokio::test]
async fn a_signed_package_that_cannot_be_unpacked_within_the_limits_is_not_offered() {
    let world = World::with_limits(PackageLimits {
        max_entries: 0,
        ..PackageLimits::default()
    });
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    assert!(world.served().await.is_empty());
    let problem = problem_of(&world, &format!("{DIR}/{LINUX}")).await.unwrap();
    assert!(
        problem.contains("cannot be unpacked") && problem.contains("entries"),
        "{problem}"
    );
}

#[tokio::test]
async fn a_mirror_bomb_gets_a_verdict_before_anything_is_inflated() {
    let world = World::new();
    let key =
        "mirror/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    world.put(key, overlapping_bomb()).await;
    let problem = problem_of(&world, key).await.unwrap();
    assert!(problem.contains("overlap"), "{problem}");
    let host = Hostname::parse("registry.terraform.io").unwrap();
    let null = ProviderAddress::parse("hashicorp", "null").unwrap();
    assert!(world
        .registry
        .mirror_index(
            &Access::All,
            &host,
            &null,
            &Origin::https("127.0.0.1:8443").unwrap()
        )
        .await
        .is_err());
}

#[tokio::test]
async fn a_stray_copy_under_another_spelling_never_hides_a_signed_release() {
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    // Given an unsigned SHA256SUMS and a zip that does not match it, under a differently
    // cased namespace folder (the same provider, as Terraform matches names),
    let other = "providers/ACME/widget/1.0.0";
    let sums = format!("{}  {LINUX}\n", "0".repeat(64));
    world
        .put(&format!("{other}/{SUMS}"), sums.into_bytes())
        .await;
    world
        .put(&format!("{other}/{LINUX}"), fixture(DARWIN))
        .await;
    // then the signed release is still served, every platform of it.
    assert_eq!(world.served().await, [BOTH]);
}

fn module() -> ModuleAddress {
    ModuleAddress::parse("acme", "network", "aws").unwrap()
}

#[tokio::test]
async fn reindex_unpublishes_what_was_deleted_without_an_event_and_reports_it() {
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    let v1_key = "modules/acme/network/aws/1.0.0.tar.gz";
    let v2_key = "modules/acme/network/aws/2.0.0.tar.gz";
    let archive = |main: &[u8]| archive_of(ArchiveFormat::TarGz, &[("main.tf", main)]);
    world.put(v1_key, archive(b"# one")).await;
    world.put(v2_key, archive(b"# two")).await;
    // Given a module version and the signing key deleted with their events lost,
    world.artifacts.delete(v2_key);
    world.artifacts.delete("keys/acme/release.asc");
    let listed = world
        .registry
        .module_versions(&Access::All, &module())
        .await
        .unwrap();
    assert_eq!(listed.modules[0].versions.len(), 2, "still listed before");

    // when the store is reindexed,
    let report = world.indexer.reindex_all(|_, _| {}).await.unwrap();

    // then the index matches the store both ways, and the report says what changed;
    let listed = world
        .registry
        .module_versions(&Access::All, &module())
        .await
        .unwrap();
    let versions: Vec<String> = listed.modules[0]
        .versions
        .iter()
        .map(|v| v.version.to_string())
        .collect();
    assert_eq!(versions, ["1.0.0"]);
    let v2 = Version::parse("2.0.0").unwrap();
    assert!(world
        .registry
        .module_archive(&Access::All, &module(), &v2)
        .await
        .is_err());
    assert!(
        world.served().await.is_empty(),
        "the key is no longer trusted"
    );
    assert_eq!(report.failed, 0);
    for (key, kind) in [
        (v2_key, ChangeKind::Unpublished),
        ("keys/acme/release.asc", ChangeKind::Unpublished),
    ] {
        let change = Change {
            key: key.to_owned(),
            kind,
        };
        assert!(report.changes.contains(&change), "{:?}", report.changes);
    }
    // and running it again changes nothing.
    let again = world.indexer.reindex_all(|_, _| {}).await.unwrap();
    assert_eq!(again.changes, [], "idempotent");
}
