//! Deprecation and yank records ([`crate::lifecycle`]): read (bounded), checked, and kept as
//! a record beside the version's archives or release files, where making the subject's
//! versions document reads them. A refused file is a problem record for its key and leaves
//! no record, so the version reads as if it had none; a deleted file takes its record away.
//! Not pinned: a notice may be replaced or deleted at any time.

use super::{Indexer, Small};
use crate::layout::NoticeTarget;
use crate::lifecycle::{Notice, NoticeKind, MAX_NOTICE_BYTES};
use crate::store::{NoticeRecord, Record, RecordId, StoreError};
use crate::version::Version;

impl Indexer {
    /// Indexes a notice file: its record when it reads and checks, none otherwise. Returns
    /// the problem, if any.
    pub(super) async fn index_notice(
        &self,
        key: &str,
        target: &NoticeTarget,
        version: &Version,
        kind: NoticeKind,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::notice(target, version, key);
        let (record, problem) = match self.read_small(key, MAX_NOTICE_BYTES as u64).await? {
            Small::Missing => (None, None),
            Small::Unreadable(reason, _) => (None, Some(reason)),
            Small::Bytes(bytes, meta) => match Notice::parse(kind, &bytes) {
                Ok(notice) => (
                    Some(Record::Notice(NoticeRecord {
                        target: target.clone(),
                        version: version.clone(),
                        kind,
                        key: key.to_owned(),
                        revision: meta.revision,
                        notice,
                    })),
                    None,
                ),
                Err(reason) => (None, Some(reason)),
            },
        };
        self.put_or_delete(id, record).await?;
        Ok(problem)
    }
}
