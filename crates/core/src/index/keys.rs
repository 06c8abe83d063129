//! Signing keys under `keys/<namespace>/`. A key's arrival, replacement or removal changes
//! the verdict on every release and module signature of its namespace, so all of them are
//! verified again.

use std::time::SystemTime;

use super::{Indexer, Small};
use crate::gpg;
use crate::names::Namespace;
use crate::store::{partition, KeyRecord, Record, RecordId, StoreError};

impl Indexer {
    /// Records a key (or forgets it), then re-verifies the namespace's releases. Returns
    /// the key file's problem.
    pub(super) async fn index_signing_key(
        &self,
        key: &str,
        namespace: &Namespace,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::signing_key(namespace, key);
        let (record, problem) = match self.read_small(key, gpg::MAX_KEY_BYTES).await? {
            Small::Missing => (None, None),
            Small::Unreadable(reason, _) => (None, Some(reason)),
            Small::Bytes(bytes, meta) => {
                let verdict = gpg::parse_public_key(&bytes, SystemTime::now());
                let problem = verdict.as_ref().err().cloned();
                let record = Record::Key(KeyRecord {
                    namespace: namespace.clone(),
                    key: key.to_owned(),
                    revision: meta.revision,
                    verdict,
                });
                (Some(record), problem)
            }
        };
        self.put_or_delete(id, record).await?;
        self.reverify_namespace(namespace).await?;
        // Module signatures too: a key's arrival may verify them, its removal refuse them.
        self.rejudge_namespace_modules(namespace).await?;
        Ok(problem)
    }

    /// Verifies every release of the namespace again, against the keys that exist now. One
    /// release that cannot be verified (its store failed) never keeps the others from being
    /// verified: all are tried, then the first failure is returned, so the event is retried.
    async fn reverify_namespace(&self, namespace: &Namespace) -> Result<(), StoreError> {
        let mut first_failure = None;
        for record in self
            .metadata
            .query(&partition::namespace(namespace))
            .await?
        {
            let Record::NamespaceProvider(provider) = record else {
                continue;
            };
            let signatures = match self.metadata.query(&partition::provider(&provider)).await {
                Ok(records) => records,
                Err(e) => {
                    tracing::error!(%provider, error = %e, "could not re-verify the provider's releases");
                    first_failure.get_or_insert(e);
                    continue;
                }
            };
            for record in signatures {
                let Record::Signature(sig) = record else {
                    continue;
                };
                let verified = async {
                    let problem = self
                        .verify_signature(&sig.key, &sig.sums_key, &provider, &sig.version)
                        .await?;
                    // `tfreg status` shows the signature's new verdict, not the old one,
                    // and the log says it again: the reason logged when the signature
                    // arrived (say, before its key did) may no longer be the reason.
                    let exists = self.artifacts.head(&sig.key).await?.is_some();
                    let problem = problem.filter(|_| exists);
                    if let Some(reason) = &problem {
                        tracing::warn!(key = sig.key, reason, "refused: this file is never served");
                    }
                    self.set_problem(&sig.key, problem).await
                };
                if let Err(e) = verified.await {
                    tracing::error!(key = sig.key, error = %e, "could not re-verify a release");
                    first_failure.get_or_insert(e);
                }
            }
        }
        first_failure.map_or(Ok(()), Err)
    }
}
