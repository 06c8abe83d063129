//! Module archives: recorded with their size, revision and SHA-256.

use tokio::io::AsyncReadExt;

use super::{sha256_of, Indexer};
use crate::layout::ArchiveFormat;
use crate::names::ModuleAddress;
use crate::store::{ModuleArchive, Record, RecordId, StoreError};
use crate::version::Version;

/// The largest module archive published (real ones are kilobytes to a few megabytes).
pub const MAX_MODULE_ARCHIVE_BYTES: u64 = 1024 * 1024 * 1024;

impl Indexer {
    /// Records a module archive, or forgets it when it is gone. Returns the problem, if any.
    pub(super) async fn index_module(
        &self,
        key: &str,
        address: &ModuleAddress,
        version: &Version,
        format: ArchiveFormat,
    ) -> Result<Option<String>, StoreError> {
        let id = RecordId::module_archive(address, version, key);
        let Some(body) = self.artifacts.open(key).await? else {
            self.metadata.delete(&id).await?;
            return Ok(None);
        };
        let meta = body.meta.clone();
        if meta.size > MAX_MODULE_ARCHIVE_BYTES {
            self.metadata.delete(&id).await?;
            return Ok(Some(format!(
                "the archive is {} bytes, more than the {MAX_MODULE_ARCHIVE_BYTES} a module archive may have",
                meta.size
            )));
        }
        // A checksum of what was published, read once per revision.
        let known = match self.metadata.get(&id).await? {
            Some(Record::ModuleArchive(a)) if a.revision == meta.revision => Some(a.sha256),
            _ => None,
        };
        let sha256 = match known {
            Some(sha256) => sha256,
            None => {
                let (sha256, read) = sha256_of(body.reader.take(MAX_MODULE_ARCHIVE_BYTES + 1))
                    .await
                    .map_err(|e| StoreError::with_source(format!("cannot read {key}"), e))?;
                if read != meta.size {
                    // Still being written: its next event (or the next rescan) reads it again.
                    return Ok(Some("the file changed while it was being read".into()));
                }
                sha256
            }
        };
        self.metadata
            .put(Record::ModuleArchive(ModuleArchive {
                address: address.clone(),
                version: version.clone(),
                key: key.to_owned(),
                format,
                size: meta.size,
                revision: meta.revision,
                sha256,
            }))
            .await?;
        Ok(None)
    }
}
