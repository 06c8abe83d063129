//! Keeping the documents ([`crate::documents`]) in line with the records: after a file's
//! records change, its subject's versions document (and, for providers, its release
//! documents) are made again from the records of the versions that changed.
//!
//! Order-free under concurrent invocations: each refresh reads the versions document (and
//! its revision) *before* the records, and replaces it only if that revision is still the
//! stored one, else starts over. A writer whose records land after another's read thus
//! either makes that other's write fail, or writes after it from a later read: whoever
//! writes last wrote from records that include every earlier write. A writer always
//! writes, even what is there already, so its revision moves on.
//!
//! Release documents are written (unconditionally) before the versions document, inside
//! the same attempt: the attempt whose versions document lands wrote its release documents
//! from records at least as new as any other's. An attempt that lost wrote release
//! documents from older records; its next attempt writes the same versions' documents again
//! (it carries them over), and a whole refresh (a key change, a reindex) also covers every
//! release document that exists. Only a writer that stops between the two writes (a crash,
//! a timeout) leaves its release documents behind: the event's retry or a reindex makes
//! them again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures_util::{StreamExt, TryStreamExt};
use std::time::{Duration, SystemTime};

use super::{poisoned, Indexer};
use crate::documents::{
    decode, encode, MirrorVersionsDoc, ModuleVersionEntry, ModuleVersionsDoc, ProviderVersionEntry,
    ProviderVersionsDoc, ReleaseDoc,
};
use crate::layout::{Artifact, NoticeTarget};
use crate::lifecycle::{Notice, NoticeKind};
use crate::names::{Hostname, ModuleAddress, Platform, ProviderAddress};
use crate::providers::{evaluate, next_change, CurrentKeys};
use crate::registry::modules::{module_archives, served_archives};
use crate::store::{partition, Document, Expected, Record, RecordId, StoreError};
use crate::version::Version;

/// The sort key prefixes of a provider version's records, before the version.
const RELEASE_KINDS: [&str; 4] = ["package/", "sums/", "signature/", "manifest/"];

/// The sort key prefixes of a provider version's records that its documents are made of:
/// the release's, and its deprecation and yank records.
const PROVIDER_KINDS: [&str; 5] = ["package/", "sums/", "signature/", "manifest/", "notice/"];

/// How many release documents are written at once.
const RELEASE_WRITES: usize = 16;

/// How many times a refresh starts over while other writers replace the same document.
const ATTEMPTS: u32 = 12;

/// How many of a scope's versions are read at once (one query each).
const VERSION_READS: usize = 16;

/// What making versions documents cost an indexer so far ([`Indexer::document_stats`]):
/// the figures the indexer function logs per invocation.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DocumentStats {
    /// Versions documents written (or deleted, when they list nothing).
    pub written: u64,
    /// Attempts that lost to another writer's replacement and started over.
    pub conflicts: u64,
}

/// [`DocumentStats`] as they are counted.
#[derive(Debug, Default)]
pub(super) struct DocumentCounters {
    written: AtomicU64,
    conflicts: AtomicU64,
}

impl DocumentCounters {
    fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn stats(&self) -> DocumentStats {
        DocumentStats {
            written: self.written.load(Ordering::Relaxed),
            conflicts: self.conflicts.load(Ordering::Relaxed),
        }
    }
}

/// What a document is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Subject {
    /// A module: the documents of its versions.
    Module(ModuleAddress),
    /// A provider published under `providers/`: its versions and release documents.
    Provider(ProviderAddress),
    /// A provider mirrored under `mirror/<hostname>/` (the hostname of its origin registry):
    /// the mirror's documents of its versions.
    Mirror(Hostname, ProviderAddress),
}

impl Subject {
    /// The subject whose documents a file's records feed, and the version they are of;
    /// `None` for signing keys (they concern every provider of their namespace).
    pub fn of(artifact: &Artifact) -> Option<(Subject, Version)> {
        Some(match artifact {
            Artifact::ModuleArchive {
                address, version, ..
            }
            | Artifact::ModuleMetadata { address, version }
            | Artifact::ModuleSignature {
                address, version, ..
            } => (Subject::Module(address.clone()), version.clone()),
            Artifact::ProviderPackage {
                provider, version, ..
            }
            | Artifact::ProviderReleaseFile {
                provider, version, ..
            } => (Subject::Provider(provider.clone()), version.clone()),
            Artifact::MirrorPackage {
                hostname,
                provider,
                version,
                ..
            } => (
                Subject::Mirror(hostname.clone(), provider.clone()),
                version.clone(),
            ),
            Artifact::Notice {
                target, version, ..
            }
            | Artifact::Attachment {
                target, version, ..
            } => (Subject::of_target(target), version.clone()),
            // Kept in a record of its own, read by the pages that show it.
            Artifact::SigningKey { .. }
            | Artifact::ProviderDocs { .. }
            | Artifact::NamespacePolicy { .. } => return None,
        })
    }

    /// Every subject some record is of (what a reindex makes every document again for).
    pub fn of_record(record: &Record) -> Option<Subject> {
        Some(match record {
            Record::ModuleArchive(a) => Subject::Module(a.address.clone()),
            Record::Package(p) => match &p.mirror_hostname {
                Some(host) => Subject::Mirror(host.clone(), p.provider.clone()),
                None => Subject::Provider(p.provider.clone()),
            },
            Record::Sums(r) => Subject::Provider(r.provider.clone()),
            Record::Signature(r) => Subject::Provider(r.provider.clone()),
            Record::Manifest(r) => Subject::Provider(r.provider.clone()),
            Record::NamespaceProvider(p) | Record::ListedProvider(p) => {
                Subject::Provider(p.clone())
            }
            Record::ListedModule(s) | Record::NamespaceModule(s) => {
                Subject::Module(s.address.clone())
            }
            Record::Notice(n) => Subject::of_target(&n.target),
            Record::Attachment(a) => Subject::of_target(&a.target),
            Record::ModuleSignature(s) => Subject::Module(s.address.clone()),
            Record::NamespaceModuleSeen(a) => Subject::Module(a.clone()),
            Record::Policy(_) => return None,
            // Who uploaded a file changes no answer (its judgement is a problem record).
            Record::Upload(_) => return None,
            Record::Key(_) | Record::Problem(_) | Record::Pin(_) | Record::ProviderDocs(_) => {
                return None
            }
        })
    }

    /// The subject whose versions a notice is about.
    pub fn of_target(target: &NoticeTarget) -> Subject {
        match target {
            NoticeTarget::Module { address } => Subject::Module(address.clone()),
            NoticeTarget::Provider { provider } => Subject::Provider(provider.clone()),
        }
    }

    fn versions_id(&self) -> RecordId {
        match self {
            Subject::Module(address) => RecordId::module_versions(address),
            Subject::Provider(provider) => RecordId::provider_versions(provider),
            Subject::Mirror(host, provider) => RecordId::mirror_versions(host, provider),
        }
    }
}

/// Which versions of a subject to make again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// These versions only.
    Versions(BTreeSet<Version>),
    /// Every version, from a read of the whole partition (and versions the document lists
    /// that have no records any more are dropped).
    All,
}

impl Scope {
    /// Just `version`.
    pub fn one(version: Version) -> Self {
        Scope::Versions(BTreeSet::from([version]))
    }

    /// Both scopes' versions.
    pub fn merge(&mut self, other: Scope) {
        match (&mut *self, other) {
            (Scope::All, _) => {}
            (_, Scope::All) => *self = Scope::All,
            (Scope::Versions(mine), Scope::Versions(theirs)) => mine.extend(theirs),
        }
    }
}

/// A versions document as an attempt found it.
enum Stored {
    Read(Option<Document>),
    /// It could not be read; its revision, if it exists.
    Unreadable(Option<String>),
}

/// A versions document as read, and what an attempt writes.
struct Attempt<T> {
    expected: Option<String>,
    document: T,
    /// The stored document did not parse: it is made again whole.
    corrupt: bool,
}

impl Indexer {
    /// Makes the documents of `subject` agree with the records of `scope`'s versions, now
    /// or, when the indexer defers (bulk indexing), at the next flush.
    pub(super) async fn refresh(&self, subject: Subject, scope: Scope) -> Result<(), StoreError> {
        if let Some(deferred) = &self.deferred {
            deferred
                .lock()
                .map_err(|_| poisoned())?
                .entry(subject)
                .and_modify(|s: &mut Scope| s.merge(scope.clone()))
                .or_insert(scope);
            return Ok(());
        }
        self.refresh_now(&subject, &scope).await
    }

    /// The documents of every provider listed under `namespace`, whole: a key's change may
    /// change the verdict on any of their releases.
    pub(super) async fn refresh_namespace(
        &self,
        namespace: &crate::names::Namespace,
    ) -> Result<(), StoreError> {
        for record in self
            .metadata
            .query(&partition::namespace(namespace))
            .await?
        {
            if let Record::NamespaceProvider(provider) = record {
                self.refresh(Subject::Provider(provider), Scope::All)
                    .await?;
            }
        }
        Ok(())
    }

    pub(super) async fn refresh_now(
        &self,
        subject: &Subject,
        scope: &Scope,
    ) -> Result<(), StoreError> {
        let id = subject.versions_id();
        // The release documents some attempt decided on: later attempts decide on them too,
        // so a write of an attempt that lost is always undone by the next.
        let mut decided = BTreeSet::new();
        for attempt in 0..ATTEMPTS {
            let stored = match self.metadata.get_document(&id).await {
                Ok(stored) => Stored::Read(stored),
                // Unreadable (a lost or damaged object): replaced whole, at its revision.
                Err(e) => {
                    tracing::warn!(error = %crate::store::ErrorChain(&e), "making an unreadable document again");
                    Stored::Unreadable(self.metadata.document_revision(&id).await?)
                }
            };
            let written = match subject {
                Subject::Module(address) => {
                    let (body, attempt) = self.module_attempt(address, scope, &id, stored).await?;
                    self.replace(&id, body, attempt.expected.as_deref()).await?
                }
                Subject::Provider(provider) => {
                    self.provider_attempt(provider, scope, &id, stored, &mut decided)
                        .await?
                }
                Subject::Mirror(host, provider) => {
                    let (body, attempt) = self
                        .mirror_attempt(host, provider, scope, &id, stored)
                        .await?;
                    self.replace(&id, body, attempt.expected.as_deref()).await?
                }
            };
            if written {
                DocumentCounters::count(&self.counters.written);
                if let Subject::Module(address) = subject {
                    self.list_module(address).await?;
                }
                return Ok(());
            }
            // Another writer replaced it meanwhile: read again, after a pause that grows.
            DocumentCounters::count(&self.counters.conflicts);
            let pause = Duration::from_millis(5 << attempt.min(7));
            tokio::time::sleep(pause.mul_f64(0.5 + rand::random::<f64>())).await;
        }
        Err(StoreError::new(format!(
            "the document {} {} kept being replaced by other writers; the next event or `tfreg reindex` makes it again",
            id.partition, id.sort
        )))
    }

    /// Writes a versions document (none when it lists nothing) if it is still at
    /// `expected`.
    async fn replace(
        &self,
        id: &RecordId,
        body: Option<Vec<u8>>,
        expected: Option<&str>,
    ) -> Result<bool, StoreError> {
        let expected = match expected {
            Some(revision) => Expected::Revision(revision),
            None => Expected::Nothing,
        };
        self.metadata.put_document(id, body, expected).await
    }

    fn read<T: serde::de::DeserializeOwned + Default>(id: &RecordId, stored: Stored) -> Attempt<T> {
        let corrupt = |expected| Attempt {
            expected,
            document: T::default(),
            corrupt: true,
        };
        match stored {
            Stored::Read(None) => Attempt {
                expected: None,
                document: T::default(),
                corrupt: false,
            },
            Stored::Read(Some(stored)) => match decode(id, &stored.body) {
                Ok(document) => Attempt {
                    expected: Some(stored.revision),
                    document,
                    corrupt: false,
                },
                Err(e) => {
                    tracing::warn!(error = %crate::store::ErrorChain(&e), "making a corrupt document again");
                    corrupt(Some(stored.revision))
                }
            },
            Stored::Unreadable(revision) => corrupt(revision),
        }
    }

    /// The records of `scope`'s versions in a partition: one query per version and sort
    /// key prefix, or the whole partition.
    async fn records_of(
        &self,
        partition: &str,
        scope: &Scope,
        kinds: &[&str],
    ) -> Result<Vec<Record>, StoreError> {
        match scope {
            Scope::All => self.metadata.query(partition).await,
            // Side by side: a batch's versions are read in a few round trips' time, which
            // keeps the window between reading the document and replacing it short.
            Scope::Versions(versions) => {
                let prefixes: Vec<String> = versions
                    .iter()
                    .flat_map(|version| kinds.iter().map(move |kind| format!("{kind}{version}/")))
                    .collect();
                // Owned by each read: borrowed, the stream would not be `Send` for every
                // lifetime.
                let (metadata, partition) = (Arc::clone(&self.metadata), partition.to_owned());
                let found: Vec<Vec<Record>> = futures_util::stream::iter(prefixes)
                    .map(move |prefix| {
                        let (metadata, partition) = (Arc::clone(&metadata), partition.clone());
                        async move { metadata.query_prefix(&partition, &prefix).await }
                    })
                    .buffered(VERSION_READS)
                    .try_collect()
                    .await?;
                Ok(found.into_iter().flatten().collect())
            }
        }
    }

    /// One provider version's records: its packages, SHA256SUMS, signatures and manifest,
    /// by key conditions on the version (never the whole partition).
    pub(super) async fn release_records(
        &self,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Vec<Record>, StoreError> {
        self.records_of(
            &partition::provider(provider),
            &Scope::one(version.clone()),
            &RELEASE_KINDS,
        )
        .await
    }

    async fn module_attempt(
        &self,
        address: &ModuleAddress,
        scope: &Scope,
        id: &RecordId,
        stored: Stored,
    ) -> Result<(Option<Vec<u8>>, Attempt<ModuleVersionsDoc>), StoreError> {
        let mut attempt: Attempt<ModuleVersionsDoc> = Self::read(id, stored);
        let scope = if attempt.corrupt { &Scope::All } else { scope };
        let records = self
            .records_of(&partition::module(address), scope, &[""])
            .await?;
        let mut notices = notices_of(&records);
        let served = served_archives(module_archives(records));
        replace_in_scope(
            &mut attempt.document.versions,
            scope,
            served.iter().map(|(v, archive)| {
                let deprecation = notices.remove(&(v.clone(), NoticeKind::Deprecation));
                (v.clone(), ModuleVersionEntry::of(archive, deprecation))
            }),
        );
        replace_in_scope(
            &mut attempt.document.withdrawn,
            scope,
            withdrawn(notices, |v| served.contains_key(v)),
        );
        let body = body_of(
            &attempt.document,
            empty(&attempt.document.versions, &attempt.document.withdrawn),
        )?;
        Ok((body, attempt))
    }

    async fn mirror_attempt(
        &self,
        host: &Hostname,
        provider: &ProviderAddress,
        scope: &Scope,
        id: &RecordId,
        stored: Stored,
    ) -> Result<(Option<Vec<u8>>, Attempt<MirrorVersionsDoc>), StoreError> {
        let mut attempt: Attempt<MirrorVersionsDoc> = Self::read(id, stored);
        let scope = if attempt.corrupt { &Scope::All } else { scope };
        let mut found: BTreeMap<Version, BTreeSet<Platform>> = BTreeMap::new();
        for record in self
            .records_of(&partition::mirror(host, provider), scope, &["package/"])
            .await?
        {
            if let Record::Package(p) = record {
                found.entry(p.version).or_default().insert(p.platform);
            }
        }
        replace_in_scope(
            &mut attempt.document.versions,
            scope,
            found
                .into_iter()
                .map(|(v, platforms)| (v, platforms.into_iter().collect())),
        );
        let body = body_of(&attempt.document, attempt.document.versions.is_empty())?;
        Ok((body, attempt))
    }

    /// One attempt at a provider's documents: the releases of `scope`'s versions judged
    /// against the namespace's keys now, each served one written as its release document
    /// (the others' deleted), then the versions document. `false`: it was replaced meanwhile.
    /// `decided` carries the versions earlier attempts wrote release documents of.
    async fn provider_attempt(
        &self,
        provider: &ProviderAddress,
        scope: &Scope,
        id: &RecordId,
        stored: Stored,
        decided: &mut BTreeSet<Version>,
    ) -> Result<bool, StoreError> {
        let mut attempt: Attempt<ProviderVersionsDoc> = Self::read(id, stored);
        let scope = if attempt.corrupt { &Scope::All } else { scope };
        let (releases, keys) = (
            partition::provider(provider),
            partition::keys(&provider.namespace),
        );
        let (records, keys) = tokio::join!(
            self.records_of(&releases, scope, &PROVIDER_KINDS),
            self.metadata.query(&keys),
        );
        let (records, keys) = (records?, CurrentKeys::from_records(&keys?));
        let now = SystemTime::now();
        let mut served: BTreeMap<Version, ReleaseDoc> = BTreeMap::new();
        for (_, release) in evaluate(&records, &keys, now) {
            let Some(release) = release else { continue };
            // Served until the chosen signature, or the key that made it, expires.
            let chosen: Vec<Record> = records
                .iter()
                .filter(|r| matches!(r, Record::Signature(s) if s.key == release.signature_key))
                .cloned()
                .collect();
            let until = next_change(&chosen, now);
            served.insert(release.version.clone(), ReleaseDoc { release, until });
        }
        // What this attempt decides on: the versions in scope; for a whole refresh, every
        // version the document lists or a release document exists for, too (theirs go).
        match scope {
            Scope::Versions(versions) => decided.extend(versions.iter().cloned()),
            Scope::All => {
                decided.extend(attempt.document.versions.keys().cloned());
                decided.extend(served.keys().cloned());
                let documents = self.metadata.document_ids_in(&id.partition).await?;
                decided.extend(documents.iter().filter_map(|d| {
                    let version = d.sort.strip_prefix(crate::store::RELEASE_PREFIX)?;
                    Version::parse(version).ok()
                }));
            }
        }
        let mut writes = Vec::with_capacity(decided.len());
        for version in decided.iter() {
            let body = served.get(version).map(encode).transpose()?;
            writes.push((RecordId::provider_release(provider, version), body));
        }
        // Side by side: a provider of a thousand versions is written in a few round trips'
        // time, which keeps the window for other writers short.
        let metadata = Arc::clone(&self.metadata);
        futures_util::stream::iter(writes)
            .map(move |(release_id, body)| {
                let metadata = Arc::clone(&metadata);
                async move {
                    metadata
                        .put_document(&release_id, body, Expected::Anything)
                        .await
                }
            })
            .buffer_unordered(RELEASE_WRITES)
            .try_collect::<Vec<bool>>()
            .await?;
        let mut notices = notices_of(&records);
        let decided = Scope::Versions(decided.clone());
        replace_in_scope(
            &mut attempt.document.versions,
            &decided,
            served.iter().map(|(v, release)| {
                let deprecation = notices.remove(&(v.clone(), NoticeKind::Deprecation));
                (v.clone(), ProviderVersionEntry::of(release, deprecation))
            }),
        );
        replace_in_scope(
            &mut attempt.document.withdrawn,
            &decided,
            withdrawn(notices, |v| served.contains_key(v)),
        );
        let body = body_of(
            &attempt.document,
            empty(&attempt.document.versions, &attempt.document.withdrawn),
        )?;
        self.replace(id, body, attempt.expected.as_deref()).await
    }

    /// Makes every document again from the records, and deletes documents of nothing: what
    /// a reindex ends with (events may have been lost, documents left behind). Every
    /// subject that has records or documents is made again whole, release documents
    /// included, each under its versions document's revision.
    pub(super) async fn rebuild_documents(&self, records: &[Record]) -> Result<(), StoreError> {
        let mut subjects: BTreeSet<Subject> =
            records.iter().filter_map(Subject::of_record).collect();
        for id in self.metadata.document_ids().await? {
            if id == RecordId::module_listing() {
                continue;
            }
            match subject_of_document(&id) {
                Some(subject) => {
                    subjects.insert(subject);
                }
                None => {
                    tracing::info!(
                        partition = id.partition,
                        sort = id.sort,
                        "deleting a document of nothing"
                    );
                    self.metadata
                        .put_document(&id, None, Expected::Anything)
                        .await?;
                }
            }
        }
        for subject in &subjects {
            self.refresh_now(subject, &Scope::All).await?;
        }
        Ok(())
    }
}

/// The notices among `records`, by version and kind (of two files for one version, such as
/// two spellings of a module's key, the last by key).
fn notices_of(records: &[Record]) -> BTreeMap<(Version, NoticeKind), Notice> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Notice(n) => Some(((n.version.clone(), n.kind), n.notice.clone())),
            _ => None,
        })
        .collect()
}

/// The yank records of versions not served: what is shown as withdrawn. A yank record of
/// a served version is not (`tfreg status` reports it as a problem).
fn withdrawn(
    notices: BTreeMap<(Version, NoticeKind), Notice>,
    served: impl Fn(&Version) -> bool,
) -> Vec<(Version, Notice)> {
    notices
        .into_iter()
        .filter(|((v, kind), _)| *kind == NoticeKind::Yank && !served(v))
        .map(|((v, _), notice)| (v, notice))
        .collect()
}

/// Replaces the entries of `scope`'s versions (every entry, for all) with `found`.
fn replace_in_scope<T>(
    versions: &mut BTreeMap<Version, T>,
    scope: &Scope,
    found: impl IntoIterator<Item = (Version, T)>,
) {
    match scope {
        Scope::All => versions.clear(),
        Scope::Versions(scope) => versions.retain(|v, _| !scope.contains(v)),
    }
    versions.extend(found);
}

/// Whether a versions document lists nothing: no version served and none withdrawn with a
/// record (a subject whose every version was yanked keeps a document, so its withdrawn
/// versions can be shown; every reader answers it as absent).
fn empty<T>(versions: &BTreeMap<Version, T>, withdrawn: &BTreeMap<Version, Notice>) -> bool {
    versions.is_empty() && withdrawn.is_empty()
}

/// A versions document's bytes; none when it lists nothing (the document goes).
fn body_of<T: serde::Serialize>(document: &T, empty: bool) -> Result<Option<Vec<u8>>, StoreError> {
    match empty {
        true => Ok(None),
        false => encode(document).map(Some),
    }
}

/// The subject a document id is of, from its partition.
fn subject_of_document(id: &RecordId) -> Option<Subject> {
    let rest = id.partition.strip_prefix(partition::DOCUMENTS)?;
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["module", ns, name, system] => ModuleAddress::parse(ns, name, system)
            .ok()
            .map(Subject::Module),
        ["provider", ns, type_] => ProviderAddress::parse(ns, type_)
            .ok()
            .map(Subject::Provider),
        ["mirror", host, ns, type_] => Some(Subject::Mirror(
            Hostname::parse(host).ok()?,
            ProviderAddress::parse(ns, type_).ok()?,
        )),
        _ => None,
    }
}
