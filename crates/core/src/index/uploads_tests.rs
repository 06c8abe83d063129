//! Who uploaded what, over the in-memory stores: recorded per revision, judged against the
//! namespace's `allowed_publishers`.

use std::sync::Arc;

use super::*;
use crate::memory::{MemoryArtifactStore, MemoryMetadataStore};
use crate::store::{ArtifactStore, MetadataReader};

struct World {
    artifacts: Arc<MemoryArtifactStore>,
    metadata: Arc<MemoryMetadataStore>,
    indexer: Indexer,
}

fn world() -> World {
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let metadata = Arc::new(MemoryMetadataStore::new());
    World {
        indexer: Indexer::new(metadata.clone(), artifacts.clone()),
        artifacts,
        metadata,
    }
}

fn module(key: &str) -> Vec<u8> {
    let (_, format) = crate::layout::ArchiveFormat::split(key).unwrap();
    let main = format!("# {key}\n");
    crate::module_archive::archive_of(format, &[("main.tf", main.as_bytes())])
}

impl World {
    /// Puts `key` as `principal` would, and delivers its event.
    async fn upload_as(&self, principal: Option<&str>, key: &str) -> IndexOutcome {
        self.artifacts.put(key, module(key));
        let revision = self.artifacts.head(key).await.unwrap().unwrap().revision;
        let upload = principal.map(|p| Upload {
            principal: p.to_owned(),
            revision,
            time: Some("2026-11-28T12:00:00Z".into()),
        });
        self.indexer
            .index_uploaded(key, upload.as_ref())
            .await
            .unwrap()
    }

    async fn served(&self, key: &str) -> bool {
        let Classified::Artifact(artifact) = classify(key) else {
            panic!("{key}")
        };
        let id = record_of(&artifact, key).unwrap();
        self.metadata.get(&id).await.unwrap().is_some()
    }

    async fn uploads(&self, key: &str) -> Vec<UploadRecord> {
        let Classified::Artifact(artifact) = classify(key) else {
            panic!("{key}")
        };
        let (target, _) = version_of(&artifact).unwrap();
        let partition = crate::store::partition::uploads(&target);
        let records = self.metadata.query(&partition).await.unwrap();
        records
            .into_iter()
            .filter_map(|r| match r {
                Record::Upload(u) if u.key == key => Some(u),
                _ => None,
            })
            .collect()
    }
}

#[tokio::test]
async fn the_uploader_is_recorded_once_per_revision() {
    let w = world();
    let key = "modules/acme/net/aws/1.0.0.tar.gz";
    let outcome = w.upload_as(Some("AWS:AIDAEXAMPLE"), key).await;
    assert!(matches!(outcome, IndexOutcome::Published(_)), "{outcome:?}");
    // A replay naming someone else, and one naming no one, keep the first record.
    let revision = w.artifacts.head(key).await.unwrap().unwrap().revision;
    let other = Upload {
        principal: "AWS:AIDAOTHER".into(),
        revision: revision.clone(),
        time: None,
    };
    w.indexer.index_uploaded(key, Some(&other)).await.unwrap();
    w.indexer.index_key(key).await.unwrap();
    let uploads = w.uploads(key).await;
    assert_eq!(uploads.len(), 1, "{uploads:?}");
    assert_eq!(uploads[0].principal, "AWS:AIDAEXAMPLE");
    assert_eq!(uploads[0].revision, revision);
    assert_eq!(
        uploads[0].uploaded_at.as_deref(),
        Some("2026-11-28T12:00:00Z")
    );
    // A reindex keeps it (the bucket does not say who uploaded).
    w.indexer.reindex_all(|_, _| {}).await.unwrap();
    assert_eq!(w.uploads(key).await, uploads);
    // A key outside the versions' files records nothing.
    w.artifacts.put("keys/acme/a.asc", b"x".to_vec());
    let listed = Upload {
        principal: "AWS:AIDAEXAMPLE".into(),
        revision: "1".into(),
        time: None,
    };
    w.indexer
        .index_uploaded("keys/acme/a.asc", Some(&listed))
        .await
        .unwrap();
    assert!(
        w.metadata
            .query("uploads/module/acme/net/aws")
            .await
            .unwrap()
            .len()
            == 1
    );
}

#[tokio::test]
async fn allowed_publishers_refuse_others_and_unknown_uploaders_with_reasons() {
    let w = world();
    let policy = "keys/acme/policy.json";
    w.artifacts.put(
        policy,
        br#"{"allowed_publishers": ["AWS:AROAEXAMPLE:ci-*"]}"#.to_vec(),
    );
    w.indexer.index_key(policy).await.unwrap();

    let ci = "modules/acme/net/aws/1.0.0.tar.gz";
    let outcome = w.upload_as(Some("AWS:AROAEXAMPLE:ci-7"), ci).await;
    assert!(matches!(outcome, IndexOutcome::Published(_)), "{outcome:?}");
    assert!(w.served(ci).await);

    let dev = "modules/acme/net/aws/1.1.0.zip";
    let IndexOutcome::Rejected { reason, .. } = w.upload_as(Some("AWS:AIDADEV"), dev).await else {
        panic!("served")
    };
    assert!(reason.contains("uploaded by AWS:AIDADEV"), "{reason}");
    assert!(reason.contains("keys/acme/policy.json"), "{reason}");
    assert!(!w.served(dev).await);
    let problem = w.metadata.get(&RecordId::problem(dev)).await.unwrap();
    assert!(matches!(problem, Some(Record::Problem(p)) if p.problem == reason));

    // The local shape, a reindex, an event without userIdentity: no uploader is known.
    let unknown = "modules/acme/net/aws/1.2.0.tgz";
    let IndexOutcome::Rejected { reason, .. } = w.upload_as(None, unknown).await else {
        panic!("served")
    };
    assert!(reason.contains("uploader is not recorded"), "{reason}");

    // The same key uploaded again by an allowed publisher is served.
    let outcome = w.upload_as(Some("AWS:AROAEXAMPLE:ci-8"), dev).await;
    assert!(matches!(outcome, IndexOutcome::Published(_)), "{outcome:?}");
    assert!(w.served(dev).await);
    assert!(w
        .metadata
        .get(&RecordId::problem(dev))
        .await
        .unwrap()
        .is_none());

    // Another namespace has no list: anyone, known or not.
    let other = "modules/beta/net/aws/1.0.0.tar.gz";
    let outcome = w.upload_as(None, other).await;
    assert!(matches!(outcome, IndexOutcome::Published(_)), "{outcome:?}");
}

#[tokio::test]
async fn a_late_event_of_an_older_revision_never_speaks_for_the_current_one() {
    let w = world();
    let policy = "keys/acme/policy.json";
    w.artifacts.put(
        policy,
        br#"{"allowed_publishers": ["AWS:AIDAGOOD"]}"#.to_vec(),
    );
    w.indexer.index_key(policy).await.unwrap();
    let key = "modules/acme/net/aws/2.0.0.tar.gz";
    w.artifacts.put(key, module(key));
    let old = w.artifacts.head(key).await.unwrap().unwrap().revision;
    // Replaced by other bytes before any event was handled (not pinned yet).
    w.artifacts
        .put(key, module("modules/acme/net/aws/9.0.0.tar.gz"));
    let stale = Upload {
        principal: "AWS:AIDAGOOD".into(),
        revision: old,
        time: None,
    };
    let outcome = w.indexer.index_uploaded(key, Some(&stale)).await.unwrap();
    assert!(
        matches!(&outcome, IndexOutcome::Rejected { reason, .. } if reason.contains("not recorded")),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_policy_change_judges_the_namespace_again_both_ways() {
    let w = world();
    let (ci, dev) = (
        "modules/acme/net/aws/1.0.0.tar.gz",
        "modules/acme/net/aws/1.1.0.tar.gz",
    );
    w.upload_as(Some("AWS:AROAEXAMPLE:ci-1"), ci).await;
    w.upload_as(Some("AWS:AIDADEV"), dev).await;
    assert!(w.served(ci).await && w.served(dev).await);
    // A list that leaves the developer out takes their version away,
    let policy = "keys/acme/policy.json";
    w.artifacts.put(
        policy,
        br#"{"allowed_publishers": ["AWS:AROAEXAMPLE:ci-*"]}"#.to_vec(),
    );
    w.indexer.index_key(policy).await.unwrap();
    assert!(w.served(ci).await);
    assert!(!w.served(dev).await);
    let problem = w.metadata.get(&RecordId::problem(dev)).await.unwrap();
    assert!(
        matches!(&problem, Some(Record::Problem(p)) if p.problem.contains("AWS:AIDADEV")),
        "{problem:?}"
    );
    // and one that lets them in serves it again.
    w.artifacts.put(
        policy,
        br#"{"allowed_publishers": ["AWS:AROAEXAMPLE:ci-*", "AWS:AIDADEV"]}"#.to_vec(),
    );
    w.indexer.index_key(policy).await.unwrap();
    assert!(w.served(dev).await);
    assert!(w
        .metadata
        .get(&RecordId::problem(dev))
        .await
        .unwrap()
        .is_none());
}
