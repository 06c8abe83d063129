//! Attachments ([`crate::attachments`]): read (bounded), checked as what their names claim,
//! a provenance statement's subjects matched against the version's own files, a detached
//! signature (`<file>.sig`) verified with the namespace's keys, and kept as a record beside
//! the version's archives or release files. A refused file is a problem record for its key
//! and leaves no record; so is a statement whose version has no files yet ("waits for"),
//! judged again when the version's archive, SHA256SUMS or packages are indexed.
//! Not pinned: an attachment may be replaced or deleted at any time.

use sha2::Digest;

use super::releases::{keys_fingerprint_of, signer_among};
use super::{Indexer, Small};
use crate::attachments::{self, AttachmentFile, AttachmentKind};
use crate::layout::{Artifact, NoticeTarget, ReleaseFile};
use crate::store::{partition, AttachmentRecord, Record, RecordId, StoreError};
use crate::version::Version;

impl Indexer {
    /// Indexes a file of a version's attachments folder: a document's record when it reads
    /// and checks, none otherwise; a signature judges its statement again. Returns the
    /// problem, if any.
    pub(super) async fn index_attachment(
        &self,
        key: &str,
        target: &NoticeTarget,
        version: &Version,
        file: AttachmentFile,
    ) -> Result<Option<String>, StoreError> {
        let kind = match file {
            AttachmentFile::Document(kind) => kind,
            AttachmentFile::Signature => {
                // The signature's own problems are its statement's ("unverified, because");
                // its arrival, change or removal judges the statement again.
                let document = key.strip_suffix(".sig").unwrap_or(key);
                if let Ok(AttachmentFile::Document(kind)) =
                    attachments::parse_name(crate::store::file_name(document))
                {
                    self.judge_again(document, target, version, kind).await?;
                }
                return Ok(None);
            }
        };
        // What the verdict reads beside the file (the namespace's keys, the version's
        // files) may change while it is made: a key indexed at the same moment reads the
        // attachment records before this one is written. So the verdict and its problem are
        // written first and the inputs read again after; one of the two sides sees the other.
        // (That holds because the version's module or provider was noted under its namespace
        // before this, and a key's change judges the attachments of every noted one:
        // `judge_signed_attachments`.)
        for _ in 0..3 {
            let before = self.attachment_inputs(target, version, kind).await?;
            let problem = self
                .judge_and_record(key, target, version, kind, &before)
                .await?;
            let after = self.attachment_inputs(target, version, kind).await?;
            if after.same_as(&before) {
                return Ok(problem);
            }
        }
        Err(StoreError::new(format!(
            "the keys or files {key} is judged against kept changing while it was judged; the next event or reindex judges it again"
        )))
    }

    /// What an attachment's verdict depends on beside its own bytes and signature: the
    /// namespace's keys, and for a provenance statement the version's files.
    async fn attachment_inputs(
        &self,
        target: &NoticeTarget,
        version: &Version,
        kind: AttachmentKind,
    ) -> Result<AttachmentInputs, StoreError> {
        let keys = self
            .metadata
            .query(&partition::keys(target_namespace(target)))
            .await?;
        let files = if kind == AttachmentKind::Provenance {
            self.version_files(target, version).await?
        } else {
            Vec::new()
        };
        Ok(AttachmentInputs { keys, files })
    }

    /// One verdict on the attachment `key`, written: its record (or none) and its problem.
    async fn judge_and_record(
        &self,
        key: &str,
        target: &NoticeTarget,
        version: &Version,
        kind: AttachmentKind,
        inputs: &AttachmentInputs,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::attachment(target, version, key);
        let (record, problem) = match self
            .read_small(key, attachments::MAX_ATTACHMENT_BYTES)
            .await?
        {
            Small::Missing => (None, None),
            Small::Unreadable(reason, _) => (None, Some(reason)),
            Small::Bytes(bytes, meta) => {
                match self
                    .judge(key, target, version, kind, &bytes, inputs)
                    .await?
                {
                    Ok((signature, predicate_types)) => (
                        Some(Record::Attachment(AttachmentRecord {
                            target: target.clone(),
                            version: version.clone(),
                            kind,
                            key: key.to_owned(),
                            revision: meta.revision,
                            size: bytes.len() as u64,
                            sha256: hex::encode(sha2::Sha256::digest(&bytes)),
                            signature,
                            predicate_types,
                        })),
                        None,
                    ),
                    Err(reason) => (None, Some(reason)),
                }
            }
        };
        self.put_or_delete(id, record).await?;
        self.set_problem(key, problem.clone()).await?;
        Ok(problem)
    }

    /// The verdict on one attachment's bytes: its signature's verdict and predicate types,
    /// or why it is refused.
    async fn judge(
        &self,
        key: &str,
        target: &NoticeTarget,
        version: &Version,
        kind: AttachmentKind,
        bytes: &[u8],
        inputs: &AttachmentInputs,
    ) -> Result<Result<(Result<String, String>, Vec<String>), String>, StoreError> {
        let checked = match attachments::check(kind, bytes) {
            Ok(checked) => checked,
            Err(reason) => return Ok(Err(reason)),
        };
        if let Some(reason) = self.too_many(key, target, version).await? {
            return Ok(Err(reason));
        }
        if kind == AttachmentKind::Provenance {
            let files = &inputs.files;
            if files.is_empty() {
                return Ok(Err(format!(
                    "waits for the {} {version}'s files: a statement's subject digests are checked against them",
                    target_noun(target)
                )));
            }
            if let Err(reason) = attachments::match_subjects(&checked, files) {
                return Ok(Err(reason));
            }
        }
        let signature = self.attachment_signer(key, target, bytes, inputs).await?;
        Ok(Ok((signature, checked.predicate_types)))
    }

    /// The key ID of the namespace key whose detached signature `<key>.sig` verifies over
    /// `bytes`, or why it is unverified.
    async fn attachment_signer(
        &self,
        key: &str,
        target: &NoticeTarget,
        bytes: &[u8],
        inputs: &AttachmentInputs,
    ) -> Result<Result<String, String>, StoreError> {
        let sig_key = format!("{key}.sig");
        let signature = match self
            .read_small(&sig_key, attachments::MAX_SIGNATURE_BYTES)
            .await?
        {
            Small::Missing => {
                return Ok(Err(format!(
                    "no signature ({} is absent)",
                    crate::store::file_name(&sig_key)
                )))
            }
            Small::Unreadable(reason, _) => return Ok(Err(reason)),
            Small::Bytes(signature, _) => signature,
        };
        let namespace = target_namespace(target);
        Ok(signer_among(&inputs.keys, namespace, &signature, bytes).map(|signed| signed.key_id))
    }

    /// Why `key` would be one attachment too many for its version, if it would.
    async fn too_many(
        &self,
        key: &str,
        target: &NoticeTarget,
        version: &Version,
    ) -> Result<Option<String>, StoreError> {
        let others = self
            .attachment_records(target, version)
            .await?
            .into_iter()
            .filter(|a| a.key != key)
            .count();
        Ok(
            (others >= attachments::MAX_ATTACHMENTS_PER_VERSION).then(|| {
                format!(
                    "the {} {version} has {} attachments already, the most a version may have",
                    target_noun(target),
                    attachments::MAX_ATTACHMENTS_PER_VERSION
                )
            }),
        )
    }

    /// The attachment records of one version.
    async fn attachment_records(
        &self,
        target: &NoticeTarget,
        version: &Version,
    ) -> Result<Vec<AttachmentRecord>, StoreError> {
        let records = match target {
            NoticeTarget::Module { address } => {
                self.metadata
                    .query_prefix(&partition::module(address), &format!("{version}/"))
                    .await?
            }
            NoticeTarget::Provider { provider } => {
                self.metadata
                    .query_prefix(
                        &partition::provider(provider),
                        &format!("attachment/{version}/"),
                    )
                    .await?
            }
        };
        Ok(records
            .into_iter()
            .filter_map(|r| match r {
                Record::Attachment(a) => Some(a),
                _ => None,
            })
            .collect())
    }

    /// The version's own files, by name and SHA-256: a module's archives; a provider
    /// release's packages and the files its SHA256SUMS lists.
    async fn version_files(
        &self,
        target: &NoticeTarget,
        version: &Version,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let mut files = Vec::new();
        match target {
            NoticeTarget::Module { address } => {
                for archive in crate::registry::modules::version_archives(
                    self.metadata.as_ref(),
                    address,
                    version,
                )
                .await?
                {
                    files.push((
                        crate::store::file_name(&archive.key).to_owned(),
                        archive.sha256,
                    ));
                }
            }
            NoticeTarget::Provider { provider } => {
                for record in self.release_records(provider, version).await? {
                    match record {
                        Record::Package(p) => {
                            files.push((p.filename().to_owned(), p.hashes.sha256.clone()))
                        }
                        Record::Sums(s) => files.extend(s.entries),
                        _ => {}
                    }
                }
            }
        }
        files.retain(|(_, sha)| !sha.is_empty());
        Ok(files)
    }

    /// Judges one attachment again (its statement's version files or its signature
    /// changed), recording its problem or clearing it (as [`Indexer::index_attachment`]
    /// does: a file that is gone has no problem).
    async fn judge_again(
        &self,
        key: &str,
        target: &NoticeTarget,
        version: &Version,
        kind: AttachmentKind,
    ) -> Result<(), StoreError> {
        Box::pin(self.index_attachment(key, target, version, AttachmentFile::Document(kind)))
            .await?;
        Ok(())
    }

    /// After a version's files changed (a module archive, a release's SHA256SUMS or a
    /// package), judges its attachments again: those recorded, and those refused or
    /// waiting (their problem records, under the folder the changed file's key names).
    pub(super) async fn judge_attachments_of(
        &self,
        key: &str,
        artifact: &Artifact,
    ) -> Result<(), StoreError> {
        let (target, version, folder) = match artifact {
            Artifact::ModuleArchive {
                address,
                version,
                format,
            } => {
                let stem = key.strip_suffix(format.suffix()).unwrap_or(key);
                let target = NoticeTarget::Module {
                    address: address.clone(),
                };
                (
                    target,
                    version,
                    format!("{stem}{}/", attachments::MODULE_FOLDER_SUFFIX),
                )
            }
            Artifact::ProviderPackage {
                provider, version, ..
            }
            | Artifact::ProviderReleaseFile {
                provider,
                version,
                file: ReleaseFile::Sums,
            } => {
                let folder = key.rsplit_once('/').map_or("", |(folder, _)| folder);
                let target = NoticeTarget::Provider {
                    provider: provider.clone(),
                };
                (
                    target,
                    version,
                    format!("{folder}/{}/", attachments::PROVIDER_FOLDER),
                )
            }
            Artifact::SigningKey { namespace } => {
                return self.judge_signed_attachments(namespace).await
            }
            _ => return Ok(()),
        };
        let mut keys: Vec<String> = self
            .attachment_records(&target, version)
            .await?
            .into_iter()
            .map(|a| a.key)
            .collect();
        for record in self
            .metadata
            .query_prefix(partition::PROBLEMS, &folder)
            .await?
        {
            if let Record::Problem(p) = record {
                keys.push(p.key);
            }
        }
        keys.sort();
        keys.dedup();
        for attachment in keys {
            let name = crate::store::file_name(&attachment);
            if let Ok(AttachmentFile::Document(kind)) = attachments::parse_name(name) {
                self.judge_again(&attachment, &target, version, kind)
                    .await?;
            }
        }
        Ok(())
    }
}

impl Indexer {
    /// After a change of a namespace's keys, judges every attachment recorded for its
    /// modules and providers again, so "verified" follows a key's removal, revocation or
    /// replacement. (Refused attachments are not: a signature never refuses one.)
    async fn judge_signed_attachments(
        &self,
        namespace: &crate::names::Namespace,
    ) -> Result<(), StoreError> {
        // Every module noted under the namespace, listed or not yet: an attachment's
        // module is noted before it is judged, its listing only made with its documents.
        let mut partitions: Vec<(String, Option<&str>)> = self
            .namespace_modules(namespace)
            .await?
            .iter()
            .map(|address| (partition::module(address), None))
            .collect();
        for record in self
            .metadata
            .query(&partition::namespace(namespace))
            .await?
        {
            if let Record::NamespaceProvider(provider) = record {
                partitions.push((partition::provider(&provider), Some("attachment/")));
            }
        }
        for (partition, prefix) in partitions {
            let records = match prefix {
                Some(prefix) => self.metadata.query_prefix(&partition, prefix).await?,
                None => self.metadata.query(&partition).await?,
            };
            for record in records {
                if let Record::Attachment(a) = record {
                    self.judge_again(&a.key, &a.target, &a.version, a.kind)
                        .await?;
                }
            }
        }
        Ok(())
    }
}

fn target_noun(target: &NoticeTarget) -> String {
    target.to_string()
}

/// The namespace whose keys sign `target`'s attachments.
fn target_namespace(target: &NoticeTarget) -> &crate::names::Namespace {
    match target {
        NoticeTarget::Module { address } => &address.namespace,
        NoticeTarget::Provider { provider } => &provider.namespace,
    }
}

/// What an attachment's verdict reads beside its own file and signature: the namespace's
/// keys partition, and for a provenance statement the version's files.
struct AttachmentInputs {
    keys: Vec<Record>,
    files: Vec<(String, String)>,
}

impl AttachmentInputs {
    /// Whether a later read found the same: the keys by object and revision, the files.
    fn same_as(&self, other: &AttachmentInputs) -> bool {
        keys_fingerprint_of(&self.keys) == keys_fingerprint_of(&other.keys)
            && self.files == other.files
    }
}
