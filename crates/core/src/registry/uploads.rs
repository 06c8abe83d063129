//! Who uploaded a version's files (the AWS shape), for the read API and `tfreg status`: the
//! upload records of one version (one query of its module's or provider's uploads
//! partition). Requests never judge them: the indexer did, and a refused file is a problem.

use super::Registry;
use crate::layout::NoticeTarget;
use crate::store::{partition, Record, StoreError, UploadRecord};
use crate::tokens::Access;
use crate::version::Version;

impl Registry {
    /// Every recorded upload of `version`'s files, by key then time (replaced revisions
    /// and refused files included: `revision` tells them apart); none outside `access`.
    pub async fn uploads(
        &self,
        access: &Access,
        target: &NoticeTarget,
        version: &Version,
    ) -> Result<Vec<UploadRecord>, StoreError> {
        let namespace = match target {
            NoticeTarget::Module { address } => &address.namespace,
            NoticeTarget::Provider { provider } => &provider.namespace,
        };
        if !access.allows(namespace) {
            return Ok(vec![]);
        }
        let mut uploads: Vec<UploadRecord> = self
            .metadata
            .query_prefix(&partition::uploads(target), &format!("{version}/"))
            .await?
            .into_iter()
            .filter_map(|r| match r {
                Record::Upload(u) if u.version == *version => Some(u),
                _ => None,
            })
            .collect();
        uploads.sort_by(|a, b| (&a.key, &a.uploaded_at).cmp(&(&b.key, &b.uploaded_at)));
        Ok(uploads)
    }
}
