//! The storage contract: what every adapter of the ports keeps, written once as test
//! functions that each take the store (as object_store's integration tests do). The memory
//! store, the data directory and DynamoDB + S3 (on moto) each run [`metadata_store`] and
//! [`artifact_store`] from their own tests; a new backend runs them too, and passes when
//! it keeps the contract.
//!
//! The functions assume a store that holds nothing under the keys and partitions they use
//! (`contract/...`), and panic, as tests do, on the first broken promise.

use async_trait::async_trait;
use tokio::io::AsyncReadExt;

use super::{
    partition, ArtifactStore, Expected, Kept, MetadataStore, ObjectBody, PinRecord, ProblemRecord,
    Record, RecordId,
};
use crate::names::{ModuleAddress, ProviderAddress};
use crate::version::Version;

/// Writes objects into an artifact store, which the port itself never does (publishers
/// upload): each adapter's tests say how.
#[async_trait]
pub trait Uploads: Send + Sync {
    /// Creates or replaces the object at `key`.
    async fn upload(&self, key: &str, bytes: &[u8]);
    /// Deletes the object at `key`.
    async fn remove(&self, key: &str);
}

/// Every promise of [`MetadataStore`], one after the other.
pub async fn metadata_store(store: &dyn MetadataStore) {
    records_are_replaced_and_deleted_by_id(store).await;
    put_new_writes_only_where_nothing_is(store).await;
    queries_read_a_partition_or_one_prefix_in_sort_order(store).await;
    documents_are_replaced_only_as_expected(store).await;
    documents_are_listed_but_never_scanned_as_records(store).await;
    the_generation_moves_with_every_change(store).await;
}

/// Every promise of [`ArtifactStore`], one after the other.
pub async fn artifact_store(store: &dyn ArtifactStore, uploads: &dyn Uploads) {
    objects_are_seen_opened_and_listed_as_uploaded(store, uploads).await;
    a_revision_reads_its_own_bytes_and_kept_ones_outlive_it(store, uploads).await;
}

fn problem(key: &str, problem: &str) -> Record {
    Record::Problem(ProblemRecord {
        key: key.to_owned(),
        problem: problem.to_owned(),
    })
}

fn pin(slot: &str, sha256: &str) -> Record {
    Record::Pin(PinRecord {
        slot: slot.to_owned(),
        key: format!("{slot}.zip"),
        sha256: sha256.to_owned(),
        size: 1,
        revision: "r1".to_owned(),
        kept: true,
        published_at: 1,
        h1: None,
    })
}

/// The problems under `prefix`, as a query of their partition gives them.
fn problem_keys(records: &[Record], prefix: &str) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Problem(p) if p.key.starts_with(prefix) => Some(p.key.clone()),
            _ => None,
        })
        .collect()
}

/// `put` replaces the record with the same id, `get` reads it, `delete` removes it (and
/// deleting what is not there is no error).
pub async fn records_are_replaced_and_deleted_by_id(store: &dyn MetadataStore) {
    let id = RecordId::problem("contract/replaced");
    assert_eq!(store.get(&id).await.unwrap(), None);
    store
        .put(problem("contract/replaced", "first"))
        .await
        .unwrap();
    store
        .put(problem("contract/replaced", "second"))
        .await
        .unwrap();
    assert_eq!(
        store.get(&id).await.unwrap(),
        Some(problem("contract/replaced", "second"))
    );
    store.delete(&id).await.unwrap();
    assert_eq!(store.get(&id).await.unwrap(), None);
    store.delete(&id).await.unwrap();
}

/// `put_new` writes only where no record has the id, and says whether it did.
pub async fn put_new_writes_only_where_nothing_is(store: &dyn MetadataStore) {
    let first = pin("contract/pin", "aa");
    assert!(store.put_new(first.clone()).await.unwrap());
    assert!(!store.put_new(pin("contract/pin", "bb")).await.unwrap());
    assert_eq!(store.get(&first.id()).await.unwrap(), Some(first.clone()));
    store.delete(&first.id()).await.unwrap();
}

/// `query` reads a whole partition and `query_prefix` the sort keys under a prefix, both
/// in sort-key order, whatever the order of the writes.
pub async fn queries_read_a_partition_or_one_prefix_in_sort_order(store: &dyn MetadataStore) {
    let keys = [
        "contract/q/b/1",
        "contract/q/a/2",
        "contract/q/a/1",
        "contract/q/c",
    ];
    for key in keys {
        store.put(problem(key, "listed")).await.unwrap();
    }
    let all = store.query(partition::PROBLEMS).await.unwrap();
    assert_eq!(
        problem_keys(&all, "contract/q/"),
        [
            "contract/q/a/1",
            "contract/q/a/2",
            "contract/q/b/1",
            "contract/q/c"
        ]
    );
    let some = store
        .query_prefix(partition::PROBLEMS, "contract/q/a/")
        .await
        .unwrap();
    assert_eq!(
        problem_keys(&some, ""),
        ["contract/q/a/1", "contract/q/a/2"]
    );
    assert!(store
        .query_prefix(partition::PROBLEMS, "contract/q/z/")
        .await
        .unwrap()
        .is_empty());
    assert!(store.query("contract-empty").await.unwrap().is_empty());
    for key in keys {
        store.delete(&RecordId::problem(key)).await.unwrap();
    }
    let left = store.query(partition::PROBLEMS).await.unwrap();
    assert!(problem_keys(&left, "contract/q/").is_empty());
}

/// A document is written only if the stored one is as expected, each write with a new
/// revision; `None` deletes it.
pub async fn documents_are_replaced_only_as_expected(store: &dyn MetadataStore) {
    let id = RecordId::module_versions(&ModuleAddress::parse("contract", "doc", "aws").unwrap());
    assert_eq!(store.get_document(&id).await.unwrap(), None);
    assert_eq!(store.document_revision(&id).await.unwrap(), None);
    let (one, two) = (br#"{"n":1}"#.to_vec(), br#"{"n":2}"#.to_vec());
    assert!(!store
        .put_document(&id, Some(one.clone()), Expected::Revision("none"))
        .await
        .unwrap());
    assert!(store
        .put_document(&id, Some(one.clone()), Expected::Nothing)
        .await
        .unwrap());
    let first = store.get_document(&id).await.unwrap().unwrap();
    assert_eq!(first.body, one);
    assert_eq!(
        store.document_revision(&id).await.unwrap().as_deref(),
        Some(first.revision.as_str())
    );
    assert!(!store
        .put_document(&id, Some(two.clone()), Expected::Nothing)
        .await
        .unwrap());
    assert!(!store
        .put_document(&id, Some(two.clone()), Expected::Revision("other"))
        .await
        .unwrap());
    assert!(store
        .put_document(&id, Some(two.clone()), Expected::Revision(&first.revision))
        .await
        .unwrap());
    let second = store.get_document(&id).await.unwrap().unwrap();
    assert_eq!(second.body, two);
    assert_ne!(second.revision, first.revision);
    // Rewriting the same bytes is a write like any other: the revision read goes stale.
    assert!(store
        .put_document(&id, Some(two.clone()), Expected::Anything)
        .await
        .unwrap());
    let third = store.get_document(&id).await.unwrap().unwrap();
    assert_ne!(third.revision, second.revision);
    assert!(store
        .put_document(&id, None, Expected::Revision(&third.revision))
        .await
        .unwrap());
    assert_eq!(store.get_document(&id).await.unwrap(), None);
}

/// Documents are listed, all or one partition's, and a scan of the records never sees them.
pub async fn documents_are_listed_but_never_scanned_as_records(store: &dyn MetadataStore) {
    let provider = ProviderAddress::parse("contract", "widget").unwrap();
    let ids: Vec<RecordId> = ["1.0.0", "2.0.0"]
        .iter()
        .map(|v| RecordId::provider_release(&provider, &Version::parse(v).unwrap()))
        .collect();
    for id in &ids {
        assert!(id.is_document());
        let body = Some(br#"{}"#.to_vec());
        assert!(store
            .put_document(id, body, Expected::Nothing)
            .await
            .unwrap());
    }
    let mut listed = store.document_ids_in(&ids[0].partition).await.unwrap();
    listed.sort();
    assert_eq!(listed, ids);
    let all = store.document_ids().await.unwrap();
    assert!(ids.iter().all(|id| all.contains(id)), "{all:?}");
    store.put(problem("contract/scanned", "x")).await.unwrap();
    let scanned = store.scan().await.unwrap();
    assert!(scanned.iter().all(|r| !r.id().is_document()));
    assert!(scanned.contains(&problem("contract/scanned", "x")));
    store
        .delete(&RecordId::problem("contract/scanned"))
        .await
        .unwrap();
    for id in &ids {
        store
            .put_document(id, None, Expected::Anything)
            .await
            .unwrap();
    }
    assert!(store
        .document_ids_in(&ids[0].partition)
        .await
        .unwrap()
        .is_empty());
}

/// A store that counts its writes counts every change of a record or a document.
pub async fn the_generation_moves_with_every_change(store: &dyn MetadataStore) {
    let Some(before) = store.generation() else {
        return;
    };
    store
        .put(problem("contract/generation", "x"))
        .await
        .unwrap();
    let written = store.generation().unwrap();
    assert_ne!(written, before);
    store
        .delete(&RecordId::problem("contract/generation"))
        .await
        .unwrap();
    assert_ne!(store.generation().unwrap(), written);
    let id = RecordId::module_versions(&ModuleAddress::parse("contract", "gen", "aws").unwrap());
    let at = store.generation().unwrap();
    let body = Some(br#"{"n":1}"#.to_vec());
    store
        .put_document(&id, body, Expected::Nothing)
        .await
        .unwrap();
    assert_ne!(store.generation().unwrap(), at);
    store
        .put_document(&id, None, Expected::Anything)
        .await
        .unwrap();
}

async fn read(body: ObjectBody) -> Vec<u8> {
    let announced = body.meta.size;
    let mut bytes = Vec::new();
    let mut reader = body.reader;
    reader.read_to_end(&mut bytes).await.unwrap();
    assert_eq!(
        bytes.len() as u64,
        announced,
        "the size announced is the size read"
    );
    bytes
}

/// What is uploaded is seen by `head` (its size, a revision that changes with it), read
/// by `open` and listed; what is deleted is gone; nothing there is never refused.
pub async fn objects_are_seen_opened_and_listed_as_uploaded(
    store: &dyn ArtifactStore,
    uploads: &dyn Uploads,
) {
    let key = "modules/contract/object/aws/1.0.0.zip";
    assert_eq!(store.head(key).await.unwrap(), None);
    assert!(store.open(key).await.unwrap().is_none());
    assert_eq!(store.refusal(key).await.unwrap(), None);
    uploads.upload(key, b"first").await;
    let first = store.head(key).await.unwrap().expect("uploaded");
    assert_eq!(first.size, 5);
    let body = store.open(key).await.unwrap().expect("uploaded");
    assert_eq!(body.meta, first);
    assert_eq!(read(body).await, b"first");
    assert!(store.list().await.unwrap().iter().any(|k| k == key));
    assert_eq!(store.refusal(key).await.unwrap(), None);
    uploads.upload(key, b"second!").await;
    let second = store.head(key).await.unwrap().expect("replaced");
    assert_eq!(second.size, 7);
    assert_ne!(second.revision, first.revision);
    uploads.remove(key).await;
    assert_eq!(store.head(key).await.unwrap(), None);
    assert!(store.open(key).await.unwrap().is_none());
    assert!(!store.list().await.unwrap().iter().any(|k| k == key));
}

/// `open_revision` reads the object while it is at that revision; once kept, those bytes
/// stay readable at it whatever is uploaded over them (or the store says why it cannot
/// keep them).
pub async fn a_revision_reads_its_own_bytes_and_kept_ones_outlive_it(
    store: &dyn ArtifactStore,
    uploads: &dyn Uploads,
) {
    use sha2::Digest;
    let key = "modules/contract/kept/aws/1.0.0.zip";
    uploads.upload(key, b"published").await;
    let published = store.head(key).await.unwrap().expect("uploaded");
    let body = store.open_revision(key, &published.revision).await.unwrap();
    assert_eq!(read(body.expect("at that revision")).await, b"published");
    let sha256 = hex::encode(sha2::Sha256::digest(b"published"));
    let kept = store.keep(key, &published.revision, &sha256).await.unwrap();
    // Idempotent.
    assert_eq!(
        store.keep(key, &published.revision, &sha256).await.unwrap(),
        kept
    );
    uploads.upload(key, b"replaced").await;
    let replaced = store.head(key).await.unwrap().expect("uploaded");
    let body = store.open_revision(key, &replaced.revision).await.unwrap();
    assert_eq!(read(body.expect("the current revision")).await, b"replaced");
    let old = store.open_revision(key, &published.revision).await.unwrap();
    match kept {
        Kept::Yes => {
            let body = old.expect("kept bytes outlive their object");
            assert_eq!(body.meta.revision, published.revision);
            assert_eq!(read(body).await, b"published");
        }
        Kept::No(reason) => {
            assert!(!reason.is_empty());
            assert!(old.is_none(), "unkept bytes are gone");
        }
        Kept::Changed => panic!("the object was at that revision with those bytes"),
    }
    uploads.remove(key).await;
}
