//! The storage ports. The core reads and writes only through these traits; the local data
//! directory, S3 and DynamoDB are adapters behind them.

use std::error::Error as StdError;
use std::fmt;
use std::pin::Pin;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncRead;

use std::collections::BTreeMap;

use crate::gpg::PublicKeyInfo;
use crate::hash::PackageHashes;
use crate::layout::ArchiveFormat;
use crate::names::{Hostname, ModuleAddress, Namespace, Platform, ProviderAddress};
use crate::version::Version;

/// A storage failure: the backend could not answer. Never a "not found", which is `Ok(None)`.
#[derive(Debug, thiserror::Error)]
#[error("{context}")]
pub struct StoreError {
    context: String,
    #[source]
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl StoreError {
    pub fn new(context: impl Into<String>) -> Self {
        Self {
            context: context.into(),
            source: None,
        }
    }

    pub fn with_source(
        context: impl Into<String>,
        source: impl Into<Box<dyn StdError + Send + Sync>>,
    ) -> Self {
        Self {
            context: context.into(),
            source: Some(source.into()),
        }
    }
}

/// Displays an error with its chain of sources: `outer: inner: root`.
pub struct ErrorChain<'a>(pub &'a (dyn StdError + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(s) = source {
            write!(f, ": {s}")?;
            source = s.source();
        }
        Ok(())
    }
}

/// What a store knows of an object without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    pub size: u64,
    /// Changes whenever the object's content may have changed: an S3 version id or ETag, or a
    /// file's modification time and size.
    pub revision: String,
}

/// An object opened for reading.
pub struct ObjectBody {
    pub meta: ObjectMeta,
    pub reader: Pin<Box<dyn AsyncRead + Send>>,
}

impl fmt::Debug for ObjectBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectBody")
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

/// `https://host[:port]`: where the client reached this registry. Stores that serve their own
/// downloads build absolute URLs from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin(String);

impl Origin {
    /// Builds the HTTPS origin for an authority (`host[:port]`). Refuses anything that is not a
    /// plain authority, so a forged `Host` header cannot inject a path or credentials into URLs.
    pub fn https(authority: &str) -> Option<Self> {
        let ok = !authority.is_empty()
            && authority.len() <= 255
            && authority
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
        ok.then(|| Self(format!("https://{}", authority.to_ascii_lowercase())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `host[:port]` part, lowercased.
    pub fn authority(&self) -> &str {
        self.0.trim_start_matches("https://")
    }
}

/// Where published files live: the S3 bucket or the data directory.
#[async_trait]
pub trait ArtifactStore: Send + Sync {
    /// The object's current state, or `None` if there is no such object.
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError>;

    /// Every key in the store, for a full (re)index.
    async fn list(&self) -> Result<Vec<String>, StoreError>;

    /// Opens an object for streaming, or `None` if there is no such object.
    async fn open(&self, key: &str) -> Result<Option<ObjectBody>, StoreError>;

    /// An absolute `https://` URL from which a client without credentials can fetch `key` for a
    /// short time, and whose path ends with the key's own suffix. Stores that keep versions
    /// pin the URL to `revision` (as [`ObjectMeta::revision`] gave it), so what was checked
    /// at publish is what is downloaded.
    async fn download_url(
        &self,
        key: &str,
        revision: Option<&str>,
        origin: &Origin,
    ) -> Result<String, StoreError>;

    /// A URL of the store itself for fetching (`head` false) or probing (`head` true) the
    /// object directly, for stores that have one (S3 presigned URLs); `None` when the
    /// registry must stream the object itself.
    async fn direct_url(
        &self,
        _key: &str,
        _revision: Option<&str>,
        _head: bool,
    ) -> Result<Option<String>, StoreError> {
        Ok(None)
    }

    /// The object opened as a local file, when the store keeps it in one: hashing then reads
    /// it in place instead of spooling a copy. `Ok(None)` when the store has no local files
    /// or there is no such object.
    async fn open_local(
        &self,
        _key: &str,
    ) -> Result<Option<(std::fs::File, ObjectMeta)>, StoreError> {
        Ok(None)
    }

    /// Opens `key` as it was at `revision`: the object itself while it is still at that
    /// revision, else the bytes [`ArtifactStore::keep`] kept, if any. What download URLs
    /// and re-verification read, so a published version keeps its bytes whatever is uploaded
    /// over it later.
    async fn open_revision(
        &self,
        key: &str,
        revision: &str,
    ) -> Result<Option<ObjectBody>, StoreError> {
        Ok(self
            .open(key)
            .await?
            .filter(|b| b.meta.revision == revision))
    }

    /// Keeps the bytes of `key` at `revision` (whose SHA-256 is `sha256`) readable through
    /// [`ArtifactStore::open_revision`] for good, whatever is later uploaded under `key`:
    /// a versioned bucket keeps object versions anyway, the data directory copies the file
    /// into its state folder. Idempotent.
    async fn keep(&self, _key: &str, _revision: &str, _sha256: &str) -> Result<Kept, StoreError> {
        Ok(Kept::No(
            "this store keeps no earlier revisions of a file".into(),
        ))
    }

    /// Why something that exists at `key` is never read, for stores where that can happen
    /// (a symbolic link or a FIFO in the data directory); `None` otherwise. Such a key is
    /// absent for [`ArtifactStore::head`] and [`ArtifactStore::open`].
    async fn refusal(&self, _key: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
}

/// What [`ArtifactStore::keep`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// The bytes stay readable at that revision.
    Yes,
    /// The store cannot keep them, and why (an S3 bucket without versioning): a later
    /// upload under the same key can only be refused, not undone.
    No(String),
    /// The object is no longer at that revision, or its bytes are not those of `sha256`:
    /// it changed meanwhile, and its next event settles it.
    Changed,
}

/// One published module archive, as the indexer records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleArchive {
    pub address: ModuleAddress,
    pub version: Version,
    /// The object key as published (its case preserved).
    pub key: String,
    pub format: ArchiveFormat,
    pub size: u64,
    /// The object revision that was indexed.
    #[serde(default)]
    pub revision: String,
    /// SHA-256 of the archive as indexed (hex).
    #[serde(default)]
    pub sha256: String,
    /// When the version was first published (Unix seconds; 0 for records from before).
    #[serde(default)]
    pub published_at: u64,
    /// The module's repository, from the publisher (a sidecar file or `tfreg publish
    /// --source`).
    #[serde(default)]
    pub source: Option<String>,
    /// A line about the module, from the publisher.
    #[serde(default)]
    pub description: Option<String>,
    /// What the archive documents about itself, read at publish. Shared, not copied, when
    /// the record is: reads of a module's versions copy every record of its partition.
    #[serde(default)]
    pub docs: Option<std::sync::Arc<crate::module_docs::ModuleDocs>>,
    /// The archive's secret-shaped files (`.env`, `*.pem`, ...): served all the same, and
    /// warned about. `None` for records from before they were looked for (read again, once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_shaped: Option<crate::module_archive::secrets::SecretShapedFiles>,
}

/// A provider package (zip) and its hashes, whether published under `providers/` or
/// `mirror/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageRecord {
    /// `Some` for packages under `mirror/<hostname>/`.
    #[serde(default)]
    pub mirror_hostname: Option<Hostname>,
    pub provider: ProviderAddress,
    pub version: Version,
    pub platform: Platform,
    pub key: String,
    /// The object revision that was hashed.
    pub revision: String,
    pub size: u64,
    pub hashes: PackageHashes,
}

impl PackageRecord {
    /// The zip's file name, as SHA256SUMS lists it.
    pub fn filename(&self) -> &str {
        file_name(&self.key)
    }
}

/// The last path segment of a key.
pub fn file_name(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// A release's SHA256SUMS, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SumsRecord {
    pub provider: ProviderAddress,
    pub version: Version,
    pub key: String,
    pub revision: String,
    /// File name to SHA-256 (lowercase hex).
    pub entries: BTreeMap<String, String>,
}

/// The verdict on a release's SHA256SUMS signature, for one revision of each file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignatureRecord {
    pub provider: ProviderAddress,
    pub version: Version,
    /// The `.sig` object.
    pub key: String,
    pub revision: String,
    pub sums_key: String,
    /// The SHA256SUMS revision the verdict holds for (`None`: there was none).
    pub sums_revision: Option<String>,
    pub verdict: Result<SignedBy, String>,
}

/// Who signed a release: a key under `keys/<namespace>/`. The key itself is kept with the
/// verdict, so serving a release reads one partition; a key's removal or replacement
/// re-verifies every release of its namespace, which rewrites these verdicts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedBy {
    pub key_id: String,
    /// The key's object (`keys/<namespace>/<name>.asc`) and the revision that verified.
    pub key: String,
    pub key_revision: String,
    pub key_info: PublicKeyInfo,
    /// When the signature itself expires (Unix seconds), if it does: Terraform refuses it
    /// from then on, so the release is served only until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_expires_at: Option<u64>,
}

/// A release's `_manifest.json`: the plugin protocol versions it speaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestRecord {
    pub provider: ProviderAddress,
    pub version: Version,
    pub key: String,
    pub protocols: Result<Vec<String>, String>,
}

/// A public key trusted to sign a namespace's releases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub namespace: Namespace,
    pub key: String,
    pub revision: String,
    pub verdict: Result<PublicKeyInfo, String>,
}

/// A module as listings show it: its address and its latest version (the highest without a
/// prerelease part, else the highest), kept by the indexer in the partitions that list
/// modules ([`partition::MODULES`], [`partition::namespace_modules`]), so a page of a
/// listing or of a search is one query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleSummary {
    pub address: ModuleAddress,
    pub version: Version,
    /// When that version was first published (Unix seconds; 0 when unknown).
    #[serde(default)]
    pub published_at: u64,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
}

/// A published file that cannot be served, and why: what `tfreg status` shows publishers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemRecord {
    pub key: String,
    pub problem: String,
}

/// The first bytes served for one version's file: what is served for it from then on. A
/// pin outlives its file (deleting the file yanks the version; uploading the same bytes
/// again un-yanks it), so different bytes can never take a published version's place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinRecord {
    /// What is pinned: one version's file, whatever the spelling or format of its key
    /// (`module/acme/network/aws/1.2.0`, `provider/acme/widget/1.0.0/linux_amd64`,
    /// `provider/acme/widget/1.0.0/SHA256SUMS`, `mirror/<host>/acme/widget/1.0.0/linux_amd64`).
    pub slot: String,
    /// The key it was published under.
    pub key: String,
    pub sha256: String,
    pub size: u64,
    /// The revision served: the store keeps its bytes when it can (`kept`).
    pub revision: String,
    pub kept: bool,
    /// When it was first served (Unix seconds).
    pub published_at: u64,
}

/// Everything the metadata store holds. Each record lives in a partition (read together in
/// one query) under a sort key unique within it: the shape of a single DynamoDB table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Record {
    ModuleArchive(ModuleArchive),
    Package(PackageRecord),
    Sums(SumsRecord),
    Signature(SignatureRecord),
    Manifest(ManifestRecord),
    Key(KeyRecord),
    Problem(ProblemRecord),
    /// Lists a provider under its namespace, so a key change can find what to re-verify.
    NamespaceProvider(ProviderAddress),
    /// Lists a provider among all providers ([`partition::PROVIDERS`]), for the catalogue.
    ListedProvider(ProviderAddress),
    Pin(PinRecord),
    /// Lists a module among all modules ([`partition::MODULES`]).
    ListedModule(ModuleSummary),
    /// Lists a module under its namespace ([`partition::namespace_modules`]).
    NamespaceModule(ModuleSummary),
}

/// A precomputed answer as stored (see [`crate::documents`]): its bytes (JSON) and its
/// revision, which every write changes, so a writer replaces it only if nobody else did
/// since it read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub body: Vec<u8>,
    pub revision: String,
}

impl Document {
    /// A fresh revision: random, so a document deleted and written again never repeats one
    /// a writer may still expect.
    pub fn new_revision() -> String {
        use rand::RngCore;
        let mut bytes = [0u8; 16];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        hex::encode(bytes)
    }
}

/// What [`MetadataStore::put_document`] requires of the stored document before it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected<'a> {
    /// Whatever is there (or nothing).
    Anything,
    /// No document.
    Nothing,
    /// The document at this revision.
    Revision(&'a str),
}

/// Where a record lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordId {
    pub partition: String,
    pub sort: String,
}

/// The partitions, so each query reads exactly what one answer needs.
pub mod partition {
    use crate::names::{Hostname, ModuleAddress, Namespace, ProviderAddress};

    pub const PROBLEMS: &str = "problems";
    pub const PINS: &str = "pins";
    /// Every module, one summary each, by address.
    pub const MODULES: &str = "modules";
    /// Every provider that has any file under `providers/`, by address.
    pub const PROVIDERS: &str = "providers";

    pub fn module(address: &ModuleAddress) -> String {
        format!("module/{address}")
    }
    pub fn provider(provider: &ProviderAddress) -> String {
        format!("provider/{provider}")
    }
    pub fn mirror(hostname: &Hostname, provider: &ProviderAddress) -> String {
        format!("mirror/{hostname}/{provider}")
    }
    pub fn keys(namespace: &Namespace) -> String {
        format!("keys/{namespace}")
    }
    pub fn namespace(namespace: &Namespace) -> String {
        format!("namespace/{namespace}")
    }
    /// A namespace's modules, one summary each, by `name/system`.
    pub fn namespace_modules(namespace: &Namespace) -> String {
        format!("namespace-modules/{namespace}")
    }
    /// Every partition of documents starts so; no partition of records does.
    pub const DOCUMENTS: &str = "doc/";
}

/// The sort keys of release documents start so, then the version.
pub const RELEASE_PREFIX: &str = "release/";

/// Sort keys stay under this many bytes (DynamoDB allows 1024); longer ones, from very long
/// object keys, are shortened with a hash of the whole, so they stay unique and stable.
const MAX_SORT_KEY: usize = 1000;

impl RecordId {
    fn new(partition: String, sort: String) -> Self {
        if sort.len() <= MAX_SORT_KEY {
            return Self { partition, sort };
        }
        use sha2::Digest;
        let digest = hex::encode(sha2::Sha256::digest(sort.as_bytes()));
        let mut cut = MAX_SORT_KEY - digest.len() - 1;
        while !sort.is_char_boundary(cut) {
            cut -= 1;
        }
        let sort = format!("{}#{digest}", &sort[..cut]);
        Self { partition, sort }
    }

    pub fn module_archive(address: &ModuleAddress, version: &Version, key: &str) -> Self {
        Self::new(partition::module(address), format!("{version}/{key}"))
    }

    pub fn package(
        mirror_hostname: Option<&Hostname>,
        provider: &ProviderAddress,
        version: &Version,
        key: &str,
    ) -> Self {
        let partition = match mirror_hostname {
            Some(host) => partition::mirror(host, provider),
            None => partition::provider(provider),
        };
        Self::new(partition, format!("package/{version}/{key}"))
    }

    /// A release file's record: `kind` is `sums`, `signature` or `manifest`.
    fn release_file(kind: &str, provider: &ProviderAddress, version: &Version, key: &str) -> Self {
        Self::new(
            partition::provider(provider),
            format!("{kind}/{version}/{key}"),
        )
    }

    pub fn sums(provider: &ProviderAddress, version: &Version, key: &str) -> Self {
        Self::release_file("sums", provider, version, key)
    }

    pub fn signature(provider: &ProviderAddress, version: &Version, key: &str) -> Self {
        Self::release_file("signature", provider, version, key)
    }

    pub fn manifest(provider: &ProviderAddress, version: &Version, key: &str) -> Self {
        Self::release_file("manifest", provider, version, key)
    }

    pub fn signing_key(namespace: &Namespace, key: &str) -> Self {
        Self::new(partition::keys(namespace), key.to_owned())
    }

    pub fn problem(key: &str) -> Self {
        Self::new(partition::PROBLEMS.to_owned(), key.to_owned())
    }

    /// The pin of a version's file ([`PinRecord::slot`]).
    pub fn pin(slot: &str) -> Self {
        Self::new(partition::PINS.to_owned(), slot.to_owned())
    }

    /// A module's entry among all modules.
    pub fn listed_module(address: &ModuleAddress) -> Self {
        Self::new(partition::MODULES.to_owned(), address.to_string())
    }

    /// A module's versions document ([`crate::documents::ModuleVersionsDoc`]).
    pub fn module_versions(address: &ModuleAddress) -> Self {
        Self::new(format!("doc/module/{address}"), "versions".to_owned())
    }

    /// A provider's versions document ([`crate::documents::ProviderVersionsDoc`]).
    pub fn provider_versions(provider: &ProviderAddress) -> Self {
        Self::new(format!("doc/provider/{provider}"), "versions".to_owned())
    }

    /// A provider version's served release ([`crate::documents::ReleaseDoc`]).
    pub fn provider_release(provider: &ProviderAddress, version: &Version) -> Self {
        Self::new(
            format!("doc/provider/{provider}"),
            format!("{RELEASE_PREFIX}{version}"),
        )
    }

    /// The versions uploaded to the mirror for `hostname/provider`
    /// ([`crate::documents::MirrorVersionsDoc`]).
    pub fn mirror_versions(hostname: &Hostname, provider: &ProviderAddress) -> Self {
        Self::new(
            format!("doc/mirror/{hostname}/{provider}"),
            "versions".to_owned(),
        )
    }

    /// True for the id of a document rather than of a record.
    pub fn is_document(&self) -> bool {
        self.partition.starts_with(partition::DOCUMENTS)
    }

    /// A module's entry among its namespace's modules.
    pub fn namespace_module(address: &ModuleAddress) -> Self {
        Self::new(
            partition::namespace_modules(&address.namespace),
            format!("{}/{}", address.name, address.system),
        )
    }
}

impl Record {
    pub fn id(&self) -> RecordId {
        match self {
            Record::ModuleArchive(a) => RecordId::module_archive(&a.address, &a.version, &a.key),
            Record::Package(p) => {
                RecordId::package(p.mirror_hostname.as_ref(), &p.provider, &p.version, &p.key)
            }
            Record::Sums(r) => RecordId::sums(&r.provider, &r.version, &r.key),
            Record::Signature(r) => RecordId::signature(&r.provider, &r.version, &r.key),
            Record::Manifest(r) => RecordId::manifest(&r.provider, &r.version, &r.key),
            Record::Key(k) => RecordId::signing_key(&k.namespace, &k.key),
            Record::Problem(p) => RecordId::problem(&p.key),
            Record::Pin(p) => RecordId::pin(&p.slot),
            Record::NamespaceProvider(p) => {
                RecordId::new(partition::namespace(&p.namespace), p.type_.to_string())
            }
            Record::ListedProvider(p) => {
                RecordId::new(partition::PROVIDERS.to_owned(), p.to_string())
            }
            Record::ListedModule(m) => RecordId::listed_module(&m.address),
            Record::NamespaceModule(m) => RecordId::namespace_module(&m.address),
        }
    }
}

/// Where the indexer records what is published; what the API reads on the request path.
/// Every operation is idempotent; `query` is the only read the request path makes.
#[async_trait]
pub trait MetadataStore: Send + Sync {
    /// Stores a record, replacing the one with the same id.
    async fn put(&self, record: Record) -> Result<(), StoreError>;

    /// Stores a record only if none has its id; `false` when one was there. Every store of
    /// the registry makes this atomic, so of two writers racing for a pin exactly one wins;
    /// the default (look, then put) is for test wrappers only.
    async fn put_new(&self, record: Record) -> Result<bool, StoreError> {
        if self.get(&record.id()).await?.is_some() {
            return Ok(false);
        }
        self.put(record).await?;
        Ok(true)
    }

    /// Deletes a record if present.
    async fn delete(&self, id: &RecordId) -> Result<(), StoreError>;

    /// One record, if present.
    async fn get(&self, id: &RecordId) -> Result<Option<Record>, StoreError>;

    /// Every record of a partition, in sort-key order.
    async fn query(&self, partition: &str) -> Result<Vec<Record>, StoreError>;

    /// The records of a partition whose sort keys start with `prefix` (one version's
    /// records: `1.2.0/`), in sort-key order: a key condition, never the whole partition.
    async fn query_prefix(&self, partition: &str, prefix: &str) -> Result<Vec<Record>, StoreError>;

    /// A document (a precomputed answer), if there is one.
    async fn get_document(&self, id: &RecordId) -> Result<Option<Document>, StoreError>;

    /// Writes a document (`None`: deletes it) if the stored one is as `expected`, with a new
    /// revision; `false` (and nothing written) when it is not.
    async fn put_document(
        &self,
        id: &RecordId,
        body: Option<Vec<u8>>,
        expected: Expected<'_>,
    ) -> Result<bool, StoreError>;

    /// The id of every document, for a full reindex (which also forgets documents nothing
    /// is published for). Expensive: never on the request path.
    async fn document_ids(&self) -> Result<Vec<RecordId>, StoreError>;

    /// The id of every document of one partition (a provider's release documents): keys
    /// only, for the indexer.
    async fn document_ids_in(&self, partition: &str) -> Result<Vec<RecordId>, StoreError>;

    /// A document's revision alone, when the document itself cannot be read (so the
    /// indexer can replace a corrupt one).
    async fn document_revision(&self, id: &RecordId) -> Result<Option<String>, StoreError>;

    /// Every record in the store (documents are not records), for a full reindex (which must also forget what is no
    /// longer published). Expensive: never on the request path.
    async fn scan(&self) -> Result<Vec<Record>, StoreError>;

    /// A number that changes whenever any record does, for stores that can tell at no cost
    /// (the local index in memory): what is derived from records read at one generation
    /// holds while it lasts. `None` (the default): the store cannot tell.
    fn generation(&self) -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_sort_keys_are_shortened_uniquely() {
        let provider = ProviderAddress::parse("acme", "widget").unwrap();
        let version = Version::parse("1.0.0").unwrap();
        let long = |c: &str| format!("providers/acme/widget/1.0.0/{}", c.repeat(1000));
        let a = RecordId::sums(&provider, &version, &long("a"));
        let b = RecordId::sums(&provider, &version, &long("b"));
        assert!(a.sort.len() <= 1000 && b.sort.len() <= 1000);
        assert_ne!(a, b);
        assert_eq!(a, RecordId::sums(&provider, &version, &long("a")));
        let short = RecordId::sums(&provider, &version, "k");
        assert_eq!(short.sort, "sums/1.0.0/k");
    }
}
