//! Who uploaded what (the AWS shape): the principal an S3 event names for a version's file
//! is recorded per object revision ([`UploadRecord`]), and a namespace whose policy lists
//! `allowed_publishers` ([`crate::policy::NamespacePolicy::allows_publisher`]) refuses a file
//! whose served revision was uploaded by anyone else, or by no one recorded.
//!
//! The record is tied to the revision the event is about, so a late event of an older
//! revision never speaks for a newer one, and a replay (or a redriven event) of the same
//! revision writes nothing new: the first record of a revision is kept. The bucket does not
//! say who uploaded an object, so a reindex keeps what the table holds and a rebuild into
//! an empty table knows no uploader (docs/aws.md, "Who uploaded what").
//!
//! Judged files are those that make a version served: module archives, provider packages,
//! SHA256SUMS, signatures and manifests, and the notices and docs beside a version. A refused
//! file's records are removed, so it is neither served nor pinned.

use super::{IndexOutcome, Indexer};
use crate::layout::{classify, Artifact, Classified, NoticeTarget, ReleaseFile};
use crate::store::{ProblemRecord, Record, RecordId, StoreError, UploadRecord};
use crate::version::Version;

/// Who uploaded one revision of an object, as its S3 event says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    /// `userIdentity.principalId` (checked: [`crate::s3_event::principal_id`]).
    pub principal: String,
    /// The revision uploaded, as the artifact store names it.
    pub revision: String,
    /// When S3 took the request (RFC 3339), if the event said.
    pub time: Option<String>,
}

/// The module or provider version a file belongs to, for the files whose uploader is
/// recorded and judged.
fn version_of(artifact: &Artifact) -> Option<(NoticeTarget, Version)> {
    Some(match artifact {
        Artifact::ModuleArchive {
            address, version, ..
        } => (
            NoticeTarget::Module {
                address: address.clone(),
            },
            version.clone(),
        ),
        Artifact::ProviderPackage {
            provider, version, ..
        }
        | Artifact::ProviderReleaseFile {
            provider, version, ..
        }
        | Artifact::ProviderDocs { provider, version } => (
            NoticeTarget::Provider {
                provider: provider.clone(),
            },
            version.clone(),
        ),
        Artifact::Notice {
            target, version, ..
        }
        | Artifact::Attachment {
            target, version, ..
        } => (target.clone(), version.clone()),
        _ => return None,
    })
}

/// The record a judged file's indexing writes: removed when its uploader is refused.
fn record_of(artifact: &Artifact, key: &str) -> Option<RecordId> {
    Some(match artifact {
        Artifact::ModuleArchive {
            address, version, ..
        } => RecordId::module_archive(address, version, key),
        Artifact::ProviderPackage {
            provider, version, ..
        } => RecordId::package(None, provider, version, key),
        Artifact::ProviderReleaseFile {
            provider,
            version,
            file,
        } => match file {
            ReleaseFile::Sums => RecordId::sums(provider, version, key),
            ReleaseFile::Signature => RecordId::signature(provider, version, key),
            ReleaseFile::Manifest => RecordId::manifest(provider, version, key),
        },
        Artifact::ProviderDocs { provider, version } => RecordId::provider_docs(provider, version),
        Artifact::Notice {
            target, version, ..
        } => RecordId::notice(target, version, key),
        Artifact::Attachment {
            target, version, ..
        } => RecordId::attachment(target, version, key),
        _ => return None,
    })
}

/// The namespace of a version's target.
fn namespace_of(target: &NoticeTarget) -> &crate::names::Namespace {
    match target {
        NoticeTarget::Module { address } => &address.namespace,
        NoticeTarget::Provider { provider } => &provider.namespace,
    }
}

impl Indexer {
    /// [`Indexer::index_key`] for a key an S3 event named, with who uploaded which revision
    /// of it (`None`: not known, as for [`Indexer::index_key`]). The uploader is recorded
    /// first (once per revision: a replay keeps the first record), then the key is indexed,
    /// and judged against the namespace's `allowed_publishers`.
    pub async fn index_uploaded(
        &self,
        key: &str,
        upload: Option<&Upload>,
    ) -> Result<IndexOutcome, StoreError> {
        if let Some(upload) = upload {
            self.record_upload(key, upload).await?;
        }
        self.index_key(key).await
    }

    /// Records who uploaded `upload.revision` of `key`, if it is a version's file.
    async fn record_upload(&self, key: &str, upload: &Upload) -> Result<(), StoreError> {
        let Classified::Artifact(artifact) = classify(key) else {
            return Ok(());
        };
        let Some((target, version)) = version_of(&artifact) else {
            return Ok(());
        };
        let record = Record::Upload(UploadRecord {
            target,
            version,
            key: key.to_owned(),
            revision: upload.revision.clone(),
            principal: upload.principal.clone(),
            uploaded_at: upload.time.clone(),
        });
        if self.metadata.put_new(record).await? {
            tracing::info!(key, principal = upload.principal, "uploader recorded");
        }
        Ok(())
    }

    /// The uploader recorded for `revision` of `key`, if any.
    pub(super) async fn uploader_of(
        &self,
        target: &NoticeTarget,
        version: &Version,
        key: &str,
        revision: &str,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::upload(target, version, key, revision);
        Ok(match self.metadata.get(&id).await? {
            Some(Record::Upload(u)) if u.key == key && u.revision == revision => Some(u.principal),
            _ => None,
        })
    }

    /// Why `key` may not be published by whoever uploaded the revision the registry sees,
    /// under its namespace's `allowed_publishers`; `None` when it may (or no list applies).
    pub(super) async fn publisher_refusal(
        &self,
        key: &str,
        artifact: &Artifact,
    ) -> Result<Option<String>, StoreError> {
        let Some((target, version)) = version_of(artifact) else {
            return Ok(None);
        };
        let namespace = namespace_of(&target);
        let policy = self.namespace_policy(namespace).await?;
        if policy.allowed_publishers.is_none() {
            return Ok(None);
        }
        // The revision served: a pinned key's pinned bytes, else the object as it is.
        let Some(meta) = self.artifacts.head(key).await? else {
            return Ok(None); // gone: nothing to refuse
        };
        let principal = self
            .uploader_of(&target, &version, key, &meta.revision)
            .await?;
        if policy.allows_publisher(principal.as_deref()) {
            return Ok(None);
        }
        let policy_file = format!("keys/{namespace}/{}", crate::policy::POLICY_FILE);
        Ok(Some(match principal {
            Some(principal) => format!(
                "uploaded by {principal}, which is not among the allowed_publishers of {policy_file}: upload it again as an allowed publisher"
            ),
            None => format!(
                "its uploader is not recorded (no S3 event with a userIdentity reached the indexer for this revision), and {policy_file} accepts only the allowed_publishers it lists: upload it again as one of them"
            ),
        }))
    }

    /// Refuses `key` for its uploader: its record is removed (never served, never pinned)
    /// and the reason becomes its problem record.
    pub(super) async fn refuse_publisher(
        &self,
        key: &str,
        artifact: &Artifact,
        reason: String,
    ) -> Result<IndexOutcome, StoreError> {
        if let Some(id) = record_of(artifact, key) {
            self.metadata.delete(&id).await?;
        }
        if let Artifact::ProviderPackage { provider, .. }
        | Artifact::ProviderReleaseFile { provider, .. } = artifact
        {
            self.note_provider(provider).await?;
        }
        let id = RecordId::problem(key);
        let problem = Record::Problem(ProblemRecord {
            key: key.to_owned(),
            problem: reason.clone(),
        });
        debug_assert_eq!(problem.id(), id);
        self.metadata.put(problem).await?;
        tracing::warn!(key, reason, "refused: this file is never served");
        Ok(IndexOutcome::Rejected {
            key: key.to_owned(),
            reason,
        })
    }
}

impl Indexer {
    /// Judges again every version file of `namespace` the index knows (recorded, or refused
    /// with a problem), after its policy file changed: a new `allowed_publishers` takes
    /// away what others uploaded, a wider one serves what it refused. Each file is indexed
    /// as its own event would ([`Indexer::index_key`]): a recorded revision is not read
    /// again.
    pub(super) async fn rejudge_publishers(
        &self,
        namespace: &crate::names::Namespace,
    ) -> Result<(), StoreError> {
        use crate::store::partition;
        let mut keys = std::collections::BTreeSet::new();
        for address in self.namespace_modules(namespace).await? {
            for record in self.metadata.query(&partition::module(&address)).await? {
                match record {
                    Record::ModuleArchive(r) => keys.insert(r.key),
                    Record::Notice(r) => keys.insert(r.key),
                    _ => false,
                };
            }
        }
        for listed in self
            .metadata
            .query(&partition::namespace(namespace))
            .await?
        {
            let Record::NamespaceProvider(provider) = listed else {
                continue;
            };
            for record in self.metadata.query(&partition::provider(&provider)).await? {
                match record {
                    Record::Package(r) => keys.insert(r.key),
                    Record::Sums(r) => keys.insert(r.key),
                    Record::Signature(r) => keys.insert(r.key),
                    Record::Manifest(r) => keys.insert(r.key),
                    Record::Notice(r) => keys.insert(r.key),
                    _ => false,
                };
            }
        }
        for record in self.metadata.query(partition::PROBLEMS).await? {
            let Record::Problem(problem) = record else {
                continue;
            };
            if let Classified::Artifact(artifact) = classify(&problem.key) {
                if version_of(&artifact).is_some_and(|(t, _)| namespace_of(&t) == namespace) {
                    keys.insert(problem.key);
                }
            }
        }
        let mut first_failure = None;
        for key in keys {
            // Boxed: indexing a key may come back here (a policy file's own event).
            if let Err(e) = Box::pin(self.index_key(&key)).await {
                tracing::error!(key, error = %e, "could not judge the file's uploader again");
                first_failure.get_or_insert(e);
            }
        }
        first_failure.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
#[path = "uploads_tests.rs"]
mod tests;
