//! Module signature verdicts under racing events (issue: a `.sig`'s event that looked for
//! the archive before the archive's event recorded it deleted the verdict the archive's event
//! wrote meanwhile, and a version without a verdict was served). The indexer here runs over a
//! store that lets the other events run before every read and write, for a few steps or,
//! now and then, for many (as an invocation that stalls), from a seeded random schedule;
//! each pair of events runs under [`SCHEDULES`] schedules, both ways round, while a reader
//! asks for the version between steps, as a request would. Whatever the interleaving:
//!
//! - a version whose `.sig` does not verify is never served, not even for one read, and ends
//!   refused with the reason;
//! - a version with a `.sig` is never served before its signature verified (fail closed);
//! - the verdict is the one the files arriving one by one give, also when the policy that
//!   requires signatures arrives beside an unsigned archive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tfreg_core::gpg_sign::sign_detached;
use tfreg_core::memory::{MemoryArtifactStore, MemoryMetadataStore};
use tfreg_core::module_archive::{archive_of, ArchiveFormat};
use tfreg_core::signing::UrlSigner;
use tfreg_core::store::{Document, Expected, Record, RecordId};
use tfreg_core::tokens::Access;
use tfreg_core::{
    Downloads, Indexer, MetadataReader, MetadataStore, ModuleAddress, Registry, StoreError, Version,
};

const ARCHIVE: &str = "modules/acme/network/aws/1.0.0.tar.gz";
const SIG: &str = "modules/acme/network/aws/1.0.0.tar.gz.sig";
const KEY: &str = "keys/acme/signer.asc";
const POLICY: &str = "keys/acme/policy.json";
/// How many seeded schedules each pair of events runs under.
const SCHEDULES: u64 = 60;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/module-signing/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn archive() -> Vec<u8> {
    archive_of(
        ArchiveFormat::TarGz,
        &[("main.tf", b"output \"v\" { value = 1 }\n")],
    )
}

fn signature(secret: &str, content: &[u8]) -> Vec<u8> {
    sign_detached(&fixture(secret), "", content).unwrap().0
}

/// A metadata store that lets the other tasks run before each of its operations: once or
/// not at all mostly, and one time in six for many steps (a stalled call).
struct Yielding {
    store: Arc<MemoryMetadataStore>,
    schedule: Mutex<rand::rngs::StdRng>,
}

impl Yielding {
    async fn pause(&self) {
        use rand::Rng;
        let steps = {
            let mut rng = self.schedule.lock().unwrap();
            match rng.gen_range(0..6) {
                0 => rng.gen_range(10..60),
                n => n % 2,
            }
        };
        for _ in 0..steps {
            tokio::task::yield_now().await;
        }
    }
}

#[async_trait]
impl MetadataReader for Yielding {
    async fn get_document(&self, id: &RecordId) -> Result<Option<Document>, StoreError> {
        self.pause().await;
        self.store.get_document(id).await
    }
    async fn get(&self, id: &RecordId) -> Result<Option<Record>, StoreError> {
        self.pause().await;
        self.store.get(id).await
    }
    async fn query(&self, partition: &str) -> Result<Vec<Record>, StoreError> {
        self.pause().await;
        self.store.query(partition).await
    }
    async fn query_prefix(&self, partition: &str, prefix: &str) -> Result<Vec<Record>, StoreError> {
        self.pause().await;
        self.store.query_prefix(partition, prefix).await
    }
    fn generation(&self) -> Option<u64> {
        MetadataReader::generation(self.store.as_ref())
    }
}

#[async_trait]
impl MetadataStore for Yielding {
    async fn put(&self, record: Record) -> Result<(), StoreError> {
        self.pause().await;
        self.store.put(record).await
    }
    async fn put_new(&self, record: Record) -> Result<bool, StoreError> {
        self.pause().await;
        self.store.put_new(record).await
    }
    async fn delete(&self, id: &RecordId) -> Result<(), StoreError> {
        self.pause().await;
        self.store.delete(id).await
    }
    async fn put_document(
        &self,
        id: &RecordId,
        body: Option<Vec<u8>>,
        expected: Expected<'_>,
    ) -> Result<bool, StoreError> {
        self.pause().await;
        self.store.put_document(id, body, expected).await
    }
    async fn document_revision(&self, id: &RecordId) -> Result<Option<String>, StoreError> {
        self.pause().await;
        self.store.document_revision(id).await
    }
    async fn document_ids_in(&self, partition: &str) -> Result<Vec<RecordId>, StoreError> {
        self.store.document_ids_in(partition).await
    }
    async fn document_ids(&self) -> Result<Vec<RecordId>, StoreError> {
        self.store.document_ids().await
    }
    async fn scan(&self) -> Result<Vec<Record>, StoreError> {
        self.store.scan().await
    }
}

/// What a reader saw of version 1.0.0 while the events ran, and at the end.
#[derive(Debug, Default)]
struct Seen {
    /// Served at some read, with the key ID that signed it (`None`: served unsigned).
    served: Vec<Option<String>>,
    finally: Option<Option<String>>,
    problem: String,
}

/// Indexes the events of `files` (all in the store already) side by side under the schedule
/// `seed`, reading the version between steps.
async fn race(setup: &[(&str, Vec<u8>)], files: &[(&str, Vec<u8>)], seed: u64) -> Seen {
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let memory = Arc::new(MemoryMetadataStore::new());
    let signer = Arc::new(UrlSigner::new(
        vec![3; 32],
        std::time::Duration::from_secs(60),
    ));
    let registry = Registry::new(memory.clone(), Downloads::served(signer, artifacts.clone()));
    let yielding = Yielding {
        store: memory.clone(),
        schedule: Mutex::new(rand::SeedableRng::seed_from_u64(seed)),
    };
    let indexer = Indexer::new(Arc::new(yielding), artifacts.clone());
    for (key, bytes) in setup {
        artifacts.put(key, bytes.clone());
        indexer.index_key(key).await.unwrap();
    }
    for (key, bytes) in files {
        artifacts.put(key, bytes.clone());
    }
    let address = ModuleAddress::parse("acme", "network", "aws").unwrap();
    let version = Version::parse("1.0.0").unwrap();
    let read = || async {
        match registry
            .module_archive(&Access::All, &address, &version)
            .await
        {
            Ok(archive) => Some(archive.signed_by.map(|s| s.key_id)),
            Err(_) => None,
        }
    };
    let done = AtomicBool::new(false);
    let seen = Mutex::new(Seen::default());
    let events = async {
        let (a, b) = tokio::join!(indexer.index_key(files[0].0), indexer.index_key(files[1].0));
        a.unwrap();
        b.unwrap();
        done.store(true, Ordering::SeqCst);
    };
    let reader = async {
        while !done.load(Ordering::SeqCst) {
            if let Some(served) = read().await {
                seen.lock().unwrap().served.push(served);
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::join!(events, reader);
    let mut seen = seen.into_inner().unwrap();
    seen.finally = read().await;
    seen.problem = registry
        .problems()
        .await
        .unwrap()
        .into_iter()
        .filter(|p| p.key == SIG || p.key == ARCHIVE)
        .map(|p| p.problem)
        .collect::<Vec<_>>()
        .join("; ");
    seen
}

fn key_id() -> String {
    tfreg_core::gpg::parse_public_key(&fixture("signer.asc"), std::time::SystemTime::now())
        .unwrap()
        .key_id
}

/// Each schedule, with either file's event started first.
fn orders<'a>(
    one: &'a (&'a str, Vec<u8>),
    other: &'a (&'a str, Vec<u8>),
) -> impl Iterator<Item = (u64, [(&'a str, Vec<u8>); 2])> + 'a {
    (0..SCHEDULES).flat_map(move |seed| {
        [
            (seed, [one.clone(), other.clone()]),
            (seed, [other.clone(), one.clone()]),
        ]
    })
}

#[tokio::test]
async fn a_bad_signature_is_never_served_whichever_event_is_indexed_first() {
    let bytes = archive();
    let archive = (ARCHIVE, bytes.clone());
    let sig = (SIG, signature("stranger-secret.asc", &bytes));
    let policy = br#"{"require_signed_modules": true}"#.to_vec();
    for with_policy in [false, true] {
        let mut setup = vec![(KEY, fixture("signer.asc"))];
        if with_policy {
            setup.push((POLICY, policy.clone()));
        }
        for (seed, files) in orders(&archive, &sig) {
            let seen = race(&setup, &files, seed).await;
            let case = format!(
                "policy {with_policy}, {} first, schedule {seed}",
                files[0].0
            );
            assert!(seen.served.is_empty(), "{case}: served {:?}", seen.served);
            assert_eq!(seen.finally, None, "{case}");
            assert!(
                seen.problem.contains("does not verify with any"),
                "{case}: {}",
                seen.problem
            );
        }
    }
}

#[tokio::test]
async fn a_signed_version_is_served_only_once_its_signature_verified() {
    let bytes = archive();
    let archive = (ARCHIVE, bytes.clone());
    let sig = (SIG, signature("signer-secret.asc", &bytes));
    let setup = [(KEY, fixture("signer.asc"))];
    let signer = Some(key_id());
    for (seed, files) in orders(&archive, &sig) {
        let seen = race(&setup, &files, seed).await;
        let case = format!("{} first, schedule {seed}", files[0].0);
        assert!(
            seen.served.iter().all(|by| *by == signer),
            "{case}: served {:?}",
            seen.served
        );
        assert_eq!(
            seen.finally,
            Some(signer.clone()),
            "{case}: {}",
            seen.problem
        );
        assert_eq!(seen.problem, "", "{case}");
    }
}

#[tokio::test]
async fn a_policy_arriving_beside_an_unsigned_version_ends_refusing_it() {
    let archive = (ARCHIVE, archive());
    let policy = (POLICY, br#"{"require_signed_modules": true}"#.to_vec());
    let setup = [(KEY, fixture("signer.asc"))];
    for (seed, files) in orders(&archive, &policy) {
        let seen = race(&setup, &files, seed).await;
        let case = format!("{} first, schedule {seed}", files[0].0);
        assert_eq!(seen.finally, None, "{case}");
        assert!(
            seen.problem.contains("requires signed modules"),
            "{case}: {}",
            seen.problem
        );
    }
}
