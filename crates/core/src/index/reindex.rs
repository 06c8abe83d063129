//! A full reindex: every key in the artifact store, and every key the index still holds
//! records of, through the indexer. The second half is what makes the index match the store
//! both ways: a file deleted without an event (a lost S3 notification) is unpublished.
//! Keys are indexed concurrently, with a bound; the report says what changed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use futures_util::StreamExt;

use super::{IndexOutcome, Indexer};
use crate::store::{partition, Record, RecordId, StoreError};

/// How many keys are indexed at once: enough that one slow file never holds up the rest.
const CONCURRENCY: usize = 8;

/// What a full reindex did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReindexReport {
    /// Keys that are published now.
    pub published: usize,
    /// Keys that are refused now (see `tfreg status`).
    pub rejected: usize,
    /// Keys that could not be indexed (a store failed); running again retries them.
    pub failed: usize,
    /// What the reindex changed in the index, by key: empty when it already matched.
    pub changes: Vec<Change>,
}

/// One key whose index entry a reindex changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The object key, in the artifact store.
    pub key: String,
    /// What changed.
    pub kind: ChangeKind,
}

/// How a reindex changed a key's index entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeKind {
    /// Newly recorded.
    Published,
    /// Forgotten: the file is gone.
    Unpublished,
    /// Recorded differently (a new revision, a new signature verdict).
    Updated,
    /// Newly refused, with the reason.
    Refused(String),
    /// Its refusal is gone: the file was fixed or removed.
    NoLongerRefused,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ChangeKind::Published => write!(f, "published {}", self.key),
            ChangeKind::Unpublished => write!(f, "unpublished {}", self.key),
            ChangeKind::Updated => write!(f, "updated {}", self.key),
            ChangeKind::Refused(reason) => write!(f, "refused {}: {reason}", self.key),
            ChangeKind::NoLongerRefused => write!(f, "no longer refused {}", self.key),
        }
    }
}

/// The object a record describes, if it describes one.
fn object_key(record: &Record) -> Option<&str> {
    match record {
        Record::ModuleArchive(r) => Some(&r.key),
        Record::Package(r) => Some(&r.key),
        Record::Sums(r) => Some(&r.key),
        Record::Signature(r) => Some(&r.key),
        Record::Manifest(r) => Some(&r.key),
        Record::Key(r) => Some(&r.key),
        Record::Problem(r) => Some(&r.key),
        Record::ProviderDocs(r) => Some(&r.key),
        Record::Notice(r) => Some(&r.key),
        // A judgement is of the archive (there may be no `.sig`): indexing it judges again.
        Record::ModuleSignature(r) => Some(&r.archive_key),
        Record::Policy(r) => Some(&r.key),
        Record::Attachment(r) => Some(&r.key),
        Record::NamespaceProvider(_)
        | Record::ListedProvider(_)
        | Record::Pin(_)
        | Record::ListedModule(_)
        | Record::NamespaceModule(_)
        | Record::NamespaceModuleSeen(_) => None,
        // Not made from the bucket (which does not say who uploaded): kept as they are.
        Record::Upload(_) => None,
    }
}

/// The records of each object, and each object's problem.
#[derive(Default)]
struct ByKey<'a> {
    records: BTreeMap<&'a str, BTreeMap<RecordId, &'a Record>>,
    problems: BTreeMap<&'a str, &'a str>,
}

impl<'a> ByKey<'a> {
    fn of(records: &'a [Record]) -> Self {
        let mut by = ByKey::default();
        // A judgement of an archive that is not recorded rules nothing (it is kept, never
        // deleted by a racing event: [`crate::registry::module_archives`]), so it does not
        // make its archive published.
        let archives: BTreeSet<&str> = records
            .iter()
            .filter_map(|r| match r {
                Record::ModuleArchive(a) => Some(a.key.as_str()),
                _ => None,
            })
            .collect();
        for record in records {
            match (record, object_key(record)) {
                (Record::Problem(p), _) => {
                    by.problems.insert(&p.key, &p.problem);
                }
                (Record::ModuleSignature(r), _) if !archives.contains(r.archive_key.as_str()) => {}
                (_, Some(key)) => {
                    by.records
                        .entry(key)
                        .or_default()
                        .insert(record.id(), record);
                }
                _ => {}
            }
        }
        by
    }

    fn keys(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.records.keys().chain(self.problems.keys()).copied()
    }
}

/// What changed between two snapshots of the index, one change per key.
fn changes(before: &[Record], after: &[Record]) -> Vec<Change> {
    let (old, new) = (ByKey::of(before), ByKey::of(after));
    let keys: BTreeSet<&str> = old.keys().chain(new.keys()).collect();
    let empty = BTreeMap::new();
    keys.into_iter()
        .filter_map(|key| {
            let (was, now) = (
                old.records.get(key).unwrap_or(&empty),
                new.records.get(key).unwrap_or(&empty),
            );
            let (was_refused, now_refused) = (old.problems.get(key), new.problems.get(key));
            let kind = if now_refused.is_some() && now_refused != was_refused {
                ChangeKind::Refused((*now_refused?).to_owned())
            } else if was.is_empty() && !now.is_empty() {
                ChangeKind::Published
            } else if !was.is_empty() && now.is_empty() {
                ChangeKind::Unpublished
            } else if was != now {
                ChangeKind::Updated
            } else if was_refused.is_some() && now_refused.is_none() {
                ChangeKind::NoLongerRefused
            } else {
                return None;
            };
            Some(Change {
                key: key.to_owned(),
                kind,
            })
        })
        .collect()
}

impl Indexer {
    /// Indexes every key in the artifact store and every key the index has records of,
    /// reporting progress through `progress` after each key (done, total). Failures of
    /// single keys are logged and counted, not fatal. Keys go first, so releases verify on
    /// the first pass. Idempotent: a second run reports no changes.
    pub async fn reindex_all(
        &self,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<ReindexReport, StoreError> {
        let before = self.metadata.scan().await?;
        let mut keys: BTreeSet<String> = self.artifacts.list().await?.into_iter().collect();
        // What the index holds that the store may no longer have (deleted without an event).
        keys.extend(before.iter().filter_map(object_key).map(str::to_owned));
        let (signing_keys, others): (Vec<String>, Vec<String>) =
            keys.into_iter().partition(|k| k.starts_with("keys/"));
        let total = signing_keys.len() + others.len();
        let mut report = ReindexReport::default();
        let mut done = 0;
        for batch in [signing_keys, others] {
            let mut indexed = futures_util::stream::iter(batch)
                .map(|key| async move {
                    let outcome = self.index_key(&key).await;
                    (key, outcome)
                })
                .buffer_unordered(CONCURRENCY);
            while let Some((key, outcome)) = indexed.next().await {
                match outcome {
                    Ok(IndexOutcome::Published(_)) => report.published += 1,
                    Ok(IndexOutcome::Unpublished(_) | IndexOutcome::Ignored) => {}
                    Ok(IndexOutcome::Rejected { .. }) => report.rejected += 1,
                    Err(e) => {
                        tracing::error!(key, error = %e, "could not index");
                        report.failed += 1;
                    }
                }
                done += 1;
                progress(done, total);
            }
        }
        // Every document is made again whole below: what the keys deferred is superseded.
        if let Some(deferred) = &self.deferred {
            deferred.lock().map_err(|_| super::poisoned())?.clear();
        }
        self.forget_empty_providers(&before).await?;
        let after = self.metadata.scan().await?;
        let subjects: Vec<Record> = before.iter().chain(&after).cloned().collect();
        self.rebuild_documents(&subjects).await?;
        report.changes = changes(&before, &self.metadata.scan().await?);
        Ok(report)
    }

    /// Drops the namespace listing of providers that have no files left.
    async fn forget_empty_providers(&self, records: &[Record]) -> Result<(), StoreError> {
        for record in records {
            if let Record::NamespaceProvider(provider) = record {
                if self
                    .metadata
                    .query(&partition::provider(provider))
                    .await?
                    .is_empty()
                {
                    self.metadata.delete(&record.id()).await?;
                }
            }
        }
        Ok(())
    }
}
