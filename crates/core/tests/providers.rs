//! Provider publishing, end to end through the core: files arrive in any order, the indexer
//! records them, and the registry serves only what is signed and matches. Fixtures were made
//! with GnuPG by `fixtures/make-fixtures.sh`.

mod world;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tfreg_core::gpg;
use tfreg_core::memory::{MemoryArtifactStore, MemoryMetadataStore};
use tfreg_core::signing::UrlSigner;
use tfreg_core::tokens::Access;
use tfreg_core::{
    Downloads, Hostname, Indexer, MetadataReader, MetadataStore, Origin, Platform, ProviderAddress,
    Registry, Version,
};
use world::*;

const BOTH: &str = "1.0.0: darwin_arm64 linux_amd64";

#[test]
fn keys_are_read_and_refused_as_terraform_would() {
    let now = SystemTime::now();
    let release = gpg::parse_public_key(&fixture("release.asc"), now).unwrap();
    assert_eq!(release.key_id.len(), 16);
    assert!(release
        .key_id
        .chars()
        .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
    assert_eq!(release.expires_at, None);
    assert!(gpg::parse_public_key(&fixture("subkey.asc"), now).is_ok());

    // Terraform verifies EdDSA, and ignores key expiry (e2e `signatures`): both keys are
    // read, the expired one with its expiry, for the warnings.
    assert!(gpg::parse_public_key(&fixture("eddsa.asc"), now).is_ok());
    let expired = gpg::parse_public_key(&fixture("expired.asc"), now).unwrap();
    assert_eq!(gpg::date(expired.expires_at.unwrap()), "2020-06-01");
    assert!(expired.is_expired(now));

    let sums = fixture(SUMS);
    let armor = |name: &str| String::from_utf8(fixture(name)).unwrap();
    let verify =
        |key: &str, sig: &str| gpg::verify_detached(&armor(key), &fixture(sig), &sums, now);
    assert_eq!(verify("release.asc", &format!("{SUMS}.sig")), Ok(()));
    // Terraform reads binary signatures only.
    let armored = verify("release.asc", &format!("{SUMS}.asc-armored.sig")).unwrap_err();
    assert!(
        armored.contains("ASCII-armored") && armored.contains("tag byte does not have MSB set"),
        "{armored}"
    );
    assert_eq!(verify("subkey.asc", &format!("{SUMS}.subkey.sig")), Ok(()));
    assert_eq!(verify("eddsa.asc", &format!("{SUMS}.eddsa.sig")), Ok(()));
    // Made in 2020 while the key was valid: its expiry since changes nothing.
    assert_eq!(
        verify("expired.asc", &format!("{SUMS}.expired.sig")),
        Ok(())
    );
    assert!(verify("release.asc", &format!("{SUMS}.other.sig")).is_err());
    assert!(verify("other.asc", &format!("{SUMS}.sig")).is_err());
    let mut changed = sums.clone();
    changed[0] ^= 1;
    assert!(gpg::verify_detached(
        &armor("release.asc"),
        &fixture(&format!("{SUMS}.sig")),
        &changed,
        now
    )
    .is_err());
}

#[test]
fn a_signature_made_while_its_key_was_valid_verifies_whenever_it_is_judged() {
    // The key was made on 2020-01-01 to expire on 2020-06-01; it signed on 2020-02-01.
    let sums = fixture(SUMS);
    let key = String::from_utf8(fixture("expired.asc")).unwrap();
    let signature = fixture(&format!("{SUMS}.expired.sig"));
    let at = |date: &str| humantime::parse_rfc3339(date).unwrap();
    let verify = |when: &str| gpg::verify_detached(&key, &signature, &sums, at(when));
    // Before the key's expiry, just after it, and years later: a restart, a reindex or a
    // new key in the namespace judges it again, with the same verdict.
    for when in [
        "2020-03-01T00:00:00Z",
        "2020-07-01T00:00:00Z",
        "2036-01-01T00:00:00Z",
    ] {
        assert_eq!(verify(when), Ok(()), "{when}");
    }
    // Judged before it was made, it is from the future, which Terraform refuses.
    let early = verify("2020-01-15T00:00:00Z").unwrap_err();
    assert!(
        early.contains("made in the future") && early.contains("Terraform refuses"),
        "{early}"
    );
}

#[tokio::test]
async fn a_signed_release_is_served_whatever_order_its_files_arrive_in() {
    let orders: [[usize; 5]; 4] = [
        [0, 1, 2, 3, 4],
        [4, 3, 2, 1, 0],
        [3, 0, 4, 2, 1],
        [2, 4, 0, 3, 1],
    ];
    for order in orders {
        let world = World::new();
        let files = [
            (format!("{DIR}/{LINUX}"), fixture(LINUX)),
            (format!("{DIR}/{DARWIN}"), fixture(DARWIN)),
            (format!("{DIR}/{SUMS}"), fixture(SUMS)),
            (format!("{DIR}/{SUMS}.sig"), fixture(&format!("{SUMS}.sig"))),
            ("keys/acme/release.asc".to_owned(), fixture("release.asc")),
        ];
        for &i in &order {
            world.put(&files[i].0, files[i].1.clone()).await;
        }
        assert_eq!(
            world.served().await,
            [BOTH],
            "order {order:?}: {}",
            world.problems().await
        );
        // Replaying every event changes nothing.
        for (key, _) in &files {
            world.indexer.index_key(key).await.unwrap();
        }
        assert_eq!(world.served().await, [BOTH]);
    }
}

#[tokio::test]
async fn the_download_answer_has_every_field_terraform_needs() {
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    let origin = Origin::https("127.0.0.1:8443").unwrap();
    let linux = Platform::parse("linux", "amd64").unwrap();
    let doc = world
        .registry
        .provider_download(&Access::All, &widget(), &v1(), &linux, &origin)
        .await
        .unwrap();
    let json = serde_json::to_value(&doc).unwrap();
    assert_eq!(json["protocols"], serde_json::json!(["5.0"]));
    assert_eq!(json["os"], "linux");
    assert_eq!(json["arch"], "amd64");
    assert_eq!(json["filename"], LINUX);
    let sums_text = String::from_utf8(fixture(SUMS)).unwrap();
    let line = sums_text.lines().find(|l| l.ends_with(LINUX)).unwrap();
    assert_eq!(json["shasum"], line.split_whitespace().next().unwrap());
    let base = "https://127.0.0.1:8443/v1/artifacts/providers/acme/widget/1.0.0/";
    for (field, file) in [
        ("download_url", LINUX.to_owned()),
        ("shasums_url", SUMS.to_owned()),
        ("shasums_signature_url", format!("{SUMS}.sig")),
    ] {
        let url = json[field].as_str().unwrap();
        assert!(
            url.starts_with(&format!("{base}{file}?expires=")),
            "{field}: {url}"
        );
    }
    let key = &json["signing_keys"]["gpg_public_keys"][0];
    let release = gpg::parse_public_key(&fixture("release.asc"), SystemTime::now()).unwrap();
    assert_eq!(key["key_id"], release.key_id);
    assert!(key["ascii_armor"]
        .as_str()
        .unwrap()
        .starts_with("-----BEGIN PGP PUBLIC KEY BLOCK-----"));

    let windows = Platform::parse("windows", "amd64").unwrap();
    let err = world
        .registry
        .provider_download(&Access::All, &widget(), &v1(), &windows, &origin)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "provider acme/widget 1.0.0 has no package for windows_amd64"
    );
}

#[tokio::test]
async fn a_zip_that_does_not_match_is_not_offered_until_it_is_fixed() {
    let world = World::new();
    // A release served for one platform, the other's zip not there yet. (A platform once
    // served keeps its package whatever is uploaded over it: see `immutability.rs`.)
    world.put(&format!("{DIR}/{DARWIN}"), fixture(DARWIN)).await;
    world.put(&format!("{DIR}/{SUMS}"), fixture(SUMS)).await;
    world
        .put(
            &format!("{DIR}/{SUMS}.sig"),
            fixture(&format!("{SUMS}.sig")),
        )
        .await;
    world
        .put("keys/acme/release.asc", fixture("release.asc"))
        .await;
    // A broken zip does not match its SHA256SUMS line, and is never even unpacked,
    let mut broken = fixture(LINUX);
    let last = broken.len() - 1;
    broken[last] ^= 0x55;
    world.put(&format!("{DIR}/{LINUX}"), broken).await;
    assert_eq!(world.served().await, ["1.0.0: darwin_arm64"]);
    assert!(
        world.problems().await.contains("does not match SHA256SUMS"),
        "{}",
        world.problems().await
    );
    let problems = world.registry.problems().await.unwrap();
    assert!(
        !problems.iter().any(|p| p.problem.contains("zip")),
        "{problems:?}"
    );
    // a valid zip with other content does not match its SHA256SUMS line,
    world.put(&format!("{DIR}/{LINUX}"), fixture(DARWIN)).await;
    assert_eq!(world.served().await, ["1.0.0: darwin_arm64"]);
    assert!(
        world.problems().await.contains("does not match SHA256SUMS"),
        "{}",
        world.problems().await
    );
    // and the right file, when it comes, is judged again.
    world.put(&format!("{DIR}/{LINUX}"), fixture(LINUX)).await;
    assert_eq!(world.served().await, [BOTH]);
}

#[tokio::test]
async fn unsigned_or_foreign_signed_releases_are_never_served() {
    // No signature at all.
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    world.delete(&format!("{DIR}/{SUMS}.sig")).await;
    assert!(world.served().await.is_empty());
    assert!(world
        .problems()
        .await
        .contains(".sig has not been published"));

    // Signed by a key that is not under keys/acme/ ...
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.other.sig"), "release.asc")
        .await;
    assert!(world.served().await.is_empty());
    assert!(
        world.problems().await.contains("does not verify"),
        "{}",
        world.problems().await
    );
    // ... until the publisher trusts it: the key's arrival re-verifies the release,
    world.put("keys/acme/other.asc", fixture("other.asc")).await;
    assert_eq!(world.served().await, [BOTH]);
    // and removing it unpublishes the release again.
    world.delete("keys/acme/other.asc").await;
    assert!(world.served().await.is_empty());

    // A key of another namespace does not count.
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "other.asc")
        .await;
    world
        .put("keys/globex/release.asc", fixture("release.asc"))
        .await;
    assert!(world.served().await.is_empty());
}

#[tokio::test]
async fn releases_signed_by_eddsa_keys_and_by_keys_that_expired_since_are_served() {
    for (sig, key) in [
        (format!("{SUMS}.eddsa.sig"), "eddsa.asc"),
        (format!("{SUMS}.expired.sig"), "expired.asc"),
    ] {
        let world = World::new();
        world.publish_release(&sig, key).await;
        assert_eq!(world.served().await, [BOTH], "{key}");
        let problems = world.registry.problems().await.unwrap();
        assert!(problems.is_empty(), "{key}: {problems:?}");
    }
    // A certify-only key whose signing subkey signed.
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.subkey.sig"), "subkey.asc")
        .await;
    assert_eq!(world.served().await, [BOTH]);
}

#[tokio::test]
async fn manifests_set_the_protocols_and_old_protocols_are_refused() {
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    let manifest = format!("{DIR}/terraform-provider-widget_1.0.0_manifest.json");
    world
        .put(
            &manifest,
            br#"{"version":1,"metadata":{"protocol_versions":["6.0"]}}"#.to_vec(),
        )
        .await;
    let doc = world
        .registry
        .provider_versions(&Access::All, &widget())
        .await
        .unwrap();
    assert_eq!(doc.versions[0].protocols, ["6.0"]);

    world
        .put(
            &manifest,
            br#"{"version":1,"metadata":{"protocol_versions":["4.0"]}}"#.to_vec(),
        )
        .await;
    assert!(world.served().await.is_empty());
    world.delete(&manifest).await;
    assert_eq!(
        world
            .registry
            .provider_versions(&Access::All, &widget())
            .await
            .unwrap()
            .versions[0]
            .protocols,
        ["5.0"]
    );
}

#[tokio::test]
async fn the_mirror_serves_uploads_and_the_registrys_own_providers() {
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    let mirrored =
        "mirror/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    world
        .put(mirrored, zip_of(&["terraform-provider-null_v3.2.1"]))
        .await;
    world
        .put(
            "mirror/registry.terraform.io/hashicorp/null/index.json",
            b"{}".to_vec(),
        )
        .await;
    let origin = Origin::https("127.0.0.1:8443").unwrap();
    let host = |h: &str| Hostname::parse(h).unwrap();
    let null = ProviderAddress::parse("hashicorp", "null").unwrap();

    let index = world
        .registry
        .mirror_index(&Access::All, &host("registry.terraform.io"), &null, &origin)
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&index).unwrap(),
        serde_json::json!({"versions": {"3.2.1": {}}})
    );
    let version = Version::parse("3.2.1").unwrap();
    let doc = world
        .registry
        .mirror_version(
            &Access::All,
            &host("registry.terraform.io"),
            &null,
            &version,
            &origin,
        )
        .await
        .unwrap();
    let archive = &doc.archives["linux_amd64"];
    assert!(
        archive
            .url
            .starts_with("https://127.0.0.1:8443/v1/artifacts/mirror/"),
        "{}",
        archive.url
    );

    // The registry's own providers appear under its hostname.
    let own = world
        .registry
        .mirror_version(
            &Access::All,
            &host("registry.example.test"),
            &widget(),
            &v1(),
            &origin,
        )
        .await
        .unwrap();
    assert_eq!(
        own.archives.keys().collect::<Vec<_>>(),
        ["darwin_arm64", "linux_amd64"]
    );
    // Both with the hashes Terraform computes for each zip.
    assert_eq!(
        own.archives["linux_amd64"].hashes,
        hashes_of(&fixture(LINUX))
    );
    assert_eq!(
        archive.hashes,
        hashes_of(&zip_of(&["terraform-provider-null_v3.2.1"]))
    );
    // Not under any other hostname.
    let err = world
        .registry
        .mirror_index(
            &Access::All,
            &host("other.example.test"),
            &widget(),
            &origin,
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the mirror has no provider other.example.test/acme/widget"
    );
}

/// An artifact store that simulates, for one key, what a concurrent invocation does to an
/// indexer's view: its next read returns older content than the store now holds (an upload
/// landed right after the read), or the key is deleted after a number of looks (a delete
/// handled by an invocation that wrote first).
struct Interleaved {
    inner: Arc<MemoryArtifactStore>,
    key: String,
    stale_read: std::sync::Mutex<Option<Vec<u8>>>,
    heads_until_delete: std::sync::Mutex<usize>,
}

impl Interleaved {
    fn new(inner: Arc<MemoryArtifactStore>, key: &str) -> Interleaved {
        Interleaved {
            inner,
            key: key.to_owned(),
            stale_read: std::sync::Mutex::new(None),
            heads_until_delete: std::sync::Mutex::new(usize::MAX),
        }
    }
}

#[async_trait::async_trait]
impl tfreg_core::ArtifactStore for Interleaved {
    async fn head(
        &self,
        key: &str,
    ) -> Result<Option<tfreg_core::store::ObjectMeta>, tfreg_core::StoreError> {
        let meta = self.inner.head(key).await;
        if key == self.key {
            let mut left = self.heads_until_delete.lock().unwrap();
            if *left == 1 {
                self.inner.delete(key);
            }
            *left = left.saturating_sub(1);
        }
        meta
    }
    async fn list(&self) -> Result<Vec<String>, tfreg_core::StoreError> {
        self.inner.list().await
    }
    async fn open(
        &self,
        key: &str,
    ) -> Result<Option<tfreg_core::store::ObjectBody>, tfreg_core::StoreError> {
        if key == self.key {
            if let Some(old) = self.stale_read.lock().unwrap().take() {
                let meta = tfreg_core::store::ObjectMeta {
                    size: old.len() as u64,
                    revision: "an older revision".into(),
                };
                let reader = std::io::Cursor::new(old);
                return Ok(Some(tfreg_core::store::ObjectBody::new(meta, reader)));
            }
        }
        self.inner.open(key).await
    }
    async fn open_revision(
        &self,
        key: &str,
        revision: &str,
    ) -> Result<Option<tfreg_core::store::ObjectBody>, tfreg_core::StoreError> {
        self.inner.open_revision(key, revision).await
    }
    async fn keep(
        &self,
        key: &str,
        revision: &str,
        sha256: &str,
    ) -> Result<tfreg_core::store::Kept, tfreg_core::StoreError> {
        self.inner.keep(key, revision, sha256).await
    }
    async fn refusal(&self, key: &str) -> Result<Option<String>, tfreg_core::StoreError> {
        self.inner.refusal(key).await
    }
}

#[tokio::test]
async fn a_verdict_computed_from_files_replaced_meanwhile_is_computed_again() {
    let signer = Arc::new(UrlSigner::new(vec![3; 32], Duration::from_secs(60)));
    let inner = Arc::new(MemoryArtifactStore::new());
    let sums_key = format!("{DIR}/{SUMS}");
    let store = Arc::new(Interleaved::new(inner.clone(), &sums_key));
    let metadata = Arc::new(MemoryMetadataStore::new());
    let indexer = Indexer::new(metadata.clone(), store.clone());
    let registry = Registry::new(metadata, Downloads::served(signer, store.clone()));
    // Given a served release,
    let files = [
        ("keys/acme/release.asc".to_owned(), fixture("release.asc")),
        (format!("{DIR}/{LINUX}"), fixture(LINUX)),
        (sums_key.clone(), fixture(SUMS)),
        (format!("{DIR}/{SUMS}.sig"), fixture(&format!("{SUMS}.sig"))),
    ];
    for (key, content) in &files {
        inner.put(key, content.clone());
        indexer.index_key(key).await.unwrap();
    }
    assert_eq!(
        registry
            .provider_versions(&Access::All, &widget())
            .await
            .unwrap()
            .versions
            .len(),
        1
    );
    // when an invocation verifies the signature against SHA256SUMS content that was
    // replaced right after it read it (and so writes its verdict last),
    *store.stale_read.lock().unwrap() = Some(b"an older SHA256SUMS".to_vec());
    indexer
        .index_key(&format!("{DIR}/{SUMS}.sig"))
        .await
        .unwrap();
    // then it notices, verifies the current files again, and the release stays served.
    let doc = registry.provider_versions(&Access::All, &widget()).await;
    assert!(doc.is_ok(), "{}", World::report(&registry).await);
}

#[tokio::test]
async fn a_record_written_for_an_object_deleted_meanwhile_is_removed_again() {
    let signer = Arc::new(UrlSigner::new(vec![3; 32], Duration::from_secs(60)));
    let inner = Arc::new(MemoryArtifactStore::new());
    let key = "modules/acme/network/aws/1.0.0.tar.gz";
    let module = tfreg_core::module_archive::archive_of(
        tfreg_core::module_archive::ArchiveFormat::TarGz,
        &[("main.tf", b"")],
    );
    inner.put(key, module);
    // The object disappears after the indexer's second look (the one it decides on).
    let store = Arc::new(Interleaved::new(inner, key));
    *store.heads_until_delete.lock().unwrap() = 2;
    let metadata = Arc::new(MemoryMetadataStore::new());
    let indexer = Indexer::new(metadata.clone(), store.clone());
    let registry = Registry::new(metadata, Downloads::served(signer, store));
    indexer.index_key(key).await.unwrap();
    let address = tfreg_core::ModuleAddress::parse("acme", "network", "aws").unwrap();
    assert!(
        registry
            .module_versions(&Access::All, &address)
            .await
            .is_err(),
        "a deleted module is still listed"
    );
}

/// What runs in the middle of an indexer's work: a concurrent handler's effect.
type Meanwhile = Box<dyn Fn() -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>;

/// A metadata store that runs `meanwhile` once, right after the `n`th query of `partition`
/// (`queries_until` counts down to it; `usize::MAX`: never), as a concurrent handler whose
/// writes land between the indexer's reads would.
struct AfterQuery {
    inner: Arc<MemoryMetadataStore>,
    partition: String,
    queries_until: std::sync::Mutex<usize>,
    meanwhile: Meanwhile,
    /// Every query, of any partition.
    queries: std::sync::atomic::AtomicUsize,
    documents: std::sync::atomic::AtomicUsize,
    /// Like `queries_until`, for the queries of one version's records of the partition.
    prefix_queries_until: std::sync::Mutex<usize>,
}

impl AfterQuery {
    fn new(inner: Arc<MemoryMetadataStore>, partition: String, meanwhile: Meanwhile) -> Self {
        Self {
            inner,
            partition,
            queries_until: std::sync::Mutex::new(usize::MAX),
            meanwhile,
            queries: Default::default(),
            documents: Default::default(),
            prefix_queries_until: std::sync::Mutex::new(usize::MAX),
        }
    }

    /// Runs `meanwhile` right after the `n`th query of one version's records of the
    /// partition from now.
    fn after_prefix(&self, n: usize) {
        *self.prefix_queries_until.lock().unwrap() = n;
    }

    /// Counts a query of the partition down in `until`, running `meanwhile` at its end.
    async fn count_down(&self, partition: &str, until: &std::sync::Mutex<usize>) {
        if partition != self.partition {
            return;
        }
        let run = {
            let mut left = until.lock().unwrap();
            let run = *left == 1;
            *left = left.saturating_sub(1);
            run
        };
        if run {
            (self.meanwhile)().await;
        }
    }

    /// Runs `meanwhile` right after the `n`th query of the partition from now.
    fn after(&self, n: usize) {
        *self.queries_until.lock().unwrap() = n;
    }
}

#[async_trait::async_trait]
impl MetadataReader for AfterQuery {
    async fn get(
        &self,
        id: &tfreg_core::store::RecordId,
    ) -> Result<Option<tfreg_core::store::Record>, tfreg_core::StoreError> {
        self.inner.get(id).await
    }

    async fn query(
        &self,
        partition: &str,
    ) -> Result<Vec<tfreg_core::store::Record>, tfreg_core::StoreError> {
        self.queries
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let records = self.inner.query(partition).await?;
        self.count_down(partition, &self.queries_until).await;
        Ok(records)
    }

    async fn query_prefix(
        &self,
        partition: &str,
        prefix: &str,
    ) -> Result<Vec<tfreg_core::store::Record>, tfreg_core::StoreError> {
        let records = self.inner.query_prefix(partition, prefix).await?;
        self.count_down(partition, &self.prefix_queries_until).await;
        Ok(records)
    }

    async fn get_document(
        &self,
        id: &tfreg_core::store::RecordId,
    ) -> Result<Option<tfreg_core::store::Document>, tfreg_core::StoreError> {
        self.documents
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.get_document(id).await
    }

    fn generation(&self) -> Option<u64> {
        Some(self.inner.generation())
    }
}

#[async_trait::async_trait]
impl MetadataStore for AfterQuery {
    async fn put(&self, record: tfreg_core::store::Record) -> Result<(), tfreg_core::StoreError> {
        self.inner.put(record).await
    }

    async fn put_new(
        &self,
        record: tfreg_core::store::Record,
    ) -> Result<bool, tfreg_core::StoreError> {
        self.inner.put_new(record).await
    }

    async fn delete(&self, id: &tfreg_core::store::RecordId) -> Result<(), tfreg_core::StoreError> {
        self.inner.delete(id).await
    }

    async fn scan(&self) -> Result<Vec<tfreg_core::store::Record>, tfreg_core::StoreError> {
        self.inner.scan().await
    }

    async fn put_document(
        &self,
        id: &tfreg_core::store::RecordId,
        body: Option<Vec<u8>>,
        expected: tfreg_core::store::Expected<'_>,
    ) -> Result<bool, tfreg_core::StoreError> {
        self.inner.put_document(id, body, expected).await
    }

    async fn document_ids(
        &self,
    ) -> Result<Vec<tfreg_core::store::RecordId>, tfreg_core::StoreError> {
        self.inner.document_ids().await
    }

    async fn document_ids_in(
        &self,
        partition: &str,
    ) -> Result<Vec<tfreg_core::store::RecordId>, tfreg_core::StoreError> {
        self.inner.document_ids_in(partition).await
    }

    async fn document_revision(
        &self,
        id: &tfreg_core::store::RecordId,
    ) -> Result<Option<String>, tfreg_core::StoreError> {
        self.inner.document_revision(id).await
    }
}

#[tokio::test]
async fn a_verdict_computed_with_a_key_removed_meanwhile_is_computed_again() {
    let signer = Arc::new(UrlSigner::new(vec![3; 32], Duration::from_secs(60)));
    let artifacts = Arc::new(MemoryArtifactStore::new());
    // A signing key's record disappears right after the signature's verification read the
    // keys: a key removal handled concurrently, which found no verdict to re-check yet.
    let inner = Arc::new(MemoryMetadataStore::new());
    let removed = inner.clone();
    let metadata = Arc::new(AfterQuery::new(
        inner,
        "keys/acme".into(),
        Box::new(move || {
            let store = removed.clone();
            Box::pin(async move {
                let id = tfreg_core::store::RecordId::signing_key(
                    &tfreg_core::Namespace::parse("acme").unwrap(),
                    "keys/acme/release.asc",
                );
                tfreg_core::MetadataStore::delete(store.as_ref(), &id)
                    .await
                    .unwrap();
            })
        }),
    ));
    let indexer = Indexer::new(metadata.clone(), artifacts.clone());
    let registry = Registry::new(
        metadata.clone(),
        Downloads::served(signer, artifacts.clone()),
    );
    for (key, content) in [
        ("keys/acme/release.asc".to_owned(), fixture("release.asc")),
        (format!("{DIR}/{LINUX}"), fixture(LINUX)),
        (format!("{DIR}/{SUMS}"), fixture(SUMS)),
    ] {
        artifacts.put(&key, content);
        indexer.index_key(&key).await.unwrap();
    }
    // Given the key's object already deleted (its own event not handled yet) and its record
    // removed by that concurrent handler right after the signature's run read the keys,
    artifacts.delete("keys/acme/release.asc");
    metadata.after(2);
    let sig = format!("{DIR}/{SUMS}.sig");
    artifacts.put(&sig, fixture(&format!("{SUMS}.sig")));
    indexer.index_key(&sig).await.unwrap();
    // then the release is not served: the verdict was recomputed without the key.
    assert!(registry
        .provider_versions(&Access::All, &widget())
        .await
        .is_err());
}

// What Terraform refuses at install, refused at publish. Every verdict below was compared
// with what Terraform 1.11.4 does given the same files (the fixtures of `make-shapes.sh`);
// the end-to-end tests (`tests/e2e/provider_checks.rs`) do it again with the real CLI.

/// A zip holding one small executable per name.
fn zip_of(names: &[&str]) -> Vec<u8> {
    use std::io::Write;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for name in names {
        let options = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
        writer.start_file(*name, options).unwrap();
        writer.write_all(b"#!/bin/sh\n").unwrap();
    }
    writer.finish().unwrap().into_inner()
}

/// The `h1:` and `zh:` hashes of a zip, as Terraform computes them.
fn hashes_of(zip: &[u8]) -> Vec<String> {
    let limits = tfreg_core::hash::PackageLimits::default();
    vec![
        tfreg_core::hash::h1_of_zip(std::io::Cursor::new(zip.to_vec()), &limits).unwrap(),
        format!("zh:{}", tfreg_core::hash::sha256_hex(zip).unwrap()),
    ]
}

fn shape(name: &str) -> Vec<u8> {
    fixture(&format!("shapes/{name}"))
}

/// The problem recorded for a published file, if any.
async fn problem_of(world: &World, key: &str) -> Option<String> {
    let problems = world.registry.problems().await.unwrap();
    problems
        .into_iter()
        .find(|p| p.key == key)
        .map(|p| p.problem)
}

/// Publishes release 1.0.0 with the signature `signature`, trusting `key` (`.asc` bytes).
async fn publish_signed_by(world: &World, signature: Vec<u8>, key: Vec<u8>) {
    world.put(&format!("{DIR}/{LINUX}"), fixture(LINUX)).await;
    world.put(&format!("{DIR}/{DARWIN}"), fixture(DARWIN)).await;
    world.put(&format!("{DIR}/{SUMS}"), fixture(SUMS)).await;
    world.put(&format!("{DIR}/{SUMS}.sig"), signature).await;
    world.put("keys/acme/release.asc", key).await;
}

#[test]
fn signature_files_are_read_as_terraform_reads_them() {
    let now = SystemTime::now();
    let key = String::from_utf8(shape("shapes.asc")).unwrap();
    let sums = fixture(SUMS);
    let check =
        |name: &str| gpg::check_detached(&key, &shape(&format!("{SUMS}.{name}.sig")), &sums, now);
    // Terraform installs with these: text mode, SHA-1, a signature by another key before
    // the key's own (Terraform reads on to the first by the key it is given), bytes after
    // the signature (never read), a signature that expires later.
    for accepted in [
        "binary",
        "textmode",
        "sha1",
        "stranger-first",
        "trailing",
        "expiring",
    ] {
        assert!(check(accepted).is_ok(), "{accepted}: {:?}", check(accepted));
    }
    assert_eq!(check("binary").unwrap().expires_at, None);
    let expires = check("expiring").unwrap().expires_at.unwrap();
    assert!(
        (4_070_822_400..=4_070_995_200).contains(&expires),
        "expires at {expires}, not on 2099-01-01"
    );
    // Terraform fails on these, with the message quoted in each reason.
    for (refused, reasons) in [
        (
            "clearsigned",
            ["cleartext-signed", "tag byte does not have MSB set"],
        ),
        (
            "signed-message",
            ["not a detached signature", "non signature packet found"],
        ),
        (
            "critical-notation",
            ["critical notation", "unknown critical notation"],
        ),
        ("future", ["made in the future", "signature expired"]),
        ("expired", ["expired at 2021-0", "signature expired"]),
        (
            "wrong-first",
            ["does not match the signed file", "invalid signature"],
        ),
    ] {
        match check(refused) {
            Err(gpg::NotVerified::Refused(why)) => {
                for reason in reasons {
                    assert!(why.contains(reason), "{refused}: {why}");
                }
            }
            other => panic!("{refused}: {other:?}"),
        }
    }
    // A file with no signature by the key says nothing about the key: another may have made it.
    assert_eq!(
        gpg::check_detached(&key, &fixture(&format!("{SUMS}.sig")), &sums, now),
        Err(gpg::NotVerified::NotByThisKey)
    );
}

#[tokio::test]
async fn a_release_whose_signature_terraform_refuses_is_never_served() {
    let armored = fixture(&format!("{SUMS}.asc-armored.sig"));
    let cases = [
        (
            "armored",
            armored,
            fixture("release.asc"),
            Some("ASCII-armored"),
        ),
        (
            "clearsigned",
            shape(&format!("{SUMS}.clearsigned.sig")),
            shape("shapes.asc"),
            Some("cleartext-signed"),
        ),
        (
            "signed message",
            shape(&format!("{SUMS}.signed-message.sig")),
            shape("shapes.asc"),
            Some("not a detached signature"),
        ),
        (
            "expired",
            shape(&format!("{SUMS}.expired.sig")),
            shape("shapes.asc"),
            Some("expired at"),
        ),
        (
            "wrong first",
            shape(&format!("{SUMS}.wrong-first.sig")),
            shape("shapes.asc"),
            Some("does not match the signed file"),
        ),
        (
            "stranger first",
            shape(&format!("{SUMS}.stranger-first.sig")),
            shape("shapes.asc"),
            None,
        ),
    ];
    for (case, signature, key, refused) in cases {
        let world = World::new();
        publish_signed_by(&world, signature, key).await;
        let problem = problem_of(&world, &format!("{DIR}/{SUMS}.sig")).await;
        match refused {
            Some(reason) => {
                assert!(world.served().await.is_empty(), "{case}");
                let problem = problem.unwrap_or_default();
                assert!(problem.contains(reason), "{case}: {problem}");
                // The release's own report says why too.
                assert!(world.problems().await.contains(reason), "{case}");
            }
            None => {
                assert_eq!(world.served().await, [BOTH], "{case}: {problem:?}");
            }
        }
    }
}

#[tokio::test]
async fn a_release_whose_signature_expires_is_served_until_then() {
    use tfreg_core::store::partition;
    let world = World::new();
    let signature = shape(&format!("{SUMS}.expiring.sig"));
    publish_signed_by(&world, signature, shape("shapes.asc")).await;
    assert_eq!(world.served().await, [BOTH]);
    // Judged on 2100-01-01, when Terraform refuses the signature, it is not served.
    let records = world
        .metadata
        .query(&partition::provider(&widget()))
        .await
        .unwrap();
    let namespace = tfreg_core::Namespace::parse("acme").unwrap();
    let keys = tfreg_core::providers::CurrentKeys::from_records(
        &world
            .metadata
            .query(&partition::keys(&namespace))
            .await
            .unwrap(),
    );
    let later = std::time::UNIX_EPOCH + Duration::from_secs(4_102_444_800);
    let judged = tfreg_core::providers::evaluate(&records, &keys, later);
    let (report, served) = &judged[0];
    assert!(served.is_none());
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("expired at 2099")),
        "{report:?}"
    );
}

#[tokio::test]
async fn sha256sums_that_terraform_would_misread_are_refused_naming_the_line() {
    // A release not served yet (its key is not published), so its SHA256SUMS may still be
    // replaced (once served, it never changes: see `immutability.rs`).
    let world = World::new();
    world.put(&format!("{DIR}/{LINUX}"), fixture(LINUX)).await;
    world.put(&format!("{DIR}/{DARWIN}"), fixture(DARWIN)).await;
    world
        .put(
            &format!("{DIR}/{SUMS}.sig"),
            fixture(&format!("{SUMS}.sig")),
        )
        .await;
    let sums_key = format!("{DIR}/{SUMS}");
    let sums = String::from_utf8(fixture(SUMS)).unwrap();
    let hash = "c".repeat(64);
    let cases = [
        (
            format!("{sums}{hash}  terraform-provider-gadget_1.0.0_linux_amd64.zip\n"),
            "line 3 lists terraform-provider-gadget_1.0.0_linux_amd64.zip",
        ),
        (
            format!("{sums}{hash}  terraform-provider-widget_0.9.0_linux_amd64.zip\n"),
            "line 3 lists terraform-provider-widget_0.9.0_linux_amd64.zip",
        ),
        (sums.replacen('\n', "\n\n", 1), "line 2 is empty"),
        (format!("{sums}\n"), "line 3 is empty"),
        (sums.replace("  terraform", " *terraform"), "line 1 marks"),
        (format!("{sums}{hash}  {LINUX}\n"), "lines 2 and 3 give"),
        (format!("{hash}  README.md\n"), "lists no package"),
    ];
    for (text, reason) in cases {
        world.put(&sums_key, text.into_bytes()).await;
        assert!(world.served().await.is_empty(), "{reason}");
        let problem = problem_of(&world, &sums_key).await.unwrap_or_default();
        assert!(problem.contains(reason), "{reason}: {problem}");
    }
    // Lines naming other files (the manifest goreleaser lists, anything else) are no
    // matter, as for Terraform (it still has to be signed: the end-to-end test signs and
    // installs such a release).
    let extra =
        format!("{sums}{hash}  terraform-provider-widget_1.0.0_manifest.json\n{hash}  README.md\n");
    world.put(&sums_key, extra.into_bytes()).await;
    assert_eq!(problem_of(&world, &sums_key).await, None);
    // The signed SHA256SUMS, and the key, make it served.
    world.put(&sums_key, fixture(SUMS)).await;
    world
        .put("keys/acme/release.asc", fixture("release.asc"))
        .await;
    assert_eq!(world.served().await, [BOTH]);
}

#[tokio::test]
async fn packages_without_the_providers_executable_are_never_offered() {
    let world = World::new();
    let dir = "providers/acme/widget/2.0.0";
    let release = "terraform-provider-widget_2.0.0";
    let platforms = [
        "linux_amd64",
        "darwin_arm64",
        "windows_amd64",
        "linux_arm64",
        "freebsd_amd64",
        "linux_386",
    ];
    for platform in platforms {
        let name = format!("{release}_{platform}.zip");
        world.put(&format!("{dir}/{name}"), shape(&name)).await;
    }
    let sums = format!("{release}_SHA256SUMS");
    world.put(&format!("{dir}/{sums}"), shape(&sums)).await;
    let sig = format!("{sums}.sig");
    world.put(&format!("{dir}/{sig}"), shape(&sig)).await;
    world.put("keys/acme/shapes.asc", shape("shapes.asc")).await;
    // Terraform takes terraform-provider-widget_v2.0.0, terraform-provider-widget (beside a
    // README) and terraform-provider-widget_v2.0.0.exe,
    assert_eq!(
        world.served().await,
        ["2.0.0: darwin_arm64 linux_amd64 windows_amd64"],
        "{}",
        world.problems().await
    );
    // and fails on a zip holding it in a folder, or only another provider's executable.
    for (platform, reason) in [
        (
            "linux_arm64",
            "bin/terraform-provider-widget_v2.0.0 is inside a folder",
        ),
        ("freebsd_amd64", "no provider executable at its top level"),
        ("linux_386", "no provider executable at its top level"),
    ] {
        let key = format!("{dir}/{release}_{platform}.zip");
        let problem = problem_of(&world, &key).await.unwrap_or_default();
        assert!(
            problem.contains(reason) && problem.contains("provider binary not found"),
            "{platform}: {problem}"
        );
    }

    // A mirror upload is unpacked at once, and checked the same way.
    let mirrored =
        "mirror/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    let null = ProviderAddress::parse("hashicorp", "null").unwrap();
    let host = Hostname::parse("registry.terraform.io").unwrap();
    let origin = Origin::https("127.0.0.1:8443").unwrap();
    world
        .put(mirrored, zip_of(&["bin/terraform-provider-null_v3.2.1"]))
        .await;
    let problem = problem_of(&world, mirrored).await.unwrap_or_default();
    assert!(problem.contains("inside a folder"), "{problem}");
    assert!(world
        .registry
        .mirror_index(&Access::All, &host, &null, &origin)
        .await
        .is_err());
    world
        .put(mirrored, zip_of(&["terraform-provider-null_v3.2.1"]))
        .await;
    assert_eq!(problem_of(&world, mirrored).await, None);
    assert!(world
        .registry
        .mirror_index(&Access::All, &host, &null, &origin)
        .await
        .is_ok());
}

#[tokio::test]
async fn a_refusal_recorded_by_a_concurrent_verification_is_kept() {
    let signer = Arc::new(UrlSigner::new(vec![3; 32], Duration::from_secs(60)));
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let inner = Arc::new(MemoryMetadataStore::new());
    let dir = "providers/acme/widget/2.0.0";
    let sums = "terraform-provider-widget_2.0.0_SHA256SUMS";
    let sig_key = format!("{dir}/{sums}.sig");
    // The release signature's event runs (with its own indexer, as a concurrent invocation
    // would) right after the package's event looked for a verified signature the second
    // time, the look it decides on.
    let verifier = Arc::new(Indexer::new(inner.clone(), artifacts.clone()));
    let verified = sig_key.clone();
    let metadata = Arc::new(AfterQuery::new(
        inner.clone(),
        tfreg_core::store::partition::provider(&widget()),
        Box::new(move || {
            let (verifier, key) = (verifier.clone(), verified.clone());
            Box::pin(async move {
                verifier.index_key(&key).await.unwrap();
            })
        }),
    ));
    let indexer = Indexer::new(metadata.clone(), artifacts.clone());
    for (key, name) in [
        ("keys/acme/shapes.asc".to_owned(), "shapes.asc".to_owned()),
        (format!("{dir}/{sums}"), sums.to_owned()),
    ] {
        artifacts.put(&key, shape(&name));
        indexer.index_key(&key).await.unwrap();
    }
    // Given a signed package without the provider's executable, whose signature arrives
    // while the package's own event runs, and is verified after that event last looked,
    let package = "terraform-provider-widget_2.0.0_linux_386.zip";
    let key = format!("{dir}/{package}");
    artifacts.put(&key, shape(package));
    artifacts.put(&sig_key, shape(&format!("{sums}.sig")));
    // (each look reads the version's four kinds of records: packages, SHA256SUMS,
    // signatures, manifest),
    metadata.after_prefix(8);
    indexer.index_key(&key).await.unwrap();
    assert_eq!(*metadata.prefix_queries_until.lock().unwrap(), 0, "it ran");
    // then the reason the verification found is still what status reports for the package.
    let registry = Registry::new(inner, Downloads::served(signer, artifacts));
    let problems = registry.problems().await.unwrap();
    let problem = problems.iter().find(|p| p.key == key).map(|p| &p.problem);
    assert!(
        problem.is_some_and(|p| p.contains("no provider executable at its top level")),
        "{problems:?}"
    );
}

#[tokio::test]
async fn a_store_that_counts_its_writes_gets_each_versions_document_read_once_per_change() {
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    let never: Meanwhile = Box::new(|| Box::pin(async {}));
    let counting = Arc::new(AfterQuery::new(
        world.metadata.clone(),
        String::new(),
        never,
    ));
    let registry = Registry::new(counting.clone(), world.downloads.clone());
    let queries = || counting.queries.load(std::sync::atomic::Ordering::SeqCst);
    let documents = || counting.documents.load(std::sync::atomic::Ordering::SeqCst);
    for _ in 0..5 {
        let versions = registry
            .provider_versions(&Access::All, &widget())
            .await
            .unwrap();
        assert_eq!(versions.versions.len(), 1);
    }
    // The provider's versions document, read once; no partition is queried.
    assert_eq!((queries(), documents()), (0, 1));
    // Any write reads it again: the key's removal stops the release with its event.
    world.delete("keys/acme/release.asc").await;
    let answer = registry.provider_versions(&Access::All, &widget()).await;
    assert!(
        answer.map_or(true, |v| v.versions.is_empty()),
        "served after its key was removed"
    );
    assert_eq!((queries(), documents()), (0, 2));
}

#[tokio::test]
async fn a_versions_document_made_while_another_writer_replaced_it_is_made_again() {
    use tfreg_core::module_archive::{archive_of, ArchiveFormat};
    let signer = Arc::new(UrlSigner::new(vec![3; 32], Duration::from_secs(60)));
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let inner = Arc::new(MemoryMetadataStore::new());
    let main: &[u8] = b"variable \"cidr\" {}\n";
    let archive = archive_of(ArchiveFormat::TarGz, &[("main.tf", main)]);
    // Given another handler that publishes 2.0.0 whole right after this one read the
    // records of 1.0.0 (its versions document already read, as empty),
    let other = Arc::new(Indexer::new(inner.clone(), artifacts.clone()));
    let (other_artifacts, other_archive) = (artifacts.clone(), archive.clone());
    let meanwhile: Meanwhile = Box::new(move || {
        let (other, artifacts, archive) = (
            other.clone(),
            other_artifacts.clone(),
            other_archive.clone(),
        );
        Box::pin(async move {
            let key = "modules/acme/network/aws/2.0.0.tar.gz";
            artifacts.put(key, archive);
            other.index_key(key).await.unwrap();
        })
    });
    let metadata = Arc::new(AfterQuery::new(
        inner.clone(),
        "module/acme/network/aws".into(),
        meanwhile,
    ));
    let indexer = Indexer::new(metadata.clone(), artifacts.clone());
    let key = "modules/acme/network/aws/1.0.0.tar.gz";
    artifacts.put(key, archive);
    metadata.after_prefix(1);
    // when this one writes its document,
    indexer.index_key(key).await.unwrap();
    assert_eq!(*metadata.prefix_queries_until.lock().unwrap(), 0, "it ran");
    // then its write, made from a document that was replaced meanwhile, failed and was
    // made again: both versions are listed.
    let registry = Registry::new(inner, Downloads::served(signer, artifacts));
    let address = tfreg_core::ModuleAddress::parse("acme", "network", "aws").unwrap();
    let versions: Vec<String> = registry
        .module_versions(&Access::All, &address)
        .await
        .unwrap()
        .modules[0]
        .versions
        .iter()
        .map(|v| v.version.to_string())
        .collect();
    assert_eq!(versions, ["1.0.0", "2.0.0"]);
}

#[tokio::test]
async fn a_reindex_replaces_documents_left_behind_or_damaged() {
    use tfreg_core::store::{Expected, RecordId};
    use tfreg_core::MetadataStore;
    let world = World::new();
    world
        .publish_release(&format!("{SUMS}.sig"), "release.asc")
        .await;
    let (origin, linux) = (
        Origin::https(HOSTNAME).unwrap(),
        Platform::parse("linux", "amd64").unwrap(),
    );
    // Given the release document of 1.0.0 copied under 9.9.9 (what a writer that stopped
    // between its two writes leaves behind), and the versions document damaged,
    let v9 = Version::parse("9.9.9").unwrap();
    let release = world
        .metadata
        .get_document(&RecordId::provider_release(&widget(), &v1()))
        .await
        .unwrap()
        .unwrap();
    let left = String::from_utf8(release.body)
        .unwrap()
        .replace("\"version\":\"1.0.0\"", "\"version\":\"9.9.9\"");
    let (orphan, versions) = (
        RecordId::provider_release(&widget(), &v9),
        RecordId::provider_versions(&widget()),
    );
    let put = |id: RecordId, body: Vec<u8>| {
        let metadata = world.metadata.clone();
        async move {
            metadata
                .put_document(&id, Some(body), Expected::Anything)
                .await
                .unwrap()
        }
    };
    put(orphan.clone(), left.into_bytes()).await;
    put(versions.clone(), b"{not json".to_vec()).await;
    let download = |version: Version| {
        let (world, origin, linux) = (&world, origin.clone(), linux.clone());
        async move {
            world
                .registry
                .provider_download(&Access::All, &widget(), &version, &linux, &origin)
                .await
        }
    };
    assert!(
        download(v9.clone()).await.is_ok(),
        "the left-behind release is served"
    );
    assert!(world
        .registry
        .provider_versions(&Access::All, &widget())
        .await
        .is_err());
    // when reindexing, then both are made again from the records.
    let report = world.indexer.reindex_all(|_, _| {}).await.unwrap();
    assert_eq!(report.failed, 0);
    assert!(
        download(v9).await.is_err(),
        "the left-behind release is gone"
    );
    assert!(download(v1()).await.is_ok());
    assert_eq!(world.served().await, [BOTH]);
}
