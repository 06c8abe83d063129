//! The records the indexer keeps about published files: what a partition of the metadata
//! store holds. Where each lives is [`super::keys`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::gpg::PublicKeyInfo;
use crate::hash::PackageHashes;
use crate::layout::ArchiveFormat;
use crate::names::{Hostname, ModuleAddress, Namespace, Platform, ProviderAddress};
use crate::version::Version;

#[cfg(doc)]
use super::partition;

/// One published module archive, as the indexer records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleArchive {
    /// The module it is a version of.
    pub address: ModuleAddress,
    /// The version it publishes, from its key.
    pub version: Version,
    /// The object key as published (its case preserved).
    pub key: String,
    /// Its packaging, from the key's suffix; picks the archive served when one version is
    /// published in several formats.
    pub format: ArchiveFormat,
    /// The archive's length in bytes, as indexed.
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
    /// Terraform's `h1:` of the tree the archive unpacks to (`h1:<base64>`), computed in the
    /// archive check's one walk. `None` for records from before it was (read again, once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h1: Option<String>,
    /// The namespace key whose signature (`<archive>.sig`) verified, filled from the
    /// archive's [`ModuleSignatureRecord`] when a version's records are read
    /// ([`crate::registry::modules::module_archives`]); never stored.
    #[serde(skip)]
    pub signed_by: Option<SignedBy>,
}

impl ModuleArchive {
    /// The version's hashes as the read API lists them, in the order lock files use:
    /// `h1:` (of the unpacked tree, what `tfreg verify` compares an installed module with),
    /// then `zh:` (SHA-256 of the archive as served). Empty when neither is known.
    pub fn hashes(&self) -> Vec<String> {
        let zh = (!self.sha256.is_empty()).then(|| format!("zh:{}", self.sha256));
        self.h1.iter().cloned().chain(zh).collect()
    }
}

/// A provider package (zip) and its hashes, whether published under `providers/` or
/// `mirror/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageRecord {
    /// `Some` for packages under `mirror/<hostname>/`.
    #[serde(default)]
    pub mirror_hostname: Option<Hostname>,
    /// The provider it is a package of.
    pub provider: ProviderAddress,
    /// The release it belongs to.
    pub version: Version,
    /// The OS and architecture it runs on.
    pub platform: Platform,
    /// The zip's object key.
    pub key: String,
    /// The object revision that was hashed.
    pub revision: String,
    /// The zip's length in bytes.
    pub size: u64,
    /// Its `zh:` and (once worth unpacking) `h1:` hashes.
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
    /// The provider the release is of.
    pub provider: ProviderAddress,
    /// The release's version.
    pub version: Version,
    /// The SHA256SUMS object's key.
    pub key: String,
    /// The SHA256SUMS revision that was parsed.
    pub revision: String,
    /// File name to SHA-256 (lowercase hex).
    pub entries: BTreeMap<String, String>,
}

/// The verdict on a release's SHA256SUMS signature, for one revision of each file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignatureRecord {
    /// The provider the release is of.
    pub provider: ProviderAddress,
    /// The release's version.
    pub version: Version,
    /// The `.sig` object.
    pub key: String,
    /// The `.sig` revision the verdict holds for.
    pub revision: String,
    /// The SHA256SUMS object signed: the `.sig` key without its suffix.
    pub sums_key: String,
    /// The SHA256SUMS revision the verdict holds for (`None`: there was none).
    pub sums_revision: Option<String>,
    /// The namespace key that signed it, or why no key did (the `.sig` file's problem).
    pub verdict: Result<SignedBy, String>,
}

/// Who signed a release: a key under `keys/<namespace>/`. The key itself is kept with the
/// verdict, so serving a release reads one partition; a key's removal or replacement
/// re-verifies every release of its namespace, which rewrites these verdicts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedBy {
    /// The signing key's primary key ID, uppercase hex (as in `key_info`).
    pub key_id: String,
    /// The key's object (`keys/<namespace>/<name>.asc`) and the revision that verified.
    pub key: String,
    /// The revision of `key` that verified the signature.
    pub key_revision: String,
    /// The key as handed to Terraform with the release (`signing_keys`).
    pub key_info: PublicKeyInfo,
    /// When the signature itself expires (Unix seconds), if it does: Terraform refuses it
    /// from then on, so the release is served only until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_expires_at: Option<u64>,
}

/// A release's `_manifest.json`: the plugin protocol versions it speaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestRecord {
    /// The provider the release is of.
    pub provider: ProviderAddress,
    /// The release's version.
    pub version: Version,
    /// The `_manifest.json` object's key.
    pub key: String,
    /// The protocol versions it lists (`5.0`, `6.0`), or why it could not be read (the
    /// file's problem).
    pub protocols: Result<Vec<String>, String>,
}

/// A public key trusted to sign a namespace's releases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// The namespace whose releases it may sign (its folder under `keys/`).
    pub namespace: Namespace,
    /// The key's object (`keys/<namespace>/<name>.asc`).
    pub key: String,
    /// The object revision that was parsed.
    pub revision: String,
    /// The key as parsed, or why it cannot be used (unreadable, revoked, expired).
    pub verdict: Result<PublicKeyInfo, String>,
}

/// A module as listings show it: its address and its latest version (the highest without a
/// prerelease part, else the highest), kept by the indexer in the partitions that list
/// modules ([`partition::MODULES`], [`partition::namespace_modules`]), so a page of a
/// listing or of a search is one query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleSummary {
    /// The module listed.
    pub address: ModuleAddress,
    /// Its latest version.
    pub version: Version,
    /// When that version was first published (Unix seconds; 0 when unknown).
    #[serde(default)]
    pub published_at: u64,
    /// The repository the latest version's publisher named, if any.
    #[serde(default)]
    pub source: Option<String>,
    /// The latest version's line about the module, if any.
    #[serde(default)]
    pub description: Option<String>,
    /// More words to find it by: the latest version's root inputs, outputs and README,
    /// each word once (at most [`crate::module_docs::MAX_SEARCH_WORDS`] bytes); empty
    /// when it documents none, or for entries written before they were kept (a reindex
    /// writes them).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub words: String,
    /// The latest version's deprecation, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<crate::lifecycle::Notice>,
}

/// A published file that cannot be served, and why: what `tfreg status` shows publishers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemRecord {
    /// The object key of the file.
    pub key: String,
    /// Why it cannot be served, worded for its publisher.
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
    /// SHA-256 of the bytes pinned (lowercase hex): any other bytes for the slot are refused.
    pub sha256: String,
    /// Their length in bytes.
    pub size: u64,
    /// The revision served: the store keeps its bytes when it can (`kept`).
    pub revision: String,
    /// Whether [`super::ArtifactStore::keep`] kept those bytes: if not, an upload over them
    /// loses them and the version is no longer offered.
    pub kept: bool,
    /// When it was first served (Unix seconds).
    pub published_at: u64,
    /// For a module archive, the `h1:` of the tree it unpacks to, as first recorded: a
    /// later check of the pinned bytes that finds another is a problem, never a change.
    /// `None` for other files and for pins from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h1: Option<String>,
}

/// A provider release's documentation, read from its `docs.zip`
/// ([`crate::provider_docs`]): kept under [`crate::provider_docs::MAX_PROVIDER_DOCS_BYTES`]
/// as JSON, so it is one store item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderDocsRecord {
    /// The provider documented.
    pub provider: ProviderAddress,
    /// The release documented.
    pub version: Version,
    /// The `docs.zip` object key.
    pub key: String,
    /// The revision of the `docs.zip` read.
    pub revision: String,
    /// The pages.
    pub docs: crate::provider_docs::ProviderDocs,
}

/// A version's deprecation or yank record ([`crate::lifecycle`]), as read from its file:
/// in the module's partition beside its archives, or in the provider's beside its release.
/// A refused file has no record, only a problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoticeRecord {
    /// The module or provider.
    pub target: crate::layout::NoticeTarget,
    /// The version it is about.
    pub version: Version,
    /// Deprecation or yank record.
    pub kind: crate::lifecycle::NoticeKind,
    /// The file's object key.
    pub key: String,
    /// The file's revision read.
    pub revision: String,
    /// What it says (checked; shown escaped).
    pub notice: crate::lifecycle::Notice,
}

/// An attachment of a version ([`crate::attachments`]) that checked: in the module's
/// partition beside its archives, or in the provider's beside its release. A refused file
/// has no record, only a problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentRecord {
    /// The module or provider.
    pub target: crate::layout::NoticeTarget,
    /// The version it is attached to.
    pub version: Version,
    /// What it is.
    pub kind: crate::attachments::AttachmentKind,
    /// The file's object key.
    pub key: String,
    /// The file's revision checked (its download URL names it).
    pub revision: String,
    /// Its length in bytes.
    pub size: u64,
    /// SHA-256 of the bytes checked (lowercase hex).
    pub sha256: String,
    /// The namespace key whose detached signature (`<file>.sig`) verified over these bytes
    /// (its key ID), or why none did ("unverified").
    pub signature: Result<String, String>,
    /// A provenance statement's predicate types (`https://slsa.dev/provenance/v1`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predicate_types: Vec<String>,
}

/// The judgement of one module archive's signature (`<archive>.sig`) under its namespace's
/// keys and policy ([`crate::policy`]): in the module's partition beside the archive, by
/// `<version>/<archive key>.sig`, so the reads of a version's archives read it too (an
/// unsigned verdict lies outside that prefix: [`super::RecordId::module_signature_unsigned`]).
/// A [`ModuleSignatureVerdict::Pending`] one is written before the archive's record and
/// before any judgement of a new `.sig` or archive revision, so a read never serves an
/// archive that is being judged; an archive without any verdict in the prefix was judged
/// unsigned (or recorded before signatures were judged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleSignatureRecord {
    /// The module.
    pub address: ModuleAddress,
    /// The version.
    pub version: Version,
    /// The `.sig` object's key (the archive's key and `.sig`), published or not.
    pub key: String,
    /// The archive judged.
    pub archive_key: String,
    /// The `.sig` revision judged (`None`: there was none).
    pub revision: Option<String>,
    /// The archive revision judged.
    pub archive_revision: Option<String>,
    /// The namespace's key and policy records (object key, revision) it was judged under:
    /// a replayed event with the same inputs reads nothing again.
    #[serde(default)]
    pub inputs: Vec<(String, String)>,
    /// The verdict.
    pub verdict: ModuleSignatureVerdict,
}

/// Whether a module archive may be served, as far as its signature and its namespace's
/// policy go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleSignatureVerdict {
    /// Its signature verified with this key of the namespace.
    Signed(SignedBy),
    /// No signature, and the namespace's policy does not require one.
    Unsigned,
    /// Not served, and why: a bad signature (whatever the policy), or none under a policy
    /// that requires one.
    Refused(String),
    /// Being judged: the archive is not served until a verdict replaces this one (fail
    /// closed: no verdict means not served).
    Pending,
}

/// A namespace's policy file (`keys/<namespace>/policy.json`), as read: in the namespace's
/// keys partition, by object key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRecord {
    /// The namespace it governs.
    pub namespace: Namespace,
    /// The object's key.
    pub key: String,
    /// The revision read.
    pub revision: String,
    /// The policy, or why the file is refused (then the strict reading applies:
    /// [`crate::policy::NamespacePolicy::strict`]).
    pub verdict: Result<crate::policy::NamespacePolicy, String>,
    /// The last policy this file held that was not refused, kept while it is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_good: Option<crate::policy::NamespacePolicy>,
}

/// Who uploaded one revision of a version's file, as its S3 event notification said
/// (`userIdentity.principalId`): recorded by the indexer function and `tfreg redrive`, kept
/// across replays and reindexing into the same table, never made from the bucket (which
/// does not say). The local shape records none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRecord {
    /// The module or provider.
    pub target: crate::layout::NoticeTarget,
    /// The version the file belongs to.
    pub version: Version,
    /// The file's object key.
    pub key: String,
    /// The object revision uploaded (as the artifact store names it).
    pub revision: String,
    /// The principal S3 reported for the request (`AWS:AIDA...`, `AWS:AROA...:session`).
    pub principal: String,
    /// When S3 took the request (RFC 3339, from the event), if the event said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uploaded_at: Option<String>,
}

/// Everything the metadata store holds. Each record lives in a partition (read together in
/// one query) under a sort key unique within it: the shape of a single DynamoDB table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Record {
    /// A module version's archive.
    ModuleArchive(ModuleArchive),
    /// A provider package, from `providers/` or `mirror/`.
    Package(PackageRecord),
    /// A release's parsed SHA256SUMS.
    Sums(SumsRecord),
    /// The verdict on a release's SHA256SUMS signature.
    Signature(SignatureRecord),
    /// A release's `_manifest.json`.
    Manifest(ManifestRecord),
    /// A namespace's signing key.
    Key(KeyRecord),
    /// Why a published file cannot be served.
    Problem(ProblemRecord),
    /// Lists a provider under its namespace, so a key change can find what to re-verify.
    NamespaceProvider(ProviderAddress),
    /// Lists a provider among all providers ([`partition::PROVIDERS`]), for the catalogue.
    ListedProvider(ProviderAddress),
    /// The bytes a version's file is served with for good.
    Pin(PinRecord),
    /// Lists a module among all modules ([`partition::MODULES`]).
    ListedModule(ModuleSummary),
    /// Lists a module under its namespace ([`partition::namespace_modules`]).
    NamespaceModule(ModuleSummary),
    /// A provider release's documentation ([`partition::provider_docs`]).
    ProviderDocs(ProviderDocsRecord),
    /// A version's deprecation or yank record.
    Notice(NoticeRecord),
    /// The judgement of a module archive's signature.
    ModuleSignature(ModuleSignatureRecord),
    /// A namespace's policy file.
    Policy(PolicyRecord),
    /// Lists a module under its namespace ([`partition::namespace`], by `module/<name>/<system>`)
    /// once any archive of it was seen: what a change of the namespace's keys or policy judges
    /// again, served or not.
    NamespaceModuleSeen(ModuleAddress),
    /// An attachment of a version (SBOM, provenance statement).
    Attachment(AttachmentRecord),
    /// Who uploaded one revision of a version's file (AWS: from its S3 event).
    Upload(UploadRecord),
}
