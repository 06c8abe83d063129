//! Module hashes at publish: the `h1:` of the tree an archive unpacks to is recorded with the
//! version and kept in its pin; a record from before it was computed is completed once; and
//! pinned bytes that hash differently later are a problem, never a silent change.

mod world;

use tfreg_core::store::{Record, RecordId};
use tfreg_core::tokens::Access;
use tfreg_core::{MetadataReader, MetadataStore, ModuleAddress, Version};
use world::*;

const KEY: &str = "modules/acme/network/aws/1.2.0.tar.gz";

fn network() -> ModuleAddress {
    ModuleAddress::parse("acme", "network", "aws").unwrap()
}

fn version() -> Version {
    Version::parse("1.2.0").unwrap()
}

fn archive() -> Vec<u8> {
    tfreg_core::module_archive::archive_of(
        tfreg_core::layout::ArchiveFormat::TarGz,
        &[("main.tf", b"# network\n"), ("files/a.sh", b"echo a\n")],
    )
}

/// The archive record and the pin of the version.
async fn recorded(
    world: &World,
) -> (
    Option<tfreg_core::store::ModuleArchive>,
    Option<tfreg_core::store::PinRecord>,
) {
    let record = match world
        .metadata
        .get(&RecordId::module_archive(&network(), &version(), KEY))
        .await
        .unwrap()
    {
        Some(Record::ModuleArchive(a)) => Some(a),
        _ => None,
    };
    let pin = match world
        .metadata
        .get(&RecordId::pin("module/acme/network/aws/1.2.0"))
        .await
        .unwrap()
    {
        Some(Record::Pin(p)) => Some(p),
        _ => None,
    };
    (record, pin)
}

/// The `h1:` computed independently: each file's SHA-256 line, in name order.
fn expected_h1() -> String {
    use base64::Engine;
    use sha2::{Digest, Sha256};
    let line =
        |content: &[u8], name: &str| format!("{}  {name}\n", hex::encode(Sha256::digest(content)));
    let summary = line(b"echo a\n", "files/a.sh") + &line(b"# network\n", "main.tf");
    let digest = Sha256::digest(summary.as_bytes());
    format!(
        "h1:{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

#[tokio::test]
async fn the_h1_is_recorded_pinned_and_served_with_the_version() {
    let world = World::new();
    world.put(KEY, archive()).await;
    let (record, pin) = recorded(&world).await;
    let record = record.expect("recorded");
    assert_eq!(record.h1.as_deref(), Some(expected_h1().as_str()));
    assert_eq!(pin.expect("pinned").h1, record.h1);
    let details = world
        .registry
        .module_details(&Access::All, &network(), Some(&version()))
        .await
        .unwrap();
    assert_eq!(
        details.hashes,
        [expected_h1(), format!("zh:{}", record.sha256)]
    );
}

#[tokio::test]
async fn a_record_and_pin_from_before_hashes_are_completed_once() {
    let world = World::new();
    world.put(KEY, archive()).await;
    // Given a record and a pin as an older tfreg left them, without an h1:,
    let (record, pin) = recorded(&world).await;
    let (mut record, mut pin) = (record.unwrap(), pin.unwrap());
    record.h1 = None;
    pin.h1 = None;
    world
        .metadata
        .put(Record::ModuleArchive(record))
        .await
        .unwrap();
    world.metadata.put(Record::Pin(pin)).await.unwrap();
    // when its file's event is replayed, both learn it.
    world.indexer.index_key(KEY).await.unwrap();
    let (record, pin) = recorded(&world).await;
    assert_eq!(record.unwrap().h1, Some(expected_h1()));
    assert_eq!(pin.unwrap().h1, Some(expected_h1()));
}

#[tokio::test]
async fn pinned_bytes_that_hash_differently_are_refused_never_served_under_a_new_hash() {
    let world = World::new();
    world.put(KEY, archive()).await;
    // Given a pin that recorded another h1: for the same bytes (and a record to check again),
    let (record, pin) = recorded(&world).await;
    let (mut record, mut pin) = (record.unwrap(), pin.unwrap());
    record.h1 = None;
    pin.h1 = Some("h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into());
    world
        .metadata
        .put(Record::ModuleArchive(record))
        .await
        .unwrap();
    world.metadata.put(Record::Pin(pin)).await.unwrap();
    // when the archive is checked again,
    world.indexer.index_key(KEY).await.unwrap();
    // then the version is not served, and the problem names both hashes.
    let (record, _) = recorded(&world).await;
    assert!(record.is_none());
    let problems = world
        .registry
        .problems()
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.key == KEY)
        .map(|p| p.problem)
        .unwrap_or_default();
    assert!(
        problems.contains("h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="),
        "{problems}"
    );
    assert!(problems.contains(&expected_h1()), "{problems}");
    assert!(world
        .registry
        .module_details(&Access::All, &network(), Some(&version()))
        .await
        .is_err());
}
