//! The small files of a provider release: SHA256SUMS, its signature, and the manifest.
//! A signature verdict depends on three things (the signature, the SHA256SUMS it signs, and
//! the namespace's keys); it is recorded with the revisions it holds for.

use std::time::SystemTime;

use super::{Indexer, Small};
use crate::gpg;
use crate::names::{Namespace, ProviderAddress};
use crate::release;
use crate::store::{
    partition, KeyRecord, ManifestRecord, Record, RecordId, SignatureRecord, SignedBy, StoreError,
    SumsRecord,
};
use crate::version::Version;

/// The revisions of a release's signature and SHA256SUMS that a verdict was computed from.
#[derive(Debug, PartialEq, Eq)]
struct Revisions {
    signature: Option<String>,
    sums: Option<String>,
}

/// One verification: the signature file's problem (if any), what it was computed from, and
/// whether the release is now signed.
struct Verification {
    problem: Option<String>,
    used: Revisions,
    signed: bool,
}

impl Indexer {
    /// Records a release's SHA256SUMS and verifies its signature again. Returns the
    /// SHA256SUMS's problem; the signature's own problem is recorded under its key.
    pub(super) async fn index_sums(
        &self,
        key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::sums(provider, version, key);
        let (record, problem) = match self
            .read_small(key, release::MAX_RELEASE_FILE_BYTES)
            .await?
        {
            Small::Missing => (None, None),
            Small::Unreadable(reason, _) => (None, Some(reason)),
            Small::Bytes(bytes, meta) => match release::parse_sums(&bytes) {
                Ok(entries) => (
                    Some(Record::Sums(SumsRecord {
                        provider: provider.clone(),
                        version: version.clone(),
                        key: key.to_owned(),
                        revision: meta.revision,
                        entries,
                    })),
                    None,
                ),
                Err(reason) => (None, Some(reason)),
            },
        };
        self.put_or_delete(id, record).await?;
        let sig_key = format!("{key}.sig");
        let sig_problem = self
            .verify_signature(&sig_key, key, provider, version)
            .await?;
        let sig_exists = self.artifacts.head(&sig_key).await?.is_some();
        self.set_problem(&sig_key, sig_problem.filter(|_| sig_exists))
            .await?;
        Ok(problem)
    }

    pub(super) async fn index_manifest(
        &self,
        key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::manifest(provider, version, key);
        let protocols = match self
            .read_small(key, release::MAX_RELEASE_FILE_BYTES)
            .await?
        {
            Small::Missing => return self.metadata.delete(&id).await.map(|_| None),
            Small::Unreadable(reason, _) => Err(reason),
            Small::Bytes(bytes, _) => release::parse_manifest(&bytes),
        };
        let problem = protocols.as_ref().err().cloned();
        self.metadata
            .put(Record::Manifest(ManifestRecord {
                provider: provider.clone(),
                version: version.clone(),
                key: key.to_owned(),
                protocols,
            }))
            .await?;
        Ok(problem)
    }

    /// Verifies a release's SHA256SUMS signature against the namespace's current keys and
    /// records the verdict for the current revisions of both files. Returns the signature
    /// file's problem. A release that verifies gets its packages unpacked.
    pub(super) async fn verify_signature(
        &self,
        sig_key: &str,
        sums_key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Option<String>, StoreError> {
        // Concurrent invocations (one per file event) may each verify and write; the last
        // write may come from the one that read older files or keys. So after writing, the
        // verdict's inputs are compared with the current ones (the two files' revisions and
        // the namespace's key records), and a stale verdict is computed again: whoever
        // writes last leaves a verdict for the current files and keys.
        for _ in 0..3 {
            let keys_before = self.keys_fingerprint(&provider.namespace).await?;
            let verification = self
                .verify_signature_once(sig_key, sums_key, provider, version)
                .await?;
            let current = Revisions {
                signature: self.artifacts.head(sig_key).await?.map(|m| m.revision),
                sums: self.artifacts.head(sums_key).await?.map(|m| m.revision),
            };
            let keys_after = self.keys_fingerprint(&provider.namespace).await?;
            if verification.used == current && keys_before == keys_after {
                if verification.signed {
                    self.unpack_signed_packages(provider, version).await?;
                }
                return Ok(verification.problem);
            }
        }
        Err(StoreError::new(format!(
            "{sig_key} or {sums_key} kept changing while being verified; the next event or reindex verifies it again"
        )))
    }

    /// One verification, recorded.
    async fn verify_signature_once(
        &self,
        sig_key: &str,
        sums_key: &str,
        provider: &ProviderAddress,
        version: &Version,
    ) -> Result<Verification, StoreError> {
        let id = RecordId::signature(provider, version, sig_key);
        let signature = self.read_small(sig_key, gpg::MAX_KEY_BYTES).await?;
        let (signature_bytes, sig_meta) = match signature {
            Small::Bytes(bytes, meta) => (bytes, meta),
            other => {
                // No signature to record a verdict for: forget the old one.
                self.metadata.delete(&id).await?;
                let problem = match &other {
                    Small::Unreadable(reason, _) => Some(reason.clone()),
                    _ => None,
                };
                let sums = self.artifacts.head(sums_key).await?.map(|m| m.revision);
                return Ok(Verification {
                    problem,
                    used: Revisions {
                        signature: other.revision(),
                        sums,
                    },
                    signed: false,
                });
            }
        };
        let sums = self
            .read_small(sums_key, release::MAX_RELEASE_FILE_BYTES)
            .await?;
        let sums_revision = sums.revision();
        let verdict = match &sums {
            Small::Missing => Err(format!("{sums_key} has not been published")),
            // A SHA256SUMS that cannot be read is a verdict on this release, never an error
            // that stops the re-verification of others.
            Small::Unreadable(reason, _) => Err(format!("cannot check the signature: {reason}")),
            Small::Bytes(bytes, _) => {
                self.find_signer(&provider.namespace, &signature_bytes, bytes)
                    .await?
            }
        };
        // A missing SHA256SUMS is only waited for, not a problem of the signature file.
        let problem = match (&sums, &verdict) {
            (Small::Missing, _) | (_, Ok(_)) => None,
            (_, Err(reason)) => Some(reason.clone()),
        };
        let signed = verdict.is_ok();
        let used = Revisions {
            signature: Some(sig_meta.revision.clone()),
            sums: sums_revision.clone(),
        };
        self.metadata
            .put(Record::Signature(SignatureRecord {
                provider: provider.clone(),
                version: version.clone(),
                key: sig_key.to_owned(),
                revision: sig_meta.revision,
                sums_key: sums_key.to_owned(),
                sums_revision,
                verdict,
            }))
            .await?;
        Ok(Verification {
            problem,
            used,
            signed,
        })
    }

    /// The namespace's key records, by object and revision: what a verdict depended on.
    async fn keys_fingerprint(
        &self,
        namespace: &Namespace,
    ) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self
            .metadata
            .query(&partition::keys(namespace))
            .await?
            .into_iter()
            .filter_map(|r| match r {
                Record::Key(k) => Some((k.key, k.revision)),
                _ => None,
            })
            .collect())
    }

    async fn find_signer(
        &self,
        namespace: &Namespace,
        signature: &[u8],
        sums: &[u8],
    ) -> Result<Result<SignedBy, String>, StoreError> {
        let now = SystemTime::now();
        let mut usable = 0;
        for record in self.metadata.query(&partition::keys(namespace)).await? {
            let Record::Key(KeyRecord {
                key,
                revision,
                verdict: Ok(info),
                ..
            }) = record
            else {
                continue;
            };
            if info.is_expired(now) {
                continue;
            }
            usable += 1;
            if gpg::verify_detached(&info.ascii_armor, signature, sums, now).is_ok() {
                return Ok(Ok(SignedBy {
                    key_id: info.key_id.clone(),
                    key,
                    key_revision: revision,
                    key_info: info,
                }));
            }
        }
        Ok(Err(if usable == 0 {
            format!("no usable signing key is published under keys/{namespace}/")
        } else {
            format!("the signature does not verify with any of the {usable} usable key(s) under keys/{namespace}/")
        }))
    }
}
