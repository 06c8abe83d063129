//! A version's attachments as the read API and the pages list them: its attachment
//! records (one query of the version's records), each with a download URL that authorises
//! itself, pinned to the revision the indexer checked.

use std::time::SystemTime;

use super::Registry;
use crate::layout::NoticeTarget;
use crate::origin::Origin;
use crate::protocol::details::Attachment;
use crate::store::{file_name, partition, AttachmentRecord, Record, StoreError};
use crate::tokens::Access;
use crate::version::Version;

impl Registry {
    /// The attachments of a module or provider version, by file name; none outside
    /// `access` (out of scope looks like absent).
    pub async fn attachments(
        &self,
        access: &Access,
        target: &NoticeTarget,
        version: &Version,
        origin: &Origin,
    ) -> Result<Vec<Attachment>, StoreError> {
        let (namespace, partition, prefix) = match target {
            NoticeTarget::Module { address } => (
                &address.namespace,
                partition::module(address),
                format!("{version}/"),
            ),
            NoticeTarget::Provider { provider } => (
                &provider.namespace,
                partition::provider(provider),
                format!("attachment/{version}/"),
            ),
        };
        if !access.allows(namespace) {
            return Ok(vec![]);
        }
        let mut records: Vec<AttachmentRecord> = self
            .metadata
            .query_prefix(&partition, &prefix)
            .await?
            .into_iter()
            .filter_map(|r| match r {
                Record::Attachment(a) if a.version == *version => Some(a),
                _ => None,
            })
            .collect();
        records.sort_by(|a, b| file_name(&a.key).cmp(file_name(&b.key)));
        let window = self.downloads.window(SystemTime::now());
        let mut attachments = Vec::with_capacity(records.len());
        for record in records {
            let download_url = self
                .downloads
                .url(&record.key, Some(&record.revision), origin, window)
                .await?;
            let (key_id, unverified_reason) = match record.signature {
                Ok(key_id) => (Some(key_id), None),
                Err(reason) => (None, Some(reason)),
            };
            attachments.push(Attachment {
                media_type: record.kind.media_type().to_owned(),
                filename: file_name(&record.key).to_owned(),
                download_url,
                kind: record.kind,
                size: record.size,
                sha256: record.sha256,
                verified: key_id.is_some(),
                key_id,
                unverified_reason,
                predicate_types: record.predicate_types,
            });
        }
        Ok(attachments)
    }
}
